-- 038_workers: the `etl-craft worker` processes that serve QUEUE pools (AUD_WORKERS, issue 25). A worker registers
-- with a new owner id each start, claims attempts of its pool with claim_attempt under that owner id, and heartbeats
-- with heartbeat_worker, which renews the leases of everything it runs in one statement and tells it which of its
-- attempts were asked to stop. It drains (ACTIVE -> DRAINING) when told to stop and ends GONE (stop_worker). A worker
-- that misses three heartbeats is reaped GONE by reap_workers, and its live attempts are recorded LOST at once (the
-- retry rule applies) rather than when their leases expire; anything it reports afterwards is refused.

-- @function register_worker
-- @args owner_id text, worker_name text, pool text, host text, pid int, version text, ingestion_slots int, warehouse_slots int, heartbeat_seconds int
-- @returns worker_id bigint, status text
-- @purpose Record an etl-craft worker that starts serving pool: ACTIVE, with its slots per kind, its heartbeat
--   period and HEARTBEAT_AT now. owner_id is the id it claims attempts with, new each start. pool must be a QUEUE pool
--   (an active CFG_POOLS row with PROVIDER QUEUE): a LOCAL pool's attempts are run by the process that supervises the
--   run.
-- @transition WORKER (none) -> ACTIVE
-- @locks none (a new row)
-- @errors EC023 owner_id is empty or already registered, the slots are negative or both 0, heartbeat_seconds is
--   below 1, or pool is not a QUEUE pool
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'register_worker' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.register_worker(
  p_owner_id text,
  p_worker_name text,
  p_pool text,
  p_host text,
  p_pid integer,
  p_version text,
  p_ingestion_slots integer,
  p_warehouse_slots integer,
  p_heartbeat_seconds integer,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (worker_id bigint, status text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_id bigint;
BEGIN
  IF COALESCE(p_owner_id, '') = '' OR COALESCE(p_worker_name, '') = '' THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('register_worker needs an owner_id (new each start) and a worker_name, not ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || ' and ' || COALESCE(CAST(p_worker_name AS text), 'NULL')), 'EC023');
  END IF;
  IF COALESCE(p_ingestion_slots, -1) < 0 OR COALESCE(p_warehouse_slots, -1) < 0 OR p_ingestion_slots + p_warehouse_slots = 0 OR COALESCE(p_heartbeat_seconds, 0) < 1 THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('worker ' || p_worker_name || ' needs slots of at least 0 and not both 0, and heartbeat_seconds of at least 1, not ingestion ' || COALESCE(CAST(p_ingestion_slots AS text), 'NULL') || ', warehouse ' || COALESCE(CAST(p_warehouse_slots AS text), 'NULL') || ', heartbeat ' || COALESCE(CAST(p_heartbeat_seconds AS text), 'NULL') || '; give --ingestion-slots, --warehouse-slots and --heartbeat-seconds accordingly'), 'EC023');
  END IF;
  SELECT 'EC023: ' || ('owner ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || ' is already recorded as worker ' || WORKER_ID || ' (' || STATUS || '); a worker registers once, with a new owner id each start') INTO v_failure
    FROM etl_craft.AUD_WORKERS WHERE OWNER_ID = p_owner_id;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  SELECT 'EC023: ' || ('pool ' || COALESCE(CAST(p_pool AS text), 'NULL') || ' is ' || COALESCE((SELECT 'a ' || p.PROVIDER || ' pool' FROM etl_craft.CFG_POOLS p WHERE p.POOL_NAME = p_pool AND p.ACTIVE_FLAG = 'Y'), 'not configured, so LOCAL') || ', expected a QUEUE pool: a LOCAL pool''s attempts are run by the process that supervises the run; set the pool''s provider to QUEUE in craft-connector.yml, or start the worker for a QUEUE pool') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.CFG_POOLS p
                       WHERE p.POOL_NAME = p_pool AND p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  INSERT INTO etl_craft.AUD_WORKERS
    (OWNER_ID, WORKER_NAME, POOL, HOST, PID, VERSION, INGESTION_SLOTS, WAREHOUSE_SLOTS, HEARTBEAT_SECONDS, STATUS,
     STARTED_AT, HEARTBEAT_AT, STARTED_BY, STARTED_BY_KIND)
  VALUES (p_owner_id, p_worker_name, p_pool, p_host, p_pid,
          p_version, p_ingestion_slots, p_warehouse_slots,
          p_heartbeat_seconds, 'ACTIVE', v_now, v_now, etl_craft._actor(), etl_craft._actor_kind())
  RETURNING WORKER_ID INTO v_id;
  RETURN QUERY
  SELECT q.worker_id::bigint, q.status::text
    FROM (
      SELECT WORKER_ID, STATUS FROM etl_craft.AUD_WORKERS WHERE WORKER_ID = v_id
    ) AS q(worker_id, status);
END
$fn$;
-- @end register_worker

-- @function heartbeat_worker
-- @args worker_id bigint, owner_id text, lease_seconds int = 60
-- @returns attempt_id bigint, cancel_requested bool
-- @purpose A worker's heartbeat, one call: stamp its HEARTBEAT_AT, extend to now + lease_seconds the lease of
--   every CLAIMED or RUNNING attempt owner_id holds (one statement), and return one row per such attempt whose
--   cancellation was requested (its own CANCEL_REQUESTED_AT or its run's) and not yet acknowledged: the worker stops
--   it and acknowledges with cancel_attempt(attempt_id, reason, owner_id). A DRAINING worker heartbeats too.
-- @transition none (ownership)
-- @locks the worker row, then every live attempt row of owner_id
-- @errors EC023 lease_seconds is below 1; EC021 no such worker; EC020 owner_id is not the worker's, or the worker
--   is GONE (it was stopped or declared gone: it must stop its task processes at once, their attempts were recorded
--   LOST)
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'heartbeat_worker' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.heartbeat_worker(
  p_worker_id bigint,
  p_owner_id text,
  p_lease_seconds integer DEFAULT 60,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (attempt_id bigint, cancel_requested boolean)
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
BEGIN
  IF p_lease_seconds IS NULL OR p_lease_seconds < 1 THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('lease_seconds must be a whole number of seconds of at least 1, not ' || COALESCE(CAST(p_lease_seconds AS text), 'NULL')), 'EC023');
  END IF;
  UPDATE etl_craft.AUD_WORKERS SET HEARTBEAT_AT = v_now
   WHERE WORKER_ID = p_worker_id AND OWNER_ID = p_owner_id AND STATUS <> 'GONE';
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  IF v_rows = 0 THEN
    SELECT 'EC021: ' || ('worker ' || COALESCE(CAST(p_worker_id AS text), 'NULL') || ' does not exist; etl-craft workers list shows the workers') INTO v_failure
      WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_WORKERS WHERE WORKER_ID = p_worker_id);
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
    END IF;
    SELECT 'EC020: ' || ('worker ' || WORKER_ID || ' (' || WORKER_NAME || ' on ' || HOST || ' pid ' || PID || ', owner ' || OWNER_ID || ') is ' || STATUS || CASE WHEN STATUS = 'GONE' THEN ' since ' || COALESCE(to_char(STOPPED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' (' || STOP_REASON || ')' ELSE '' END || ', expected ACTIVE or DRAINING owned by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || '; a worker acts only under the owner id it registered with') INTO v_failure
      FROM etl_craft.AUD_WORKERS WHERE WORKER_ID = p_worker_id AND OWNER_ID <> p_owner_id;
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
    END IF;
    SELECT 'EC020: ' || ('worker ' || WORKER_ID || ' (' || WORKER_NAME || ' on ' || HOST || ' pid ' || PID || ', owner ' || OWNER_ID || ') is ' || STATUS || CASE WHEN STATUS = 'GONE' THEN ' since ' || COALESCE(to_char(STOPPED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' (' || STOP_REASON || ')' ELSE '' END || ', expected ACTIVE or DRAINING; stop every task process at once: its attempts were recorded LOST and may run again elsewhere') INTO v_failure
      FROM etl_craft.AUD_WORKERS WHERE WORKER_ID = p_worker_id AND STATUS = 'GONE';
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
    END IF;
  END IF;
  UPDATE etl_craft.AUD_TASK_ATTEMPTS
     SET HEARTBEAT_AT = v_now, LEASE_EXPIRES_AT = (v_now + make_interval(secs => p_lease_seconds))
   WHERE OWNER_ID = p_owner_id AND STATUS IN ('CLAIMED', 'RUNNING');
  RETURN QUERY
  SELECT q.attempt_id::bigint, q.cancel_requested::boolean
    FROM (
      SELECT a.ATTEMPT_ID, true
        FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = a.PIPELINE_RUN_ID
       WHERE a.OWNER_ID = p_owner_id AND a.STATUS IN ('CLAIMED', 'RUNNING')
         AND (a.CANCEL_REQUESTED_AT IS NOT NULL OR r.CANCEL_REQUESTED_AT IS NOT NULL) AND a.CANCEL_ACKNOWLEDGED_AT IS NULL
       ORDER BY a.ATTEMPT_ID
    ) AS q(attempt_id, cancel_requested);
END
$fn$;
-- @end heartbeat_worker

-- @function drain_worker
-- @args worker_id bigint, owner_id text, reason text = NULL
-- @returns worker_id bigint, status text
-- @purpose Record that a worker was told to stop: ACTIVE -> DRAINING with DRAINING_AT now and the reason in
--   STOP_REASON; it claims nothing more and lets what it runs finish. A DRAINING worker stays as it is.
-- @transition WORKER ACTIVE -> DRAINING
-- @locks the worker row
-- @errors EC021 no such worker; EC020 owner_id is not the worker's, or the worker is GONE
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'drain_worker' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.drain_worker(
  p_worker_id bigint,
  p_owner_id text,
  p_reason text DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (worker_id bigint, status text)
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
  UPDATE etl_craft.AUD_WORKERS
     SET STATUS = 'DRAINING', DRAINING_AT = v_now,
         STOP_REASON = 'draining: ' || COALESCE(p_reason, 'told to stop')
   WHERE WORKER_ID = p_worker_id AND OWNER_ID = p_owner_id AND STATUS = 'ACTIVE';
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  IF v_rows = 0 THEN
    SELECT 'EC021: ' || ('worker ' || COALESCE(CAST(p_worker_id AS text), 'NULL') || ' does not exist; etl-craft workers list shows the workers') INTO v_failure
      WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_WORKERS WHERE WORKER_ID = p_worker_id);
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
    END IF;
    SELECT 'EC020: ' || ('worker ' || WORKER_ID || ' (' || WORKER_NAME || ' on ' || HOST || ' pid ' || PID || ', owner ' || OWNER_ID || ') is ' || STATUS || CASE WHEN STATUS = 'GONE' THEN ' since ' || COALESCE(to_char(STOPPED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' (' || STOP_REASON || ')' ELSE '' END || ', expected ACTIVE or DRAINING owned by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || '; a worker acts only under the owner id it registered with') INTO v_failure
      FROM etl_craft.AUD_WORKERS WHERE WORKER_ID = p_worker_id AND OWNER_ID <> p_owner_id;
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
    END IF;
    SELECT 'EC020: ' || ('worker ' || WORKER_ID || ' (' || WORKER_NAME || ' on ' || HOST || ' pid ' || PID || ', owner ' || OWNER_ID || ') is ' || STATUS || CASE WHEN STATUS = 'GONE' THEN ' since ' || COALESCE(to_char(STOPPED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' (' || STOP_REASON || ')' ELSE '' END || ', expected ACTIVE or DRAINING; a gone worker cannot drain: start a new one') INTO v_failure
      FROM etl_craft.AUD_WORKERS WHERE WORKER_ID = p_worker_id AND STATUS = 'GONE';
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
    END IF;
  END IF;
  RETURN QUERY
  SELECT q.worker_id::bigint, q.status::text
    FROM (
      SELECT WORKER_ID, STATUS FROM etl_craft.AUD_WORKERS WHERE WORKER_ID = p_worker_id
    ) AS q(worker_id, status);
END
$fn$;
-- @end drain_worker

-- @function stop_worker
-- @args worker_id bigint, owner_id text, reason text = NULL
-- @returns worker_id bigint, status text, lost_attempts int
-- @purpose Record that a worker stopped: GONE with STOPPED_AT now and the reason. Any attempt still CLAIMED or
--   RUNNING under owner_id is recorded LOST ("attempt N was lost: its worker stopped with it unfinished"; the retry
--   rule applies and an ATTEMPT_LOST alert is raised as lose_attempt does); lost_attempts counts them. A worker
--   already GONE keeps its first ending (lost_attempts 0).
-- @transition WORKER ACTIVE or DRAINING -> GONE; ATTEMPT CLAIMED or RUNNING -> LOST; TASK_RUN IN-PROGRESS ->
--   FAILED
-- @locks the worker row, then the live attempt rows of owner_id, then their task runs
-- @errors EC021 no such worker; EC020 owner_id is not the worker's
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'stop_worker' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.stop_worker(
  p_worker_id bigint,
  p_owner_id text,
  p_reason text DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (worker_id bigint, status text, lost_attempts integer)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_lost bigint[];
  v_stopped integer;
BEGIN
  UPDATE etl_craft.AUD_WORKERS
     SET STATUS = 'GONE', STOPPED_AT = v_now, STOP_REASON = COALESCE(p_reason, 'stopped')
   WHERE WORKER_ID = p_worker_id AND OWNER_ID = p_owner_id AND STATUS <> 'GONE';
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  IF v_rows = 0 THEN
    SELECT 'EC021: ' || ('worker ' || COALESCE(CAST(p_worker_id AS text), 'NULL') || ' does not exist; etl-craft workers list shows the workers') INTO v_failure
      WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_WORKERS WHERE WORKER_ID = p_worker_id);
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
    END IF;
    SELECT 'EC020: ' || ('worker ' || WORKER_ID || ' (' || WORKER_NAME || ' on ' || HOST || ' pid ' || PID || ', owner ' || OWNER_ID || ') is ' || STATUS || CASE WHEN STATUS = 'GONE' THEN ' since ' || COALESCE(to_char(STOPPED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' (' || STOP_REASON || ')' ELSE '' END || ', expected a worker owned by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || '; a worker acts only under the owner id it registered with') INTO v_failure
      FROM etl_craft.AUD_WORKERS WHERE WORKER_ID = p_worker_id AND OWNER_ID <> p_owner_id;
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
    END IF;
  END IF;
  SELECT v_rows INTO v_stopped;
  SELECT array_agg(q.ATTEMPT_ID) INTO v_lost
    FROM (SELECT ATTEMPT_ID FROM etl_craft.AUD_TASK_ATTEMPTS
           WHERE STATUS IN ('CLAIMED', 'RUNNING') AND OWNER_ID IN (SELECT w.OWNER_ID FROM etl_craft.AUD_WORKERS w WHERE w.WORKER_ID = p_worker_id AND w.OWNER_ID = p_owner_id AND v_stopped = 1)
           ORDER BY ATTEMPT_ID
             FOR UPDATE
         ) q;
  UPDATE etl_craft.AUD_TASK_ATTEMPTS
     SET STATUS = 'LOST', ENDED_AT = v_now, LEASE_EXPIRES_AT = NULL, ERROR_MESSAGE = 'attempt ' || ATTEMPT_ID || ' was lost: its worker (owner ' || OWNER_ID || ') stopped with it ' || STATUS || ': ' || COALESCE(p_reason, 'stopped')
   WHERE ATTEMPT_ID = ANY (v_lost) AND STATUS IN ('CLAIMED', 'RUNNING');
  UPDATE etl_craft.AUD_TASK_RUN_LOG AS tr
     SET STATUS = 'FAILED', END_DATE = v_now,
         ERROR_MESSAGE = (SELECT a.ERROR_MESSAGE FROM etl_craft.AUD_TASK_ATTEMPTS a
                           WHERE a.TASK_RUN_ID = tr.TASK_RUN_ID AND a.ATTEMPT_ID = ANY (v_lost))
   WHERE tr.TASK_RUN_ID IN (SELECT a.TASK_RUN_ID FROM etl_craft.AUD_TASK_ATTEMPTS a WHERE a.ATTEMPT_ID = ANY (v_lost));
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
               WHERE e.ATTEMPT_ID = ANY (v_lost) AND e.STATUS IN ('FAILED', 'TIMED_OUT', 'LOST') AND COALESCE(e.RETRYABLE, 'Y') <> 'N'
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
                   WHERE e.ATTEMPT_ID = ANY (v_lost) AND e.STATUS IN ('FAILED', 'TIMED_OUT', 'LOST') AND COALESCE(e.RETRYABLE, 'Y') <> 'N'
                     AND r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL AND e.CANCEL_REQUESTED_AT IS NULL) c
           WHERE c.RETRY_NUMBER < c.RETRIES) x
    JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = x.TASK_RUN_ID;

  PERFORM pg_notify('etl_craft_queue', p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n
                   WHERE n.POOL = p.POOL_NAME AND n.STATUS = 'QUEUED' AND n.TASK_RUN_ID IN (SELECT e.TASK_RUN_ID FROM etl_craft.AUD_TASK_ATTEMPTS e WHERE e.ATTEMPT_ID = ANY (v_lost)));
  INSERT INTO etl_craft.AUD_ALERTS
    (PIPELINE_RUN_ID, ALERT_KIND, ALERT_RULE_ID, CHANNELS, TASK_ID, TASK_RUN_ID, ATTEMPT_ID, STATUS, ERROR_MESSAGE,
     RAISED_AT)
  SELECT c.PIPELINE_RUN_ID, 'ATTEMPT_LOST', ar.ALERT_RULE_ID, ar.CHANNELS, c.TASK_ID, c.TASK_RUN_ID, c.ATTEMPT_ID,
         c.STATUS, c.ERROR_MESSAGE, v_now
    FROM (SELECT t.PIPELINE_RUN_ID, t.TASK_ID, t.TASK_RUN_ID, a.ATTEMPT_ID, a.STATUS, a.ERROR_MESSAGE
    FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
   WHERE a.ATTEMPT_ID = ANY (v_lost) AND a.STATUS = 'LOST') c
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
   WHERE a.ATTEMPT_ID = ANY (v_lost) AND a.STATUS = 'LOST') c)
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_ALERT_DELIVERIES d WHERE d.ALERT_ID = a.ALERT_ID)
   ORDER BY a.ALERT_ID
  ON CONFLICT DO NOTHING;
  PERFORM pg_notify('etl_craft_events', 'attempt_ended:' || p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n WHERE n.POOL = p.POOL_NAME AND n.ATTEMPT_ID = ANY (v_lost));
  RETURN QUERY
  SELECT q.worker_id::bigint, q.status::text, q.lost_attempts::integer
    FROM (
      SELECT w.WORKER_ID, w.STATUS,
             (SELECT COUNT(*) FROM etl_craft.AUD_TASK_ATTEMPTS a WHERE a.ATTEMPT_ID = ANY (v_lost) AND a.STATUS = 'LOST')
        FROM etl_craft.AUD_WORKERS w WHERE w.WORKER_ID = p_worker_id
    ) AS q(worker_id, status, lost_attempts);
END
$fn$;
-- @end stop_worker

-- @function reap_workers
-- @args 
-- @returns worker_id bigint, owner_id text, lost_attempts int
-- @purpose Declare gone every ACTIVE or DRAINING worker whose HEARTBEAT_AT is older than 3 x its
--   HEARTBEAT_SECONDS: GONE with STOPPED_AT now and a STOP_REASON naming its last heartbeat. Its CLAIMED and RUNNING
--   attempts are recorded LOST at once ("attempt N was lost: its worker ... missed 3 heartbeats"), not when their
--   leases expire: the retry rule applies (a retry is queued in the same transaction) and ATTEMPT_LOST alerts are
--   raised as lose_attempt does. Anything the gone worker reports afterwards is refused (EC020). Called by the
--   server's reconcile step and by every worker each heartbeat. Returns one row per worker reaped.
-- @transition WORKER ACTIVE or DRAINING -> GONE; ATTEMPT CLAIMED or RUNNING -> LOST; TASK_RUN IN-PROGRESS ->
--   FAILED
-- @locks the late worker rows (PostgreSQL: FOR UPDATE SKIP LOCKED, so a worker heartbeating right now is left to
--   the next pass), then their live attempt rows, then their task runs
-- @errors none
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'reap_workers' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.reap_workers(
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (worker_id bigint, owner_id text, lost_attempts integer)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_gone bigint[];
  v_lost bigint[];
BEGIN
  SELECT array_agg(q.WORKER_ID) INTO v_gone
    FROM (SELECT WORKER_ID FROM etl_craft.AUD_WORKERS
           WHERE STATUS IN ('ACTIVE', 'DRAINING')
             AND HEARTBEAT_AT < (v_now + make_interval(secs => -3 * HEARTBEAT_SECONDS))
           ORDER BY WORKER_ID
             FOR UPDATE SKIP LOCKED
         ) q;
  UPDATE etl_craft.AUD_WORKERS
     SET STATUS = 'GONE', STOPPED_AT = v_now,
         STOP_REASON = 'declared gone: missed 3 heartbeats (every ' || HEARTBEAT_SECONDS || ' s); last heartbeat '
                       || COALESCE(to_char(HEARTBEAT_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never')
   WHERE WORKER_ID = ANY (v_gone) AND STATUS IN ('ACTIVE', 'DRAINING');
  SELECT array_agg(q.ATTEMPT_ID) INTO v_lost
    FROM (SELECT ATTEMPT_ID FROM etl_craft.AUD_TASK_ATTEMPTS
           WHERE STATUS IN ('CLAIMED', 'RUNNING') AND OWNER_ID IN (SELECT w.OWNER_ID FROM etl_craft.AUD_WORKERS w WHERE w.WORKER_ID = ANY (v_gone))
           ORDER BY ATTEMPT_ID
             FOR UPDATE
         ) q;
  UPDATE etl_craft.AUD_TASK_ATTEMPTS
     SET STATUS = 'LOST', ENDED_AT = v_now, LEASE_EXPIRES_AT = NULL, ERROR_MESSAGE = 'attempt ' || ATTEMPT_ID || ' was lost: its worker (owner ' || OWNER_ID || ') missed 3 heartbeats and was declared gone at ' || COALESCE(to_char(v_now AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || '; last heartbeat ' || COALESCE(to_char(HEARTBEAT_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never')
   WHERE ATTEMPT_ID = ANY (v_lost) AND STATUS IN ('CLAIMED', 'RUNNING');
  UPDATE etl_craft.AUD_TASK_RUN_LOG AS tr
     SET STATUS = 'FAILED', END_DATE = v_now,
         ERROR_MESSAGE = (SELECT a.ERROR_MESSAGE FROM etl_craft.AUD_TASK_ATTEMPTS a
                           WHERE a.TASK_RUN_ID = tr.TASK_RUN_ID AND a.ATTEMPT_ID = ANY (v_lost))
   WHERE tr.TASK_RUN_ID IN (SELECT a.TASK_RUN_ID FROM etl_craft.AUD_TASK_ATTEMPTS a WHERE a.ATTEMPT_ID = ANY (v_lost));
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
               WHERE e.ATTEMPT_ID = ANY (v_lost) AND e.STATUS IN ('FAILED', 'TIMED_OUT', 'LOST') AND COALESCE(e.RETRYABLE, 'Y') <> 'N'
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
                   WHERE e.ATTEMPT_ID = ANY (v_lost) AND e.STATUS IN ('FAILED', 'TIMED_OUT', 'LOST') AND COALESCE(e.RETRYABLE, 'Y') <> 'N'
                     AND r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL AND e.CANCEL_REQUESTED_AT IS NULL) c
           WHERE c.RETRY_NUMBER < c.RETRIES) x
    JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = x.TASK_RUN_ID;

  PERFORM pg_notify('etl_craft_queue', p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n
                   WHERE n.POOL = p.POOL_NAME AND n.STATUS = 'QUEUED' AND n.TASK_RUN_ID IN (SELECT e.TASK_RUN_ID FROM etl_craft.AUD_TASK_ATTEMPTS e WHERE e.ATTEMPT_ID = ANY (v_lost)));
  INSERT INTO etl_craft.AUD_ALERTS
    (PIPELINE_RUN_ID, ALERT_KIND, ALERT_RULE_ID, CHANNELS, TASK_ID, TASK_RUN_ID, ATTEMPT_ID, STATUS, ERROR_MESSAGE,
     RAISED_AT)
  SELECT c.PIPELINE_RUN_ID, 'ATTEMPT_LOST', ar.ALERT_RULE_ID, ar.CHANNELS, c.TASK_ID, c.TASK_RUN_ID, c.ATTEMPT_ID,
         c.STATUS, c.ERROR_MESSAGE, v_now
    FROM (SELECT t.PIPELINE_RUN_ID, t.TASK_ID, t.TASK_RUN_ID, a.ATTEMPT_ID, a.STATUS, a.ERROR_MESSAGE
    FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
   WHERE a.ATTEMPT_ID = ANY (v_lost) AND a.STATUS = 'LOST') c
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
   WHERE a.ATTEMPT_ID = ANY (v_lost) AND a.STATUS = 'LOST') c)
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_ALERT_DELIVERIES d WHERE d.ALERT_ID = a.ALERT_ID)
   ORDER BY a.ALERT_ID
  ON CONFLICT DO NOTHING;
  PERFORM pg_notify('etl_craft_events', 'attempt_ended:' || p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n WHERE n.POOL = p.POOL_NAME AND n.ATTEMPT_ID = ANY (v_lost));
  RETURN QUERY
  SELECT q.worker_id::bigint, q.owner_id::text, q.lost_attempts::integer
    FROM (
      SELECT w.WORKER_ID, w.OWNER_ID,
             (SELECT COUNT(*) FROM etl_craft.AUD_TASK_ATTEMPTS a
               WHERE a.ATTEMPT_ID = ANY (v_lost) AND a.OWNER_ID = w.OWNER_ID AND a.STATUS = 'LOST')
        FROM etl_craft.AUD_WORKERS w
       WHERE w.WORKER_ID = ANY (v_gone)
       ORDER BY w.WORKER_ID
    ) AS q(worker_id, owner_id, lost_attempts);
END
$fn$;
-- @end reap_workers
