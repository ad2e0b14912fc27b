-- Reads of runs, task runs and attempts for the task process, `etl-craft run`, status, history and logs.
-- {TABLE} names are qualified for the Engine DB's dialect by etlcraft.engine.queries; binds are :name.

-- name: pipeline_by_code :one
-- Pipeline codes are unique per project (ux_pipelines_code_active): the pair finds one pipeline.
SELECT p.PIPELINE_ID, p.PIPELINE_CODE, p.MAX_PARALLEL_TASKS, pr.PROJECT_CODE, pr.DEFAULT_POOL, pr.TIMEZONE
  FROM {CFG_PIPELINES} p
  JOIN {CFG_PROJECTS} pr ON pr.PROJECT_ID = p.PROJECT_ID
 WHERE p.PIPELINE_CODE = :code AND pr.PROJECT_CODE = :project_code AND p.ACTIVE_FLAG = 'Y' AND pr.ACTIVE_FLAG = 'Y';

-- name: active_runs :many
SELECT PIPELINE_RUN_ID, RUN_KEY, TRIGGER_KIND, RUN_DATE, STATUS, OWNER_ID, LEASE_EXPIRES_AT, START_DATE
  FROM {AUD_PIPELINES_RUN_LOG}
 WHERE PIPELINE_ID = :pipeline_id AND STATUS IN ('QUEUED', 'IN-PROGRESS')
 ORDER BY PIPELINE_RUN_ID;

-- name: run_by_key :one
SELECT PIPELINE_RUN_ID, RUN_KEY, STATUS FROM {AUD_PIPELINES_RUN_LOG}
 WHERE PIPELINE_ID = :pipeline_id AND RUN_KEY = :run_key;

-- name: run_header :one
SELECT r.PIPELINE_RUN_ID, p.PIPELINE_CODE, r.RUN_KEY, r.TRIGGER_KIND, r.RUN_DATE, r.STATUS, r.QUEUED_AT,
       r.START_DATE, r.END_DATE, r.OWNER_ID, r.LEASE_EXPIRES_AT, r.OUTPUT_REVISION, r.SLA_STATUS, r.STARTED_BY,
       r.ENDED_BY, r.MESSAGE, r.PIPELINE_ID, r.CANCEL_REQUESTED_AT
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID
 WHERE r.PIPELINE_RUN_ID = :run_id;

-- name: run_pipeline_project :one
-- The pipeline and project of a run named by id alone: the run id settles the project (codes are per project).
SELECT p.PIPELINE_CODE, pr.PROJECT_CODE
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID
  JOIN {CFG_PROJECTS} pr ON pr.PROJECT_ID = p.PROJECT_ID
 WHERE r.PIPELINE_RUN_ID = :run_id;

-- name: run_task_rows :many
-- Every active task of the run's pipeline with its task run in this run (if any) and its latest attempt.
SELECT t.TASK_ID, t.TASK_CODE, t.HANDLER, tr.TASK_RUN_ID, tr.STATUS, tr.ATTEMPT_COUNT, tr.START_DATE, tr.END_DATE,
       tr.ROWS_WRITTEN, tr.ERROR_MESSAGE, tr.MESSAGE, a.ATTEMPT_ID, a.STATUS AS ATTEMPT_STATUS, a.OWNER_ID,
       a.LOG_PATH
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_TASKS} t ON t.PIPELINE_ID = r.PIPELINE_ID AND t.ACTIVE_FLAG = 'Y'
  LEFT JOIN {AUD_TASK_RUN_LOG} tr ON tr.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND tr.TASK_ID = t.TASK_ID
  LEFT JOIN {AUD_TASK_ATTEMPTS} a ON a.TASK_RUN_ID = tr.TASK_RUN_ID AND a.ATTEMPT_NUMBER = tr.ATTEMPT_COUNT
 WHERE r.PIPELINE_RUN_ID = :run_id
 ORDER BY t.TASK_CODE;

-- name: run_unsettled_tasks :many
-- The active tasks of the run's pipeline without a settled task run (none, or one not SUCCESS, FAILED, SKIPPED or
-- CANCELLED): finalize_run refuses while any is left, unless the run is being cancelled.
SELECT t.TASK_ID, t.TASK_CODE, tr.STATUS
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_TASKS} t ON t.PIPELINE_ID = r.PIPELINE_ID AND t.ACTIVE_FLAG = 'Y'
  LEFT JOIN {AUD_TASK_RUN_LOG} tr ON tr.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND tr.TASK_ID = t.TASK_ID
 WHERE r.PIPELINE_RUN_ID = :run_id
   AND (tr.STATUS IS NULL OR tr.STATUS NOT IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED'))
 ORDER BY t.TASK_CODE;

-- name: run_foreign_live_attempts :many
-- The run's CLAIMED or RUNNING attempts leased to an owner other than :owner_id: a supervisor that died or let the
-- run go while its task process runs on. They may yet record their outcome, or their lease expires.
SELECT a.ATTEMPT_ID, a.STATUS, a.OWNER_ID, t.TASK_CODE
  FROM {AUD_TASK_ATTEMPTS} a
  JOIN {AUD_TASK_RUN_LOG} tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
  JOIN {CFG_TASKS} t ON t.TASK_ID = tr.TASK_ID
 WHERE tr.PIPELINE_RUN_ID = :run_id AND a.STATUS IN ('CLAIMED', 'RUNNING') AND a.OWNER_ID <> :owner_id
 ORDER BY a.ATTEMPT_ID;

-- name: run_own_claimed_attempts :many
-- The run's attempts CLAIMED by :owner_id (claimed, not started yet).
SELECT a.ATTEMPT_ID, t.TASK_CODE
  FROM {AUD_TASK_ATTEMPTS} a
  JOIN {AUD_TASK_RUN_LOG} tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
  JOIN {CFG_TASKS} t ON t.TASK_ID = tr.TASK_ID
 WHERE tr.PIPELINE_RUN_ID = :run_id AND a.STATUS = 'CLAIMED' AND a.OWNER_ID = :owner_id
 ORDER BY a.ATTEMPT_ID;

-- name: run_history :many
SELECT r.PIPELINE_RUN_ID, r.RUN_KEY, r.TRIGGER_KIND, r.RUN_DATE, r.STATUS, r.START_DATE, r.END_DATE,
       r.STARTED_BY, r.ENDED_BY, r.OUTPUT_REVISION, r.SLA_STATUS,
       (SELECT COUNT(*) FROM {AUD_TASK_RUN_LOG} tr WHERE tr.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID
           AND tr.STATUS = 'FAILED') AS FAILED_TASKS
  FROM {AUD_PIPELINES_RUN_LOG} r
 WHERE r.PIPELINE_ID = :pipeline_id
   AND (CAST(:before AS BIGINT) IS NULL OR r.PIPELINE_RUN_ID < CAST(:before AS BIGINT))
 ORDER BY r.PIPELINE_RUN_ID DESC
 LIMIT :limit;

-- name: attempt_context :many
-- Everything the task process needs to run one attempt, in one statement: one row per active parameter of the
-- task (a single row with NULL parameter columns when it has none), each with the attempt's task, run and offset.
-- The bundle the run pinned (NULL columns when it pinned none) comes on the first row only, so a large manifest
-- is sent once whatever the number of parameters. The lookups by key (pipeline code, offset, bundle) are scalar
-- subqueries, not joins: each task process plans this statement once, in a new backend, and a join of eight
-- tables took twice as long to plan as to run everything else of the read (issue 27).
SELECT a.ATTEMPT_ID, a.ATTEMPT_NUMBER, a.STATUS, a.OWNER_ID, tr.TASK_RUN_ID, tr.PIPELINE_RUN_ID, r.RUN_DATE,
       r.PIPELINE_ID, (SELECT p.PIPELINE_CODE FROM {CFG_PIPELINES} p WHERE p.PIPELINE_ID = r.PIPELINE_ID) AS PIPELINE_CODE,
       t.TASK_ID, t.TASK_CODE, t.HANDLER, t.ACTION, t.SQL_FILE, t.SCRIPT_FILE, t.TARGET_OBJECT,
       (SELECT o.OFFSET_VALUE FROM {AUD_TASK_OFFSETS} o WHERE o.TASK_ID = t.TASK_ID) AS OFFSET_VALUE,
       (SELECT o.OFFSET_TYPE FROM {AUD_TASK_OFFSETS} o WHERE o.TASK_ID = t.TASK_ID) AS OFFSET_TYPE,
       tp.PARAMETER_NAME, tp.PARAMETER_VALUE, r.BUNDLE_ID,
       CASE WHEN ROW_NUMBER() OVER (ORDER BY tp.PARAMETER_NAME) = 1
            THEN (SELECT b.MANIFEST FROM {AUD_PROJECT_BUNDLES} b WHERE b.BUNDLE_ID = r.BUNDLE_ID) END AS MANIFEST,
       (SELECT b.STORE_URL FROM {AUD_PROJECT_BUNDLES} b WHERE b.BUNDLE_ID = r.BUNDLE_ID) AS STORE_URL
  FROM {AUD_TASK_ATTEMPTS} a
  JOIN {AUD_TASK_RUN_LOG} tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
  JOIN {AUD_PIPELINES_RUN_LOG} r ON r.PIPELINE_RUN_ID = tr.PIPELINE_RUN_ID
  JOIN {CFG_TASKS} t ON t.TASK_ID = tr.TASK_ID
  LEFT JOIN {CFG_TASK_PARAMETERS} tp ON tp.TASK_ID = t.TASK_ID AND tp.ACTIVE_FLAG = 'Y'
 WHERE a.ATTEMPT_ID = :attempt_id
 ORDER BY tp.PARAMETER_NAME;

-- name: attempt_row :one
SELECT a.ATTEMPT_ID, a.TASK_RUN_ID, a.ATTEMPT_NUMBER, a.STATUS, a.OWNER_ID, a.HOST, a.PID, a.PROCESS_START,
       a.LEASE_EXPIRES_AT, a.QUEUED_AT, a.STARTED_AT, a.ENDED_AT, a.EXIT_CODE, a.ERROR_MESSAGE, a.TASK_LOG,
       a.LOG_PATH, a.ROWS_WRITTEN, a.RETRYABLE, t.TASK_CODE, tr.TASK_ID, tr.PIPELINE_RUN_ID
  FROM {AUD_TASK_ATTEMPTS} a
  JOIN {AUD_TASK_RUN_LOG} tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
  JOIN {CFG_TASKS} t ON t.TASK_ID = tr.TASK_ID
 WHERE a.ATTEMPT_ID = :attempt_id;

-- name: next_attempt :one
-- The attempt queued after attempt_id in its task run (a retry, or a run again after a stop), if any.
SELECT n.ATTEMPT_ID, n.ATTEMPT_NUMBER, n.RETRY_NUMBER, n.STATUS, n.NOT_BEFORE, n.QUEUED_AT, tr.TASK_ID
  FROM {AUD_TASK_ATTEMPTS} a
  JOIN {AUD_TASK_ATTEMPTS} n ON n.TASK_RUN_ID = a.TASK_RUN_ID AND n.ATTEMPT_NUMBER = a.ATTEMPT_NUMBER + 1
  JOIN {AUD_TASK_RUN_LOG} tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
 WHERE a.ATTEMPT_ID = :attempt_id;

-- name: expired_live_attempts :many
-- CLAIMED or RUNNING attempts whose lease expired: candidates for reconciliation.
SELECT ATTEMPT_ID, OWNER_ID, HOST, PID, PROCESS_START, LEASE_EXPIRES_AT
  FROM {AUD_TASK_ATTEMPTS}
 WHERE STATUS IN ('CLAIMED', 'RUNNING') AND LEASE_EXPIRES_AT < :now
 ORDER BY ATTEMPT_ID;

-- name: run_queued_pools :many
-- The pools and slot kinds of a run's QUEUED attempts, with each pool's provider (LOCAL without an active CFG_POOLS
-- row): a local overseer claims only its own run's attempts, and only those of LOCAL pools.
SELECT DISTINCT a.POOL, a.SLOT_KIND, COALESCE(cp.PROVIDER, 'LOCAL') AS PROVIDER
  FROM {AUD_TASK_ATTEMPTS} a
  LEFT JOIN {CFG_POOLS} cp ON cp.POOL_NAME = a.POOL AND cp.ACTIVE_FLAG = 'Y'
 WHERE a.PIPELINE_RUN_ID = :run_id AND a.STATUS = 'QUEUED'
 ORDER BY a.POOL, a.SLOT_KIND;

-- name: run_task_edges :many
-- The in-pipeline dependencies of the run's pipeline (both tasks active): task, its upstream, the edge's type.
SELECT d.TASK_ID, d.DEPENDS_ON_TASK_ID, d.DEPENDENCY_TYPE, u.TASK_CODE AS UPSTREAM_TASK_CODE
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_TASKS} t ON t.PIPELINE_ID = r.PIPELINE_ID AND t.ACTIVE_FLAG = 'Y'
  JOIN {CFG_TASK_DEPENDENCY} d ON d.TASK_ID = t.TASK_ID AND d.ACTIVE_FLAG = 'Y'
  JOIN {CFG_TASKS} u ON u.TASK_ID = d.DEPENDS_ON_TASK_ID AND u.PIPELINE_ID = r.PIPELINE_ID AND u.ACTIVE_FLAG = 'Y'
 WHERE r.PIPELINE_RUN_ID = :run_id
 ORDER BY d.TASK_ID, u.TASK_CODE;

-- name: run_pipeline_pause :one
-- The open pause of the run's pipeline, if it is paused.
SELECT ps.PAUSED_AT, ps.PAUSED_BY, ps.PAUSE_REASON, p.PIPELINE_CODE
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID
  JOIN {AUD_PIPELINE_PAUSES} ps ON ps.PIPELINE_ID = r.PIPELINE_ID AND ps.RESUMED_AT IS NULL
 WHERE r.PIPELINE_RUN_ID = :run_id;

-- name: run_states :many
-- What an overseer needs to know of each run it drives, in one read per turn for the runs :run_ids (a list) it
-- looks at in that turn; "another owner" is one other than :owner_id. Per run: whether a cancel was asked for, when its earliest QUEUED
-- attempt is due (NOT_BEFORE, else since it was queued: it waits for a slot), the next look of a task gate that
-- waits, how many of its attempts are live under another owner, and its pipeline's open pause. Attempts of QUEUE
-- pools (workers run them) count apart: QUEUE_LIVE is 1 when any of them is QUEUED, CLAIMED or RUNNING (the QUEUED
-- ones found from the QUEUE pools by ix_attempts_run_queue, the others among the live attempts), else 0.
-- NEXT_QUEUED is the earlier of the first NOT_BEFORE and the first QUEUED_AT of the attempts without one, each the
-- first entry of ix_attempts_run_due (migration 0024): two probes, however many attempts the run has queued.
SELECT r.PIPELINE_RUN_ID, r.CANCEL_REQUESTED_AT, p.PIPELINE_CODE,
       (SELECT MIN(d.DUE) FROM (
          SELECT (SELECT a.NOT_BEFORE FROM {AUD_TASK_ATTEMPTS} a
                   WHERE a.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND a.STATUS = 'QUEUED' AND a.NOT_BEFORE IS NOT NULL
                     AND NOT EXISTS (SELECT 1 FROM {CFG_POOLS} cp WHERE cp.POOL_NAME = a.POOL
                                        AND cp.ACTIVE_FLAG = 'Y' AND cp.PROVIDER = 'QUEUE')
                   ORDER BY a.NOT_BEFORE LIMIT 1) AS DUE
          UNION ALL
          SELECT (SELECT a.QUEUED_AT FROM {AUD_TASK_ATTEMPTS} a
                   WHERE a.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND a.STATUS = 'QUEUED' AND a.NOT_BEFORE IS NULL
                     AND NOT EXISTS (SELECT 1 FROM {CFG_POOLS} cp WHERE cp.POOL_NAME = a.POOL
                                        AND cp.ACTIVE_FLAG = 'Y' AND cp.PROVIDER = 'QUEUE')
                   ORDER BY a.QUEUED_AT LIMIT 1)) d) AS NEXT_QUEUED,
       (SELECT MIN(w.NEXT_CHECK_AT) FROM {AUD_GATE_WAITS} w
         WHERE w.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND w.TASK_ID IS NOT NULL AND w.ENDED_AT IS NULL) AS NEXT_CHECK,
       (SELECT COUNT(*) FROM {AUD_TASK_ATTEMPTS} a
         WHERE a.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND a.STATUS IN ('CLAIMED', 'RUNNING')
           AND a.OWNER_ID <> :owner_id
           AND NOT EXISTS (SELECT 1 FROM {CFG_POOLS} cp WHERE cp.POOL_NAME = a.POOL AND cp.ACTIVE_FLAG = 'Y'
                              AND cp.PROVIDER = 'QUEUE')) AS FOREIGN_LIVE,
       CASE WHEN EXISTS (SELECT 1 FROM {CFG_POOLS} cp
                          WHERE cp.ACTIVE_FLAG = 'Y' AND cp.PROVIDER = 'QUEUE'
                            AND EXISTS (SELECT 1 FROM {AUD_TASK_ATTEMPTS} a
                                         WHERE a.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND a.POOL = cp.POOL_NAME
                                           AND a.STATUS = 'QUEUED'))
              OR EXISTS (SELECT 1 FROM {AUD_TASK_ATTEMPTS} a
                           JOIN {CFG_POOLS} cp ON cp.POOL_NAME = a.POOL AND cp.ACTIVE_FLAG = 'Y' AND cp.PROVIDER = 'QUEUE'
                          WHERE a.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND a.STATUS IN ('CLAIMED', 'RUNNING'))
            THEN 1 ELSE 0 END AS QUEUE_LIVE,
       ps.PAUSED_AT, ps.PAUSED_BY, ps.PAUSE_REASON
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID
  LEFT JOIN {AUD_PIPELINE_PAUSES} ps ON ps.PIPELINE_ID = r.PIPELINE_ID AND ps.RESUMED_AT IS NULL
 WHERE r.PIPELINE_RUN_ID IN :run_ids;

-- name: run_task_timeouts :many
-- Each active task of the run's pipeline with its TASK_TIMEOUT_SECONDS parameter (NULL: not set).
SELECT t.TASK_ID, tp.PARAMETER_VALUE AS TIMEOUT_SECONDS
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_TASKS} t ON t.PIPELINE_ID = r.PIPELINE_ID AND t.ACTIVE_FLAG = 'Y'
  LEFT JOIN {CFG_TASK_PARAMETERS} tp ON tp.TASK_ID = t.TASK_ID AND tp.ACTIVE_FLAG = 'Y'
   AND UPPER(tp.PARAMETER_NAME) = 'TASK_TIMEOUT_SECONDS'
 WHERE r.PIPELINE_RUN_ID = :run_id;

-- name: run_open_gate_waits :many
-- The run's gates that wait for their upstream now (TASK_ID NULL: its pipeline gate).
SELECT w.TASK_ID, w.LOOKS, w.NEXT_CHECK_AT, w.WAIT_UNTIL, w.WAITING_FOR
  FROM {AUD_GATE_WAITS} w
 WHERE w.PIPELINE_RUN_ID = :run_id AND w.ENDED_AT IS NULL
 ORDER BY w.TASK_ID;

-- name: business_rules_of :many
SELECT BUSINESS_RULE_ID, RULE_CODE, RULE_TYPE, KEY_COLUMN, RULE_SQL FROM {CFG_BUSINESS_RULES}
 WHERE TASK_ID = :task_id AND ACTIVE_FLAG = 'Y' ORDER BY RULE_CODE;

-- name: pool_attempt :one
-- One attempt as a pool sees it (etlcraft.supervisor.pools): status, owner, pool, slot kind, task.
SELECT a.ATTEMPT_ID, a.STATUS, a.OWNER_ID, a.POOL, a.SLOT_KIND, a.PIPELINE_RUN_ID, a.CANCEL_REQUESTED_AT,
       a.CANCEL_ACKNOWLEDGED_AT, t.TASK_CODE, t.HANDLER
  FROM {AUD_TASK_ATTEMPTS} a
  JOIN {AUD_TASK_RUN_LOG} tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
  JOIN {CFG_TASKS} t ON t.TASK_ID = tr.TASK_ID
 WHERE a.ATTEMPT_ID = :attempt_id;

-- name: owner_live_attempts :many
-- The attempts :owner_id holds (CLAIMED or RUNNING), whatever their run: what a local pool reconciles.
SELECT a.ATTEMPT_ID, a.STATUS, a.OWNER_ID, a.POOL, a.SLOT_KIND, a.PIPELINE_RUN_ID
  FROM {AUD_TASK_ATTEMPTS} a
 WHERE a.OWNER_ID = :owner_id AND a.STATUS IN ('CLAIMED', 'RUNNING')
 ORDER BY a.ATTEMPT_ID;

-- name: run_task_specs :many
-- What a pool is told of each active task of the run's pipeline: its code, handler, project and pipeline; and
-- whether an active task of the pipeline depends on it (HAS_SUCCESSORS), so that the run loop does not ask
-- ready_successors about a task with nothing downstream.
SELECT t.TASK_ID, t.TASK_CODE, t.HANDLER, p.PIPELINE_CODE, pr.PROJECT_CODE,
       CASE WHEN EXISTS (SELECT 1 FROM {CFG_TASK_DEPENDENCY} d JOIN {CFG_TASKS} s ON s.TASK_ID = d.TASK_ID
                          WHERE d.DEPENDS_ON_TASK_ID = t.TASK_ID AND d.ACTIVE_FLAG = 'Y'
                            AND s.PIPELINE_ID = t.PIPELINE_ID AND s.ACTIVE_FLAG = 'Y')
            THEN 1 ELSE 0 END AS HAS_SUCCESSORS
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID
  JOIN {CFG_PROJECTS} pr ON pr.PROJECT_ID = p.PROJECT_ID
  JOIN {CFG_TASKS} t ON t.PIPELINE_ID = r.PIPELINE_ID AND t.ACTIVE_FLAG = 'Y'
 WHERE r.PIPELINE_RUN_ID = :run_id;

-- name: pool_providers :many
-- Every active pool with its provider (LOCAL or QUEUE); a pool without an active row is LOCAL.
SELECT POOL_NAME, PROVIDER FROM {CFG_POOLS} WHERE ACTIVE_FLAG = 'Y' ORDER BY POOL_NAME;

-- name: queue_pool_attempt :one
-- One attempt of a QUEUE pool with the status of the worker that holds it (NULL: no worker holds it) and whether
-- that worker is ACTIVE (WORKER_ACTIVE 1).
SELECT a.ATTEMPT_ID, a.STATUS, a.OWNER_ID, a.POOL, a.SLOT_KIND, a.PIPELINE_RUN_ID, a.CANCEL_REQUESTED_AT,
       a.CANCEL_ACKNOWLEDGED_AT, w.STATUS AS WORKER_STATUS, w.WORKER_NAME,
       CASE WHEN w.STATUS = 'ACTIVE' THEN 1 ELSE 0 END AS WORKER_ACTIVE
  FROM {AUD_TASK_ATTEMPTS} a
  LEFT JOIN {AUD_WORKERS} w ON w.OWNER_ID = a.OWNER_ID
 WHERE a.ATTEMPT_ID = :attempt_id;

-- name: queue_pool_live_attempts :many
-- The QUEUED, CLAIMED and RUNNING attempts of pool :pool, each with the status of the worker that holds it.
SELECT a.ATTEMPT_ID, a.STATUS, a.OWNER_ID, a.POOL, a.SLOT_KIND, a.PIPELINE_RUN_ID, w.STATUS AS WORKER_STATUS,
       w.WORKER_NAME, CASE WHEN w.STATUS = 'ACTIVE' THEN 1 ELSE 0 END AS WORKER_ACTIVE
  FROM {AUD_TASK_ATTEMPTS} a
  LEFT JOIN {AUD_WORKERS} w ON w.OWNER_ID = a.OWNER_ID
 WHERE a.POOL = :pool AND a.STATUS IN ('QUEUED', 'CLAIMED', 'RUNNING')
 ORDER BY a.ATTEMPT_ID;

-- name: queue_pool_capacity :many
-- Per slot kind, the slots of pool :pool's ACTIVE workers and how many of their attempts are CLAIMED or RUNNING.
SELECT k.SLOT_KIND,
       (SELECT SUM(CASE WHEN k.SLOT_KIND = 'ingestion' THEN w.INGESTION_SLOTS ELSE w.WAREHOUSE_SLOTS END)
          FROM {AUD_WORKERS} w WHERE w.POOL = :pool AND w.STATUS = 'ACTIVE') AS SLOTS,
       (SELECT COUNT(*) FROM {AUD_TASK_ATTEMPTS} a
          JOIN {AUD_WORKERS} w ON w.OWNER_ID = a.OWNER_ID AND w.POOL = :pool AND w.STATUS = 'ACTIVE'
         WHERE a.STATUS IN ('CLAIMED', 'RUNNING') AND a.SLOT_KIND = k.SLOT_KIND) AS IN_USE
  FROM (SELECT 'ingestion' AS SLOT_KIND UNION ALL SELECT 'warehouse') k;

-- name: run_queue_waits :many
-- Per QUEUE pool a run has QUEUED attempts in: how many, and how many of the pool's workers are ACTIVE.
SELECT a.POOL, COUNT(*) AS WAITING,
       (SELECT COUNT(*) FROM {AUD_WORKERS} w WHERE w.POOL = a.POOL AND w.STATUS = 'ACTIVE') AS ACTIVE_WORKERS
  FROM {AUD_TASK_ATTEMPTS} a
  JOIN {CFG_POOLS} cp ON cp.POOL_NAME = a.POOL AND cp.ACTIVE_FLAG = 'Y' AND cp.PROVIDER = 'QUEUE'
 WHERE a.PIPELINE_RUN_ID = :run_id AND a.STATUS = 'QUEUED'
 GROUP BY a.POOL
 ORDER BY a.POOL;
