-- Reads of `etl-craft server`: its leadership record, the schedules it keeps, and the runs it admits and drives.
-- {TABLE} names are qualified for the Engine DB's dialect by etlcraft.engine.queries; binds are :name.

-- name: overseers :many
-- The servers this Engine DB has had, newest first.
SELECT OVERSEER_ID, OWNER_ID, HOST, PID, VERSION, STARTED_AT, HEARTBEAT_AT, STOPPED_AT, STOP_REASON, STARTED_BY
  FROM {AUD_OVERSEERS}
 ORDER BY OVERSEER_ID DESC
 LIMIT 20;

-- name: overseer_open :one
-- The server recorded as running (the newest, if a killed one was not closed yet).
SELECT OVERSEER_ID, OWNER_ID, HOST, PID, VERSION, STARTED_AT, HEARTBEAT_AT
  FROM {AUD_OVERSEERS}
 WHERE STOPPED_AT IS NULL
 ORDER BY OVERSEER_ID DESC
 LIMIT 1;

-- name: scheduled_pipelines :many
-- Every active pipeline with a schedule, with what the scheduler needs: its zone (or its project's), catch-up and
-- overlap policy, whether it is paused, and the newest run a schedule tick created (run keys schedule:<UTC ISO>
-- sort by time).
SELECT p.PIPELINE_ID, p.PIPELINE_CODE, p.RUN_SCHEDULE, p.SCHEDULE_TIMEZONE, pr.PROJECT_CODE, pr.TIMEZONE AS PROJECT_TIMEZONE,
       p.SCHEDULE_START_DATE, p.CATCHUP, p.MAX_CATCHUP_RUNS, p.OVERLAP_POLICY, p.CREATED_DATE, p.MAX_PARALLEL_TASKS,
       (SELECT MAX(r.RUN_KEY) FROM {AUD_PIPELINES_RUN_LOG} r
         WHERE r.PIPELINE_ID = p.PIPELINE_ID AND r.TRIGGER_KIND = 'SCHEDULE') AS LAST_TICK_KEY,
       (SELECT COUNT(*) FROM {AUD_PIPELINE_PAUSES} z
         WHERE z.PIPELINE_ID = p.PIPELINE_ID AND z.RESUMED_AT IS NULL) AS PAUSED
  FROM {CFG_PIPELINES} p
  JOIN {CFG_PROJECTS} pr ON pr.PROJECT_ID = p.PROJECT_ID
 WHERE p.ACTIVE_FLAG = 'Y' AND pr.ACTIVE_FLAG = 'Y' AND p.RUN_SCHEDULE IS NOT NULL AND p.RUN_SCHEDULE <> ''
 ORDER BY p.PIPELINE_CODE;

-- name: admissible_runs :many
-- The oldest QUEUED run of each pipeline that has no IN-PROGRESS run: the next the server admits.
SELECT r.PIPELINE_RUN_ID, r.PIPELINE_ID, p.PIPELINE_CODE, p.MAX_PARALLEL_TASKS, r.RUN_KEY
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID
 WHERE r.STATUS = 'QUEUED'
   AND r.PIPELINE_RUN_ID = (SELECT MIN(q.PIPELINE_RUN_ID) FROM {AUD_PIPELINES_RUN_LOG} q
                             WHERE q.PIPELINE_ID = r.PIPELINE_ID AND q.STATUS = 'QUEUED')
   AND NOT EXISTS (SELECT 1 FROM {AUD_PIPELINES_RUN_LOG} i
                    WHERE i.PIPELINE_ID = r.PIPELINE_ID AND i.STATUS = 'IN-PROGRESS')
 ORDER BY p.PRIORITY DESC, r.PIPELINE_RUN_ID;

-- name: unowned_runs :many
-- IN-PROGRESS runs nobody supervises: never owned (admitted by another caller), released, or whose owner's lease
-- has expired. The server takes them over with start_run, which decides.
SELECT r.PIPELINE_RUN_ID, r.PIPELINE_ID, p.PIPELINE_CODE, p.MAX_PARALLEL_TASKS, r.RUN_KEY, r.OWNER_ID
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID
 WHERE r.STATUS = 'IN-PROGRESS' AND (r.OWNER_ID IS NULL OR r.LEASE_EXPIRES_AT < :now)
 ORDER BY p.PRIORITY DESC, r.PIPELINE_RUN_ID;

-- name: run_priority :one
-- The PRIORITY of a run's pipeline (its attempts are queued with it): the server lets its runs claim local slots
-- highest first.
SELECT p.PRIORITY
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID
 WHERE r.PIPELINE_RUN_ID = :run_id;

-- name: server_queue_depth :one
-- Attempts waiting for a slot, and runs waiting to be admitted.
SELECT (SELECT COUNT(*) FROM {AUD_TASK_ATTEMPTS} WHERE STATUS = 'QUEUED') AS QUEUED_ATTEMPTS,
       (SELECT COUNT(*) FROM {AUD_PIPELINES_RUN_LOG} WHERE STATUS = 'QUEUED') AS QUEUED_RUNS,
       (SELECT COUNT(*) FROM {AUD_PIPELINES_RUN_LOG} WHERE STATUS = 'IN-PROGRESS') AS ACTIVE_RUNS;

-- name: pipeline_last_run :one
SELECT PIPELINE_RUN_ID, RUN_KEY, STATUS, TRIGGER_KIND, RUN_DATE
  FROM {AUD_PIPELINES_RUN_LOG}
 WHERE PIPELINE_ID = :pipeline_id
 ORDER BY PIPELINE_RUN_ID DESC
 LIMIT 1;

-- name: engine_schema_version :one
-- The newest engine migration applied (repeatable objects, R:..., left out): what GET /api/v1/health reports.
SELECT MAX(VERSION) AS VERSION
  FROM {SCHEMA_MIGRATIONS}
 WHERE STREAM = 'ENGINE' AND VERSION NOT LIKE 'R:%';
