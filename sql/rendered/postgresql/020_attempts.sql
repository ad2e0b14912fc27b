-- 020_attempts: an attempt's life after it was queued: claimed by an owner, started, and ended by its owner
-- (SUCCESS, FAILED, TIMED_OUT, CANCELLED), by an operator's cancel, or LOST when its owner stopped renewing it.
-- Every change is a compare-and-set on (ATTEMPT_ID, STATUS[, OWNER_ID]) and writes the task-run summary in the
-- same transaction; a refused call changes nothing.


-- @function retry_policy
-- @args run_id bigint
-- @returns task_id bigint, task_code text, retries int, retry_delay_seconds int, retry_backoff float, max_delay_seconds int
-- @purpose The retry policy each task of the run's pipeline runs under, as the retry rule of finish_attempt,
--   time_out_attempt, lose_attempt and reconcile_expired applies it: RETRIES, RETRY_DELAY_SECONDS and RETRY_BACKOFF
--   from the task's parameters, else the defaults the run was created with, else the built-in defaults; retry n is
--   due RETRY_DELAY_SECONDS x RETRY_BACKOFF^(n-1) seconds after the failure, at most max_delay_seconds. Reads only.
-- @transition none (reads only)
-- @locks none
-- @errors EC021 no such run
-- @readonly yes
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'retry_policy' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.retry_policy(
  p_run_id bigint,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (task_id bigint, task_code text, retries integer, retry_delay_seconds integer, retry_backoff double precision, max_delay_seconds integer)
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
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  RETURN QUERY
  SELECT q.task_id::bigint, q.task_code::text, q.retries::integer, q.retry_delay_seconds::integer, q.retry_backoff::double precision, q.max_delay_seconds::integer
    FROM (
      SELECT c.TASK_ID, c.TASK_CODE, c.RETRIES, c.DELAY, c.BACKOFF, 3600
        FROM (SELECT t.TASK_ID, t.TASK_CODE, COALESCE((SELECT CASE WHEN w.v ~ '^[+]?[0-9]{1,9}$' THEN CAST(ltrim(w.v, '+') AS INTEGER) END
                        FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                       WHERE tp.TASK_ID = t.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRIES' AND tp.ACTIVE_FLAG = 'Y'
                       ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) w), r.DEFAULT_RETRIES, 0) AS RETRIES,
                     COALESCE((SELECT CASE WHEN w.v ~ '^[+]?[0-9]{1,9}$' THEN CAST(ltrim(w.v, '+') AS INTEGER) END
                        FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                       WHERE tp.TASK_ID = t.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRY_DELAY_SECONDS' AND tp.ACTIVE_FLAG = 'Y'
                       ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) w), r.DEFAULT_RETRY_DELAY_SECONDS, 60) AS DELAY,
                     GREATEST(COALESCE((SELECT CASE WHEN n.v ~ '^[0-9]{1,9}([.][0-9]*)?$' THEN CAST(n.v AS double precision) END
                        FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                       WHERE tp.TASK_ID = t.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRY_BACKOFF' AND tp.ACTIVE_FLAG = 'Y'
                       ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) n), r.DEFAULT_RETRY_BACKOFF, 2.0), 1.0) AS BACKOFF
                FROM etl_craft.AUD_PIPELINES_RUN_LOG r JOIN etl_craft.CFG_TASKS t ON t.PIPELINE_ID = r.PIPELINE_ID
               WHERE r.PIPELINE_RUN_ID = p_run_id) c
       ORDER BY c.TASK_CODE
    ) AS q(task_id, task_code, retries, retry_delay_seconds, retry_backoff, max_delay_seconds);
END
$fn$;
-- @end retry_policy

-- @function claim_attempt
-- @args pool text, slot_kinds text, owner_id text, lease_seconds int = 60, max_attempts int = 1, run_id bigint = NULL, durable bool = true
-- @returns attempt_id bigint, task_run_id bigint, pipeline_run_id bigint, task_id bigint, attempt_number int, lease_expires_at timestamptz
-- @purpose Claim up to max_attempts QUEUED attempts of pool whose SLOT_KIND is in slot_kinds (a comma list, such
--   as 'ingestion,warehouse') for owner_id, with a lease of lease_seconds: highest PRIORITY first, then the oldest
--   (QUEUED_AT, ATTEMPT_ID). Only attempts that are due (NOT_BEFORE NULL or past) and whose run is IN-PROGRESS with
--   no cancel requested are claimed; with run_id, only attempts of that run (an `etl-craft run` supervising one run).
--   Sets OWNER_ID, CLAIMED_AT, LEASE_EXPIRES_AT and HEARTBEAT_AT and returns the attempts claimed, in that order;
--   none when nothing is ready (not an error). With durable false (PostgreSQL; SQLite ignores it) the transaction
--   commits without waiting for its WAL to reach disk (synchronous_commit off for this transaction only): a claim lost
--   in a server crash returns its attempts to the queue, and the claimant's next call on them (start_attempt,
--   finish_attempt, renew_lease), a synchronous commit whose flush also makes the claim durable, is refused, so
--   nothing has run. Use it only when the claim is its own transaction and nothing irrevocable happens before that
--   next call; `etl-craft run` claims this way.
-- @transition ATTEMPT QUEUED -> CLAIMED
-- @locks the claimed attempt rows. PostgreSQL: FOR UPDATE SKIP LOCKED, so concurrent claimers get disjoint
--   attempts and never wait on each other (with several slot kinds, the best candidates of each kind are locked until
--   the claim commits); SQLite: BEGIN IMMEDIATE admits one writer at a time
-- @errors EC023 owner_id is empty, or max_attempts or lease_seconds is below 1
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'claim_attempt' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.claim_attempt(
  p_pool text,
  p_slot_kinds text,
  p_owner_id text,
  p_lease_seconds integer DEFAULT 60,
  p_max_attempts integer DEFAULT 1,
  p_run_id bigint DEFAULT NULL,
  p_durable boolean DEFAULT true,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (attempt_id bigint, task_run_id bigint, pipeline_run_id bigint, task_id bigint, attempt_number integer, lease_expires_at timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off
SET plan_cache_mode = force_generic_plan
SET enable_sort = off
SET enable_seqscan = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_claim bigint[];
  v_durability text;
  v_queued text;
BEGIN
  IF COALESCE(p_owner_id, '') = '' OR p_max_attempts IS NULL OR p_max_attempts < 1 THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || (CASE WHEN COALESCE(p_owner_id, '') = '' THEN 'claim_attempt needs an owner_id: the id of the process that will run the attempts and renew their leases' ELSE 'max_attempts must be at least 1, not ' || COALESCE(CAST(p_max_attempts AS text), 'NULL') END), 'EC023');
  END IF;
  IF p_lease_seconds IS NULL OR p_lease_seconds < 1 THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('lease_seconds must be a whole number of seconds of at least 1, not ' || COALESCE(CAST(p_lease_seconds AS text), 'NULL')), 'EC023');
  END IF;
  IF NOT COALESCE(p_durable, true) THEN
    v_durability := set_config('synchronous_commit', 'off', true);  -- an expression: no executor, unlike PERFORM
  END IF;
  IF p_run_id IS NULL THEN
    IF strpos(p_slot_kinds, ',') = 0 THEN
      SELECT array_agg(c.ATTEMPT_ID) INTO v_claim FROM (SELECT a.ATTEMPT_ID, a.PRIORITY, a.QUEUED_AT
          FROM etl_craft.AUD_TASK_ATTEMPTS a
         WHERE a.STATUS = 'QUEUED' AND a.POOL = p_pool AND a.SLOT_KIND = p_slot_kinds
           AND (a.NOT_BEFORE IS NULL OR a.NOT_BEFORE <= v_now) AND a.CANCEL_REQUESTED_AT IS NULL
           AND (SELECT r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL
                  FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = a.PIPELINE_RUN_ID)
         ORDER BY a.PRIORITY DESC, a.QUEUED_AT, a.ATTEMPT_ID
         LIMIT p_max_attempts FOR UPDATE OF a SKIP LOCKED) c;
    ELSE
      SELECT array_agg(c.ATTEMPT_ID) INTO v_claim FROM (SELECT k.ATTEMPT_ID
          FROM (
                SELECT * FROM (
                  SELECT a.ATTEMPT_ID, a.PRIORITY, a.QUEUED_AT
                    FROM etl_craft.AUD_TASK_ATTEMPTS a
                   WHERE a.STATUS = 'QUEUED' AND a.POOL = p_pool AND a.SLOT_KIND = 'ingestion' AND 'ingestion' = ANY (string_to_array(p_slot_kinds, ','))
                     AND (a.NOT_BEFORE IS NULL OR a.NOT_BEFORE <= v_now) AND a.CANCEL_REQUESTED_AT IS NULL
                     AND (SELECT r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL
                            FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = a.PIPELINE_RUN_ID)
                   ORDER BY a.PRIORITY DESC, a.QUEUED_AT, a.ATTEMPT_ID
                   LIMIT p_max_attempts FOR UPDATE OF a SKIP LOCKED
                ) k_ingestion
                UNION ALL
                SELECT * FROM (
                  SELECT a.ATTEMPT_ID, a.PRIORITY, a.QUEUED_AT
                    FROM etl_craft.AUD_TASK_ATTEMPTS a
                   WHERE a.STATUS = 'QUEUED' AND a.POOL = p_pool AND a.SLOT_KIND = 'warehouse' AND 'warehouse' = ANY (string_to_array(p_slot_kinds, ','))
                     AND (a.NOT_BEFORE IS NULL OR a.NOT_BEFORE <= v_now) AND a.CANCEL_REQUESTED_AT IS NULL
                     AND (SELECT r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL
                            FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = a.PIPELINE_RUN_ID)
                   ORDER BY a.PRIORITY DESC, a.QUEUED_AT, a.ATTEMPT_ID
                   LIMIT p_max_attempts FOR UPDATE OF a SKIP LOCKED
                ) k_warehouse
               ) k
         ORDER BY k.PRIORITY DESC, k.QUEUED_AT, k.ATTEMPT_ID
         LIMIT p_max_attempts) c;
    END IF;
  ELSE
    IF strpos(p_slot_kinds, ',') = 0 THEN
      SELECT array_agg(c.ATTEMPT_ID) INTO v_claim FROM (SELECT a.ATTEMPT_ID, a.PRIORITY, a.QUEUED_AT
          FROM etl_craft.AUD_TASK_ATTEMPTS a
         WHERE a.STATUS = 'QUEUED' AND a.POOL = p_pool AND a.SLOT_KIND = p_slot_kinds
           AND (a.NOT_BEFORE IS NULL OR a.NOT_BEFORE <= v_now) AND a.CANCEL_REQUESTED_AT IS NULL
           AND a.PIPELINE_RUN_ID = p_run_id
           AND EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG r
                        WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS = 'IN-PROGRESS'
                          AND r.CANCEL_REQUESTED_AT IS NULL)
         ORDER BY a.PRIORITY DESC, a.QUEUED_AT, a.ATTEMPT_ID
         LIMIT p_max_attempts FOR UPDATE OF a SKIP LOCKED) c;
    ELSE
      SELECT array_agg(c.ATTEMPT_ID) INTO v_claim FROM (SELECT k.ATTEMPT_ID
          FROM (
                SELECT * FROM (
                  SELECT a.ATTEMPT_ID, a.PRIORITY, a.QUEUED_AT
                    FROM etl_craft.AUD_TASK_ATTEMPTS a
                   WHERE a.STATUS = 'QUEUED' AND a.POOL = p_pool AND a.SLOT_KIND = 'ingestion' AND 'ingestion' = ANY (string_to_array(p_slot_kinds, ','))
                     AND (a.NOT_BEFORE IS NULL OR a.NOT_BEFORE <= v_now) AND a.CANCEL_REQUESTED_AT IS NULL
                     AND a.PIPELINE_RUN_ID = p_run_id
                     AND EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG r
                                  WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS = 'IN-PROGRESS'
                                    AND r.CANCEL_REQUESTED_AT IS NULL)
                   ORDER BY a.PRIORITY DESC, a.QUEUED_AT, a.ATTEMPT_ID
                   LIMIT p_max_attempts FOR UPDATE OF a SKIP LOCKED
                ) k_ingestion
                UNION ALL
                SELECT * FROM (
                  SELECT a.ATTEMPT_ID, a.PRIORITY, a.QUEUED_AT
                    FROM etl_craft.AUD_TASK_ATTEMPTS a
                   WHERE a.STATUS = 'QUEUED' AND a.POOL = p_pool AND a.SLOT_KIND = 'warehouse' AND 'warehouse' = ANY (string_to_array(p_slot_kinds, ','))
                     AND (a.NOT_BEFORE IS NULL OR a.NOT_BEFORE <= v_now) AND a.CANCEL_REQUESTED_AT IS NULL
                     AND a.PIPELINE_RUN_ID = p_run_id
                     AND EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG r
                                  WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS = 'IN-PROGRESS'
                                    AND r.CANCEL_REQUESTED_AT IS NULL)
                   ORDER BY a.PRIORITY DESC, a.QUEUED_AT, a.ATTEMPT_ID
                   LIMIT p_max_attempts FOR UPDATE OF a SKIP LOCKED
                ) k_warehouse
               ) k
         ORDER BY k.PRIORITY DESC, k.QUEUED_AT, k.ATTEMPT_ID
         LIMIT p_max_attempts) c;
    END IF;
  END IF;
  IF v_claim IS NOT NULL AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS la
           WHERE la.ATTEMPT_ID = ANY (v_claim)
             AND (SELECT (lp.MAX_PARALLEL_TASKS IS NOT NULL OR lj.MAX_RUNNING_TASKS IS NOT NULL OR (la.SLOT_KIND = 'warehouse' AND lj.MAX_WAREHOUSE_QUERIES IS NOT NULL))
                    FROM etl_craft.AUD_PIPELINES_RUN_LOG lr JOIN etl_craft.CFG_PIPELINES lp ON lp.PIPELINE_ID = lr.PIPELINE_ID
                    JOIN etl_craft.CFG_PROJECTS lj ON lj.PROJECT_ID = lp.PROJECT_ID
                   WHERE lr.PIPELINE_RUN_ID = la.PIPELINE_RUN_ID)) THEN
    DECLARE
      v_c record;
      v_full_pipelines bigint[] := '{}';
      v_full_projects bigint[] := '{}';
      v_full_warehouses bigint[] := '{}';
    BEGIN
      v_claim := '{}';
      FOR v_c IN SELECT a.ATTEMPT_ID, a.SLOT_KIND, a.PRIORITY, a.QUEUED_AT, r.PIPELINE_ID, p.MAX_PARALLEL_TASKS AS PIPELINE_LIMIT,
                        p.PROJECT_ID, j.MAX_RUNNING_TASKS AS PROJECT_LIMIT,
                        CASE WHEN a.SLOT_KIND = 'warehouse' THEN j.MAX_WAREHOUSE_QUERIES END AS WAREHOUSE_LIMIT
                   FROM etl_craft.AUD_TASK_ATTEMPTS a
                   JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = a.PIPELINE_RUN_ID
                   JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
                   JOIN etl_craft.CFG_PROJECTS j ON j.PROJECT_ID = p.PROJECT_ID
                  WHERE a.STATUS = 'QUEUED' AND a.POOL = p_pool AND a.SLOT_KIND = ANY (string_to_array(p_slot_kinds, ','))
                    AND (a.NOT_BEFORE IS NULL OR a.NOT_BEFORE <= v_now) AND a.CANCEL_REQUESTED_AT IS NULL
                    AND r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL
                    AND (p_run_id IS NULL OR a.PIPELINE_RUN_ID = p_run_id)
                  ORDER BY a.PRIORITY DESC, a.QUEUED_AT, a.ATTEMPT_ID
                  FOR UPDATE OF a SKIP LOCKED LOOP
        IF v_c.PIPELINE_LIMIT IS NULL AND v_c.PROJECT_LIMIT IS NULL AND v_c.WAREHOUSE_LIMIT IS NULL THEN
          v_claim := v_claim || v_c.ATTEMPT_ID;
        ELSIF v_c.PIPELINE_ID = ANY (v_full_pipelines) OR v_c.PROJECT_ID = ANY (v_full_projects)
              OR (v_c.WAREHOUSE_LIMIT IS NOT NULL AND v_c.PROJECT_ID = ANY (v_full_warehouses)) THEN
          NULL;  -- at a limit already found full in this call
        ELSIF (v_c.PROJECT_LIMIT IS NULL AND v_c.WAREHOUSE_LIMIT IS NULL
               OR pg_try_advisory_xact_lock(25002, v_c.PROJECT_ID::int))
              AND (v_c.PIPELINE_LIMIT IS NULL OR pg_try_advisory_xact_lock(25001, v_c.PIPELINE_ID::int)) THEN
          IF v_c.PIPELINE_LIMIT IS NOT NULL
             AND (SELECT COUNT(*) FROM etl_craft.AUD_TASK_ATTEMPTS l JOIN etl_craft.AUD_PIPELINES_RUN_LOG lr ON lr.PIPELINE_RUN_ID = l.PIPELINE_RUN_ID
                    JOIN etl_craft.CFG_PIPELINES lp ON lp.PIPELINE_ID = lr.PIPELINE_ID
                   WHERE l.STATUS IN ('CLAIMED', 'RUNNING') AND lr.PIPELINE_ID = v_c.PIPELINE_ID)
                 + (SELECT COUNT(*) FROM etl_craft.AUD_TASK_ATTEMPTS l JOIN etl_craft.AUD_PIPELINES_RUN_LOG lr ON lr.PIPELINE_RUN_ID = l.PIPELINE_RUN_ID
                    JOIN etl_craft.CFG_PIPELINES lp ON lp.PIPELINE_ID = lr.PIPELINE_ID
                   WHERE l.ATTEMPT_ID = ANY (v_claim) AND lr.PIPELINE_ID = v_c.PIPELINE_ID)
                 >= v_c.PIPELINE_LIMIT THEN
            v_full_pipelines := v_full_pipelines || v_c.PIPELINE_ID;
          ELSIF v_c.WAREHOUSE_LIMIT IS NOT NULL
             AND (SELECT COUNT(*) FROM etl_craft.AUD_TASK_ATTEMPTS l JOIN etl_craft.AUD_PIPELINES_RUN_LOG lr ON lr.PIPELINE_RUN_ID = l.PIPELINE_RUN_ID
                    JOIN etl_craft.CFG_PIPELINES lp ON lp.PIPELINE_ID = lr.PIPELINE_ID
                   WHERE l.STATUS IN ('CLAIMED', 'RUNNING') AND lp.PROJECT_ID = v_c.PROJECT_ID AND l.SLOT_KIND = 'warehouse')
                 + (SELECT COUNT(*) FROM etl_craft.AUD_TASK_ATTEMPTS l JOIN etl_craft.AUD_PIPELINES_RUN_LOG lr ON lr.PIPELINE_RUN_ID = l.PIPELINE_RUN_ID
                    JOIN etl_craft.CFG_PIPELINES lp ON lp.PIPELINE_ID = lr.PIPELINE_ID
                   WHERE l.ATTEMPT_ID = ANY (v_claim) AND lp.PROJECT_ID = v_c.PROJECT_ID AND l.SLOT_KIND = 'warehouse')
                 >= v_c.WAREHOUSE_LIMIT THEN
            v_full_warehouses := v_full_warehouses || v_c.PROJECT_ID;
          ELSIF v_c.PROJECT_LIMIT IS NOT NULL
             AND (SELECT COUNT(*) FROM etl_craft.AUD_TASK_ATTEMPTS l JOIN etl_craft.AUD_PIPELINES_RUN_LOG lr ON lr.PIPELINE_RUN_ID = l.PIPELINE_RUN_ID
                    JOIN etl_craft.CFG_PIPELINES lp ON lp.PIPELINE_ID = lr.PIPELINE_ID
                   WHERE l.STATUS IN ('CLAIMED', 'RUNNING') AND lp.PROJECT_ID = v_c.PROJECT_ID)
                 + (SELECT COUNT(*) FROM etl_craft.AUD_TASK_ATTEMPTS l JOIN etl_craft.AUD_PIPELINES_RUN_LOG lr ON lr.PIPELINE_RUN_ID = l.PIPELINE_RUN_ID
                    JOIN etl_craft.CFG_PIPELINES lp ON lp.PIPELINE_ID = lr.PIPELINE_ID
                   WHERE l.ATTEMPT_ID = ANY (v_claim) AND lp.PROJECT_ID = v_c.PROJECT_ID)
                 >= v_c.PROJECT_LIMIT THEN
            v_full_projects := v_full_projects || v_c.PROJECT_ID;
          ELSE
            v_claim := v_claim || v_c.ATTEMPT_ID;
          END IF;
        END IF;
        EXIT WHEN cardinality(v_claim) >= p_max_attempts;
      END LOOP;
    END;
  END IF;
  v_queued := 'QUEUED';
  UPDATE etl_craft.AUD_TASK_ATTEMPTS
     SET STATUS = 'CLAIMED', OWNER_ID = p_owner_id, CLAIMED_AT = v_now, HEARTBEAT_AT = v_now,
         LEASE_EXPIRES_AT = (v_now + make_interval(secs => p_lease_seconds))
   WHERE ATTEMPT_ID = ANY (v_claim) AND STATUS = v_queued;
  RETURN QUERY
  SELECT q.attempt_id::bigint, q.task_run_id::bigint, q.pipeline_run_id::bigint, q.task_id::bigint, q.attempt_number::integer, q.lease_expires_at::timestamptz
    FROM (
      SELECT a.ATTEMPT_ID, a.TASK_RUN_ID, a.PIPELINE_RUN_ID,
             (SELECT t.TASK_ID FROM etl_craft.AUD_TASK_RUN_LOG t WHERE t.TASK_RUN_ID = a.TASK_RUN_ID), a.ATTEMPT_NUMBER, a.LEASE_EXPIRES_AT
        FROM etl_craft.AUD_TASK_ATTEMPTS a
       WHERE a.ATTEMPT_ID = ANY (v_claim)
       ORDER BY a.PRIORITY DESC, a.QUEUED_AT, a.ATTEMPT_ID
    ) AS q(attempt_id, task_run_id, pipeline_run_id, task_id, attempt_number, lease_expires_at);
END
$fn$;
-- @end claim_attempt

-- @function start_attempt
-- @args attempt_id bigint, owner_id text, host text, pid int, process_start text, lease_seconds int = 60, log_path text = NULL
-- @returns attempt_id bigint, status text, lease_expires_at timestamptz
-- @purpose The owner of a CLAIMED attempt records that its process started: HOST, PID and PROCESS_START (the
--   process's birth identity, which reconciliation checks), STARTED_AT, the file its output goes to (LOG_PATH, so
--   its log can be read while it runs), and a renewed lease. The task run's START_DATE is set if it has none.
-- @transition ATTEMPT CLAIMED -> RUNNING
-- @locks the attempt row, then its task run
-- @errors EC021 no such attempt; EC020 the attempt is not CLAIMED by owner_id (ended, lost, cancelled, already
--   started, or claimed by another owner); EC023 lease_seconds is below 1
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'start_attempt' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.start_attempt(
  p_attempt_id bigint,
  p_owner_id text,
  p_host text,
  p_pid integer,
  p_process_start text,
  p_lease_seconds integer DEFAULT 60,
  p_log_path text DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (attempt_id bigint, status text, lease_expires_at timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off
SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_task_run_id bigint;
BEGIN
  IF p_lease_seconds IS NULL OR p_lease_seconds < 1 THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('lease_seconds must be a whole number of seconds of at least 1, not ' || COALESCE(CAST(p_lease_seconds AS text), 'NULL')), 'EC023');
  END IF;
  UPDATE etl_craft.AUD_TASK_ATTEMPTS
     SET STATUS = 'RUNNING', HOST = p_host, PID = p_pid, PROCESS_START = p_process_start,
         STARTED_AT = v_now, HEARTBEAT_AT = v_now, LOG_PATH = COALESCE(p_log_path, LOG_PATH),
         LEASE_EXPIRES_AT = (v_now + make_interval(secs => p_lease_seconds))
   WHERE ATTEMPT_ID = p_attempt_id AND STATUS = 'CLAIMED' AND OWNER_ID = p_owner_id
  RETURNING TASK_RUN_ID INTO v_task_run_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  IF v_rows = 0 THEN
    SELECT 'EC021: ' || ('attempt ' || COALESCE(CAST(p_attempt_id AS text), 'NULL') || ' does not exist; a run''s attempts are listed by etl-craft status --pipeline-code P') INTO v_failure
      WHERE v_rows = 0 AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id);
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
    END IF;
    SELECT 'EC020: ' || ('attempt ' || ATTEMPT_ID || ' is ' || STATUS || COALESCE(' owned by ' || OWNER_ID, ' (unowned)') || CASE WHEN ENDED_AT IS NOT NULL THEN ' (ended ' || COALESCE(to_char(ENDED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')' WHEN LEASE_EXPIRES_AT IS NOT NULL THEN ' (lease until ' || COALESCE(to_char(LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')' ELSE '' END || ', expected ' || 'CLAIMED owned by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || '; do not start it: this process does not own it (it was cancelled, its lease expired and it was reconciled, or another process claimed it)') INTO v_failure
      FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id AND v_rows = 0;
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
    END IF;
  END IF;
  UPDATE etl_craft.AUD_TASK_RUN_LOG SET START_DATE = v_now
   WHERE TASK_RUN_ID = v_task_run_id AND START_DATE IS NULL;
  RETURN QUERY
  SELECT q.attempt_id::bigint, q.status::text, q.lease_expires_at::timestamptz
    FROM (
      SELECT ATTEMPT_ID, STATUS, LEASE_EXPIRES_AT FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id
    ) AS q(attempt_id, status, lease_expires_at);
END
$fn$;
-- @end start_attempt

-- @function finish_attempt
-- @args attempt_id bigint, owner_id text, status text, exit_code int = NULL, source_count bigint = NULL, insert_count bigint = NULL, update_count bigint = NULL, delete_count bigint = NULL, duplicate_count bigint = NULL, rows_written bigint = NULL, target_count bigint = NULL, error_message text = NULL, task_log text = NULL, log_path text = NULL, retryable text = NULL, offset_value text = NULL, offset_type text = NULL
-- @returns attempt_id bigint, task_run_id bigint, status text, task_run_status text, attempt_count int
-- @purpose The owner records how its attempt ended, SUCCESS or FAILED, in one transaction: the attempt (status,
--   ENDED_AT, exit code, counts, messages, RETRYABLE; the lease is cleared), the task-run summary (its status read
--   through state_machine.yaml, END_DATE, the same counts, ERROR_MESSAGE and TASK_LOG; a SUCCESS clears its MESSAGE,
--   a note from an earlier outcome or a requeue that no longer describes it), and, only when the status is SUCCESS,
--   the task's offset (AUD_TASK_OFFSETS, when offset_value is given, replacing one carried from another Engine DB by
--   carry_offset; B6) and one AUD_DEPENDENCY_CONSUMPTION row per SATISFIED task-dependency gate decision recorded for
--   this attempt (its SELECTED_ upstream run, task run
--   and revision; a consumption already recorded is kept). A call from a process that no longer owns the attempt (a
--   zombie: another owner, or the attempt ended or LOST) changes nothing at all (B8).
-- @transition ATTEMPT CLAIMED or RUNNING -> SUCCESS or FAILED; TASK_RUN IN-PROGRESS -> SUCCESS or FAILED
-- @locks the attempt row, then its task run, the task's offset row and the consumption keys
-- @errors EC023 status is not SUCCESS or FAILED, retryable is not Y or N, or a SUCCESS offset has no valid
--   offset_type; EC021 no such attempt; EC020 the attempt is not CLAIMED or RUNNING by owner_id
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'finish_attempt' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.finish_attempt(
  p_attempt_id bigint,
  p_owner_id text,
  p_status text,
  p_exit_code integer DEFAULT NULL,
  p_source_count bigint DEFAULT NULL,
  p_insert_count bigint DEFAULT NULL,
  p_update_count bigint DEFAULT NULL,
  p_delete_count bigint DEFAULT NULL,
  p_duplicate_count bigint DEFAULT NULL,
  p_rows_written bigint DEFAULT NULL,
  p_target_count bigint DEFAULT NULL,
  p_error_message text DEFAULT NULL,
  p_task_log text DEFAULT NULL,
  p_log_path text DEFAULT NULL,
  p_retryable text DEFAULT NULL,
  p_offset_value text DEFAULT NULL,
  p_offset_type text DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (attempt_id bigint, task_run_id bigint, status text, task_run_status text, attempt_count integer)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off
SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_task_run_id bigint;
  v_attempt_number integer;
  v_run_id bigint;
  v_task_run_status text;
  v_attempt_count integer;
BEGIN
  IF p_status IS NULL OR p_status NOT IN ('SUCCESS', 'FAILED') THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('finish_attempt records SUCCESS or FAILED, not ' || COALESCE(CAST(p_status AS text), 'NULL') || '; a time limit is time_out_attempt, a cancel cancel_attempt'), 'EC023');
  END IF;
  IF p_retryable NOT IN ('Y', 'N') THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('retryable is Y or N (or NULL when unknown), not ' || p_retryable), 'EC023');
  END IF;
  IF p_status = 'SUCCESS' AND p_offset_value IS NOT NULL AND (p_offset_type IS NULL OR p_offset_type NOT IN ('INTEGER', 'DECIMAL', 'TEXT', 'DATE', 'TIMESTAMP')) THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('the offset ' || p_offset_value || ' needs an offset_type of INTEGER, DECIMAL, TEXT, DATE, TIMESTAMP, not ' || COALESCE(CAST(p_offset_type AS text), 'NULL') || '; nothing was recorded'), 'EC023');
  END IF;
  UPDATE etl_craft.AUD_TASK_ATTEMPTS
     SET STATUS = p_status, ENDED_AT = v_now, LEASE_EXPIRES_AT = NULL, EXIT_CODE = p_exit_code,
         SOURCE_COUNT = p_source_count,
         INSERT_COUNT = p_insert_count,
         UPDATE_COUNT = p_update_count,
         DELETE_COUNT = p_delete_count,
         DUPLICATE_COUNT = p_duplicate_count,
         ROWS_WRITTEN = p_rows_written,
         TARGET_COUNT = p_target_count,
         RETRYABLE = p_retryable, ERROR_MESSAGE = p_error_message, TASK_LOG = p_task_log,
         LOG_PATH = COALESCE(p_log_path, LOG_PATH)
   WHERE ATTEMPT_ID = p_attempt_id AND STATUS IN ('CLAIMED', 'RUNNING') AND OWNER_ID = p_owner_id
  RETURNING TASK_RUN_ID, ATTEMPT_NUMBER, PIPELINE_RUN_ID INTO v_task_run_id, v_attempt_number, v_run_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  IF v_rows = 0 THEN
    SELECT 'EC021: ' || ('attempt ' || COALESCE(CAST(p_attempt_id AS text), 'NULL') || ' does not exist; a run''s attempts are listed by etl-craft status --pipeline-code P') INTO v_failure
      WHERE v_rows = 0 AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id);
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
    END IF;
    SELECT 'EC020: ' || ('attempt ' || ATTEMPT_ID || ' is ' || STATUS || COALESCE(' owned by ' || OWNER_ID, ' (unowned)') || CASE WHEN ENDED_AT IS NOT NULL THEN ' (ended ' || COALESCE(to_char(ENDED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')' WHEN LEASE_EXPIRES_AT IS NOT NULL THEN ' (lease until ' || COALESCE(to_char(LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')' ELSE '' END || ', expected ' || 'CLAIMED or RUNNING owned by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || '; nothing was recorded: this process no longer owns the attempt (its lease expired and it was marked LOST, or it was ended by someone else), so its outcome is discarded; stop, a newer attempt may be running') INTO v_failure
      FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id AND v_rows = 0;
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
    END IF;
  END IF;
  UPDATE etl_craft.AUD_TASK_RUN_LOG
     SET STATUS = CASE p_status WHEN 'QUEUED' THEN 'IN-PROGRESS' WHEN 'CLAIMED' THEN 'IN-PROGRESS' WHEN 'RUNNING' THEN 'IN-PROGRESS' WHEN 'SUCCESS' THEN 'SUCCESS' WHEN 'FAILED' THEN 'FAILED' WHEN 'TIMED_OUT' THEN 'FAILED' WHEN 'LOST' THEN 'FAILED' WHEN 'CANCELLED' THEN 'CANCELLED' END, END_DATE = v_now,
         SOURCE_COUNT = p_source_count,
         INSERT_COUNT = p_insert_count,
         UPDATE_COUNT = p_update_count,
         DELETE_COUNT = p_delete_count,
         DUPLICATE_COUNT = p_duplicate_count,
         ROWS_WRITTEN = p_rows_written,
         TARGET_COUNT = p_target_count,
         ERROR_MESSAGE = p_error_message, TASK_LOG = p_task_log,
         MESSAGE = CASE WHEN p_status = 'SUCCESS' THEN NULL ELSE MESSAGE END,
         ATTEMPT_COUNT = CASE WHEN ATTEMPT_COUNT < v_attempt_number THEN v_attempt_number ELSE ATTEMPT_COUNT END
   WHERE TASK_RUN_ID = v_task_run_id
  RETURNING STATUS, ATTEMPT_COUNT INTO v_task_run_status, v_attempt_count;
  PERFORM pg_notify('etl_craft_events', 'attempt_ended:' || p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n WHERE n.POOL = p.POOL_NAME AND n.ATTEMPT_ID = p_attempt_id);
  IF p_status = 'SUCCESS' AND p_offset_value IS NOT NULL THEN
    INSERT INTO etl_craft.AUD_TASK_OFFSETS (TASK_ID, OFFSET_TYPE, OFFSET_VALUE, TASK_RUN_ID, ATTEMPT_ID, STORED_AT)
    SELECT t.TASK_ID, p_offset_type, p_offset_value, t.TASK_RUN_ID, p_attempt_id, v_now
      FROM etl_craft.AUD_TASK_RUN_LOG t
     WHERE t.TASK_RUN_ID = v_task_run_id AND p_status = 'SUCCESS' AND p_offset_value IS NOT NULL
    ON CONFLICT (TASK_ID) DO UPDATE
       SET OFFSET_TYPE = excluded.OFFSET_TYPE, OFFSET_VALUE = excluded.OFFSET_VALUE, TASK_RUN_ID = excluded.TASK_RUN_ID,
           ATTEMPT_ID = excluded.ATTEMPT_ID, STORED_AT = excluded.STORED_AT,
           SOURCE_ENGINE_ID = NULL, SOURCE_ATTEMPT_ID = NULL;
  END IF;
  IF p_status = 'FAILED' AND COALESCE(p_retryable, 'Y') <> 'N' THEN
    UPDATE etl_craft.AUD_TASK_RUN_LOG
       SET STATUS = 'IN-PROGRESS', END_DATE = NULL, ATTEMPT_COUNT = ATTEMPT_COUNT + 1
     WHERE TASK_RUN_ID IN (SELECT x.TASK_RUN_ID FROM (SELECT c.ATTEMPT_ID, c.TASK_RUN_ID, c.RETRY_NUMBER, c.POOL, c.SLOT_KIND, c.PRIORITY,
               CASE WHEN c.DELAY = 0 THEN 0
                    WHEN ln(c.DELAY) + c.RETRY_NUMBER * ln(c.BACKOFF) >= ln(3600) THEN 3600
                    ELSE c.DELAY * power(c.BACKOFF, c.RETRY_NUMBER) END AS DELAY_SECONDS
          FROM (SELECT e.ATTEMPT_ID, e.TASK_RUN_ID, e.RETRY_NUMBER, e.POOL, e.SLOT_KIND, e.PRIORITY,
                       COALESCE((SELECT CASE WHEN w.v ~ '^[+]?[0-9]{1,9}$' THEN CAST(ltrim(w.v, '+') AS INTEGER) END
                          FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                         WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRIES' AND tp.ACTIVE_FLAG = 'Y'
                         ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) w), r.DEFAULT_RETRIES, 0) AS RETRIES,
                       COALESCE((SELECT CASE WHEN w.v ~ '^[+]?[0-9]{1,9}$' THEN CAST(ltrim(w.v, '+') AS INTEGER) END
                          FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                         WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRY_DELAY_SECONDS' AND tp.ACTIVE_FLAG = 'Y'
                         ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) w), r.DEFAULT_RETRY_DELAY_SECONDS, 60) AS DELAY,
                       GREATEST(COALESCE((SELECT CASE WHEN n.v ~ '^[0-9]{1,9}([.][0-9]*)?$' THEN CAST(n.v AS double precision) END
                          FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                         WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRY_BACKOFF' AND tp.ACTIVE_FLAG = 'Y'
                         ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) n), r.DEFAULT_RETRY_BACKOFF, 2.0), 1.0) AS BACKOFF
                  FROM etl_craft.AUD_TASK_ATTEMPTS e
                  JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = e.TASK_RUN_ID
                  JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = tr.PIPELINE_RUN_ID
                 WHERE e.ATTEMPT_ID = p_attempt_id AND e.STATUS IN ('FAILED', 'TIMED_OUT', 'LOST') AND COALESCE(e.RETRYABLE, 'Y') <> 'N'
                   AND r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL AND e.CANCEL_REQUESTED_AT IS NULL) c
         WHERE c.RETRY_NUMBER < c.RETRIES) x);
    INSERT INTO etl_craft.AUD_TASK_ATTEMPTS
      (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, POOL, SLOT_KIND, PRIORITY, NOT_BEFORE, QUEUED_AT, REQUESTED_BY,
       REQUESTED_BY_KIND, RETRY_NUMBER)
    SELECT x.TASK_RUN_ID, t.ATTEMPT_COUNT, 'QUEUED', x.POOL, x.SLOT_KIND, x.PRIORITY,
           (v_now + make_interval(secs => x.DELAY_SECONDS)), v_now, etl_craft._actor(), etl_craft._actor_kind(),
           x.RETRY_NUMBER + 1
      FROM (SELECT c.ATTEMPT_ID, c.TASK_RUN_ID, c.RETRY_NUMBER, c.POOL, c.SLOT_KIND, c.PRIORITY,
                   CASE WHEN c.DELAY = 0 THEN 0
                        WHEN ln(c.DELAY) + c.RETRY_NUMBER * ln(c.BACKOFF) >= ln(3600) THEN 3600
                        ELSE c.DELAY * power(c.BACKOFF, c.RETRY_NUMBER) END AS DELAY_SECONDS
              FROM (SELECT e.ATTEMPT_ID, e.TASK_RUN_ID, e.RETRY_NUMBER, e.POOL, e.SLOT_KIND, e.PRIORITY,
                           COALESCE((SELECT CASE WHEN w.v ~ '^[+]?[0-9]{1,9}$' THEN CAST(ltrim(w.v, '+') AS INTEGER) END
                              FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                             WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRIES' AND tp.ACTIVE_FLAG = 'Y'
                             ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) w), r.DEFAULT_RETRIES, 0) AS RETRIES,
                           COALESCE((SELECT CASE WHEN w.v ~ '^[+]?[0-9]{1,9}$' THEN CAST(ltrim(w.v, '+') AS INTEGER) END
                              FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                             WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRY_DELAY_SECONDS' AND tp.ACTIVE_FLAG = 'Y'
                             ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) w), r.DEFAULT_RETRY_DELAY_SECONDS, 60) AS DELAY,
                           GREATEST(COALESCE((SELECT CASE WHEN n.v ~ '^[0-9]{1,9}([.][0-9]*)?$' THEN CAST(n.v AS double precision) END
                              FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                             WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRY_BACKOFF' AND tp.ACTIVE_FLAG = 'Y'
                             ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) n), r.DEFAULT_RETRY_BACKOFF, 2.0), 1.0) AS BACKOFF
                      FROM etl_craft.AUD_TASK_ATTEMPTS e
                      JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = e.TASK_RUN_ID
                      JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = tr.PIPELINE_RUN_ID
                     WHERE e.ATTEMPT_ID = p_attempt_id AND e.STATUS IN ('FAILED', 'TIMED_OUT', 'LOST') AND COALESCE(e.RETRYABLE, 'Y') <> 'N'
                       AND r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL AND e.CANCEL_REQUESTED_AT IS NULL) c
             WHERE c.RETRY_NUMBER < c.RETRIES) x
      JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = x.TASK_RUN_ID;

    PERFORM pg_notify('etl_craft_queue', p.POOL_NAME)
       FROM etl_craft.CFG_POOLS p
      WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
        AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n
                     WHERE n.POOL = p.POOL_NAME AND n.STATUS = 'QUEUED' AND n.TASK_RUN_ID IN (SELECT e.TASK_RUN_ID FROM etl_craft.AUD_TASK_ATTEMPTS e WHERE e.ATTEMPT_ID = p_attempt_id));
  END IF;
  IF p_status = 'SUCCESS' AND EXISTS (SELECT 1 FROM etl_craft.AUD_GATE_DECISIONS d WHERE d.PIPELINE_RUN_ID = v_run_id AND d.TASK_RUN_ID = v_task_run_id AND d.ATTEMPT_ID IS NOT NULL) THEN
    INSERT INTO etl_craft.AUD_DEPENDENCY_CONSUMPTION
      (PIPELINE_RUN_ID, TASK_RUN_ID, TASK_DEPENDENCY_ID, CONSUMED_PIPELINE_RUN_ID, CONSUMED_TASK_RUN_ID, CONSUMED_REVISION,
       DECISION_ID, CONSUMED_AT)
    SELECT t.PIPELINE_RUN_ID, t.TASK_RUN_ID, d.TASK_DEPENDENCY_ID, d.SELECTED_PIPELINE_RUN_ID, d.SELECTED_TASK_RUN_ID,
           d.SELECTED_REVISION, d.DECISION_ID, v_now
      FROM etl_craft.AUD_GATE_DECISIONS d JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = v_task_run_id
     WHERE d.ATTEMPT_ID = (SELECT MAX(j.ATTEMPT_ID) FROM etl_craft.AUD_GATE_DECISIONS j
                            WHERE j.PIPELINE_RUN_ID = v_run_id AND j.TASK_RUN_ID = v_task_run_id
                              AND j.ATTEMPT_ID <= p_attempt_id)
       AND d.RESULT = 'SATISFIED' AND d.TASK_DEPENDENCY_ID IS NOT NULL
       AND p_status = 'SUCCESS'
       AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_DEPENDENCY_CONSUMPTION k
                        WHERE k.PIPELINE_RUN_ID = t.PIPELINE_RUN_ID AND k.PIPELINE_DEPENDENCY_ID IS NULL
                          AND k.TASK_DEPENDENCY_ID = d.TASK_DEPENDENCY_ID
                          AND k.CONSUMED_PIPELINE_RUN_ID = d.SELECTED_PIPELINE_RUN_ID
                          AND k.CONSUMED_REVISION = d.SELECTED_REVISION)
     ORDER BY d.DECISION_ID
    ON CONFLICT DO NOTHING;
  END IF;
  IF p_status = 'FAILED' THEN  -- a retry may have been queued: the task run as it is now
    SELECT t.STATUS, t.ATTEMPT_COUNT INTO v_task_run_status, v_attempt_count FROM etl_craft.AUD_TASK_RUN_LOG t WHERE t.TASK_RUN_ID = v_task_run_id;
  END IF;
  RETURN QUERY
  SELECT q.attempt_id::bigint, q.task_run_id::bigint, q.status::text, q.task_run_status::text, q.attempt_count::integer
    FROM (
      SELECT p_attempt_id, v_task_run_id, p_status, v_task_run_status, v_attempt_count
    ) AS q(attempt_id, task_run_id, status, task_run_status, attempt_count);
END
$fn$;
-- @end finish_attempt

-- @function time_out_attempt
-- @args attempt_id bigint, owner_id text, message text, task_log text = NULL
-- @returns attempt_id bigint, status text, task_run_status text
-- @purpose The owner of a RUNNING attempt records that it stopped it at its time limit: the attempt ends
--   TIMED_OUT with message as its ERROR_MESSAGE and task_log (the tail of what it printed) as its TASK_LOG, and the
--   task run reads FAILED with the same message and log.
-- @transition ATTEMPT RUNNING -> TIMED_OUT; TASK_RUN IN-PROGRESS -> FAILED
-- @locks the attempt row, then its task run
-- @errors EC021 no such attempt; EC020 the attempt is not RUNNING by owner_id
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'time_out_attempt' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.time_out_attempt(
  p_attempt_id bigint,
  p_owner_id text,
  p_message text,
  p_task_log text DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (attempt_id bigint, status text, task_run_status text)
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
  UPDATE etl_craft.AUD_TASK_ATTEMPTS
     SET STATUS = 'TIMED_OUT', ENDED_AT = v_now, LEASE_EXPIRES_AT = NULL,
         ERROR_MESSAGE = COALESCE(p_message, 'attempt ' || ATTEMPT_ID || ' reached its time limit'),
         TASK_LOG = COALESCE(p_task_log, TASK_LOG)
   WHERE ATTEMPT_ID = p_attempt_id AND STATUS = 'RUNNING' AND OWNER_ID = p_owner_id
  RETURNING TASK_RUN_ID INTO v_task_run_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  IF v_rows = 0 THEN
    SELECT 'EC021: ' || ('attempt ' || COALESCE(CAST(p_attempt_id AS text), 'NULL') || ' does not exist; a run''s attempts are listed by etl-craft status --pipeline-code P') INTO v_failure
      WHERE v_rows = 0 AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id);
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
    END IF;
    SELECT 'EC020: ' || ('attempt ' || ATTEMPT_ID || ' is ' || STATUS || COALESCE(' owned by ' || OWNER_ID, ' (unowned)') || CASE WHEN ENDED_AT IS NOT NULL THEN ' (ended ' || COALESCE(to_char(ENDED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')' WHEN LEASE_EXPIRES_AT IS NOT NULL THEN ' (lease until ' || COALESCE(to_char(LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')' ELSE '' END || ', expected ' || 'RUNNING owned by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || '; nothing was recorded: only the owner of a running attempt times it out; if it has ended, its outcome stands') INTO v_failure
      FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id AND v_rows = 0;
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
    END IF;
  END IF;
  UPDATE etl_craft.AUD_TASK_RUN_LOG
     SET STATUS = 'FAILED', END_DATE = v_now,
         ERROR_MESSAGE = (SELECT a.ERROR_MESSAGE FROM etl_craft.AUD_TASK_ATTEMPTS a WHERE a.ATTEMPT_ID = p_attempt_id),
         TASK_LOG = COALESCE(p_task_log, TASK_LOG)
   WHERE TASK_RUN_ID = v_task_run_id;
  PERFORM pg_notify('etl_craft_events', 'attempt_ended:' || p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n WHERE n.POOL = p.POOL_NAME AND n.ATTEMPT_ID = p_attempt_id);
  UPDATE etl_craft.AUD_TASK_RUN_LOG
     SET STATUS = 'IN-PROGRESS', END_DATE = NULL, ATTEMPT_COUNT = ATTEMPT_COUNT + 1
   WHERE TASK_RUN_ID IN (SELECT x.TASK_RUN_ID FROM (SELECT c.ATTEMPT_ID, c.TASK_RUN_ID, c.RETRY_NUMBER, c.POOL, c.SLOT_KIND, c.PRIORITY,
             CASE WHEN c.DELAY = 0 THEN 0
                  WHEN ln(c.DELAY) + c.RETRY_NUMBER * ln(c.BACKOFF) >= ln(3600) THEN 3600
                  ELSE c.DELAY * power(c.BACKOFF, c.RETRY_NUMBER) END AS DELAY_SECONDS
        FROM (SELECT e.ATTEMPT_ID, e.TASK_RUN_ID, e.RETRY_NUMBER, e.POOL, e.SLOT_KIND, e.PRIORITY,
                     COALESCE((SELECT CASE WHEN w.v ~ '^[+]?[0-9]{1,9}$' THEN CAST(ltrim(w.v, '+') AS INTEGER) END
                        FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                       WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRIES' AND tp.ACTIVE_FLAG = 'Y'
                       ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) w), r.DEFAULT_RETRIES, 0) AS RETRIES,
                     COALESCE((SELECT CASE WHEN w.v ~ '^[+]?[0-9]{1,9}$' THEN CAST(ltrim(w.v, '+') AS INTEGER) END
                        FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                       WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRY_DELAY_SECONDS' AND tp.ACTIVE_FLAG = 'Y'
                       ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) w), r.DEFAULT_RETRY_DELAY_SECONDS, 60) AS DELAY,
                     GREATEST(COALESCE((SELECT CASE WHEN n.v ~ '^[0-9]{1,9}([.][0-9]*)?$' THEN CAST(n.v AS double precision) END
                        FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                       WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRY_BACKOFF' AND tp.ACTIVE_FLAG = 'Y'
                       ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) n), r.DEFAULT_RETRY_BACKOFF, 2.0), 1.0) AS BACKOFF
                FROM etl_craft.AUD_TASK_ATTEMPTS e
                JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = e.TASK_RUN_ID
                JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = tr.PIPELINE_RUN_ID
               WHERE e.ATTEMPT_ID = p_attempt_id AND e.STATUS IN ('FAILED', 'TIMED_OUT', 'LOST') AND COALESCE(e.RETRYABLE, 'Y') <> 'N'
                 AND r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL AND e.CANCEL_REQUESTED_AT IS NULL) c
       WHERE c.RETRY_NUMBER < c.RETRIES) x);
  INSERT INTO etl_craft.AUD_TASK_ATTEMPTS
    (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, POOL, SLOT_KIND, PRIORITY, NOT_BEFORE, QUEUED_AT, REQUESTED_BY,
     REQUESTED_BY_KIND, RETRY_NUMBER)
  SELECT x.TASK_RUN_ID, t.ATTEMPT_COUNT, 'QUEUED', x.POOL, x.SLOT_KIND, x.PRIORITY,
         (v_now + make_interval(secs => x.DELAY_SECONDS)), v_now, etl_craft._actor(), etl_craft._actor_kind(),
         x.RETRY_NUMBER + 1
    FROM (SELECT c.ATTEMPT_ID, c.TASK_RUN_ID, c.RETRY_NUMBER, c.POOL, c.SLOT_KIND, c.PRIORITY,
                 CASE WHEN c.DELAY = 0 THEN 0
                      WHEN ln(c.DELAY) + c.RETRY_NUMBER * ln(c.BACKOFF) >= ln(3600) THEN 3600
                      ELSE c.DELAY * power(c.BACKOFF, c.RETRY_NUMBER) END AS DELAY_SECONDS
            FROM (SELECT e.ATTEMPT_ID, e.TASK_RUN_ID, e.RETRY_NUMBER, e.POOL, e.SLOT_KIND, e.PRIORITY,
                         COALESCE((SELECT CASE WHEN w.v ~ '^[+]?[0-9]{1,9}$' THEN CAST(ltrim(w.v, '+') AS INTEGER) END
                            FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                           WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRIES' AND tp.ACTIVE_FLAG = 'Y'
                           ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) w), r.DEFAULT_RETRIES, 0) AS RETRIES,
                         COALESCE((SELECT CASE WHEN w.v ~ '^[+]?[0-9]{1,9}$' THEN CAST(ltrim(w.v, '+') AS INTEGER) END
                            FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                           WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRY_DELAY_SECONDS' AND tp.ACTIVE_FLAG = 'Y'
                           ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) w), r.DEFAULT_RETRY_DELAY_SECONDS, 60) AS DELAY,
                         GREATEST(COALESCE((SELECT CASE WHEN n.v ~ '^[0-9]{1,9}([.][0-9]*)?$' THEN CAST(n.v AS double precision) END
                            FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                           WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRY_BACKOFF' AND tp.ACTIVE_FLAG = 'Y'
                           ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) n), r.DEFAULT_RETRY_BACKOFF, 2.0), 1.0) AS BACKOFF
                    FROM etl_craft.AUD_TASK_ATTEMPTS e
                    JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = e.TASK_RUN_ID
                    JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = tr.PIPELINE_RUN_ID
                   WHERE e.ATTEMPT_ID = p_attempt_id AND e.STATUS IN ('FAILED', 'TIMED_OUT', 'LOST') AND COALESCE(e.RETRYABLE, 'Y') <> 'N'
                     AND r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL AND e.CANCEL_REQUESTED_AT IS NULL) c
           WHERE c.RETRY_NUMBER < c.RETRIES) x
    JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = x.TASK_RUN_ID;

  PERFORM pg_notify('etl_craft_queue', p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n
                   WHERE n.POOL = p.POOL_NAME AND n.STATUS = 'QUEUED' AND n.TASK_RUN_ID IN (SELECT e.TASK_RUN_ID FROM etl_craft.AUD_TASK_ATTEMPTS e WHERE e.ATTEMPT_ID = p_attempt_id));
  RETURN QUERY
  SELECT q.attempt_id::bigint, q.status::text, q.task_run_status::text
    FROM (
      SELECT a.ATTEMPT_ID, a.STATUS, t.STATUS
        FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
       WHERE a.ATTEMPT_ID = p_attempt_id
    ) AS q(attempt_id, status, task_run_status);
END
$fn$;
-- @end time_out_attempt

-- @function cancel_attempt
-- @args attempt_id bigint, reason text, owner_id text = NULL
-- @returns attempt_id bigint, status text, cancel_requested_at timestamptz
-- @purpose Cancel one attempt. Without owner_id (an operator, or the overseer): a QUEUED attempt ends CANCELLED
--   at once and its task run reads CANCELLED; a CLAIMED or RUNNING one is only asked to stop (CANCEL_REQUESTED_AT,
--   kept from the first request), which its owner acts on; either is recorded as a CANCEL intervention. With
--   owner_id (the owner acknowledging a request, or stopping on its own): the CLAIMED or RUNNING attempt of that
--   owner ends CANCELLED with CANCEL_ACKNOWLEDGED_AT, its lease cleared, and its task run reads CANCELLED.
-- @transition ATTEMPT QUEUED -> CANCELLED (no owner_id); CLAIMED or RUNNING -> CANCELLED (owner_id);
--   TASK_RUN IN-PROGRESS -> CANCELLED
-- @locks the attempt row, then its task run
-- @errors EC021 no such attempt; EC020 the attempt has ended, or (with owner_id) it is not CLAIMED or RUNNING by
--   owner_id
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'cancel_attempt' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.cancel_attempt(
  p_attempt_id bigint,
  p_reason text,
  p_owner_id text DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (attempt_id bigint, status text, cancel_requested_at timestamptz)
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
  v_status text;
BEGIN
  UPDATE etl_craft.AUD_TASK_ATTEMPTS
     SET STATUS = CASE WHEN STATUS = 'QUEUED' OR p_owner_id IS NOT NULL THEN 'CANCELLED' ELSE STATUS END,
         ENDED_AT = CASE WHEN STATUS = 'QUEUED' OR p_owner_id IS NOT NULL THEN v_now END,
         CANCEL_REQUESTED_AT = COALESCE(CANCEL_REQUESTED_AT, v_now),
         CANCEL_ACKNOWLEDGED_AT = CASE WHEN p_owner_id IS NOT NULL THEN v_now END,
         LEASE_EXPIRES_AT = CASE WHEN p_owner_id IS NOT NULL THEN NULL ELSE LEASE_EXPIRES_AT END,
         ERROR_MESSAGE = CASE
           WHEN STATUS = 'QUEUED' THEN 'cancelled before it started: ' || COALESCE(p_reason, 'no reason given')
           WHEN p_owner_id IS NOT NULL THEN 'cancelled: ' || COALESCE(p_reason, 'no reason given')
           ELSE ERROR_MESSAGE END
   WHERE ATTEMPT_ID = p_attempt_id
     AND ((p_owner_id IS NULL AND STATUS IN ('QUEUED', 'CLAIMED', 'RUNNING'))
          OR (STATUS IN ('CLAIMED', 'RUNNING') AND OWNER_ID = p_owner_id))
  RETURNING TASK_RUN_ID, STATUS INTO v_task_run_id, v_status;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  IF v_rows = 0 THEN
    SELECT 'EC021: ' || ('attempt ' || COALESCE(CAST(p_attempt_id AS text), 'NULL') || ' does not exist; a run''s attempts are listed by etl-craft status --pipeline-code P') INTO v_failure
      WHERE v_rows = 0 AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id);
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
    END IF;
    SELECT 'EC020: ' || ('attempt ' || ATTEMPT_ID || ' is ' || STATUS || COALESCE(' owned by ' || OWNER_ID, ' (unowned)') || CASE WHEN ENDED_AT IS NOT NULL THEN ' (ended ' || COALESCE(to_char(ENDED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')' WHEN LEASE_EXPIRES_AT IS NOT NULL THEN ' (lease until ' || COALESCE(to_char(LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')' ELSE '' END || ', expected ' || CASE WHEN p_owner_id IS NULL THEN 'QUEUED, CLAIMED or RUNNING' ELSE 'CLAIMED or RUNNING owned by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') END || '; nothing was changed: an ended attempt cannot be cancelled, and only its owner acknowledges a cancel') INTO v_failure
      FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id AND v_rows = 0;
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
    END IF;
  END IF;
  UPDATE etl_craft.AUD_TASK_RUN_LOG
     SET STATUS = 'CANCELLED', END_DATE = v_now, ERROR_MESSAGE = NULL,
         MESSAGE = 'cancelled: ' || COALESCE(p_reason, 'no reason given')
   WHERE TASK_RUN_ID = v_task_run_id AND v_status = 'CANCELLED';
  PERFORM pg_notify('etl_craft_events', 'attempt_ended:' || p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n WHERE n.POOL = p.POOL_NAME AND n.ATTEMPT_ID = p_attempt_id AND n.STATUS = 'CANCELLED');
  INSERT INTO etl_craft.AUD_RUN_INTERVENTIONS
    (PIPELINE_RUN_ID, TASK_RUN_ID, ATTEMPT_ID, INTERVENTION, FROM_STATUS, TO_STATUS, REASON, REQUESTED_BY,
     REQUESTED_BY_KIND, REQUESTED_AT)
  SELECT t.PIPELINE_RUN_ID, t.TASK_RUN_ID, p_attempt_id, 'CANCEL',
         CASE WHEN v_status = 'CANCELLED' THEN 'QUEUED' ELSE v_status END, 'CANCELLED',
         p_reason, etl_craft._actor(), etl_craft._actor_kind(), v_now
    FROM etl_craft.AUD_TASK_RUN_LOG t
   WHERE t.TASK_RUN_ID = v_task_run_id AND p_owner_id IS NULL;
  RETURN QUERY
  SELECT q.attempt_id::bigint, q.status::text, q.cancel_requested_at::timestamptz
    FROM (
      SELECT ATTEMPT_ID, STATUS, CANCEL_REQUESTED_AT FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id
    ) AS q(attempt_id, status, cancel_requested_at);
END
$fn$;
-- @end cancel_attempt

-- @function interrupt_attempt
-- @args attempt_id bigint, owner_id text, reason text
-- @returns attempt_id bigint, status text, task_run_status text, next_attempt_id bigint
-- @purpose The owner of a CLAIMED or RUNNING attempt records that it stopped it because it was itself told to
--   stop (SIGTERM, SIGHUP or SIGINT to the supervisor, a drained worker): the stop is not the task's failure. The
--   attempt ends CANCELLED with ERROR_MESSAGE "interrupted: <reason>" and its lease cleared; no retry is used.
--   While its run is IN-PROGRESS with no cancel requested (and no cancel was requested of the attempt), the next
--   attempt is queued at once in the same transaction with the same RETRY_NUMBER, pool, slot kind and priority, so
--   the task run stays IN-PROGRESS and the run's next supervisor runs the task again. Otherwise the task run reads
--   CANCELLED. Returns the new attempt's id in next_attempt_id (NULL when nothing was queued).
-- @transition ATTEMPT CLAIMED or RUNNING -> CANCELLED; ATTEMPT (none) -> QUEUED; TASK_RUN stays IN-PROGRESS, or
--   IN-PROGRESS -> CANCELLED
-- @locks the attempt row, then its task run
-- @errors EC021 no such attempt; EC020 the attempt is not CLAIMED or RUNNING by owner_id
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'interrupt_attempt' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.interrupt_attempt(
  p_attempt_id bigint,
  p_owner_id text,
  p_reason text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (attempt_id bigint, status text, task_run_status text, next_attempt_id bigint)
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
  v_requeue integer;
  v_next_attempt_id bigint;
BEGIN
  UPDATE etl_craft.AUD_TASK_ATTEMPTS
     SET STATUS = 'CANCELLED', ENDED_AT = v_now, LEASE_EXPIRES_AT = NULL,
         ERROR_MESSAGE = 'interrupted: ' || COALESCE(p_reason, 'its supervisor was told to stop')
   WHERE ATTEMPT_ID = p_attempt_id AND STATUS IN ('CLAIMED', 'RUNNING') AND OWNER_ID = p_owner_id
  RETURNING TASK_RUN_ID INTO v_task_run_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  IF v_rows = 0 THEN
    SELECT 'EC021: ' || ('attempt ' || COALESCE(CAST(p_attempt_id AS text), 'NULL') || ' does not exist; a run''s attempts are listed by etl-craft status --pipeline-code P') INTO v_failure
      WHERE v_rows = 0 AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id);
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
    END IF;
    SELECT 'EC020: ' || ('attempt ' || ATTEMPT_ID || ' is ' || STATUS || COALESCE(' owned by ' || OWNER_ID, ' (unowned)') || CASE WHEN ENDED_AT IS NOT NULL THEN ' (ended ' || COALESCE(to_char(ENDED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')' WHEN LEASE_EXPIRES_AT IS NOT NULL THEN ' (lease until ' || COALESCE(to_char(LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')' ELSE '' END || ', expected ' || 'CLAIMED or RUNNING owned by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || '; nothing was changed: this process no longer owns the attempt, so its outcome is not its to record') INTO v_failure
      FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id AND v_rows = 0;
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
    END IF;
  END IF;
  SELECT CASE WHEN r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL AND a.CANCEL_REQUESTED_AT IS NULL
              THEN 1 ELSE 0 END INTO v_requeue
    FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = a.PIPELINE_RUN_ID
   WHERE a.ATTEMPT_ID = p_attempt_id;
  UPDATE etl_craft.AUD_TASK_RUN_LOG
     SET STATUS = CASE WHEN v_requeue = 1 THEN 'IN-PROGRESS' ELSE 'CANCELLED' END,
         END_DATE = CASE WHEN v_requeue = 1 THEN NULL ELSE v_now END,
         ERROR_MESSAGE = CASE WHEN v_requeue = 1 THEN ERROR_MESSAGE END,
         ATTEMPT_COUNT = ATTEMPT_COUNT + v_requeue,
         MESSAGE = 'interrupted: ' || COALESCE(p_reason, 'its supervisor was told to stop')
                   || CASE WHEN v_requeue = 1 THEN '; queued to run again' ELSE '' END
   WHERE TASK_RUN_ID = v_task_run_id;
  INSERT INTO etl_craft.AUD_TASK_ATTEMPTS
    (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, POOL, SLOT_KIND, PRIORITY, QUEUED_AT, REQUESTED_BY, REQUESTED_BY_KIND,
     RETRY_NUMBER)
  SELECT e.TASK_RUN_ID, t.ATTEMPT_COUNT, 'QUEUED', e.POOL, e.SLOT_KIND, e.PRIORITY, v_now, etl_craft._actor(),
         etl_craft._actor_kind(), e.RETRY_NUMBER
    FROM etl_craft.AUD_TASK_ATTEMPTS e JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = e.TASK_RUN_ID
   WHERE e.ATTEMPT_ID = p_attempt_id AND v_requeue = 1
  RETURNING ATTEMPT_ID INTO v_next_attempt_id;
  PERFORM pg_notify('etl_craft_queue', p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n
                   WHERE n.POOL = p.POOL_NAME AND n.STATUS = 'QUEUED' AND n.ATTEMPT_ID = v_next_attempt_id);
  PERFORM pg_notify('etl_craft_events', 'attempt_ended:' || p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n WHERE n.POOL = p.POOL_NAME AND n.ATTEMPT_ID = p_attempt_id);
  RETURN QUERY
  SELECT q.attempt_id::bigint, q.status::text, q.task_run_status::text, q.next_attempt_id::bigint
    FROM (
      SELECT a.ATTEMPT_ID, a.STATUS, t.STATUS, v_next_attempt_id
        FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
       WHERE a.ATTEMPT_ID = p_attempt_id
    ) AS q(attempt_id, status, task_run_status, next_attempt_id);
END
$fn$;
-- @end interrupt_attempt

-- @function lose_attempt
-- @args attempt_id bigint, owner_id text, message text = NULL
-- @returns attempt_id bigint, status text, task_run_status text
-- @purpose Record that nobody knows how an attempt ended (its owner stopped renewing its lease): the attempt
--   ends LOST and its task run reads FAILED, both with message, by default "attempt N was lost: owner O stopped
--   renewing its lease at T". Fenced by the owner the caller saw, so an attempt claimed again or renewed since is
--   left alone. Raises an ATTEMPT_LOST alert (one per run) when an active rule applies.
-- @transition ATTEMPT CLAIMED or RUNNING -> LOST; TASK_RUN IN-PROGRESS -> FAILED
-- @locks the attempt row, then its task run
-- @errors EC021 no such attempt; EC020 the attempt is not CLAIMED or RUNNING by owner_id
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'lose_attempt' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.lose_attempt(
  p_attempt_id bigint,
  p_owner_id text,
  p_message text DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (attempt_id bigint, status text, task_run_status text)
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
  UPDATE etl_craft.AUD_TASK_ATTEMPTS
     SET STATUS = 'LOST', ENDED_AT = v_now, LEASE_EXPIRES_AT = NULL,
         ERROR_MESSAGE = COALESCE(p_message, 'attempt ' || ATTEMPT_ID || ' was lost: owner ' || COALESCE(OWNER_ID, 'nobody') || ' stopped renewing its lease at ' || COALESCE(to_char(LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never'))
   WHERE ATTEMPT_ID = p_attempt_id AND STATUS IN ('CLAIMED', 'RUNNING') AND OWNER_ID = p_owner_id
  RETURNING TASK_RUN_ID INTO v_task_run_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  IF v_rows = 0 THEN
    SELECT 'EC021: ' || ('attempt ' || COALESCE(CAST(p_attempt_id AS text), 'NULL') || ' does not exist; a run''s attempts are listed by etl-craft status --pipeline-code P') INTO v_failure
      WHERE v_rows = 0 AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id);
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
    END IF;
    SELECT 'EC020: ' || ('attempt ' || ATTEMPT_ID || ' is ' || STATUS || COALESCE(' owned by ' || OWNER_ID, ' (unowned)') || CASE WHEN ENDED_AT IS NOT NULL THEN ' (ended ' || COALESCE(to_char(ENDED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')' WHEN LEASE_EXPIRES_AT IS NOT NULL THEN ' (lease until ' || COALESCE(to_char(LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')' ELSE '' END || ', expected ' || 'CLAIMED or RUNNING owned by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || '; nothing was changed: it was claimed again, renewed or ended since it was read; read it again') INTO v_failure
      FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id AND v_rows = 0;
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
    END IF;
  END IF;
  UPDATE etl_craft.AUD_TASK_RUN_LOG
     SET STATUS = 'FAILED', END_DATE = v_now,
         ERROR_MESSAGE = (SELECT a.ERROR_MESSAGE FROM etl_craft.AUD_TASK_ATTEMPTS a WHERE a.ATTEMPT_ID = p_attempt_id)
   WHERE TASK_RUN_ID = v_task_run_id;
  UPDATE etl_craft.AUD_TASK_RUN_LOG
     SET STATUS = 'IN-PROGRESS', END_DATE = NULL, ATTEMPT_COUNT = ATTEMPT_COUNT + 1
   WHERE TASK_RUN_ID IN (SELECT x.TASK_RUN_ID FROM (SELECT c.ATTEMPT_ID, c.TASK_RUN_ID, c.RETRY_NUMBER, c.POOL, c.SLOT_KIND, c.PRIORITY,
             CASE WHEN c.DELAY = 0 THEN 0
                  WHEN ln(c.DELAY) + c.RETRY_NUMBER * ln(c.BACKOFF) >= ln(3600) THEN 3600
                  ELSE c.DELAY * power(c.BACKOFF, c.RETRY_NUMBER) END AS DELAY_SECONDS
        FROM (SELECT e.ATTEMPT_ID, e.TASK_RUN_ID, e.RETRY_NUMBER, e.POOL, e.SLOT_KIND, e.PRIORITY,
                     COALESCE((SELECT CASE WHEN w.v ~ '^[+]?[0-9]{1,9}$' THEN CAST(ltrim(w.v, '+') AS INTEGER) END
                        FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                       WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRIES' AND tp.ACTIVE_FLAG = 'Y'
                       ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) w), r.DEFAULT_RETRIES, 0) AS RETRIES,
                     COALESCE((SELECT CASE WHEN w.v ~ '^[+]?[0-9]{1,9}$' THEN CAST(ltrim(w.v, '+') AS INTEGER) END
                        FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                       WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRY_DELAY_SECONDS' AND tp.ACTIVE_FLAG = 'Y'
                       ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) w), r.DEFAULT_RETRY_DELAY_SECONDS, 60) AS DELAY,
                     GREATEST(COALESCE((SELECT CASE WHEN n.v ~ '^[0-9]{1,9}([.][0-9]*)?$' THEN CAST(n.v AS double precision) END
                        FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                       WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRY_BACKOFF' AND tp.ACTIVE_FLAG = 'Y'
                       ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) n), r.DEFAULT_RETRY_BACKOFF, 2.0), 1.0) AS BACKOFF
                FROM etl_craft.AUD_TASK_ATTEMPTS e
                JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = e.TASK_RUN_ID
                JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = tr.PIPELINE_RUN_ID
               WHERE e.ATTEMPT_ID = p_attempt_id AND e.STATUS IN ('FAILED', 'TIMED_OUT', 'LOST') AND COALESCE(e.RETRYABLE, 'Y') <> 'N'
                 AND r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL AND e.CANCEL_REQUESTED_AT IS NULL) c
       WHERE c.RETRY_NUMBER < c.RETRIES) x);
  INSERT INTO etl_craft.AUD_TASK_ATTEMPTS
    (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, POOL, SLOT_KIND, PRIORITY, NOT_BEFORE, QUEUED_AT, REQUESTED_BY,
     REQUESTED_BY_KIND, RETRY_NUMBER)
  SELECT x.TASK_RUN_ID, t.ATTEMPT_COUNT, 'QUEUED', x.POOL, x.SLOT_KIND, x.PRIORITY,
         (v_now + make_interval(secs => x.DELAY_SECONDS)), v_now, etl_craft._actor(), etl_craft._actor_kind(),
         x.RETRY_NUMBER + 1
    FROM (SELECT c.ATTEMPT_ID, c.TASK_RUN_ID, c.RETRY_NUMBER, c.POOL, c.SLOT_KIND, c.PRIORITY,
                 CASE WHEN c.DELAY = 0 THEN 0
                      WHEN ln(c.DELAY) + c.RETRY_NUMBER * ln(c.BACKOFF) >= ln(3600) THEN 3600
                      ELSE c.DELAY * power(c.BACKOFF, c.RETRY_NUMBER) END AS DELAY_SECONDS
            FROM (SELECT e.ATTEMPT_ID, e.TASK_RUN_ID, e.RETRY_NUMBER, e.POOL, e.SLOT_KIND, e.PRIORITY,
                         COALESCE((SELECT CASE WHEN w.v ~ '^[+]?[0-9]{1,9}$' THEN CAST(ltrim(w.v, '+') AS INTEGER) END
                            FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                           WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRIES' AND tp.ACTIVE_FLAG = 'Y'
                           ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) w), r.DEFAULT_RETRIES, 0) AS RETRIES,
                         COALESCE((SELECT CASE WHEN w.v ~ '^[+]?[0-9]{1,9}$' THEN CAST(ltrim(w.v, '+') AS INTEGER) END
                            FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                           WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRY_DELAY_SECONDS' AND tp.ACTIVE_FLAG = 'Y'
                           ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) w), r.DEFAULT_RETRY_DELAY_SECONDS, 60) AS DELAY,
                         GREATEST(COALESCE((SELECT CASE WHEN n.v ~ '^[0-9]{1,9}([.][0-9]*)?$' THEN CAST(n.v AS double precision) END
                            FROM (SELECT (SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                           WHERE tp.TASK_ID = tr.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'RETRY_BACKOFF' AND tp.ACTIVE_FLAG = 'Y'
                           ORDER BY tp.PARAMETER_ID DESC LIMIT 1) AS v) n), r.DEFAULT_RETRY_BACKOFF, 2.0), 1.0) AS BACKOFF
                    FROM etl_craft.AUD_TASK_ATTEMPTS e
                    JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = e.TASK_RUN_ID
                    JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = tr.PIPELINE_RUN_ID
                   WHERE e.ATTEMPT_ID = p_attempt_id AND e.STATUS IN ('FAILED', 'TIMED_OUT', 'LOST') AND COALESCE(e.RETRYABLE, 'Y') <> 'N'
                     AND r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL AND e.CANCEL_REQUESTED_AT IS NULL) c
           WHERE c.RETRY_NUMBER < c.RETRIES) x
    JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = x.TASK_RUN_ID;

  PERFORM pg_notify('etl_craft_queue', p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n
                   WHERE n.POOL = p.POOL_NAME AND n.STATUS = 'QUEUED' AND n.TASK_RUN_ID IN (SELECT e.TASK_RUN_ID FROM etl_craft.AUD_TASK_ATTEMPTS e WHERE e.ATTEMPT_ID = p_attempt_id));
  PERFORM pg_notify('etl_craft_events', 'attempt_ended:' || p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n WHERE n.POOL = p.POOL_NAME AND n.ATTEMPT_ID = p_attempt_id);
  INSERT INTO etl_craft.AUD_ALERTS
    (PIPELINE_RUN_ID, ALERT_KIND, ALERT_RULE_ID, CHANNELS, TASK_ID, TASK_RUN_ID, ATTEMPT_ID, STATUS, ERROR_MESSAGE,
     RAISED_AT)
  SELECT c.PIPELINE_RUN_ID, 'ATTEMPT_LOST', ar.ALERT_RULE_ID, ar.CHANNELS, c.TASK_ID, c.TASK_RUN_ID, c.ATTEMPT_ID,
         c.STATUS, c.ERROR_MESSAGE, v_now
    FROM (SELECT t.PIPELINE_RUN_ID, t.TASK_ID, t.TASK_RUN_ID, a.ATTEMPT_ID, a.STATUS, a.ERROR_MESSAGE
    FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
   WHERE a.ATTEMPT_ID = p_attempt_id AND a.STATUS = 'LOST') c
    JOIN etl_craft.AUD_PIPELINES_RUN_LOG ar_r ON ar_r.PIPELINE_RUN_ID = c.PIPELINE_RUN_ID
    JOIN etl_craft.CFG_PIPELINES ar_p ON ar_p.PIPELINE_ID = ar_r.PIPELINE_ID
    JOIN etl_craft.CFG_ALERT_RULES ar
      ON ar.PROJECT_ID = ar_p.PROJECT_ID AND ar.ALERT_KIND = 'ATTEMPT_LOST' AND ar.ACTIVE_FLAG = 'Y'
     AND (ar.PIPELINE_ID = ar_p.PIPELINE_ID
          OR (ar.PIPELINE_ID IS NULL
              AND NOT EXISTS (SELECT 1 FROM etl_craft.CFG_ALERT_RULES o
                               WHERE o.PIPELINE_ID = ar_p.PIPELINE_ID AND o.ALERT_KIND = 'ATTEMPT_LOST'
                                 AND o.ACTIVE_FLAG = 'Y')))
   WHERE 1 = 1
   ORDER BY c.PIPELINE_RUN_ID
  ON CONFLICT DO NOTHING;
  INSERT INTO etl_craft.AUD_ALERT_DELIVERIES (ALERT_ID, CHANNEL, DELIVERY_STATUS, ATTEMPTS, NEXT_ATTEMPT_AT)
  SELECT a.ALERT_ID, ch.value, 'PENDING', 0, v_now
    FROM etl_craft.AUD_ALERTS a CROSS JOIN LATERAL unnest(string_to_array(replace(a.CHANNELS, ' ', ''), ',')) AS ch(value)
   WHERE a.ALERT_KIND = 'ATTEMPT_LOST' AND a.PIPELINE_RUN_ID IN (SELECT c.PIPELINE_RUN_ID FROM (SELECT t.PIPELINE_RUN_ID, t.TASK_ID, t.TASK_RUN_ID, a.ATTEMPT_ID, a.STATUS, a.ERROR_MESSAGE
    FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
   WHERE a.ATTEMPT_ID = p_attempt_id AND a.STATUS = 'LOST') c)
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_ALERT_DELIVERIES d WHERE d.ALERT_ID = a.ALERT_ID)
   ORDER BY a.ALERT_ID
  ON CONFLICT DO NOTHING;
  RETURN QUERY
  SELECT q.attempt_id::bigint, q.status::text, q.task_run_status::text
    FROM (
      SELECT a.ATTEMPT_ID, a.STATUS, t.STATUS
        FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
       WHERE a.ATTEMPT_ID = p_attempt_id
    ) AS q(attempt_id, status, task_run_status);
END
$fn$;
-- @end lose_attempt
