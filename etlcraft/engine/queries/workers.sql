-- Reads of the worker agent (etlcraft/worker) and of `etl-craft workers list`.
-- {TABLE} names are qualified for the Engine DB's dialect by etlcraft.engine.queries; binds are :name.

-- name: worker_engine_versions :many
-- The ENGINE stream's versioned migrations applied to this Engine DB (repeatable objects, R:..., left out): a
-- worker starts only when they are exactly those of its own package.
SELECT VERSION
  FROM {SCHEMA_MIGRATIONS}
 WHERE STREAM = 'ENGINE' AND VERSION NOT LIKE 'R:%'
 ORDER BY VERSION;

-- name: worker_claimed_tasks :many
-- What a worker needs to start the attempts it has just claimed (PostgreSQL: :attempt_ids is an array): each
-- attempt's task, slot kind, run and pipeline (for its log folder) and its TASK_TIMEOUT_SECONDS (NULL: not set).
SELECT a.ATTEMPT_ID, a.SLOT_KIND, a.PIPELINE_RUN_ID, t.TASK_ID, t.TASK_CODE, p.PIPELINE_CODE,
       tp.PARAMETER_VALUE AS TIMEOUT_SECONDS
  FROM {AUD_TASK_ATTEMPTS} a
  JOIN {AUD_TASK_RUN_LOG} tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
  JOIN {CFG_TASKS} t ON t.TASK_ID = tr.TASK_ID
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = t.PIPELINE_ID
  LEFT JOIN {CFG_TASK_PARAMETERS} tp ON tp.TASK_ID = t.TASK_ID AND tp.ACTIVE_FLAG = 'Y'
   AND UPPER(tp.PARAMETER_NAME) = 'TASK_TIMEOUT_SECONDS'
 WHERE a.ATTEMPT_ID = ANY(CAST(:attempt_ids AS BIGINT[]))
 ORDER BY a.ATTEMPT_ID;

-- name: workers_list :many
-- Every worker not gone, and those gone since :gone_since, newest first (AUD_V_WORKERS: the slots of each kind its
-- live attempts take now, the seconds since its heartbeat by the Engine DB's clock), with who started it.
SELECT v.WORKER_ID, v.WORKER_NAME, v.POOL, v.HOST, v.PID, v.VERSION, v.STATUS, v.INGESTION_SLOTS,
       v.INGESTION_IN_USE, v.WAREHOUSE_SLOTS, v.WAREHOUSE_IN_USE, v.HEARTBEAT_SECONDS, v.HEARTBEAT_AT,
       v.SECONDS_SINCE_HEARTBEAT, v.STARTED_AT, v.DRAINING_AT, v.STOPPED_AT, v.STOP_REASON, w.STARTED_BY
  FROM {AUD_V_WORKERS} v
  JOIN {AUD_WORKERS} w ON w.WORKER_ID = v.WORKER_ID
 WHERE v.STATUS <> 'GONE' OR v.STOPPED_AT >= :gone_since
 ORDER BY v.WORKER_ID DESC;

-- name: workers_queue_depth :many
-- The queue of every pool and slot kind (AUD_V_QUEUE_DEPTH): attempts QUEUED, and of those the ones due now.
SELECT q.POOL, q.SLOT_KIND, q.QUEUED, q.DUE
  FROM {AUD_V_QUEUE_DEPTH} q
 ORDER BY q.POOL, q.SLOT_KIND;
