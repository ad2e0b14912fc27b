-- 010_runs: creating, owning, ending, cancelling, reopening and marking pipeline runs.

-- @function create_run
-- @args pipeline_id bigint, run_key text, run_date date, trigger_kind text = NULL, status text = 'IN-PROGRESS', reason text = NULL, config_sha256 text = NULL, retries int = NULL, retry_delay_seconds int = NULL, retry_backoff float = NULL, bypass_reason text = NULL, skip_reason text = NULL, catching_up bool = false, durable bool = true
-- @returns pipeline_run_id bigint, status text, created bool, message text
-- @purpose Create the run identified by (pipeline, run key), or return the existing one with created = false.
--   Its TRIGGER_KIND is trigger_kind, else (NULL) read from the key: ORCHESTRATOR for a key orchestrator:<id> (the run
--   an external orchestrator names by its own run id), MANUAL for any other.
--   Two callers creating one key at once get one run (the unique key ux_run_key decides). A pipeline has at most one
--   IN-PROGRESS run; more runs wait as QUEUED. retries, retry_delay_seconds and retry_backoff are the project's retry
--   defaults (Orchestration: Retries, Retry_delay_seconds, Retry_backoff), kept on the run (DEFAULT_RETRIES, ...) for
--   its tasks that set no RETRIES, RETRY_DELAY_SECONDS or RETRY_BACKOFF parameter; NULL: the built-in defaults.
--   A new run pins its project's latest bundle (BUNDLE_ID; NULL when the project has published none): every attempt of
--   the run runs the files of that bundle.
--   A run created IN-PROGRESS starts without admit_run, so it never skips its pipeline gate silently: when the pipeline
--   has active pipeline dependencies, the call is refused unless bypass_reason is given, and then every dependency is
--   recorded BYPASSED in AUD_GATE_DECISIONS with the actor and the reason (as admit_run's bypass records it). Create
--   such a run QUEUED and admit it with admit_run to have its gate judged.
--   A run created QUEUED ends SKIPPED at once, with its reason as MESSAGE, when skip_reason is given (a schedule tick
--   missed while no server ran) or when it is a SCHEDULE run of a pipeline whose OVERLAP_POLICY is SKIP while another
--   run of the pipeline is QUEUED or IN-PROGRESS, unless catching_up (a missed tick that CATCHUP keeps). With durable false (PostgreSQL; SQLite ignores it) the commit does not
--   wait for the WAL flush: for a server's scheduled runs, which it creates again (same key) if a crash of the database
--   loses them.
-- @transition RUN (none) -> IN-PROGRESS or QUEUED; QUEUED -> SKIPPED (a missed tick, or the overlap policy)
-- @locks the ux_run_key entry of the key
-- @errors EC021 the pipeline does not exist or is switched off; EC023 the pipeline is paused, an IN-PROGRESS run
--   is asked for while another run of the pipeline is IN-PROGRESS (ux_one_running_run), a retry default is out of
--   range, or an IN-PROGRESS run of a pipeline with a pipeline gate is asked for without bypass_reason
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'create_run' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.create_run(
  p_pipeline_id bigint,
  p_run_key text,
  p_run_date date,
  p_trigger_kind text DEFAULT NULL,
  p_status text DEFAULT 'IN-PROGRESS',
  p_reason text DEFAULT NULL,
  p_config_sha256 text DEFAULT NULL,
  p_retries integer DEFAULT NULL,
  p_retry_delay_seconds integer DEFAULT NULL,
  p_retry_backoff double precision DEFAULT NULL,
  p_bypass_reason text DEFAULT NULL,
  p_skip_reason text DEFAULT NULL,
  p_catching_up boolean DEFAULT false,
  p_durable boolean DEFAULT true,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (pipeline_run_id bigint, status text, created boolean, message text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_run_id bigint;
  v_skip text;
  v_durability text;
BEGIN
  IF p_retries < 0 OR p_retry_delay_seconds < 0 OR p_retry_backoff < 1 THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('the retry defaults are retries >= 0, retry_delay_seconds >= 0 and retry_backoff >= 1, not ' || COALESCE(CAST(p_retries AS text), 'NULL') || ', ' || COALESCE(CAST(p_retry_delay_seconds AS text), 'NULL') || ' and ' || COALESCE(CAST(p_retry_backoff AS text), 'NULL') || '; fix Orchestration: Retries, Retry_delay_seconds or Retry_backoff in craft-connector.yml'), 'EC023');
  END IF;
  SELECT 'EC021: ' || ('pipeline ' || COALESCE(CAST(p_pipeline_id AS text), 'NULL') || ' does not exist or is switched off (ACTIVE_FLAG = N); list pipelines with etl-craft list') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.CFG_PIPELINES WHERE PIPELINE_ID = p_pipeline_id AND ACTIVE_FLAG = 'Y');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC023: ' || ('pipeline ' || p.PIPELINE_CODE || ' is paused since ' || COALESCE(to_char(z.PAUSED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' by ' || z.PAUSED_BY || '; a paused pipeline starts no run: resume it with etl-craft resume --pipeline-code ' || p.PIPELINE_CODE) INTO v_failure
    FROM etl_craft.AUD_PIPELINE_PAUSES z JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = z.PIPELINE_ID
    WHERE z.PIPELINE_ID = p_pipeline_id AND z.RESUMED_AT IS NULL
      AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_ID = z.PIPELINE_ID AND r.RUN_KEY = p_run_key);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  SELECT 'EC023: ' || ('pipeline ' || p.PIPELINE_CODE || ' already has run ' || r.PIPELINE_RUN_ID || ' (' || r.RUN_KEY || ') IN-PROGRESS since ' || COALESCE(to_char(r.START_DATE AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || '; a pipeline runs one run at a time: resume that run by its id or key, or wait for it to end') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
   WHERE r.PIPELINE_ID = p_pipeline_id AND r.STATUS = 'IN-PROGRESS' AND p_status = 'IN-PROGRESS'
     AND r.RUN_KEY <> p_run_key;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  IF NOT COALESCE(p_durable, true) THEN
    v_durability := set_config('synchronous_commit', 'off', true);  -- an expression: no executor, unlike PERFORM
  END IF;
  SELECT 'EC023: ' || ('pipeline ' || p.PIPELINE_CODE || ' has a pipeline gate (' || g.deps || '), which a run created IN-PROGRESS would skip; create the run QUEUED and admit it with admit_run, which judges the gate and records its decisions, or pass bypass_reason to start it with every dependency recorded BYPASSED') INTO v_failure
    FROM etl_craft.CFG_PIPELINES p
    JOIN (SELECT string_agg(o.dep, ', ') AS deps
            FROM (SELECT d.DEPENDENCY_TYPE || ' on ' || u.PIPELINE_CODE AS dep
                    FROM etl_craft.CFG_PIPELINE_DEPENDENCY d JOIN etl_craft.CFG_PIPELINES u ON u.PIPELINE_ID = d.DEPENDS_ON_PIPELINE_ID
                   WHERE d.PIPELINE_ID = p_pipeline_id AND d.ACTIVE_FLAG = 'Y'
                   ORDER BY d.PIPELINE_DEPENDENCY_ID) o) g ON g.deps IS NOT NULL
   WHERE p.PIPELINE_ID = p_pipeline_id AND p_status = 'IN-PROGRESS' AND p_bypass_reason IS NULL
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_ID = p_pipeline_id AND r.RUN_KEY = p_run_key);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  INSERT INTO etl_craft.AUD_PIPELINES_RUN_LOG
    (PIPELINE_ID, RUN_KEY, TRIGGER_KIND, RUN_DATE, STATUS, QUEUED_AT, START_DATE, CONFIG_SHA256, STARTED_BY,
     STARTED_BY_KIND, REASON, DEFAULT_RETRIES, DEFAULT_RETRY_DELAY_SECONDS, DEFAULT_RETRY_BACKOFF, BUNDLE_ID)
  VALUES (p_pipeline_id, p_run_key,
          COALESCE(p_trigger_kind,
                   CASE WHEN substr(p_run_key, 1, 13) = 'orchestrator:' THEN 'ORCHESTRATOR'
                        ELSE 'MANUAL' END),
          p_run_date,
          p_status, v_now, CASE WHEN p_status = 'IN-PROGRESS' THEN v_now END,
          p_config_sha256, etl_craft._actor(), etl_craft._actor_kind(), p_reason,
          p_retries, p_retry_delay_seconds, p_retry_backoff,
          -- the bundle the run pins: its project's latest (etl-craft bundle publish), none when it has none
          (SELECT max(b.BUNDLE_ID) FROM etl_craft.AUD_PROJECT_BUNDLES b JOIN etl_craft.CFG_PIPELINES q ON q.PROJECT_ID = b.PROJECT_ID
            WHERE q.PIPELINE_ID = p_pipeline_id))
  ON CONFLICT DO NOTHING
  RETURNING PIPELINE_RUN_ID INTO v_run_id;
  -- nothing inserted and no run with this key: another run of the pipeline became IN-PROGRESS meanwhile
  SELECT 'EC023: ' || ('pipeline ' || COALESCE(CAST(p_pipeline_id AS text), 'NULL') || ' started another run while this one was being created; a pipeline runs one run at a time: resume that run, or wait for it to end') INTO v_failure
   WHERE v_run_id IS NULL
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = p_pipeline_id AND RUN_KEY = p_run_key);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  -- A run that starts without admit_run records each dependency of its pipeline gate BYPASSED, with who and why.
  INSERT INTO etl_craft.AUD_GATE_DECISIONS
    (PIPELINE_RUN_ID, PIPELINE_DEPENDENCY_ID, RESULT, REASON, DECIDED_AT, DECIDED_BY, DECIDED_BY_KIND)
  SELECT v_run_id, d.PIPELINE_DEPENDENCY_ID, 'BYPASSED',
         'bypassed (' || d.DEPENDENCY_TYPE || ' dependency on ' || u.PIPELINE_CODE || '): ' || p_bypass_reason,
         v_now, etl_craft._actor(), etl_craft._actor_kind()
    FROM etl_craft.CFG_PIPELINE_DEPENDENCY d JOIN etl_craft.CFG_PIPELINES u ON u.PIPELINE_ID = d.DEPENDS_ON_PIPELINE_ID
   WHERE d.PIPELINE_ID = p_pipeline_id AND d.ACTIVE_FLAG = 'Y' AND v_run_id IS NOT NULL
     AND p_status = 'IN-PROGRESS' AND p_bypass_reason IS NOT NULL
   ORDER BY d.PIPELINE_DEPENDENCY_ID;
  -- A new QUEUED run that will not run: a missed tick (skip_reason), or a scheduled run its overlap policy skips.
  SELECT CASE WHEN v_run_id IS NULL OR p_status <> 'QUEUED' THEN NULL
              ELSE COALESCE(p_skip_reason,
                            (SELECT 'previous run still active: run ' || o.PIPELINE_RUN_ID || ' (' || o.RUN_KEY || ') is '
                                    || o.STATUS || ' and the pipeline''s OVERLAP_POLICY is SKIP'
                               FROM etl_craft.AUD_PIPELINES_RUN_LOG o JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = o.PIPELINE_ID
                              WHERE o.PIPELINE_ID = p_pipeline_id AND o.PIPELINE_RUN_ID <> v_run_id
                                AND o.STATUS IN ('QUEUED', 'IN-PROGRESS') AND p.OVERLAP_POLICY = 'SKIP'
                                AND p_trigger_kind = 'SCHEDULE' AND NOT COALESCE(p_catching_up, false)
                              ORDER BY o.PIPELINE_RUN_ID LIMIT 1)) END INTO v_skip;
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG
     SET STATUS = 'SKIPPED', END_DATE = v_now, MESSAGE = v_skip, ENDED_BY = etl_craft._actor(),
         ENDED_BY_KIND = etl_craft._actor_kind()
   WHERE PIPELINE_RUN_ID = v_run_id AND v_skip IS NOT NULL AND STATUS = 'QUEUED';
  PERFORM pg_notify('etl_craft_events', 'create_run:' || COALESCE(CAST(p_pipeline_id AS text), 'NULL'));
  RETURN QUERY
  SELECT q.pipeline_run_id::bigint, q.status::text, q.created::boolean, q.message::text
    FROM (
      SELECT r.PIPELINE_RUN_ID, r.STATUS, v_run_id IS NOT NULL, r.MESSAGE
        FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_ID = p_pipeline_id AND r.RUN_KEY = p_run_key
    ) AS q(pipeline_run_id, status, created, message);
END
$fn$;
-- @end create_run

-- @function start_run
-- @args run_id bigint, owner_id text, lease_seconds int = 60
-- @returns pipeline_run_id bigint, status text, owner_id text, lease_expires_at timestamptz
-- @purpose Make owner_id the supervisor of an IN-PROGRESS run, with a lease of lease_seconds. The run must be
--   unowned, already owned by owner_id, or owned by a lease that has expired.
-- @transition none (ownership of an IN-PROGRESS run)
-- @locks the run row
-- @errors EC021 no such run; EC020 the run is not IN-PROGRESS; EC023 another owner's lease is live
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'start_run' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.start_run(
  p_run_id bigint,
  p_owner_id text,
  p_lease_seconds integer DEFAULT 60,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (pipeline_run_id bigint, status text, owner_id text, lease_expires_at timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
BEGIN
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG
     SET OWNER_ID = p_owner_id, HEARTBEAT_AT = v_now,
         LEASE_EXPIRES_AT = (v_now + make_interval(secs => p_lease_seconds))
   WHERE PIPELINE_RUN_ID = p_run_id AND STATUS = 'IN-PROGRESS'
     AND (OWNER_ID IS NULL OR OWNER_ID = p_owner_id OR LEASE_EXPIRES_AT < v_now);
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC020: ' || ('run ' || PIPELINE_RUN_ID || ' is ' || STATUS || ', expected IN-PROGRESS; start a new run, or reopen this one with etl-craft reopen') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id AND v_rows = 0 AND STATUS <> 'IN-PROGRESS';
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT 'EC023: ' || ('run ' || PIPELINE_RUN_ID || ' is supervised by ' || OWNER_ID || ' (lease until ' || COALESCE(to_char(LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || '); wait for it to finish, or stop that process: its lease then expires and etl-craft reconcile releases the run') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id AND v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  RETURN QUERY
  SELECT q.pipeline_run_id::bigint, q.status::text, q.owner_id::text, q.lease_expires_at::timestamptz
    FROM (
      SELECT PIPELINE_RUN_ID, STATUS, OWNER_ID, LEASE_EXPIRES_AT FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id
    ) AS q(pipeline_run_id, status, owner_id, lease_expires_at);
END
$fn$;
-- @end start_run

-- @function finish_run
-- @args run_id bigint, from_status text, status text, message text = NULL
-- @returns pipeline_run_id bigint, status text
-- @purpose End a run that ran no task, from the status the caller saw: a QUEUED run its gate refused
--   (SKIPPED) or that was withdrawn (CANCELLED); its open gate wait ends ABANDONED. Runs with task runs end through
--   finalize_run.
-- @transition RUN QUEUED -> SKIPPED or CANCELLED
-- @locks the run row
-- @errors EC021 no such run; EC020 the run is no longer in from_status; EC023 the run has task runs
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'finish_run' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.finish_run(
  p_run_id bigint,
  p_from_status text,
  p_status text,
  p_message text DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (pipeline_run_id bigint, status text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
BEGIN
  SELECT 'EC023: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' has task runs; end it with finalize_run') INTO v_failure
    WHERE EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG
     SET STATUS = p_status, END_DATE = v_now, MESSAGE = p_message, OWNER_ID = NULL,
         LEASE_EXPIRES_AT = NULL, ENDED_BY = etl_craft._actor(), ENDED_BY_KIND = etl_craft._actor_kind()
   WHERE PIPELINE_RUN_ID = p_run_id AND STATUS = p_from_status;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC020: ' || ('run ' || PIPELINE_RUN_ID || ' is ' || STATUS || ', expected ' || COALESCE(CAST(p_from_status AS text), 'NULL') || '; someone else changed it: read its status again') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id AND v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  UPDATE etl_craft.AUD_GATE_WAITS
     SET OUTCOME = 'ABANDONED', ENDED_AT = v_now, NEXT_CHECK_AT = NULL
   WHERE PIPELINE_RUN_ID = p_run_id AND ENDED_AT IS NULL;
  RETURN QUERY
  SELECT q.pipeline_run_id::bigint, q.status::text
    FROM (
      SELECT PIPELINE_RUN_ID, STATUS FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id
    ) AS q(pipeline_run_id, status);
END
$fn$;
-- @end finish_run

-- @function cancel_run
-- @args run_id bigint, reason text
-- @returns pipeline_run_id bigint, status text, live_attempts bigint
-- @purpose Cancel a run: its QUEUED attempts end CANCELLED at once; CLAIMED and RUNNING ones are asked to stop
--   (CANCEL_REQUESTED_AT) and their owners end them; the run ends CANCELLED now when none is live, else when
--   finalize_run finds them all ended; its open gate waits end ABANDONED. Recorded as a CANCEL intervention.
-- @transition RUN QUEUED or IN-PROGRESS -> CANCELLED; ATTEMPT QUEUED -> CANCELLED
-- @locks the run row, then its attempts
-- @errors EC021 no such run; EC020 the run has already ended
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'cancel_run' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.cancel_run(
  p_run_id bigint,
  p_reason text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (pipeline_run_id bigint, status text, live_attempts bigint)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_status text;
  v_live bigint;
BEGIN
  SELECT STATUS INTO v_status FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id FOR UPDATE;
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC020: ' || ('run ' || PIPELINE_RUN_ID || ' already ended ' || STATUS || '; there is nothing to cancel') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id AND STATUS NOT IN ('QUEUED', 'IN-PROGRESS');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  -- The run's live attempts are locked before any of its task runs, in attempt order: start_attempt and
  -- finish_attempt lock an attempt and then its task run, so taking task runs first deadlocked with a task process
  -- starting or ending while the run was cancelled.
  PERFORM 1 FROM etl_craft.AUD_TASK_ATTEMPTS a
    WHERE a.STATUS IN ('QUEUED', 'CLAIMED', 'RUNNING')
      AND a.TASK_RUN_ID IN (SELECT TASK_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id)
    ORDER BY a.ATTEMPT_ID FOR UPDATE OF a;
  UPDATE etl_craft.AUD_TASK_RUN_LOG SET STATUS = 'CANCELLED', END_DATE = v_now, ERROR_MESSAGE = NULL, MESSAGE = p_reason
   WHERE TASK_RUN_ID IN (SELECT a.TASK_RUN_ID FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
                          WHERE t.PIPELINE_RUN_ID = p_run_id AND a.STATUS = 'QUEUED');
  UPDATE etl_craft.AUD_TASK_ATTEMPTS SET STATUS = 'CANCELLED', ENDED_AT = v_now, CANCEL_REQUESTED_AT = v_now,
         ERROR_MESSAGE = 'cancelled before it started: ' || COALESCE(p_reason, 'no reason given')
   WHERE STATUS = 'QUEUED'
     AND TASK_RUN_ID IN (SELECT TASK_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  UPDATE etl_craft.AUD_TASK_ATTEMPTS SET CANCEL_REQUESTED_AT = COALESCE(CANCEL_REQUESTED_AT, v_now)
   WHERE STATUS IN ('CLAIMED', 'RUNNING')
     AND TASK_RUN_ID IN (SELECT TASK_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT v_rows INTO v_live;
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG
     SET CANCEL_REQUESTED_AT = COALESCE(CANCEL_REQUESTED_AT, v_now),
         STATUS = CASE WHEN v_live = 0 THEN 'CANCELLED' ELSE STATUS END,
         END_DATE = CASE WHEN v_live = 0 THEN v_now END,
         OWNER_ID = CASE WHEN v_live = 0 THEN NULL ELSE OWNER_ID END,
         LEASE_EXPIRES_AT = CASE WHEN v_live = 0 THEN NULL ELSE LEASE_EXPIRES_AT END,
         ENDED_BY = CASE WHEN v_live = 0 THEN etl_craft._actor() END,
         ENDED_BY_KIND = CASE WHEN v_live = 0 THEN etl_craft._actor_kind() END,
         MESSAGE = 'cancelled: ' || COALESCE(p_reason, 'no reason given')
   WHERE PIPELINE_RUN_ID = p_run_id;
  INSERT INTO etl_craft.AUD_RUN_INTERVENTIONS
    (PIPELINE_RUN_ID, INTERVENTION, FROM_STATUS, TO_STATUS, REASON, REQUESTED_BY, REQUESTED_BY_KIND, REQUESTED_AT)
  VALUES (p_run_id, 'CANCEL', v_status, 'CANCELLED', p_reason, etl_craft._actor(), etl_craft._actor_kind(), v_now);
  UPDATE etl_craft.AUD_GATE_WAITS
     SET OUTCOME = 'ABANDONED', ENDED_AT = v_now, NEXT_CHECK_AT = NULL
   WHERE PIPELINE_RUN_ID = p_run_id AND ENDED_AT IS NULL;
  PERFORM pg_notify('etl_craft_events', 'cancel_run:' || COALESCE(CAST(p_run_id AS text), 'NULL'));
  RETURN QUERY
  SELECT q.pipeline_run_id::bigint, q.status::text, q.live_attempts::bigint
    FROM (
      SELECT PIPELINE_RUN_ID, STATUS, v_live FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id
    ) AS q(pipeline_run_id, status, live_attempts);
END
$fn$;
-- @end cancel_run

-- @function reopen_run
-- @args run_id bigint, reason text
-- @returns pipeline_run_id bigint, status text, output_revision int, repair_pending bool
-- @purpose Reopen an ended run so tasks can run in it again (a repair). A run that had succeeded becomes
--   REPAIR_PENDING: ending SUCCESS again publishes OUTPUT_REVISION + 1. Recorded as a REOPEN intervention.
-- @transition RUN SUCCESS, FAILED, SKIPPED or CANCELLED -> IN-PROGRESS
-- @locks the run row
-- @errors EC021 no such run; EC020 the run has not ended; EC023 another run of the pipeline has not ended
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'reopen_run' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.reopen_run(
  p_run_id bigint,
  p_reason text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (pipeline_run_id bigint, status text, output_revision integer, repair_pending boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_status text;
BEGIN
  SELECT STATUS INTO v_status FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id FOR UPDATE;
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC023: ' || ('run ' || r.PIPELINE_RUN_ID || ' cannot be reopened while run ' || o.PIPELINE_RUN_ID || ' (' || o.RUN_KEY || ') of the same pipeline is ' || o.STATUS || '; let it finish or cancel it first') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r JOIN etl_craft.AUD_PIPELINES_RUN_LOG o ON o.PIPELINE_ID = r.PIPELINE_ID AND o.PIPELINE_RUN_ID <> r.PIPELINE_RUN_ID
   WHERE r.PIPELINE_RUN_ID = p_run_id AND o.STATUS IN ('QUEUED', 'IN-PROGRESS');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG
     SET STATUS = 'IN-PROGRESS', END_DATE = NULL, ENDED_BY = NULL, ENDED_BY_KIND = NULL, OWNER_ID = NULL,
         LEASE_EXPIRES_AT = NULL, CANCEL_REQUESTED_AT = NULL,
         REPAIR_PENDING = CASE WHEN STATUS = 'SUCCESS' THEN 'Y' ELSE REPAIR_PENDING END,
         MESSAGE = 'reopened: ' || COALESCE(p_reason, 'no reason given')
   WHERE PIPELINE_RUN_ID = p_run_id AND STATUS IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED');
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC020: ' || ('run ' || PIPELINE_RUN_ID || ' is ' || STATUS || ' and has not ended; only an ended run can be reopened') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id AND v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  INSERT INTO etl_craft.AUD_RUN_INTERVENTIONS
    (PIPELINE_RUN_ID, INTERVENTION, FROM_STATUS, TO_STATUS, REASON, REQUESTED_BY, REQUESTED_BY_KIND, REQUESTED_AT)
  VALUES (p_run_id, 'REOPEN', v_status, 'IN-PROGRESS', p_reason, etl_craft._actor(), etl_craft._actor_kind(), v_now);
  PERFORM pg_notify('etl_craft_events', 'reopen_run:' || COALESCE(CAST(p_run_id AS text), 'NULL'));
  RETURN QUERY
  SELECT q.pipeline_run_id::bigint, q.status::text, q.output_revision::integer, q.repair_pending::boolean
    FROM (
      SELECT PIPELINE_RUN_ID, STATUS, OUTPUT_REVISION, REPAIR_PENDING = 'Y' FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id
    ) AS q(pipeline_run_id, status, output_revision, repair_pending);
END
$fn$;
-- @end reopen_run

-- @function mark_run
-- @args run_id bigint, status text, reason text
-- @returns pipeline_run_id bigint, status text, output_revision int
-- @purpose An operator sets a run's ending. Refused while one of its attempts is CLAIMED or RUNNING; its QUEUED
--   attempts are cancelled and its open gate waits end ABANDONED. Marking a repaired run SUCCESS publishes its
--   next revision. Recorded as a MARK intervention.
-- @transition RUN IN-PROGRESS or ended -> SUCCESS, FAILED or SKIPPED
-- @locks the run row, then its attempts
-- @errors EC021 no such run; EC023 the status is not SUCCESS, FAILED or SKIPPED, the run is QUEUED, or an
--   attempt of it is live
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'mark_run' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.mark_run(
  p_run_id bigint,
  p_status text,
  p_reason text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (pipeline_run_id bigint, status text, output_revision integer)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_status text;
BEGIN
  IF p_status NOT IN ('SUCCESS', 'FAILED', 'SKIPPED') OR p_status IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('mark_run sets SUCCESS, FAILED or SKIPPED, not ' || COALESCE(CAST(p_status AS text), 'NULL') || '; to stop a run use cancel_run'), 'EC023');
  END IF;
  SELECT STATUS INTO v_status FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id FOR UPDATE;
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC023: ' || ('run ' || PIPELINE_RUN_ID || ' is QUEUED and has not started; end it with finish_run or cancel it') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id AND STATUS = 'QUEUED';
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  SELECT 'EC023: ' || ('run ' || t.PIPELINE_RUN_ID || ' has attempt ' || a.ATTEMPT_ID || ' ' || a.STATUS || ' by ' || COALESCE(a.OWNER_ID, 'nobody') || ' (lease until ' || COALESCE(to_char(a.LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || '); wait for it, cancel the run, or run etl-craft reconcile once its owner is gone') INTO v_failure
    FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
   WHERE t.PIPELINE_RUN_ID = p_run_id AND a.STATUS IN ('CLAIMED', 'RUNNING');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  UPDATE etl_craft.AUD_TASK_RUN_LOG SET STATUS = 'CANCELLED', END_DATE = v_now, MESSAGE = 'the run was marked ' || p_status
   WHERE TASK_RUN_ID IN (SELECT a.TASK_RUN_ID FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
                          WHERE t.PIPELINE_RUN_ID = p_run_id AND a.STATUS = 'QUEUED');
  UPDATE etl_craft.AUD_TASK_ATTEMPTS SET STATUS = 'CANCELLED', ENDED_AT = v_now,
         ERROR_MESSAGE = 'cancelled before it started: the run was marked ' || p_status
   WHERE STATUS = 'QUEUED'
     AND TASK_RUN_ID IN (SELECT TASK_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG
     SET STATUS = p_status, END_DATE = COALESCE(END_DATE, v_now), OWNER_ID = NULL,
         LEASE_EXPIRES_AT = NULL, ENDED_BY = etl_craft._actor(), ENDED_BY_KIND = etl_craft._actor_kind(),
         OUTPUT_REVISION = OUTPUT_REVISION + CASE WHEN p_status = 'SUCCESS' AND REPAIR_PENDING = 'Y' THEN 1 ELSE 0 END,
         REPAIR_PENDING = CASE WHEN p_status = 'SUCCESS' THEN 'N' ELSE REPAIR_PENDING END,
         MESSAGE = 'marked ' || p_status || ': ' || COALESCE(p_reason, 'no reason given')
   WHERE PIPELINE_RUN_ID = p_run_id;
  INSERT INTO etl_craft.AUD_RUN_INTERVENTIONS
    (PIPELINE_RUN_ID, INTERVENTION, FROM_STATUS, TO_STATUS, REASON, REQUESTED_BY, REQUESTED_BY_KIND, REQUESTED_AT)
  VALUES (p_run_id, 'MARK', v_status, p_status, p_reason, etl_craft._actor(), etl_craft._actor_kind(), v_now);
  UPDATE etl_craft.AUD_GATE_WAITS
     SET OUTCOME = 'ABANDONED', ENDED_AT = v_now, NEXT_CHECK_AT = NULL
   WHERE PIPELINE_RUN_ID = p_run_id AND ENDED_AT IS NULL;
  RETURN QUERY
  SELECT q.pipeline_run_id::bigint, q.status::text, q.output_revision::integer
    FROM (
      SELECT PIPELINE_RUN_ID, STATUS, OUTPUT_REVISION FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id
    ) AS q(pipeline_run_id, status, output_revision);
END
$fn$;
-- @end mark_run
