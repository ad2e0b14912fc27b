-- 060_control: pausing and resuming pipelines, and recording each state-changing request (AUD_ACTIONS).


-- @function pause_pipeline
-- @args pipeline_id bigint, reason text
-- @returns pause_id bigint, paused_at timestamptz
-- @purpose Pause a pipeline: it starts no run and no task until it is resumed (create_run, admit_run and
--   queue_attempt refuse it); runs and attempts already going are left alone. Records the actor and the reason in
--   AUD_PIPELINE_PAUSES.
-- @transition PAUSE (none) -> open (RESUMED_AT NULL)
-- @locks the ux_one_open_pause entry of the pipeline (one open pause per pipeline)
-- @errors EC021 no such pipeline; EC023 the pipeline is already paused
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'pause_pipeline' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.pause_pipeline(
  p_pipeline_id bigint,
  p_reason text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (pause_id bigint, paused_at timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_pause_id bigint;
BEGIN
  SELECT 'EC021: ' || ('pipeline ' || COALESCE(CAST(p_pipeline_id AS text), 'NULL') || ' does not exist; list pipelines with etl-craft list') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.CFG_PIPELINES WHERE PIPELINE_ID = p_pipeline_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC023: ' || ('pipeline ' || p.PIPELINE_CODE || ' is already paused since ' || COALESCE(to_char(z.PAUSED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' by ' || z.PAUSED_BY || COALESCE(' (' || z.PAUSE_REASON || ')', '') || ', expected not paused; resume it first with etl-craft resume --pipeline-code ' || p.PIPELINE_CODE) INTO v_failure
    FROM etl_craft.AUD_PIPELINE_PAUSES z JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = z.PIPELINE_ID
   WHERE z.PIPELINE_ID = p_pipeline_id AND z.RESUMED_AT IS NULL;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  -- ON CONFLICT: a pause another caller committed meanwhile wins, and this call is refused below (EC023).
  INSERT INTO etl_craft.AUD_PIPELINE_PAUSES (PIPELINE_ID, PAUSED_AT, PAUSED_BY, PAUSED_BY_KIND, PAUSE_REASON)
  VALUES (p_pipeline_id, v_now, etl_craft._actor(), etl_craft._actor_kind(), p_reason)
  ON CONFLICT (PIPELINE_ID) WHERE RESUMED_AT IS NULL DO NOTHING
  RETURNING PAUSE_ID INTO v_pause_id;
  SELECT 'EC023: ' || ('pipeline ' || p.PIPELINE_CODE || ' is already paused since ' || COALESCE(to_char(z.PAUSED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' by ' || z.PAUSED_BY || COALESCE(' (' || z.PAUSE_REASON || ')', '') || ', expected not paused; resume it first with etl-craft resume --pipeline-code ' || p.PIPELINE_CODE) INTO v_failure
    FROM etl_craft.AUD_PIPELINE_PAUSES z JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = z.PIPELINE_ID
   WHERE z.PIPELINE_ID = p_pipeline_id AND v_pause_id IS NULL AND z.RESUMED_AT IS NULL;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  RETURN QUERY
  SELECT q.pause_id::bigint, q.paused_at::timestamptz
    FROM (
      SELECT z.PAUSE_ID, z.PAUSED_AT FROM etl_craft.AUD_PIPELINE_PAUSES z WHERE z.PAUSE_ID = v_pause_id
    ) AS q(pause_id, paused_at);
END
$fn$;
-- @end pause_pipeline

-- @function resume_pipeline
-- @args pipeline_id bigint, reason text
-- @returns pause_id bigint, resumed_at timestamptz
-- @purpose Resume a paused pipeline: closes its open pause with RESUMED_AT, RESUMED_BY, RESUMED_BY_KIND and
--   RESUME_REASON. Runs and tasks that waited start on the next admission.
-- @transition PAUSE open -> closed (RESUMED_AT set)
-- @locks the open pause row of the pipeline
-- @errors EC021 no such pipeline; EC023 the pipeline is not paused
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'resume_pipeline' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.resume_pipeline(
  p_pipeline_id bigint,
  p_reason text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (pause_id bigint, resumed_at timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_pause_id bigint;
BEGIN
  SELECT 'EC021: ' || ('pipeline ' || COALESCE(CAST(p_pipeline_id AS text), 'NULL') || ' does not exist; list pipelines with etl-craft list') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.CFG_PIPELINES WHERE PIPELINE_ID = p_pipeline_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  UPDATE etl_craft.AUD_PIPELINE_PAUSES
     SET RESUMED_AT = v_now, RESUMED_BY = etl_craft._actor(), RESUMED_BY_KIND = etl_craft._actor_kind(),
         RESUME_REASON = p_reason
   WHERE PIPELINE_ID = p_pipeline_id AND RESUMED_AT IS NULL
  RETURNING PAUSE_ID INTO v_pause_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC023: ' || ('pipeline ' || p.PIPELINE_CODE || ' is not paused' || COALESCE(' (it was resumed ' || COALESCE(to_char(l.RESUMED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' by ' || l.RESUMED_BY || ')', '') || ', expected paused; there is nothing to resume') INTO v_failure
    FROM etl_craft.CFG_PIPELINES p
    LEFT JOIN etl_craft.AUD_PIPELINE_PAUSES l ON l.PAUSE_ID = (SELECT MAX(z.PAUSE_ID) FROM etl_craft.AUD_PIPELINE_PAUSES z WHERE z.PIPELINE_ID = p.PIPELINE_ID)
   WHERE p.PIPELINE_ID = p_pipeline_id AND v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  PERFORM pg_notify('etl_craft_events', 'resume_pipeline:' || COALESCE(CAST(p_pipeline_id AS text), 'NULL'));
  RETURN QUERY
  SELECT q.pause_id::bigint, q.resumed_at::timestamptz
    FROM (
      SELECT z.PAUSE_ID, z.RESUMED_AT FROM etl_craft.AUD_PIPELINE_PAUSES z WHERE z.PAUSE_ID = v_pause_id
    ) AS q(pause_id, resumed_at);
END
$fn$;
-- @end resume_pipeline

-- @function record_action
-- @args command text, arguments text, pipeline_id bigint = NULL, run_id bigint = NULL, task_id bigint = NULL, host text = NULL
-- @returns action_id bigint
-- @purpose Record one state-changing request in AUD_ACTIONS, once: the command, its arguments (a JSON object,
--   as text; sensitive values already masked by the caller), the pipeline, run and task it names, the host, and the
--   actor. The request is the action: STARTED_AT = ENDED_AT = now, OUTCOME REQUESTED, no exit code; what it led to
--   is recorded on runs and attempts.
-- @transition none (appends an AUD_ACTIONS row)
-- @locks none
-- @errors none of its own; arguments that are not JSON are refused by the database
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'record_action' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.record_action(
  p_command text,
  p_arguments text,
  p_pipeline_id bigint DEFAULT NULL,
  p_run_id bigint DEFAULT NULL,
  p_task_id bigint DEFAULT NULL,
  p_host text DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (action_id bigint)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_action_id bigint;
BEGIN
  INSERT INTO etl_craft.AUD_ACTIONS
    (STARTED_AT, ENDED_AT, ACTOR, ACTOR_KIND, HOST, COMMAND, ARGUMENTS, PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID, OUTCOME)
  VALUES (v_now, v_now, etl_craft._actor(), etl_craft._actor_kind(), p_host, p_command,
          CAST(p_arguments AS jsonb),
          p_pipeline_id, p_run_id, p_task_id, 'REQUESTED')
  RETURNING ACTION_ID INTO v_action_id;
  RETURN QUERY
  SELECT q.action_id::bigint
    FROM (
      SELECT v_action_id
    ) AS q(action_id);
END
$fn$;
-- @end record_action



-- @function pause_project
-- @args project_code text, reason text
-- @returns pipeline_id bigint, pipeline_code text, pause_id bigint, paused_at timestamptz
-- @purpose Pause every active pipeline of a project at once (etl-craft pause --project-code P): one pause per
--   pipeline in AUD_PIPELINE_PAUSES, with the actor and the reason, as pause_pipeline records it. A pipeline already
--   paused keeps its pause. Returns the pauses this call recorded, one row per pipeline.
-- @transition PAUSE (none) -> open (RESUMED_AT NULL), for each active pipeline of the project not paused
-- @locks the ux_one_open_pause entries of the project's pipelines
-- @errors EC021 no such active project; EC023 every active pipeline of the project is already paused (or it has
--   none)
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'pause_project' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.pause_project(
  p_project_code text,
  p_reason text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (pipeline_id bigint, pipeline_code text, pause_id bigint, paused_at timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_last_pause bigint;
BEGIN
  SELECT 'EC021: ' || ('project ' || COALESCE(CAST(p_project_code AS text), 'NULL') || ' is not an active project of this Engine DB, expected the code of one (CFG_PROJECTS.PROJECT_CODE); list the projects with etl-craft list') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.CFG_PROJECTS WHERE PROJECT_CODE = p_project_code AND ACTIVE_FLAG = 'Y');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT COALESCE(MAX(PAUSE_ID), 0) INTO v_last_pause FROM etl_craft.AUD_PIPELINE_PAUSES;
  -- ON CONFLICT: a pipeline another caller paused meanwhile keeps that pause.
  INSERT INTO etl_craft.AUD_PIPELINE_PAUSES (PIPELINE_ID, PAUSED_AT, PAUSED_BY, PAUSED_BY_KIND, PAUSE_REASON)
  SELECT x.PIPELINE_ID, v_now, etl_craft._actor(), etl_craft._actor_kind(), p_reason
    FROM (SELECT p.PIPELINE_ID FROM etl_craft.CFG_PIPELINES p JOIN etl_craft.CFG_PROJECTS pr ON pr.PROJECT_ID = p.PROJECT_ID
            WHERE pr.PROJECT_CODE = p_project_code AND pr.ACTIVE_FLAG = 'Y' AND p.ACTIVE_FLAG = 'Y') x
   WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINE_PAUSES z WHERE z.PIPELINE_ID = x.PIPELINE_ID AND z.RESUMED_AT IS NULL)
  ON CONFLICT (PIPELINE_ID) WHERE RESUMED_AT IS NULL DO NOTHING;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC023: ' || ('project ' || COALESCE(CAST(p_project_code AS text), 'NULL') || ' has no active pipeline that is not paused, expected at least one; nothing was paused (etl-craft resume --project-code ' || COALESCE(CAST(p_project_code AS text), 'NULL') || ' resumes them)') INTO v_failure
   WHERE v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  RETURN QUERY
  SELECT q.pipeline_id::bigint, q.pipeline_code::text, q.pause_id::bigint, q.paused_at::timestamptz
    FROM (
      SELECT z.PIPELINE_ID, p.PIPELINE_CODE, z.PAUSE_ID, z.PAUSED_AT
        FROM etl_craft.AUD_PIPELINE_PAUSES z JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = z.PIPELINE_ID
       WHERE z.PAUSE_ID > v_last_pause AND z.RESUMED_AT IS NULL
         AND z.PIPELINE_ID IN (SELECT p.PIPELINE_ID FROM etl_craft.CFG_PIPELINES p JOIN etl_craft.CFG_PROJECTS pr ON pr.PROJECT_ID = p.PROJECT_ID
                WHERE pr.PROJECT_CODE = p_project_code AND pr.ACTIVE_FLAG = 'Y' AND p.ACTIVE_FLAG = 'Y')
       ORDER BY p.PIPELINE_CODE
    ) AS q(pipeline_id, pipeline_code, pause_id, paused_at);
END
$fn$;
-- @end pause_project

-- @function resume_project
-- @args project_code text, reason text
-- @returns pipeline_id bigint, pipeline_code text, pause_id bigint, resumed_at timestamptz
-- @purpose Resume every paused active pipeline of a project at once (etl-craft resume --project-code P): closes
--   each open pause as resume_pipeline does. Returns the pauses this call closed, one row per pipeline.
-- @transition PAUSE open -> closed (RESUMED_AT set), for each paused active pipeline of the project
-- @locks the open pause rows of the project's pipelines
-- @errors EC021 no such active project; EC023 no active pipeline of the project is paused
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'resume_project' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.resume_project(
  p_project_code text,
  p_reason text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (pipeline_id bigint, pipeline_code text, pause_id bigint, resumed_at timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_paused bigint[];
BEGIN
  SELECT 'EC021: ' || ('project ' || COALESCE(CAST(p_project_code AS text), 'NULL') || ' is not an active project of this Engine DB, expected the code of one (CFG_PROJECTS.PROJECT_CODE); list the projects with etl-craft list') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.CFG_PROJECTS WHERE PROJECT_CODE = p_project_code AND ACTIVE_FLAG = 'Y');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT array_agg(z.PAUSE_ID) INTO v_paused
    FROM etl_craft.AUD_PIPELINE_PAUSES z
   WHERE z.RESUMED_AT IS NULL AND z.PIPELINE_ID IN (SELECT p.PIPELINE_ID FROM etl_craft.CFG_PIPELINES p JOIN etl_craft.CFG_PROJECTS pr ON pr.PROJECT_ID = p.PROJECT_ID
            WHERE pr.PROJECT_CODE = p_project_code AND pr.ACTIVE_FLAG = 'Y' AND p.ACTIVE_FLAG = 'Y');
  SELECT 'EC023: ' || ('project ' || COALESCE(CAST(p_project_code AS text), 'NULL') || ' has no paused active pipeline, expected at least one; there is nothing to resume') INTO v_failure
   WHERE v_paused IS NULL;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  UPDATE etl_craft.AUD_PIPELINE_PAUSES
     SET RESUMED_AT = v_now, RESUMED_BY = etl_craft._actor(), RESUMED_BY_KIND = etl_craft._actor_kind(),
         RESUME_REASON = p_reason
   WHERE RESUMED_AT IS NULL AND PAUSE_ID = ANY (v_paused);
  PERFORM pg_notify('etl_craft_events', 'resume_project:' || COALESCE(CAST(p_project_code AS text), 'NULL'));
  RETURN QUERY
  SELECT q.pipeline_id::bigint, q.pipeline_code::text, q.pause_id::bigint, q.resumed_at::timestamptz
    FROM (
      SELECT z.PIPELINE_ID, p.PIPELINE_CODE, z.PAUSE_ID, z.RESUMED_AT
        FROM etl_craft.AUD_PIPELINE_PAUSES z JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = z.PIPELINE_ID
       WHERE z.PAUSE_ID = ANY (v_paused)
       ORDER BY p.PIPELINE_CODE
    ) AS q(pipeline_id, pipeline_code, pause_id, resumed_at);
END
$fn$;
-- @end resume_project
