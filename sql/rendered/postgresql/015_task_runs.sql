-- 015_task_runs: the task runs of a run that no attempt decides: skipping a task, and an operator's mark.

-- @function skip_task_run
-- @args run_id bigint, task_id bigint, reason text, by_operator bool = false
-- @returns task_run_id bigint, status text, created bool
-- @purpose Record that a task will not run in this run: its task run is created SKIPPED (MESSAGE = reason,
--   START_DATE = END_DATE = now) when it has none; one already SKIPPED is left as it is (created = false). Any
--   other task run is refused: a skip never overwrites an outcome, so a FAILED task keeps its error (B28).
--   by_operator = true (etl-craft run --skip) records a SKIP intervention for the task run, once, which tells an
--   operator's skip from the engine's: ready_tasks never runs an operator-skipped task again. An open gate wait of
--   the task ends ABANDONED.
-- @transition TASK_RUN (none) -> SKIPPED
-- @locks the run row (shared), then the task run's key (ux_task_run_per_run)
-- @errors EC021 no such run, or the task is not of the run's pipeline; EC020 the run is not IN-PROGRESS, or the
--   task run is in a status other than SKIPPED
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'skip_task_run' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.skip_task_run(
  p_run_id bigint,
  p_task_id bigint,
  p_reason text,
  p_by_operator boolean DEFAULT false,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (task_run_id bigint, status text, created boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_task_run_id bigint;
BEGIN
  -- Hold the run IN-PROGRESS until this skip commits (SQLite needs no lock: BEGIN IMMEDIATE admits one writer).
  PERFORM 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id FOR SHARE;
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC020: ' || ('run ' || PIPELINE_RUN_ID || ' is ' || STATUS || ', expected IN-PROGRESS; a task is skipped only in a run in progress: reopen the run first (etl-craft reopen) or mark the task instead (etl-craft mark)') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id AND STATUS <> 'IN-PROGRESS';
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT 'EC021: ' || ('task ' || COALESCE(CAST(p_task_id AS text), 'NULL') || ' is not a task of pipeline ' || p.PIPELINE_CODE || ', which run ' || r.PIPELINE_RUN_ID || ' runs; name a task of that pipeline (etl-craft list --pipeline-code ' || p.PIPELINE_CODE || ')') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
   WHERE r.PIPELINE_RUN_ID = p_run_id
     AND NOT EXISTS (SELECT 1 FROM etl_craft.CFG_TASKS t WHERE t.TASK_ID = p_task_id AND t.PIPELINE_ID = r.PIPELINE_ID);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  INSERT INTO etl_craft.AUD_TASK_RUN_LOG (PIPELINE_RUN_ID, TASK_ID, STATUS, START_DATE, END_DATE, MESSAGE)
  VALUES (p_run_id, p_task_id, 'SKIPPED', v_now, v_now, p_reason)
  ON CONFLICT (PIPELINE_RUN_ID, TASK_ID) DO NOTHING
  RETURNING TASK_RUN_ID INTO v_task_run_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC020: ' || ('task run ' || t.TASK_RUN_ID || ' (task ' || k.TASK_CODE || ' in run ' || t.PIPELINE_RUN_ID || ') is ' || t.STATUS || ', expected no task run or SKIPPED; a skip never overwrites an outcome (' || CASE WHEN t.STATUS = 'FAILED' THEN 'its error stays' ELSE 'it keeps its status' END || '): rerun the task, or mark it with etl-craft mark') INTO v_failure
    FROM etl_craft.AUD_TASK_RUN_LOG t JOIN etl_craft.CFG_TASKS k ON k.TASK_ID = t.TASK_ID
   WHERE t.PIPELINE_RUN_ID = p_run_id AND t.TASK_ID = p_task_id AND v_rows = 0
     AND t.STATUS <> 'SKIPPED';
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  INSERT INTO etl_craft.AUD_RUN_INTERVENTIONS
    (PIPELINE_RUN_ID, TASK_RUN_ID, INTERVENTION, FROM_STATUS, TO_STATUS, ROWS_WRITTEN, REASON, REQUESTED_BY,
     REQUESTED_BY_KIND, REQUESTED_AT)
  SELECT p_run_id, t.TASK_RUN_ID, 'SKIP', CASE WHEN v_task_run_id IS NULL THEN t.STATUS END, 'SKIPPED', NULL, p_reason, etl_craft._actor(),
         etl_craft._actor_kind(), v_now
    FROM etl_craft.AUD_TASK_RUN_LOG t
   WHERE t.PIPELINE_RUN_ID = p_run_id AND t.TASK_ID = p_task_id AND COALESCE(p_by_operator, false)
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_RUN_INTERVENTIONS i
                      WHERE i.PIPELINE_RUN_ID = t.PIPELINE_RUN_ID AND i.TASK_RUN_ID = t.TASK_RUN_ID
                        AND i.INTERVENTION = 'SKIP');
  UPDATE etl_craft.AUD_GATE_WAITS
     SET OUTCOME = 'ABANDONED', ENDED_AT = v_now, NEXT_CHECK_AT = NULL
   WHERE PIPELINE_RUN_ID = p_run_id AND ENDED_AT IS NULL AND TASK_ID = p_task_id;
  RETURN QUERY
  SELECT q.task_run_id::bigint, q.status::text, q.created::boolean
    FROM (
      SELECT TASK_RUN_ID, STATUS, v_task_run_id IS NOT NULL
        FROM etl_craft.AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id AND TASK_ID = p_task_id
    ) AS q(task_run_id, status, created);
END
$fn$;
-- @end skip_task_run

-- @function mark_task_run
-- @args run_id bigint, task_id bigint, status text, reason text, rows_written bigint = NULL
-- @returns task_run_id bigint, status text, run_status text
-- @purpose An operator sets a task's outcome in a run: STATUS, END_DATE = now (START_DATE = now when it had
--   none), MESSAGE, and ROWS_WRITTEN when rows_written is given (TARGET_COUNT is left as it is); the task run is
--   created when there is none. Refused while a CLAIMED or RUNNING attempt of the task holds a live lease (B16). An
--   attempt whose lease has expired is first marked LOST, its message and the task run's ERROR_MESSAGE reading
--   "attempt N was lost: owner O stopped renewing its lease at T" (this replaces mark --stale); a QUEUED attempt
--   is cancelled. A run that has ended is reopened first (REPAIR_PENDING when it was SUCCESS; recorded as REOPEN)
--   and then waits for finalize_run to end it again. Recorded as a MARK intervention (FROM_STATUS NULL when the
--   task run was created) with ROWS_WRITTEN and the reason. An open gate wait of the task ends ABANDONED.
-- @transition TASK_RUN (none), IN-PROGRESS or ended -> SUCCESS, FAILED or SKIPPED;
--   ATTEMPT CLAIMED or RUNNING with an expired lease -> LOST; ATTEMPT QUEUED -> CANCELLED;
--   RUN SUCCESS, FAILED, SKIPPED or CANCELLED -> IN-PROGRESS
-- @locks the run row, then the task's live attempts, then its task run
-- @errors EC021 no such run, or the task is not of the run's pipeline; EC023 the status is not SUCCESS, FAILED
--   or SKIPPED, the run is QUEUED, an attempt of the task holds a live lease, or the run has ended and another run
--   of the pipeline is QUEUED or IN-PROGRESS; EC020 the run or the task run changed meanwhile
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'mark_task_run' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.mark_task_run(
  p_run_id bigint,
  p_task_id bigint,
  p_status text,
  p_reason text,
  p_rows_written bigint DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (task_run_id bigint, status text, run_status text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_run_status text;
  v_task_run_id bigint;
  v_from_status text;
  v_created_id bigint;
  v_lost text;
BEGIN
  IF p_status NOT IN ('SUCCESS', 'FAILED', 'SKIPPED') OR p_status IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('mark_task_run sets SUCCESS, FAILED or SKIPPED, not ' || COALESCE(CAST(p_status AS text), 'NULL') || '; to stop a task cancel its run'), 'EC023');
  END IF;
  SELECT STATUS INTO v_run_status FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id FOR UPDATE;
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC021: ' || ('task ' || COALESCE(CAST(p_task_id AS text), 'NULL') || ' is not a task of pipeline ' || p.PIPELINE_CODE || ', which run ' || r.PIPELINE_RUN_ID || ' runs; name a task of that pipeline (etl-craft list --pipeline-code ' || p.PIPELINE_CODE || ')') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
   WHERE r.PIPELINE_RUN_ID = p_run_id
     AND NOT EXISTS (SELECT 1 FROM etl_craft.CFG_TASKS t WHERE t.TASK_ID = p_task_id AND t.PIPELINE_ID = r.PIPELINE_ID);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC023: ' || ('run ' || PIPELINE_RUN_ID || ' is QUEUED and has not started; its tasks are marked once it runs: admit it, or end it with finish_run') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id AND STATUS = 'QUEUED';
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  SELECT 'EC023: ' || ('run ' || r.PIPELINE_RUN_ID || ' has ended ' || r.STATUS || ' and marking a task reopens it, which is refused while run ' || o.PIPELINE_RUN_ID || ' (' || o.RUN_KEY || ') of the same pipeline is ' || o.STATUS || '; let it finish or cancel it first') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r JOIN etl_craft.AUD_PIPELINES_RUN_LOG o ON o.PIPELINE_ID = r.PIPELINE_ID AND o.PIPELINE_RUN_ID <> r.PIPELINE_RUN_ID
   WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED') AND o.STATUS IN ('QUEUED', 'IN-PROGRESS');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  SELECT TASK_RUN_ID INTO v_task_run_id
    FROM etl_craft.AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id AND TASK_ID = p_task_id;
  -- Lock the task's attempts before its task run, in the order the attempt functions lock them (SQLite needs no
  -- lock: BEGIN IMMEDIATE admits one writer).
  PERFORM 1 FROM etl_craft.AUD_TASK_ATTEMPTS WHERE TASK_RUN_ID = v_task_run_id AND STATUS IN ('QUEUED', 'CLAIMED', 'RUNNING') FOR UPDATE;
  PERFORM 1 FROM etl_craft.AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = v_task_run_id FOR UPDATE;
  SELECT STATUS INTO v_from_status FROM etl_craft.AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = v_task_run_id;
  SELECT 'EC023: ' || ('task ' || k.TASK_CODE || ' in run ' || p_run_id || ' is being run: attempt ' || a.ATTEMPT_ID || ' is ' || a.STATUS || ' by owner ' || COALESCE(a.OWNER_ID, 'nobody') || ' whose lease runs until ' || COALESCE(to_char(a.LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || '; wait for it to end, or stop that process: once its lease has expired the mark is allowed') INTO v_failure
    FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.CFG_TASKS k ON k.TASK_ID = p_task_id
   WHERE a.TASK_RUN_ID = v_task_run_id AND a.STATUS IN ('CLAIMED', 'RUNNING')
     AND (a.LEASE_EXPIRES_AT IS NULL OR a.LEASE_EXPIRES_AT >= v_now);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  -- The message lose_attempt (020_attempts) leaves on a LOST attempt and its task run.
  SELECT 'attempt ' || ATTEMPT_ID || ' was lost: owner ' || COALESCE(OWNER_ID, 'nobody') || ' stopped renewing its lease at ' || COALESCE(to_char(LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') INTO v_lost
    FROM etl_craft.AUD_TASK_ATTEMPTS WHERE TASK_RUN_ID = v_task_run_id AND STATUS IN ('CLAIMED', 'RUNNING');
  UPDATE etl_craft.AUD_TASK_ATTEMPTS SET STATUS = 'LOST', ENDED_AT = v_now, LEASE_EXPIRES_AT = NULL, ERROR_MESSAGE = v_lost
   WHERE TASK_RUN_ID = v_task_run_id AND STATUS IN ('CLAIMED', 'RUNNING') AND LEASE_EXPIRES_AT < v_now;
  UPDATE etl_craft.AUD_TASK_ATTEMPTS SET STATUS = 'CANCELLED', ENDED_AT = v_now, CANCEL_REQUESTED_AT = v_now,
         ERROR_MESSAGE = 'cancelled before it started: the task was marked ' || p_status
   WHERE TASK_RUN_ID = v_task_run_id AND STATUS = 'QUEUED';
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG
     SET STATUS = 'IN-PROGRESS', END_DATE = NULL, ENDED_BY = NULL, ENDED_BY_KIND = NULL, OWNER_ID = NULL,
         LEASE_EXPIRES_AT = NULL, CANCEL_REQUESTED_AT = NULL,
         REPAIR_PENDING = CASE WHEN STATUS = 'SUCCESS' THEN 'Y' ELSE REPAIR_PENDING END,
         MESSAGE = 'reopened to mark task ' || (SELECT TASK_CODE FROM etl_craft.CFG_TASKS WHERE TASK_ID = p_task_id)
                   || ' ' || p_status || ': ' || COALESCE(p_reason, 'no reason given')
   WHERE PIPELINE_RUN_ID = p_run_id AND STATUS = v_run_status AND STATUS IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED');
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC020: ' || ('run ' || PIPELINE_RUN_ID || ' is ' || STATUS || ', expected ' || COALESCE(CAST(v_run_status AS text), 'NULL') || '; someone else changed it: read its status again') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id AND v_run_status IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED') AND v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  INSERT INTO etl_craft.AUD_RUN_INTERVENTIONS
    (PIPELINE_RUN_ID, TASK_RUN_ID, INTERVENTION, FROM_STATUS, TO_STATUS, ROWS_WRITTEN, REASON, REQUESTED_BY,
     REQUESTED_BY_KIND, REQUESTED_AT)
  SELECT p_run_id, NULL, 'REOPEN', v_run_status, 'IN-PROGRESS', NULL, p_reason, etl_craft._actor(),
         etl_craft._actor_kind(), v_now
   WHERE v_run_status IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED');
  INSERT INTO etl_craft.AUD_TASK_RUN_LOG (PIPELINE_RUN_ID, TASK_ID, STATUS, START_DATE, END_DATE, ROWS_WRITTEN, MESSAGE)
  SELECT p_run_id, p_task_id, p_status, v_now, v_now, p_rows_written,
         'marked ' || p_status || ': ' || COALESCE(p_reason, 'no reason given')
   WHERE v_task_run_id IS NULL
  ON CONFLICT (PIPELINE_RUN_ID, TASK_ID) DO NOTHING
  RETURNING TASK_RUN_ID INTO v_created_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC020: ' || ('task run ' || TASK_RUN_ID || ' of task ' || COALESCE(CAST(p_task_id AS text), 'NULL') || ' in run ' || PIPELINE_RUN_ID || ' was created meanwhile (' || STATUS || '), expected none; read its status again') INTO v_failure
    FROM etl_craft.AUD_TASK_RUN_LOG
   WHERE PIPELINE_RUN_ID = p_run_id AND TASK_ID = p_task_id AND v_task_run_id IS NULL
     AND v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  UPDATE etl_craft.AUD_TASK_RUN_LOG
     SET STATUS = p_status, END_DATE = v_now, START_DATE = COALESCE(START_DATE, v_now),
         ROWS_WRITTEN = COALESCE(p_rows_written, ROWS_WRITTEN),
         ERROR_MESSAGE = COALESCE(v_lost, ERROR_MESSAGE),
         MESSAGE = 'marked ' || p_status || ': ' || COALESCE(p_reason, 'no reason given')
   WHERE TASK_RUN_ID = v_task_run_id AND STATUS = v_from_status;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC020: ' || ('task run ' || TASK_RUN_ID || ' is ' || STATUS || ', expected ' || COALESCE(CAST(v_from_status AS text), 'NULL') || '; someone else changed it: read its status again') INTO v_failure
    FROM etl_craft.AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = v_task_run_id AND v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  INSERT INTO etl_craft.AUD_RUN_INTERVENTIONS
    (PIPELINE_RUN_ID, TASK_RUN_ID, INTERVENTION, FROM_STATUS, TO_STATUS, ROWS_WRITTEN, REASON, REQUESTED_BY,
     REQUESTED_BY_KIND, REQUESTED_AT)
  SELECT p_run_id, t.TASK_RUN_ID, 'MARK', v_from_status, p_status, p_rows_written, p_reason, etl_craft._actor(),
         etl_craft._actor_kind(), v_now
    FROM etl_craft.AUD_TASK_RUN_LOG t WHERE t.PIPELINE_RUN_ID = p_run_id AND t.TASK_ID = p_task_id;
  UPDATE etl_craft.AUD_GATE_WAITS
     SET OUTCOME = 'ABANDONED', ENDED_AT = v_now, NEXT_CHECK_AT = NULL
   WHERE PIPELINE_RUN_ID = p_run_id AND ENDED_AT IS NULL AND TASK_ID = p_task_id;
  RETURN QUERY
  SELECT q.task_run_id::bigint, q.status::text, q.run_status::text
    FROM (
      SELECT t.TASK_RUN_ID, t.STATUS, r.STATUS
        FROM etl_craft.AUD_TASK_RUN_LOG t JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = t.PIPELINE_RUN_ID
       WHERE t.PIPELINE_RUN_ID = p_run_id AND t.TASK_ID = p_task_id
    ) AS q(task_run_id, status, run_status);
END
$fn$;
-- @end mark_task_run

-- @function judge_task_command
-- @args run_id bigint, task_id bigint, command text
-- @returns decision text, reason text, reopen bool, rerun bool, check_dependencies bool, attempt_id bigint
-- @purpose Whether an operator's command may run one task of a run, and how: command TASK (etl-craft run
--   --task-code T), FORCE (--task-code T --force) or RERUN (--rerun T). decision is QUEUE (queue an attempt: reopen
--   the run first when reopen, pass rerun to queue_attempt when the task already succeeded, and check the task's
--   dependencies with ready_tasks first when check_dependencies, the task having no task run yet), CLAIM (the task's
--   attempt attempt_id is queued already, after a stop, and waits for a supervisor) or REFUSE with the reason: the run
--   is QUEUED; the task is running; RERUN of a task that did not fail or was not cancelled; a task that already
--   succeeded without FORCE; an ended run without FORCE or RERUN; FORCE onto a CANCELLED run (a cancelled run is not
--   reopened by force: start a new run). Reads only: the caller acts on the decision in its own transaction.
-- @transition none (reads only)
-- @locks none
-- @errors EC021 no such run, or the task is not an active task of the run's pipeline; EC023 command is not TASK,
--   FORCE or RERUN
-- @readonly yes
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'judge_task_command' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.judge_task_command(
  p_run_id bigint,
  p_task_id bigint,
  p_command text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (decision text, reason text, reopen boolean, rerun boolean, check_dependencies boolean, attempt_id bigint)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft.clock_now();
  v_rows bigint;
  v_failure text;
BEGIN
  IF COALESCE(p_command, '') NOT IN ('TASK', 'FORCE', 'RERUN') THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('judge_task_command takes the command TASK, FORCE or RERUN, not ' || COALESCE(CAST(p_command AS text), 'NULL')), 'EC023');
  END IF;
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC021: ' || ('task ' || COALESCE(CAST(p_task_id AS text), 'NULL') || ' is not an active task of pipeline ' || p.PIPELINE_CODE || ', which run ' || r.PIPELINE_RUN_ID || ' runs; name an active task of that pipeline (etl-craft list --pipeline-code ' || p.PIPELINE_CODE || ')') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
   WHERE r.PIPELINE_RUN_ID = p_run_id
     AND NOT EXISTS (SELECT 1 FROM etl_craft.CFG_TASKS t
                      WHERE t.TASK_ID = p_task_id AND t.PIPELINE_ID = r.PIPELINE_ID AND t.ACTIVE_FLAG = 'Y');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  RETURN QUERY
  SELECT q.decision::text, q.reason::text, q.reopen::boolean, q.rerun::boolean, q.check_dependencies::boolean, q.attempt_id::bigint
    FROM (
      SELECT CASE WHEN x.REFUSAL IS NOT NULL THEN 'REFUSE' WHEN x.TASK_STATUS = 'IN-PROGRESS' THEN 'CLAIM' ELSE 'QUEUE' END,
             x.REFUSAL,
             x.REFUSAL IS NULL AND x.RUN_STATUS <> 'IN-PROGRESS',
             x.REFUSAL IS NULL AND COALESCE(x.TASK_STATUS, '') = 'SUCCESS',
             x.REFUSAL IS NULL AND x.TASK_STATUS IS NULL,
             CASE WHEN x.REFUSAL IS NULL AND x.TASK_STATUS = 'IN-PROGRESS' THEN x.ATTEMPT_ID END
        FROM (SELECT r.STATUS AS RUN_STATUS, tr.STATUS AS TASK_STATUS, a.ATTEMPT_ID AS ATTEMPT_ID,
                     CASE
                       WHEN r.STATUS = 'QUEUED'
                       THEN 'run ' || r.PIPELINE_RUN_ID || ' is QUEUED: its gates have not admitted it yet; see etl-craft status'
                       WHEN tr.STATUS = 'IN-PROGRESS' AND a.STATUS = 'QUEUED' AND a.OWNER_ID IS NULL THEN NULL
                       WHEN tr.STATUS = 'IN-PROGRESS'
                       THEN 'task ' || t.TASK_CODE || ' ' || 'in run ' || r.PIPELINE_RUN_ID || ' of ' || p.PIPELINE_CODE || ' is running now (attempt '
                            || COALESCE(CAST(a.ATTEMPT_ID AS TEXT), 'none') || ', ' || COALESCE(a.STATUS, 'none') || ', owner '
                            || COALESCE(a.OWNER_ID, 'none') || '); wait for it to end'
                       WHEN p_command = 'RERUN' AND COALESCE(tr.STATUS, '') NOT IN ('FAILED', 'CANCELLED')
                       THEN 'task ' || t.TASK_CODE || ' ' || 'in run ' || r.PIPELINE_RUN_ID || ' of ' || p.PIPELINE_CODE || ' is ' || COALESCE(tr.STATUS, 'not run')
                            || ': --rerun runs again a task that FAILED or was CANCELLED; run this one with --task-code '
                            || t.TASK_CODE
                       WHEN p_command = 'RERUN' THEN NULL
                       WHEN tr.STATUS = 'SUCCESS' AND p_command <> 'FORCE'
                       THEN 'task ' || t.TASK_CODE || ' ' || 'in run ' || r.PIPELINE_RUN_ID || ' of ' || p.PIPELINE_CODE || ' already succeeded; pass --force to run it again'
                       WHEN r.STATUS <> 'IN-PROGRESS' AND p_command <> 'FORCE'
                       THEN 'run ' || r.PIPELINE_RUN_ID || ' is ' || r.STATUS || ': pass --force to reopen it and run '
                            || t.TASK_CODE || ' (recorded as REOPEN), or --rerun ' || t.TASK_CODE || ' for a task that failed'
                       WHEN r.STATUS = 'CANCELLED'
                       THEN 'run ' || r.PIPELINE_RUN_ID || ' was CANCELLED, so --force will not reopen it; start a new run '
                            || 'with another --run-key to run ' || t.TASK_CODE
                     END AS REFUSAL
                FROM etl_craft.AUD_PIPELINES_RUN_LOG r
                JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
                JOIN etl_craft.CFG_TASKS t ON t.TASK_ID = p_task_id
                LEFT JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND tr.TASK_ID = t.TASK_ID
                LEFT JOIN etl_craft.AUD_TASK_ATTEMPTS a ON a.TASK_RUN_ID = tr.TASK_RUN_ID AND a.ATTEMPT_NUMBER = tr.ATTEMPT_COUNT
               WHERE r.PIPELINE_RUN_ID = p_run_id) x
    ) AS q(decision, reason, reopen, rerun, check_dependencies, attempt_id);
END
$fn$;
-- @end judge_task_command
