-- Reads for the operator controls (mark, cancel, pause, resume, reopen): the views each operation returns.
-- {TABLE} names are qualified for the Engine DB's dialect by etlcraft.engine.queries; binds are :name.

-- name: control_run :one
-- A run as an operation reports it: identity, status, revision, who ended it and its message.
SELECT r.PIPELINE_RUN_ID, p.PIPELINE_CODE, r.PIPELINE_ID, r.RUN_KEY, r.TRIGGER_KIND, r.RUN_DATE, r.STATUS,
       r.OUTPUT_REVISION, r.REPAIR_PENDING, r.OWNER_ID, r.CANCEL_REQUESTED_AT, r.END_DATE, r.ENDED_BY, r.MESSAGE
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID
 WHERE r.PIPELINE_RUN_ID = :run_id;

-- name: control_run_candidates :many
-- The runs of a pipeline that have not ended: the ones an operation may act on when no run is named.
SELECT PIPELINE_RUN_ID, RUN_KEY, TRIGGER_KIND, RUN_DATE, STATUS
  FROM {AUD_PIPELINES_RUN_LOG}
 WHERE PIPELINE_ID = :pipeline_id AND STATUS IN ('QUEUED', 'IN-PROGRESS')
 ORDER BY PIPELINE_RUN_ID;

-- name: control_run_by_key :one
SELECT PIPELINE_RUN_ID FROM {AUD_PIPELINES_RUN_LOG} WHERE PIPELINE_ID = :pipeline_id AND RUN_KEY = :run_key;

-- name: control_task :many
-- The active task of a pipeline with this code (one row, or none).
SELECT TASK_ID, TASK_CODE FROM {CFG_TASKS}
 WHERE PIPELINE_ID = :pipeline_id AND TASK_CODE = :task_code AND ACTIVE_FLAG = 'Y';

-- name: control_task_codes :many
SELECT TASK_CODE FROM {CFG_TASKS} WHERE PIPELINE_ID = :pipeline_id AND ACTIVE_FLAG = 'Y' ORDER BY TASK_CODE;

-- name: control_task_run :one
-- A task's run in a run, with its attempts (the latest one first in LATEST_ATTEMPT_*).
SELECT tr.TASK_RUN_ID, t.TASK_CODE, tr.STATUS, tr.ATTEMPT_COUNT, tr.ROWS_WRITTEN, tr.END_DATE, tr.MESSAGE,
       tr.ERROR_MESSAGE, a.ATTEMPT_ID AS LATEST_ATTEMPT_ID, a.STATUS AS LATEST_ATTEMPT_STATUS
  FROM {AUD_TASK_RUN_LOG} tr
  JOIN {CFG_TASKS} t ON t.TASK_ID = tr.TASK_ID
  LEFT JOIN {AUD_TASK_ATTEMPTS} a ON a.TASK_RUN_ID = tr.TASK_RUN_ID AND a.ATTEMPT_NUMBER = tr.ATTEMPT_COUNT
 WHERE tr.PIPELINE_RUN_ID = :run_id AND tr.TASK_ID = :task_id;

-- name: control_run_attempts :many
-- Every attempt of a run, oldest first: what a cancel or a mark did to each.
SELECT a.ATTEMPT_ID, t.TASK_CODE, a.STATUS
  FROM {AUD_TASK_ATTEMPTS} a
  JOIN {AUD_TASK_RUN_LOG} tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
  JOIN {CFG_TASKS} t ON t.TASK_ID = tr.TASK_ID
 WHERE tr.PIPELINE_RUN_ID = :run_id
 ORDER BY a.ATTEMPT_ID;

-- name: control_pause :one
-- A pause of a pipeline by its id.
SELECT z.PAUSE_ID, z.PAUSED_AT, z.PAUSED_BY, z.PAUSE_REASON, z.RESUMED_AT, z.RESUMED_BY, z.RESUME_REASON
  FROM {AUD_PIPELINE_PAUSES} z
 WHERE z.PAUSE_ID = :pause_id;
