-- Reads of etl-craft engine copy: what the source Engine DB's next runs need, and whether a target is fresh.
-- {TABLE} names are qualified for the Engine DB's dialect by etlcraft.engine.queries; binds are :name.

-- name: copy_unended_runs :many
-- Runs that have not ended: a move while one goes on would leave its offsets behind.
SELECT r.PIPELINE_RUN_ID, p.PIPELINE_CODE, r.RUN_KEY, r.STATUS
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID
 WHERE r.STATUS IN ('QUEUED', 'IN-PROGRESS')
 ORDER BY r.PIPELINE_RUN_ID;

-- name: copy_project_ledger :many
SELECT VERSION, CHECKSUM FROM {SCHEMA_MIGRATIONS} WHERE STREAM = 'PROJECT' ORDER BY VERSION;

-- name: copy_offsets :many
-- Each task's last offset, with the codes that name its task in another Engine DB, and where it came from: an
-- attempt of this database, or (carried here before) the database and attempt that stored it.
SELECT o.TASK_ID, p.PIPELINE_CODE, t.TASK_CODE, t.ACTIVE_FLAG AS TASK_ACTIVE, p.ACTIVE_FLAG AS PIPELINE_ACTIVE,
       o.OFFSET_TYPE, o.OFFSET_VALUE, o.STORED_AT, o.ATTEMPT_ID, o.SOURCE_ENGINE_ID, o.SOURCE_ATTEMPT_ID
  FROM {AUD_TASK_OFFSETS} o
  JOIN {CFG_TASKS} t ON t.TASK_ID = o.TASK_ID
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = t.PIPELINE_ID
 ORDER BY p.PIPELINE_CODE, t.TASK_CODE, o.TASK_ID;

-- name: copy_hash_versions :many
SELECT TARGET_OBJECT, HASH_VERSION FROM {AUD_TARGET_HASH_VERSION} ORDER BY TARGET_OBJECT;

-- name: copy_open_pauses :many
-- The pauses still open, of pipelines that are switched on.
SELECT p.PIPELINE_CODE, z.PAUSED_AT, z.PAUSED_BY, z.PAUSE_REASON
  FROM {AUD_PIPELINE_PAUSES} z
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = z.PIPELINE_ID
 WHERE z.RESUMED_AT IS NULL AND p.ACTIVE_FLAG = 'Y'
 ORDER BY p.PIPELINE_CODE;

-- name: copy_active_tasks :many
SELECT t.TASK_ID, p.PIPELINE_CODE, t.TASK_CODE
  FROM {CFG_TASKS} t
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = t.PIPELINE_ID
 WHERE t.ACTIVE_FLAG = 'Y' AND p.ACTIVE_FLAG = 'Y';

-- name: copy_active_pipelines :many
SELECT PIPELINE_ID, PIPELINE_CODE FROM {CFG_PIPELINES} WHERE ACTIVE_FLAG = 'Y';
