-- Reads for etl-craft explain: one task of one run, its graph, attempts, gate decisions and retry parameters.
-- {TABLE} names are qualified for the Engine DB's dialect by etlcraft.engine.queries; binds are :name.

-- name: explain_task :one
-- The active task of a pipeline with this code, with its run condition.
SELECT TASK_ID, TASK_CODE, RUN_CONDITION FROM {CFG_TASKS}
 WHERE PIPELINE_ID = :pipeline_id AND TASK_CODE = :task_code AND ACTIVE_FLAG = 'Y';

-- name: explain_task_run :one
SELECT TASK_RUN_ID, STATUS, ATTEMPT_COUNT, ROWS_WRITTEN, START_DATE, END_DATE, ERROR_MESSAGE, MESSAGE
  FROM {AUD_TASK_RUN_LOG}
 WHERE PIPELINE_RUN_ID = :run_id AND TASK_ID = :task_id;

-- name: explain_attempts :many
-- The task's attempts in the run, oldest first.
SELECT a.ATTEMPT_ID, a.ATTEMPT_NUMBER, a.STATUS, a.POOL, a.QUEUED_AT, a.NOT_BEFORE, a.STARTED_AT, a.ENDED_AT,
       a.ERROR_MESSAGE, a.RETRYABLE, a.RETRY_NUMBER
  FROM {AUD_TASK_ATTEMPTS} a
  JOIN {AUD_TASK_RUN_LOG} tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
 WHERE tr.PIPELINE_RUN_ID = :run_id AND tr.TASK_ID = :task_id
 ORDER BY a.ATTEMPT_NUMBER;

-- name: explain_dependencies :many
-- The task's active dependencies (upstream active), with the upstream's task run in this run when the upstream
-- is of the same pipeline (other pipelines' upstreams are judged by the task gate: see explain_decisions).
SELECT d.TASK_DEPENDENCY_ID, d.DEPENDENCY_TYPE, u.TASK_CODE AS UPSTREAM_TASK_CODE,
       up.PIPELINE_CODE AS UPSTREAM_PIPELINE_CODE, CASE WHEN u.PIPELINE_ID = t.PIPELINE_ID THEN 'Y' ELSE 'N' END
       AS SAME_PIPELINE, utr.STATUS AS UPSTREAM_STATUS, utr.ROWS_WRITTEN AS UPSTREAM_ROWS_WRITTEN
  FROM {CFG_TASK_DEPENDENCY} d
  JOIN {CFG_TASKS} t ON t.TASK_ID = d.TASK_ID
  JOIN {CFG_TASKS} u ON u.TASK_ID = d.DEPENDS_ON_TASK_ID AND u.ACTIVE_FLAG = 'Y'
  JOIN {CFG_PIPELINES} up ON up.PIPELINE_ID = u.PIPELINE_ID
  LEFT JOIN {AUD_TASK_RUN_LOG} utr ON utr.PIPELINE_RUN_ID = :run_id AND utr.TASK_ID = u.TASK_ID
       AND u.PIPELINE_ID = t.PIPELINE_ID
 WHERE d.TASK_ID = :task_id AND d.ACTIVE_FLAG = 'Y'
 ORDER BY u.TASK_CODE;

-- name: explain_decisions :many
-- The run's gate decisions that concern the task: the run's pipeline gate, and the task's own cross-pipeline edges.
SELECT g.DECISION_ID, g.PIPELINE_DEPENDENCY_ID, g.TASK_DEPENDENCY_ID, g.RESULT, g.REASON, g.DECIDED_AT,
       g.DECIDED_BY, g.SELECTED_PIPELINE_RUN_ID, g.SELECTED_REVISION,
       COALESCE(pp.PIPELINE_CODE, tp.PIPELINE_CODE) AS UPSTREAM_PIPELINE_CODE, ut.TASK_CODE AS UPSTREAM_TASK_CODE,
       COALESCE(pd.DEPENDENCY_TYPE, td.DEPENDENCY_TYPE) AS DEPENDENCY_TYPE
  FROM {AUD_GATE_DECISIONS} g
  LEFT JOIN {CFG_PIPELINE_DEPENDENCY} pd ON pd.PIPELINE_DEPENDENCY_ID = g.PIPELINE_DEPENDENCY_ID
  LEFT JOIN {CFG_PIPELINES} pp ON pp.PIPELINE_ID = pd.DEPENDS_ON_PIPELINE_ID
  LEFT JOIN {CFG_TASK_DEPENDENCY} td ON td.TASK_DEPENDENCY_ID = g.TASK_DEPENDENCY_ID
  LEFT JOIN {CFG_TASKS} ut ON ut.TASK_ID = td.DEPENDS_ON_TASK_ID
  LEFT JOIN {CFG_PIPELINES} tp ON tp.PIPELINE_ID = ut.PIPELINE_ID
 WHERE g.PIPELINE_RUN_ID = :run_id AND (g.PIPELINE_DEPENDENCY_ID IS NOT NULL OR td.TASK_ID = :task_id)
 ORDER BY g.DECISION_ID;

-- name: explain_gate_wait :one
-- The latest gate wait that concerns the task in the run: its own task gate's, else the run's pipeline gate's.
SELECT w.GATE_WAIT_ID, w.TASK_ID, w.FIRST_CHECK_AT, w.LAST_CHECK_AT, w.NEXT_CHECK_AT, w.WAIT_UNTIL, w.LOOKS,
       w.WAITING_FOR, w.OUTCOME, w.ENDED_AT
  FROM {AUD_GATE_WAITS} w
 WHERE w.PIPELINE_RUN_ID = :run_id AND (w.TASK_ID = :task_id OR w.TASK_ID IS NULL)
 ORDER BY CASE WHEN w.TASK_ID IS NULL THEN 1 ELSE 0 END, w.GATE_WAIT_ID DESC
 LIMIT 1;

-- name: audit_actions :many
-- Every recorded state-changing request since a time, newest first, with the pipeline it concerned.
SELECT a.ACTION_ID, a.STARTED_AT, a.ACTOR, a.ACTOR_KIND, a.HOST, a.COMMAND, a.ARGUMENTS, a.PIPELINE_ID,
       p.PIPELINE_CODE, a.PIPELINE_RUN_ID, t.TASK_CODE
  FROM {AUD_ACTIONS} a
  LEFT JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = a.PIPELINE_ID
  LEFT JOIN {CFG_TASKS} t ON t.TASK_ID = a.TASK_ID
 WHERE a.STARTED_AT >= :since
 ORDER BY a.STARTED_AT DESC, a.ACTION_ID DESC;

-- name: audit_metadata_changes :many
-- Every recorded change of a CFG_ row since a time, newest first, with the row's images.
SELECT CHANGE_ID, CHANGED_AT, ACTOR, ACTOR_KIND, TABLE_NAME, ROW_KEY, OPERATION, BEFORE_JSON, AFTER_JSON, MIGRATION
  FROM {AUD_METADATA_CHANGES}
 WHERE CHANGED_AT >= :since
 ORDER BY CHANGED_AT DESC, CHANGE_ID DESC;

-- name: audit_pipeline_task_ids :many
-- Every task of a pipeline, switched off or not: the changes to their rows concern the pipeline.
SELECT TASK_ID FROM {CFG_TASKS} WHERE PIPELINE_ID = :pipeline_id;
