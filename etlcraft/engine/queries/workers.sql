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
-- Every worker not gone, and those gone since :gone_since, newest first, with the slots of each kind its live
-- (CLAIMED or RUNNING) attempts take now.
SELECT w.WORKER_ID, w.WORKER_NAME, w.POOL, w.HOST, w.PID, w.VERSION, w.STATUS, w.INGESTION_SLOTS,
       w.WAREHOUSE_SLOTS, w.HEARTBEAT_SECONDS, w.STARTED_AT, w.HEARTBEAT_AT, w.DRAINING_AT, w.STOPPED_AT,
       w.STOP_REASON, w.STARTED_BY,
       (SELECT COUNT(*) FROM {AUD_TASK_ATTEMPTS} a
         WHERE a.OWNER_ID = w.OWNER_ID AND a.STATUS IN ('CLAIMED', 'RUNNING')
           AND a.SLOT_KIND = 'ingestion') AS INGESTION_IN_USE,
       (SELECT COUNT(*) FROM {AUD_TASK_ATTEMPTS} a
         WHERE a.OWNER_ID = w.OWNER_ID AND a.STATUS IN ('CLAIMED', 'RUNNING')
           AND a.SLOT_KIND = 'warehouse') AS WAREHOUSE_IN_USE
  FROM {AUD_WORKERS} w
 WHERE w.STATUS <> 'GONE' OR w.STOPPED_AT >= :gone_since
 ORDER BY w.WORKER_ID DESC;

-- name: workers_queue_depth :many
-- The queue of every pool and slot kind: attempts QUEUED, and of those the ones due at :now (NOT_BEFORE passed).
-- Read through the partial queue index (ix_attempts_queue), whatever the size of the attempts' history.
SELECT q.POOL, q.SLOT_KIND, COUNT(*) AS QUEUED,
       SUM(CASE WHEN q.NOT_BEFORE IS NULL OR q.NOT_BEFORE <= :now THEN 1 ELSE 0 END) AS DUE
  FROM {AUD_TASK_ATTEMPTS} q
 WHERE q.STATUS = 'QUEUED'
 GROUP BY q.POOL, q.SLOT_KIND
 ORDER BY q.POOL, q.SLOT_KIND;
