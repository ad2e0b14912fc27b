-- 080_views: the AUD_V_ views, read-only views of the run history for people and BI tools.
-- Their descriptions and columns come from sql/views.yaml: on PostgreSQL each view and each column gets its
-- COMMENT; each SELECT below names its columns as the spec does, in its order (the view tests check both
-- dialects). The views read base tables only, never one another, so each can be dropped and created alone.

DO $drop$
DECLARE
  v_found text[] := ARRAY(
    SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
     WHERE a.attrelid = to_regclass('etl_craft.aud_v_runs') AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum);
BEGIN
  IF cardinality(v_found) > 0 AND v_found <> (ARRAY[
      'pipeline_run_id bigint',
      'project_code character varying(128)',
      'pipeline_id bigint',
      'pipeline_code character varying(128)',
      'run_key character varying(256)',
      'trigger_kind character varying(16)',
      'run_date date',
      'status character varying(16)',
      'queued_at timestamp with time zone',
      'started_at timestamp with time zone',
      'ended_at timestamp with time zone',
      'duration_seconds numeric',
      'task_runs bigint',
      'task_runs_succeeded bigint',
      'task_runs_failed bigint',
      'task_runs_skipped bigint',
      'task_runs_cancelled bigint',
      'task_runs_in_progress bigint',
      'sla_status character varying(16)',
      'output_revision integer',
      'started_by character varying(128)',
      'started_by_kind character varying(16)',
      'ended_by character varying(128)',
      'ended_by_kind character varying(16)',
      'reason text',
      'message text'
    ]::text[])[1:cardinality(v_found)] THEN
    DROP VIEW etl_craft.AUD_V_RUNS;
  END IF;
END
$drop$;
CREATE OR REPLACE VIEW etl_craft.AUD_V_RUNS AS
SELECT r.PIPELINE_RUN_ID, pr.PROJECT_CODE, r.PIPELINE_ID, p.PIPELINE_CODE, r.RUN_KEY, r.TRIGGER_KIND, r.RUN_DATE,
       r.STATUS, r.QUEUED_AT, r.START_DATE AS STARTED_AT, r.END_DATE AS ENDED_AT,
       ROUND(EXTRACT(EPOCH FROM (r.END_DATE - r.START_DATE)), 3)
         AS DURATION_SECONDS,
       COALESCE(c.TASK_RUNS, 0) AS TASK_RUNS,
       COALESCE(c.SUCCEEDED, 0) AS TASK_RUNS_SUCCEEDED,
       COALESCE(c.FAILED, 0) AS TASK_RUNS_FAILED,
       COALESCE(c.SKIPPED, 0) AS TASK_RUNS_SKIPPED,
       COALESCE(c.CANCELLED, 0) AS TASK_RUNS_CANCELLED,
       COALESCE(c.IN_PROGRESS, 0) AS TASK_RUNS_IN_PROGRESS,
       r.SLA_STATUS, r.OUTPUT_REVISION, r.STARTED_BY, r.STARTED_BY_KIND, r.ENDED_BY, r.ENDED_BY_KIND, r.REASON,
       r.MESSAGE
  FROM etl_craft.AUD_PIPELINES_RUN_LOG r
  JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
  JOIN etl_craft.CFG_PROJECTS pr ON pr.PROJECT_ID = p.PROJECT_ID
  LEFT JOIN (SELECT PIPELINE_RUN_ID, COUNT(*) AS TASK_RUNS,
                    SUM(CASE WHEN STATUS = 'SUCCESS' THEN 1 ELSE 0 END) AS SUCCEEDED,
                    SUM(CASE WHEN STATUS = 'FAILED' THEN 1 ELSE 0 END) AS FAILED,
                    SUM(CASE WHEN STATUS = 'SKIPPED' THEN 1 ELSE 0 END) AS SKIPPED,
                    SUM(CASE WHEN STATUS = 'CANCELLED' THEN 1 ELSE 0 END) AS CANCELLED,
                    SUM(CASE WHEN STATUS = 'IN-PROGRESS' THEN 1 ELSE 0 END) AS IN_PROGRESS
               FROM etl_craft.AUD_TASK_RUN_LOG
              GROUP BY PIPELINE_RUN_ID) c ON c.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID;
COMMENT ON VIEW etl_craft.AUD_V_RUNS IS 'One row per run of a pipeline: what triggered it, its status and times, how long it took, how many of its task runs ended in each status, its SLA judgement, and who started and who ended it.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.PIPELINE_RUN_ID IS 'The run (AUD_PIPELINES_RUN_LOG.PIPELINE_RUN_ID).';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.PROJECT_CODE IS 'The code of the pipeline''s project.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.PIPELINE_ID IS 'The pipeline (CFG_PIPELINES.PIPELINE_ID).';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.PIPELINE_CODE IS 'The pipeline''s code.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.RUN_KEY IS 'The run''s identity within its pipeline, for example backfill:2026-01-02, or manual: and a UUID for a manual run.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.TRIGGER_KIND IS 'How the run came about: SCHEDULE, MANUAL, BACKFILL, ORCHESTRATOR or STAND_IN.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.RUN_DATE IS 'The date the run runs as of (its logical date).';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.STATUS IS 'QUEUED, IN-PROGRESS, SUCCESS, FAILED, SKIPPED or CANCELLED.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.QUEUED_AT IS 'When the run was created.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.STARTED_AT IS 'When the run started; NULL while it waits QUEUED, and for a run cancelled before it started.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.ENDED_AT IS 'When the run ended; NULL while it is QUEUED or IN-PROGRESS.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.DURATION_SECONDS IS 'Seconds from STARTED_AT to ENDED_AT, to the millisecond; NULL until the run has both.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.TASK_RUNS IS 'How many task runs the run has (one per task that was queued, skipped or marked in it).';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.TASK_RUNS_SUCCEEDED IS 'Its task runs whose status is SUCCESS.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.TASK_RUNS_FAILED IS 'Its task runs whose status is FAILED (their retries used up, or not retryable).';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.TASK_RUNS_SKIPPED IS 'Its task runs whose status is SKIPPED.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.TASK_RUNS_CANCELLED IS 'Its task runs whose status is CANCELLED.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.TASK_RUNS_IN_PROGRESS IS 'Its task runs whose status is IN-PROGRESS (an attempt queued, claimed or running, or a retry due).';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.SLA_STATUS IS 'MET or BREACHED, judged once when the run ends against CFG_PIPELINES.SLA_MINUTES; NULL without an SLA or before the judgement.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.OUTPUT_REVISION IS 'How many times the run has published output; a repaired run publishes the next revision.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.STARTED_BY IS 'The actor who created the run.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.STARTED_BY_KIND IS 'Its kind: HUMAN, SCHEDULE, ORCHESTRATOR, WORKER or SYSTEM.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.ENDED_BY IS 'The actor who ended the run: etl-craft when it finalized it, an operator who cancelled or marked it; NULL while it has not ended.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.ENDED_BY_KIND IS 'The kind of ENDED_BY.';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.REASON IS 'The reason given when the run was started (operator runs, backfills).';
COMMENT ON COLUMN etl_craft.AUD_V_RUNS.MESSAGE IS 'A readable summary of the run''s outcome, with the reason given to cancel, mark or reopen it.';

DO $drop$
DECLARE
  v_found text[] := ARRAY(
    SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
     WHERE a.attrelid = to_regclass('etl_craft.aud_v_task_runs') AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum);
BEGIN
  IF cardinality(v_found) > 0 AND v_found <> (ARRAY[
      'task_run_id bigint',
      'pipeline_run_id bigint',
      'project_code character varying(128)',
      'pipeline_code character varying(128)',
      'run_key character varying(256)',
      'run_date date',
      'task_id bigint',
      'task_code character varying(128)',
      'handler character varying(16)',
      'status character varying(16)',
      'attempt_count integer',
      'first_started_at timestamp with time zone',
      'ended_at timestamp with time zone',
      'duration_seconds numeric',
      'source_count bigint',
      'insert_count bigint',
      'update_count bigint',
      'delete_count bigint',
      'duplicate_count bigint',
      'rows_written bigint',
      'target_count bigint',
      'error_message text',
      'message text'
    ]::text[])[1:cardinality(v_found)] THEN
    DROP VIEW etl_craft.AUD_V_TASK_RUNS;
  END IF;
END
$drop$;
CREATE OR REPLACE VIEW etl_craft.AUD_V_TASK_RUNS AS
SELECT tr.TASK_RUN_ID, tr.PIPELINE_RUN_ID, pr.PROJECT_CODE, p.PIPELINE_CODE, r.RUN_KEY, r.RUN_DATE, tr.TASK_ID,
       t.TASK_CODE, t.HANDLER, tr.STATUS, tr.ATTEMPT_COUNT, a.FIRST_STARTED_AT, tr.END_DATE AS ENDED_AT,
       ROUND(EXTRACT(EPOCH FROM (tr.END_DATE - a.FIRST_STARTED_AT)), 3)
         AS DURATION_SECONDS,
       tr.SOURCE_COUNT, tr.INSERT_COUNT, tr.UPDATE_COUNT, tr.DELETE_COUNT, tr.DUPLICATE_COUNT, tr.ROWS_WRITTEN,
       tr.TARGET_COUNT, tr.ERROR_MESSAGE, tr.MESSAGE
  FROM etl_craft.AUD_TASK_RUN_LOG tr
  JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = tr.PIPELINE_RUN_ID
  JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
  JOIN etl_craft.CFG_PROJECTS pr ON pr.PROJECT_ID = p.PROJECT_ID
  JOIN etl_craft.CFG_TASKS t ON t.TASK_ID = tr.TASK_ID
  LEFT JOIN (SELECT TASK_RUN_ID, MIN(STARTED_AT) AS FIRST_STARTED_AT
               FROM etl_craft.AUD_TASK_ATTEMPTS
              GROUP BY TASK_RUN_ID) a ON a.TASK_RUN_ID = tr.TASK_RUN_ID;
COMMENT ON VIEW etl_craft.AUD_V_TASK_RUNS IS 'One row per task run (a task in a run): its status, its attempts, when its first attempt started and when it ended, the rows it wrote and its error.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.TASK_RUN_ID IS 'The task run (AUD_TASK_RUN_LOG.TASK_RUN_ID).';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.PIPELINE_RUN_ID IS 'Its run (AUD_V_RUNS.PIPELINE_RUN_ID).';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.PROJECT_CODE IS 'The code of the pipeline''s project.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.PIPELINE_CODE IS 'The run''s pipeline.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.RUN_KEY IS 'The run''s key.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.RUN_DATE IS 'The run''s logical date.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.TASK_ID IS 'The task (CFG_TASKS.TASK_ID).';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.TASK_CODE IS 'The task''s code.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.HANDLER IS 'What runs the task: SQL, PYTHON, BUSINESS_RULES or EMAIL_ALERT.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.STATUS IS 'IN-PROGRESS, SUCCESS, FAILED, SKIPPED or CANCELLED, the summary of its latest attempt.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.ATTEMPT_COUNT IS 'Attempts made so far, retries included; 0 for a task run skipped or marked without one.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.FIRST_STARTED_AT IS 'When the process of its first attempt started: the earliest STARTED_AT of its attempts (not when the latest attempt was queued). NULL when no attempt has started.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.ENDED_AT IS 'When the task run ended; NULL while it is IN-PROGRESS.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.DURATION_SECONDS IS 'Seconds from FIRST_STARTED_AT to ENDED_AT, to the millisecond, retries and their delays included; NULL until it has both.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.SOURCE_COUNT IS 'Rows the task''s source (its SELECT or script) produced, as its latest attempt recorded.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.INSERT_COUNT IS 'Rows inserted into the target.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.UPDATE_COUNT IS 'Rows updated in the target.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.DELETE_COUNT IS 'Rows deleted from the target.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.DUPLICATE_COUNT IS 'Duplicate source rows found and set aside.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.ROWS_WRITTEN IS 'Rows the task wrote in all (what a HAS_DATA dependency tests).';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.TARGET_COUNT IS 'Rows in the target after the task.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.ERROR_MESSAGE IS 'The error its latest failed attempt ended with.';
COMMENT ON COLUMN etl_craft.AUD_V_TASK_RUNS.MESSAGE IS 'A readable note on its current outcome, for example why the task was skipped or cancelled; cleared when the task is queued again or succeeds.';

DO $drop$
DECLARE
  v_found text[] := ARRAY(
    SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
     WHERE a.attrelid = to_regclass('etl_craft.aud_v_attempts') AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum);
BEGIN
  IF cardinality(v_found) > 0 AND v_found <> (ARRAY[
      'attempt_id bigint',
      'task_run_id bigint',
      'pipeline_run_id bigint',
      'pipeline_code character varying(128)',
      'run_key character varying(256)',
      'task_code character varying(128)',
      'attempt_number integer',
      'retry_number integer',
      'status character varying(16)',
      'pool character varying(128)',
      'slot_kind character varying(16)',
      'owner_id character varying(256)',
      'host character varying(256)',
      'pid integer',
      'queued_at timestamp with time zone',
      'claimed_at timestamp with time zone',
      'started_at timestamp with time zone',
      'ended_at timestamp with time zone',
      'duration_seconds numeric',
      'exit_code integer',
      'retryable character varying(1)',
      'error_message text',
      'log_path character varying(1024)'
    ]::text[])[1:cardinality(v_found)] THEN
    DROP VIEW etl_craft.AUD_V_ATTEMPTS;
  END IF;
END
$drop$;
CREATE OR REPLACE VIEW etl_craft.AUD_V_ATTEMPTS AS
SELECT a.ATTEMPT_ID, a.TASK_RUN_ID, tr.PIPELINE_RUN_ID, p.PIPELINE_CODE, r.RUN_KEY, t.TASK_CODE, a.ATTEMPT_NUMBER,
       a.RETRY_NUMBER, a.STATUS, a.POOL, a.SLOT_KIND, a.OWNER_ID, a.HOST, a.PID, a.QUEUED_AT, a.CLAIMED_AT,
       a.STARTED_AT, a.ENDED_AT, ROUND(EXTRACT(EPOCH FROM (a.ENDED_AT - a.STARTED_AT)), 3)
         AS DURATION_SECONDS,
       a.EXIT_CODE, a.RETRYABLE, a.ERROR_MESSAGE, a.LOG_PATH
  FROM etl_craft.AUD_TASK_ATTEMPTS a
  JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
  JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = tr.PIPELINE_RUN_ID
  JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
  JOIN etl_craft.CFG_TASKS t ON t.TASK_ID = tr.TASK_ID;
COMMENT ON VIEW etl_craft.AUD_V_ATTEMPTS IS 'One row per attempt (one execution of a task run, retries included): where it was queued, who claimed it, where its process ran, its times, and how it ended.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.ATTEMPT_ID IS 'The attempt (AUD_TASK_ATTEMPTS.ATTEMPT_ID).';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.TASK_RUN_ID IS 'Its task run (AUD_V_TASK_RUNS.TASK_RUN_ID).';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.PIPELINE_RUN_ID IS 'Its run (AUD_V_RUNS.PIPELINE_RUN_ID).';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.PIPELINE_CODE IS 'The run''s pipeline.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.RUN_KEY IS 'The run''s key.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.TASK_CODE IS 'The task''s code.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.ATTEMPT_NUMBER IS '1, 2, ... within the task run.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.RETRY_NUMBER IS 'Which retry of its task run the attempt is: 0 for the first attempt, one more than the attempt it retries; an attempt queued again after a stop keeps the number of the one it replaces.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.STATUS IS 'QUEUED, CLAIMED, RUNNING, SUCCESS, FAILED, TIMED_OUT, CANCELLED or LOST.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.POOL IS 'The pool the attempt was queued in.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.SLOT_KIND IS 'ingestion (Python tasks) or warehouse.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.OWNER_ID IS 'The process that claimed the attempt; NULL while it is QUEUED.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.HOST IS 'The host its task process ran on.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.PID IS 'The process id of its task process.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.QUEUED_AT IS 'When the attempt was queued.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.CLAIMED_AT IS 'When an owner claimed it.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.STARTED_AT IS 'When its task process started.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.ENDED_AT IS 'When it ended; NULL while it is QUEUED, CLAIMED or RUNNING.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.DURATION_SECONDS IS 'Seconds from STARTED_AT to ENDED_AT, to the millisecond; NULL until it has both.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.EXIT_CODE IS 'The exit code of its task process.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.RETRYABLE IS 'N when the error it failed with cannot succeed on a retry (a configuration error, for example), Y when it can; NULL otherwise.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.ERROR_MESSAGE IS 'The error it ended with.';
COMMENT ON COLUMN etl_craft.AUD_V_ATTEMPTS.LOG_PATH IS 'Where its log file is kept.';

DO $drop$
DECLARE
  v_found text[] := ARRAY(
    SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
     WHERE a.attrelid = to_regclass('etl_craft.aud_v_gate_decisions') AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum);
BEGIN
  IF cardinality(v_found) > 0 AND v_found <> (ARRAY[
      'decision_id bigint',
      'pipeline_run_id bigint',
      'pipeline_code character varying(128)',
      'run_key character varying(256)',
      'task_run_id bigint',
      'task_code character varying(128)',
      'attempt_id bigint',
      'dependency_kind character varying(8)',
      'pipeline_dependency_id bigint',
      'task_dependency_id bigint',
      'dependency_type character varying(16)',
      'upstream_pipeline_code character varying(128)',
      'upstream_task_code character varying(128)',
      'result character varying(16)',
      'selected_pipeline_run_id bigint',
      'selected_run_key character varying(256)',
      'selected_task_run_id bigint',
      'selected_revision integer',
      'reason text',
      'decided_at timestamp with time zone',
      'decided_by character varying(128)',
      'decided_by_kind character varying(16)'
    ]::text[])[1:cardinality(v_found)] THEN
    DROP VIEW etl_craft.AUD_V_GATE_DECISIONS;
  END IF;
END
$drop$;
CREATE OR REPLACE VIEW etl_craft.AUD_V_GATE_DECISIONS AS
SELECT d.DECISION_ID, d.PIPELINE_RUN_ID, p.PIPELINE_CODE, r.RUN_KEY, d.TASK_RUN_ID, dt.TASK_CODE, d.ATTEMPT_ID,
       CAST(CASE WHEN d.PIPELINE_DEPENDENCY_ID IS NOT NULL THEN 'PIPELINE' ELSE 'TASK' END AS VARCHAR(8))
         AS DEPENDENCY_KIND,
       d.PIPELINE_DEPENDENCY_ID, d.TASK_DEPENDENCY_ID,
       COALESCE(pd.DEPENDENCY_TYPE, td.DEPENDENCY_TYPE) AS DEPENDENCY_TYPE,
       COALESCE(up.PIPELINE_CODE, utp.PIPELINE_CODE) AS UPSTREAM_PIPELINE_CODE,
       ut.TASK_CODE AS UPSTREAM_TASK_CODE,
       d.RESULT, d.SELECTED_PIPELINE_RUN_ID, sr.RUN_KEY AS SELECTED_RUN_KEY, d.SELECTED_TASK_RUN_ID,
       d.SELECTED_REVISION, d.REASON, d.DECIDED_AT, d.DECIDED_BY, d.DECIDED_BY_KIND
  FROM etl_craft.AUD_GATE_DECISIONS d
  JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = d.PIPELINE_RUN_ID
  JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
  LEFT JOIN etl_craft.CFG_PIPELINE_DEPENDENCY pd ON pd.PIPELINE_DEPENDENCY_ID = d.PIPELINE_DEPENDENCY_ID
  LEFT JOIN etl_craft.CFG_PIPELINES up ON up.PIPELINE_ID = pd.DEPENDS_ON_PIPELINE_ID
  LEFT JOIN etl_craft.CFG_TASK_DEPENDENCY td ON td.TASK_DEPENDENCY_ID = d.TASK_DEPENDENCY_ID
  LEFT JOIN etl_craft.CFG_TASKS dt ON dt.TASK_ID = td.TASK_ID
  LEFT JOIN etl_craft.CFG_TASKS ut ON ut.TASK_ID = td.DEPENDS_ON_TASK_ID
  LEFT JOIN etl_craft.CFG_PIPELINES utp ON utp.PIPELINE_ID = ut.PIPELINE_ID
  LEFT JOIN etl_craft.AUD_PIPELINES_RUN_LOG sr ON sr.PIPELINE_RUN_ID = d.SELECTED_PIPELINE_RUN_ID;
COMMENT ON VIEW etl_craft.AUD_V_GATE_DECISIONS IS 'One row per dependency judged when a run was admitted or an attempt queued: the deciding run, the dependency (a pipeline or a task dependency) with its upstream pipeline and task, the result, the upstream run it selected, and why.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.DECISION_ID IS 'The decision (AUD_GATE_DECISIONS.DECISION_ID).';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.PIPELINE_RUN_ID IS 'The deciding (downstream) run.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.PIPELINE_CODE IS 'The deciding run''s pipeline.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.RUN_KEY IS 'The deciding run''s key.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.TASK_RUN_ID IS 'The downstream task run, for a task dependency; NULL for a decision about the whole run.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.TASK_CODE IS 'The downstream task, for a task dependency; NULL for a pipeline dependency.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.ATTEMPT_ID IS 'The downstream attempt the decision was taken for; NULL for a run-level decision.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.DEPENDENCY_KIND IS 'PIPELINE for a pipeline dependency (CFG_PIPELINE_DEPENDENCY), TASK for a task dependency (CFG_TASK_DEPENDENCY).';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.PIPELINE_DEPENDENCY_ID IS 'The pipeline dependency judged; NULL for a task dependency.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.TASK_DEPENDENCY_ID IS 'The task dependency judged; NULL for a pipeline dependency.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.DEPENDENCY_TYPE IS 'When the dependency is met: SUCCESS, FAILURE, HAS_DATA or ALWAYS.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.UPSTREAM_PIPELINE_CODE IS 'The upstream pipeline (of the upstream task, for a task dependency).';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.UPSTREAM_TASK_CODE IS 'The upstream task, for a task dependency; NULL for a pipeline dependency.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.RESULT IS 'SATISFIED, UNSATISFIED, or BYPASSED (not judged, on an operator''s request).';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.SELECTED_PIPELINE_RUN_ID IS 'The upstream run that met the dependency; NULL unless SATISFIED.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.SELECTED_RUN_KEY IS 'That upstream run''s key.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.SELECTED_TASK_RUN_ID IS 'The upstream task run that met a task dependency.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.SELECTED_REVISION IS 'The upstream run''s output revision that was selected.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.REASON IS 'Why, in words.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.DECIDED_AT IS 'When the dependency was judged.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.DECIDED_BY IS 'The actor who judged it.';
COMMENT ON COLUMN etl_craft.AUD_V_GATE_DECISIONS.DECIDED_BY_KIND IS 'The kind of DECIDED_BY.';

DO $drop$
DECLARE
  v_found text[] := ARRAY(
    SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
     WHERE a.attrelid = to_regclass('etl_craft.aud_v_operator_actions') AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum);
BEGIN
  IF cardinality(v_found) > 0 AND v_found <> (ARRAY[
      'source_table character varying(64)',
      'source_id bigint',
      'action character varying(16)',
      'acted_at timestamp with time zone',
      'actor character varying(128)',
      'actor_kind character varying(16)',
      'pipeline_id bigint',
      'pipeline_code character varying(128)',
      'pipeline_run_id bigint',
      'run_key character varying(256)',
      'task_run_id bigint',
      'task_code character varying(128)',
      'attempt_id bigint',
      'from_status character varying(16)',
      'to_status character varying(16)',
      'rows_written bigint',
      'reason text'
    ]::text[])[1:cardinality(v_found)] THEN
    DROP VIEW etl_craft.AUD_V_OPERATOR_ACTIONS;
  END IF;
END
$drop$;
CREATE OR REPLACE VIEW etl_craft.AUD_V_OPERATOR_ACTIONS AS
SELECT CAST('AUD_RUN_INTERVENTIONS' AS VARCHAR(64)) AS SOURCE_TABLE, i.INTERVENTION_ID AS SOURCE_ID,
       i.INTERVENTION AS ACTION, i.REQUESTED_AT AS ACTED_AT, i.REQUESTED_BY AS ACTOR,
       i.REQUESTED_BY_KIND AS ACTOR_KIND, r.PIPELINE_ID, p.PIPELINE_CODE, i.PIPELINE_RUN_ID, r.RUN_KEY,
       tr.TASK_RUN_ID, t.TASK_CODE, i.ATTEMPT_ID, i.FROM_STATUS, i.TO_STATUS, i.ROWS_WRITTEN, i.REASON
  FROM etl_craft.AUD_RUN_INTERVENTIONS i
  JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = i.PIPELINE_RUN_ID
  JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
  LEFT JOIN etl_craft.AUD_TASK_ATTEMPTS a ON a.ATTEMPT_ID = i.ATTEMPT_ID
  LEFT JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = COALESCE(i.TASK_RUN_ID, a.TASK_RUN_ID)
  LEFT JOIN etl_craft.CFG_TASKS t ON t.TASK_ID = tr.TASK_ID
UNION ALL
SELECT CAST('AUD_PIPELINE_PAUSES' AS VARCHAR(64)), s.PAUSE_ID, CAST('PAUSE' AS VARCHAR(16)), s.PAUSED_AT,
       s.PAUSED_BY, s.PAUSED_BY_KIND, s.PIPELINE_ID, p.PIPELINE_CODE,
       NULL, CAST(NULL AS VARCHAR(256)), NULL, CAST(NULL AS VARCHAR(128)), NULL, CAST(NULL AS VARCHAR(16)),
       CAST(NULL AS VARCHAR(16)), NULL, s.PAUSE_REASON
  FROM etl_craft.AUD_PIPELINE_PAUSES s
  JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = s.PIPELINE_ID
UNION ALL
SELECT CAST('AUD_PIPELINE_PAUSES' AS VARCHAR(64)), s.PAUSE_ID, CAST('RESUME' AS VARCHAR(16)), s.RESUMED_AT,
       s.RESUMED_BY, s.RESUMED_BY_KIND, s.PIPELINE_ID, p.PIPELINE_CODE,
       NULL, CAST(NULL AS VARCHAR(256)), NULL, CAST(NULL AS VARCHAR(128)), NULL, CAST(NULL AS VARCHAR(16)),
       CAST(NULL AS VARCHAR(16)), NULL, s.RESUME_REASON
  FROM etl_craft.AUD_PIPELINE_PAUSES s
  JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = s.PIPELINE_ID
 WHERE s.RESUMED_AT IS NOT NULL;
COMMENT ON VIEW etl_craft.AUD_V_OPERATOR_ACTIONS IS 'One row per operator action on runs and pipelines: each intervention on a run, a task run or an attempt (MARK, CANCEL, REOPEN, RERUN, SKIP, FORCE), each pause and each resume of a pipeline: who, when, on what, from which status to which, and why.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.SOURCE_TABLE IS 'Where the action is recorded: AUD_RUN_INTERVENTIONS or AUD_PIPELINE_PAUSES.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.SOURCE_ID IS 'Its row there: INTERVENTION_ID, or PAUSE_ID (a pause and its resume share one row, so SOURCE_TABLE, SOURCE_ID and ACTION identify an action).';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.ACTION IS 'MARK, CANCEL, REOPEN, RERUN, SKIP, FORCE, PAUSE or RESUME.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.ACTED_AT IS 'When.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.ACTOR IS 'Who.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.ACTOR_KIND IS 'The kind of ACTOR: HUMAN, SCHEDULE, ORCHESTRATOR, WORKER or SYSTEM.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.PIPELINE_ID IS 'The pipeline acted on (the run''s, for an intervention).';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.PIPELINE_CODE IS 'Its code.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.PIPELINE_RUN_ID IS 'The run acted on; NULL for a pause or a resume.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.RUN_KEY IS 'That run''s key.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.TASK_RUN_ID IS 'The task run acted on (the attempt''s, for an action on an attempt); NULL for a whole run.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.TASK_CODE IS 'That task run''s task.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.ATTEMPT_ID IS 'The attempt acted on, when the action concerns one attempt.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.FROM_STATUS IS 'The status before the intervention; NULL for a pause or a resume.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.TO_STATUS IS 'The status after it; NULL for a pause or a resume.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.ROWS_WRITTEN IS 'A row count the operator gave with a mark.';
COMMENT ON COLUMN etl_craft.AUD_V_OPERATOR_ACTIONS.REASON IS 'The reason the operator gave.';

DO $drop$
DECLARE
  v_found text[] := ARRAY(
    SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
     WHERE a.attrelid = to_regclass('etl_craft.aud_v_pipeline_health') AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum);
BEGIN
  IF cardinality(v_found) > 0 AND v_found <> (ARRAY[
      'pipeline_id bigint',
      'project_code character varying(128)',
      'pipeline_code character varying(128)',
      'active_flag character varying(1)',
      'last_run_id bigint',
      'last_run_key character varying(256)',
      'last_run_status character varying(16)',
      'last_run_ended_at timestamp with time zone',
      'runs_ended_30d bigint',
      'runs_succeeded_30d bigint',
      'success_rate_30d numeric',
      'avg_duration_seconds_30d numeric',
      'sla_breaches_30d bigint',
      'runs_in_progress bigint',
      'is_paused character varying(1)',
      'paused_since timestamp with time zone'
    ]::text[])[1:cardinality(v_found)] THEN
    DROP VIEW etl_craft.AUD_V_PIPELINE_HEALTH;
  END IF;
END
$drop$;
CREATE OR REPLACE VIEW etl_craft.AUD_V_PIPELINE_HEALTH AS
SELECT p.PIPELINE_ID, pr.PROJECT_CODE, p.PIPELINE_CODE, p.ACTIVE_FLAG,
       l.PIPELINE_RUN_ID AS LAST_RUN_ID, l.RUN_KEY AS LAST_RUN_KEY, l.STATUS AS LAST_RUN_STATUS,
       l.END_DATE AS LAST_RUN_ENDED_AT,
       COALESCE(w.ENDED, 0) AS RUNS_ENDED_30D,
       COALESCE(w.SUCCEEDED, 0) AS RUNS_SUCCEEDED_30D,
       ROUND(CAST(w.SUCCEEDED AS NUMERIC) / NULLIF(w.ENDED, 0), 4) AS SUCCESS_RATE_30D,
       ROUND(w.AVG_SECONDS, 3) AS AVG_DURATION_SECONDS_30D,
       COALESCE(w.BREACHED, 0) AS SLA_BREACHES_30D,
       (SELECT COUNT(*) FROM etl_craft.AUD_PIPELINES_RUN_LOG x
         WHERE x.PIPELINE_ID = p.PIPELINE_ID AND x.STATUS = 'IN-PROGRESS') AS RUNS_IN_PROGRESS,
       CAST(CASE WHEN o.PAUSE_ID IS NULL THEN 'N' ELSE 'Y' END AS VARCHAR(1)) AS IS_PAUSED,
       o.PAUSED_AT AS PAUSED_SINCE
  FROM etl_craft.CFG_PIPELINES p
  JOIN etl_craft.CFG_PROJECTS pr ON pr.PROJECT_ID = p.PROJECT_ID
  LEFT JOIN etl_craft.AUD_PIPELINES_RUN_LOG l
    ON l.PIPELINE_RUN_ID = (SELECT x.PIPELINE_RUN_ID FROM etl_craft.AUD_PIPELINES_RUN_LOG x
                             WHERE x.PIPELINE_ID = p.PIPELINE_ID
                             ORDER BY x.QUEUED_AT DESC, x.PIPELINE_RUN_ID DESC LIMIT 1)
  LEFT JOIN (SELECT PIPELINE_ID,
                    SUM(CASE WHEN STATUS IN ('SUCCESS', 'FAILED', 'CANCELLED') THEN 1 ELSE 0 END) AS ENDED,
                    SUM(CASE WHEN STATUS = 'SUCCESS' THEN 1 ELSE 0 END) AS SUCCEEDED,
                    AVG(CASE WHEN STATUS IN ('SUCCESS', 'FAILED', 'CANCELLED')
                             THEN EXTRACT(EPOCH FROM (END_DATE - START_DATE)) END) AS AVG_SECONDS,
                    SUM(CASE WHEN SLA_STATUS = 'BREACHED' THEN 1 ELSE 0 END) AS BREACHED
               FROM etl_craft.AUD_PIPELINES_RUN_LOG
              WHERE END_DATE >= (etl_craft.clock_now() + make_interval(secs => -2592000))
              GROUP BY PIPELINE_ID) w ON w.PIPELINE_ID = p.PIPELINE_ID
  LEFT JOIN etl_craft.AUD_PIPELINE_PAUSES o ON o.PIPELINE_ID = p.PIPELINE_ID AND o.RESUMED_AT IS NULL;
COMMENT ON VIEW etl_craft.AUD_V_PIPELINE_HEALTH IS 'One row per pipeline: its last run, and over the runs that ended in the last 30 days (by the Engine DB''s clock) how many succeeded, the success rate, the average duration and the SLA breaches; how many runs are in progress, and whether it is paused.';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.PIPELINE_ID IS 'The pipeline (CFG_PIPELINES.PIPELINE_ID).';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.PROJECT_CODE IS 'The code of its project.';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.PIPELINE_CODE IS 'The pipeline''s code.';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.ACTIVE_FLAG IS 'Y while the pipeline is in use, N once switched off.';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.LAST_RUN_ID IS 'Its last run: the one created last (latest QUEUED_AT, then the highest id), whatever its status; NULL when it has never run.';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.LAST_RUN_KEY IS 'The last run''s key.';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.LAST_RUN_STATUS IS 'The last run''s status.';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.LAST_RUN_ENDED_AT IS 'When the last run ended; NULL while it is QUEUED or IN-PROGRESS.';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.RUNS_ENDED_30D IS 'Its runs that ended SUCCESS, FAILED or CANCELLED in the last 30 days: ENDED_AT at or after the Engine DB''s clock (etl_craft.clock_now() on PostgreSQL, etl_craft_now() on SQLite) minus 30 x 24 hours. SKIPPED runs did no work and are left out.';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.RUNS_SUCCEEDED_30D IS 'Those that ended SUCCESS.';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.SUCCESS_RATE_30D IS 'RUNS_SUCCEEDED_30D / RUNS_ENDED_30D, from 0 to 1, to 4 decimals; NULL when none ended.';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.AVG_DURATION_SECONDS_30D IS 'The average seconds from start to end of the runs counted in RUNS_ENDED_30D that started, to the millisecond; NULL when there are none.';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.SLA_BREACHES_30D IS 'Its runs that ended in the last 30 days with SLA_STATUS BREACHED.';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.RUNS_IN_PROGRESS IS 'Its runs that are IN-PROGRESS now (at most one; more wait QUEUED).';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.IS_PAUSED IS 'Y while the pipeline is paused (it has a pause not yet resumed), else N.';
COMMENT ON COLUMN etl_craft.AUD_V_PIPELINE_HEALTH.PAUSED_SINCE IS 'When the current pause began; NULL when not paused.';

DO $drop$
DECLARE
  v_found text[] := ARRAY(
    SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
     WHERE a.attrelid = to_regclass('etl_craft.aud_v_alerts') AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum);
BEGIN
  IF cardinality(v_found) > 0 AND v_found <> (ARRAY[
      'alert_id bigint',
      'pipeline_run_id bigint',
      'project_code character varying(128)',
      'pipeline_code character varying(128)',
      'run_key character varying(256)',
      'run_date date',
      'alert_kind character varying(16)',
      'task_code character varying(128)',
      'task_run_id bigint',
      'attempt_id bigint',
      'status character varying(16)',
      'error_message text',
      'raised_at timestamp with time zone',
      'channel character varying(128)',
      'delivery_status character varying(16)',
      'attempts integer',
      'next_attempt_at timestamp with time zone',
      'last_attempt_at timestamp with time zone',
      'last_detail text',
      'warning text',
      'delivered_at timestamp with time zone'
    ]::text[])[1:cardinality(v_found)] THEN
    DROP VIEW etl_craft.AUD_V_ALERTS;
  END IF;
END
$drop$;
CREATE OR REPLACE VIEW etl_craft.AUD_V_ALERTS AS
SELECT a.ALERT_ID, a.PIPELINE_RUN_ID, pr.PROJECT_CODE, p.PIPELINE_CODE, r.RUN_KEY, r.RUN_DATE, a.ALERT_KIND,
       t.TASK_CODE, a.TASK_RUN_ID, a.ATTEMPT_ID, a.STATUS, a.ERROR_MESSAGE, a.RAISED_AT, d.CHANNEL,
       d.DELIVERY_STATUS, d.ATTEMPTS, d.NEXT_ATTEMPT_AT, d.LAST_ATTEMPT_AT, d.LAST_DETAIL, d.WARNING, d.DELIVERED_AT
  FROM etl_craft.AUD_ALERTS a
  JOIN etl_craft.AUD_ALERT_DELIVERIES d ON d.ALERT_ID = a.ALERT_ID
  JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = a.PIPELINE_RUN_ID
  JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
  JOIN etl_craft.CFG_PROJECTS pr ON pr.PROJECT_ID = p.PROJECT_ID
  LEFT JOIN etl_craft.CFG_TASKS t ON t.TASK_ID = a.TASK_ID;
COMMENT ON VIEW etl_craft.AUD_V_ALERTS IS 'One row per alert and channel: the alert the Engine DB raised for a run (its kind, the task and attempt it names, the status and error it reports, when it was raised) and where its delivery on that channel stands (attempts made, the next one due, what the channel last answered). An alert whose rule named no channel has no row.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.ALERT_ID IS 'The alert (AUD_ALERTS.ALERT_ID); one per run and kind.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.PIPELINE_RUN_ID IS 'The run the alert is about (AUD_V_RUNS.PIPELINE_RUN_ID).';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.PROJECT_CODE IS 'The code of the pipeline''s project.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.PIPELINE_CODE IS 'The run''s pipeline.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.RUN_KEY IS 'The run''s key.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.RUN_DATE IS 'The run''s logical date.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.ALERT_KIND IS 'RUN_FAILED, SLA_BREACHED, ATTEMPT_LOST, GATE_WAITING or RUN_RECOVERED.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.TASK_CODE IS 'The task the alert names: the first failed task of a failed run, the task of a lost attempt, the task whose gate waits; NULL for an alert about the run as a whole.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.TASK_RUN_ID IS 'The task run the alert names, when it names one.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.ATTEMPT_ID IS 'The attempt the alert names (ATTEMPT_LOST).';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.STATUS IS 'The status the alert reports: the run''s when it was raised (FAILED, SUCCESS, IN-PROGRESS), the attempt''s (LOST), or WAITING for a gate wait.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.ERROR_MESSAGE IS 'The error the alert reports (the failed task''s, the lost attempt''s) or what a gate waits for.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.RAISED_AT IS 'When the Engine DB raised the alert, in the transaction of the decision.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.CHANNEL IS 'The channel (a name of the Alerts channels of craft-connector.yml).';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.DELIVERY_STATUS IS 'PENDING (not delivered yet; due again at NEXT_ATTEMPT_AT), DELIVERED or FAILED (for good).';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.ATTEMPTS IS 'How many delivery attempts were made on the channel.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.NEXT_ATTEMPT_AT IS 'When the next delivery attempt is due; NULL once the delivery has ended.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.LAST_ATTEMPT_AT IS 'When the latest delivery attempt was made; NULL before the first.';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.LAST_DETAIL IS 'What the channel answered to the latest attempt (never a secret).';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.WARNING IS 'Set when the delivery counted as made but something was refused (some recipients of an e-mail).';
COMMENT ON COLUMN etl_craft.AUD_V_ALERTS.DELIVERED_AT IS 'When the alert was delivered on the channel; NULL until then.';

DO $drop$
DECLARE
  v_found text[] := ARRAY(
    SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
     WHERE a.attrelid = to_regclass('etl_craft.aud_v_workers') AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum);
BEGIN
  IF cardinality(v_found) > 0 AND v_found <> (ARRAY[
      'worker_id bigint',
      'worker_name character varying(128)',
      'pool character varying(128)',
      'status character varying(16)',
      'host character varying(256)',
      'pid integer',
      'version character varying(64)',
      'owner_id character varying(256)',
      'ingestion_slots integer',
      'ingestion_in_use bigint',
      'warehouse_slots integer',
      'warehouse_in_use bigint',
      'heartbeat_seconds integer',
      'heartbeat_at timestamp with time zone',
      'seconds_since_heartbeat numeric',
      'started_at timestamp with time zone',
      'draining_at timestamp with time zone',
      'stopped_at timestamp with time zone',
      'stop_reason text'
    ]::text[])[1:cardinality(v_found)] THEN
    DROP VIEW etl_craft.AUD_V_WORKERS;
  END IF;
END
$drop$;
CREATE OR REPLACE VIEW etl_craft.AUD_V_WORKERS AS
SELECT w.WORKER_ID, w.WORKER_NAME, w.POOL, w.STATUS, w.HOST, w.PID, w.VERSION, w.OWNER_ID, w.INGESTION_SLOTS,
       COALESCE(u.INGESTION_IN_USE, 0) AS INGESTION_IN_USE, w.WAREHOUSE_SLOTS,
       COALESCE(u.WAREHOUSE_IN_USE, 0) AS WAREHOUSE_IN_USE, w.HEARTBEAT_SECONDS, w.HEARTBEAT_AT,
       ROUND(EXTRACT(EPOCH FROM (etl_craft.clock_now() - w.HEARTBEAT_AT)), 3) AS SECONDS_SINCE_HEARTBEAT,
       w.STARTED_AT, w.DRAINING_AT, w.STOPPED_AT, w.STOP_REASON
  FROM etl_craft.AUD_WORKERS w
  LEFT JOIN (SELECT a.OWNER_ID, SUM(CASE WHEN a.SLOT_KIND = 'ingestion' THEN 1 ELSE 0 END) AS INGESTION_IN_USE,
                    SUM(CASE WHEN a.SLOT_KIND = 'warehouse' THEN 1 ELSE 0 END) AS WAREHOUSE_IN_USE
               FROM etl_craft.AUD_TASK_ATTEMPTS a
              WHERE a.STATUS IN ('CLAIMED', 'RUNNING')
              GROUP BY a.OWNER_ID) u ON u.OWNER_ID = w.OWNER_ID;
COMMENT ON VIEW etl_craft.AUD_V_WORKERS IS 'One row per etl-craft worker that has served a QUEUE pool: who it is (name, host, pid, version, the owner id it claims with), its status (ACTIVE, DRAINING, GONE), its slots of each kind and how many of them its CLAIMED and RUNNING attempts use, and its heartbeat: when it last beat and how many seconds ago, by the Engine DB''s clock.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.WORKER_ID IS 'The worker (AUD_WORKERS.WORKER_ID); one per start of etl-craft worker.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.WORKER_NAME IS 'The worker''s name (--name, by default its host).';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.POOL IS 'The QUEUE pool it serves.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.STATUS IS 'ACTIVE (claims work), DRAINING (told to stop: finishes what it runs) or GONE (stopped or reaped).';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.HOST IS 'The host it runs on.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.PID IS 'Its process id on that host.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.VERSION IS 'The etl-craft version it runs.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.OWNER_ID IS 'The owner id its attempts carry (AUD_V_ATTEMPTS.OWNER_ID); new each start.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.INGESTION_SLOTS IS 'How many ingestion attempts it runs at once at most.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.INGESTION_IN_USE IS 'How many of its attempts of slot kind ingestion are CLAIMED or RUNNING now.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.WAREHOUSE_SLOTS IS 'How many warehouse attempts it runs at once at most.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.WAREHOUSE_IN_USE IS 'How many of its attempts of slot kind warehouse are CLAIMED or RUNNING now.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.HEARTBEAT_SECONDS IS 'Its heartbeat period; it is declared gone after 3 periods without one.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.HEARTBEAT_AT IS 'Its last heartbeat.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.SECONDS_SINCE_HEARTBEAT IS 'Seconds from its last heartbeat to now (the Engine DB''s clock), to the millisecond.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.STARTED_AT IS 'When it registered.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.DRAINING_AT IS 'When it was told to stop; NULL unless it drained.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.STOPPED_AT IS 'When it became GONE; NULL while it is ACTIVE or DRAINING.';
COMMENT ON COLUMN etl_craft.AUD_V_WORKERS.STOP_REASON IS 'Why it is draining or gone (the signal, "drained", or the missed heartbeats that had it reaped).';

DO $drop$
DECLARE
  v_found text[] := ARRAY(
    SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
     WHERE a.attrelid = to_regclass('etl_craft.aud_v_queue_depth') AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY a.attnum);
BEGIN
  IF cardinality(v_found) > 0 AND v_found <> (ARRAY[
      'pool character varying(128)',
      'slot_kind character varying(16)',
      'queued bigint',
      'due bigint'
    ]::text[])[1:cardinality(v_found)] THEN
    DROP VIEW etl_craft.AUD_V_QUEUE_DEPTH;
  END IF;
END
$drop$;
CREATE OR REPLACE VIEW etl_craft.AUD_V_QUEUE_DEPTH AS
SELECT a.POOL, a.SLOT_KIND, COUNT(*) AS QUEUED,
       SUM(CASE WHEN (a.NOT_BEFORE IS NULL OR a.NOT_BEFORE <= etl_craft.clock_now()) AND a.CANCEL_REQUESTED_AT IS NULL
                THEN 1 ELSE 0 END) AS DUE
  FROM etl_craft.AUD_TASK_ATTEMPTS a
 WHERE a.STATUS = 'QUEUED'
 GROUP BY a.POOL, a.SLOT_KIND;
COMMENT ON VIEW etl_craft.AUD_V_QUEUE_DEPTH IS 'One row per pool and slot kind with attempts QUEUED: how many are queued, and how many of them are due now (not waiting for a retry delay and not asked to cancel), by the Engine DB''s clock.';
COMMENT ON COLUMN etl_craft.AUD_V_QUEUE_DEPTH.POOL IS 'The pool the attempts are queued in.';
COMMENT ON COLUMN etl_craft.AUD_V_QUEUE_DEPTH.SLOT_KIND IS 'ingestion or warehouse.';
COMMENT ON COLUMN etl_craft.AUD_V_QUEUE_DEPTH.QUEUED IS 'How many attempts of the pool and kind are QUEUED.';
COMMENT ON COLUMN etl_craft.AUD_V_QUEUE_DEPTH.DUE IS 'How many of them may be claimed now (NOT_BEFORE unset or past, no cancel requested).';
