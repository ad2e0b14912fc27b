-- 035_overseers: the server's leadership record (AUD_OVERSEERS). The session lock a server holds decides who leads;
-- these functions record it for people and for the CLI: who leads, since when, its last heartbeat, and how each
-- server ended. The server's heartbeat renews the leases of every run and attempt it owns in the same call.

-- @function register_overseer
-- @args owner_id text, host text, pid int, version text
-- @returns overseer_id bigint, closed int
-- @purpose Record a server that has just taken the leader's session lock. Any other server still recorded as
--   running cannot hold the lock any more (it was killed or lost its lock connection): its row is closed with
--   STOPPED_AT now and a STOP_REASON naming the new leader. closed counts those rows. Call it only while holding the
--   lock.
-- @transition none (leadership record)
-- @locks the open AUD_OVERSEERS rows
-- @errors EC023 owner_id is already registered (each server start has a new owner id)
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'register_overseer' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.register_overseer(
  p_owner_id text,
  p_host text,
  p_pid integer,
  p_version text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (overseer_id bigint, closed integer)
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
  v_closed integer;
BEGIN
  SELECT 'EC023: ' || ('owner ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || ' is already recorded as overseer ' || OVERSEER_ID || '; a server registers once, with a new owner id each start') INTO v_failure
    FROM etl_craft.AUD_OVERSEERS WHERE OWNER_ID = p_owner_id;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  SELECT COUNT(*) INTO v_closed FROM etl_craft.AUD_OVERSEERS WHERE STOPPED_AT IS NULL;
  UPDATE etl_craft.AUD_OVERSEERS
     SET STOPPED_AT = v_now,
         STOP_REASON = 'ended without stopping (killed, or its lock connection was lost); last heartbeat '
                       || COALESCE(to_char(HEARTBEAT_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ', replaced by the server on ' || p_host || ' pid '
                       || COALESCE(CAST(p_pid AS text), 'NULL')
   WHERE STOPPED_AT IS NULL;
  INSERT INTO etl_craft.AUD_OVERSEERS (OWNER_ID, HOST, PID, VERSION, STARTED_AT, HEARTBEAT_AT, STARTED_BY, STARTED_BY_KIND)
  VALUES (p_owner_id, p_host, p_pid, p_version, v_now,
          v_now, etl_craft._actor(), etl_craft._actor_kind())
  RETURNING OVERSEER_ID INTO v_id;
  RETURN QUERY
  SELECT q.overseer_id::bigint, q.closed::integer
    FROM (
      SELECT v_id, v_closed
    ) AS q(overseer_id, closed);
END
$fn$;
-- @end register_overseer

-- @function renew_overseer
-- @args overseer_id bigint, owner_id text, lease_seconds int = 60
-- @returns kind text, id bigint
-- @purpose The server's heartbeat, one call: stamp its HEARTBEAT_AT, and extend to now + lease_seconds the lease
--   of every IN-PROGRESS run and every CLAIMED or RUNNING attempt owner_id holds. Returns one row per run renewed
--   (kind 'run'), so the server learns of any run it no longer owns (taken over, released or ended) by its absence.
-- @transition none (ownership)
-- @locks the overseer row, every run and live attempt of owner_id
-- @errors EC021 no such overseer; EC020 the overseer is recorded as stopped (it must stop leading); EC023
--   lease_seconds is below 1
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'renew_overseer' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.renew_overseer(
  p_overseer_id bigint,
  p_owner_id text,
  p_lease_seconds integer DEFAULT 60,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (kind text, id bigint)
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
  IF p_lease_seconds < 1 THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('lease_seconds must be at least 1, not ' || COALESCE(CAST(p_lease_seconds AS text), 'NULL')), 'EC023');
  END IF;
  SELECT 'EC021: ' || ('overseer ' || COALESCE(CAST(p_overseer_id AS text), 'NULL') || ' does not exist; etl-craft server status shows the leader') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_OVERSEERS WHERE OVERSEER_ID = p_overseer_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC020: ' || ('overseer ' || OVERSEER_ID || ' was recorded stopped at ' || COALESCE(to_char(STOPPED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' (' || STOP_REASON || '); expected it running: stop leading, another server has taken over') INTO v_failure
    FROM etl_craft.AUD_OVERSEERS WHERE OVERSEER_ID = p_overseer_id AND STOPPED_AT IS NOT NULL;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  UPDATE etl_craft.AUD_OVERSEERS SET HEARTBEAT_AT = v_now WHERE OVERSEER_ID = p_overseer_id;
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG
     SET HEARTBEAT_AT = v_now, LEASE_EXPIRES_AT = (v_now + make_interval(secs => p_lease_seconds))
   WHERE OWNER_ID = p_owner_id AND STATUS = 'IN-PROGRESS';
  UPDATE etl_craft.AUD_TASK_ATTEMPTS
     SET HEARTBEAT_AT = v_now, LEASE_EXPIRES_AT = (v_now + make_interval(secs => p_lease_seconds))
   WHERE OWNER_ID = p_owner_id AND STATUS IN ('CLAIMED', 'RUNNING');
  RETURN QUERY
  SELECT q.kind::text, q.id::bigint
    FROM (
      SELECT 'run', PIPELINE_RUN_ID FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE OWNER_ID = p_owner_id AND STATUS = 'IN-PROGRESS'
       ORDER BY 2
    ) AS q(kind, id);
END
$fn$;
-- @end renew_overseer

-- @function stop_overseer
-- @args overseer_id bigint, reason text
-- @returns overseer_id bigint, stopped_at timestamptz
-- @purpose Record that a server stopped leading (it was told to stop, or lost its lock): STOPPED_AT now and the
--   reason. A row already closed keeps its first ending.
-- @transition none (leadership record)
-- @locks the overseer row
-- @errors EC021 no such overseer
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'stop_overseer' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.stop_overseer(
  p_overseer_id bigint,
  p_reason text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (overseer_id bigint, stopped_at timestamptz)
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
  SELECT 'EC021: ' || ('overseer ' || COALESCE(CAST(p_overseer_id AS text), 'NULL') || ' does not exist; etl-craft server status shows the leader') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_OVERSEERS WHERE OVERSEER_ID = p_overseer_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  UPDATE etl_craft.AUD_OVERSEERS SET STOPPED_AT = v_now, STOP_REASON = COALESCE(p_reason, 'stopped')
   WHERE OVERSEER_ID = p_overseer_id AND STOPPED_AT IS NULL;
  RETURN QUERY
  SELECT q.overseer_id::bigint, q.stopped_at::timestamptz
    FROM (
      SELECT OVERSEER_ID, STOPPED_AT FROM etl_craft.AUD_OVERSEERS WHERE OVERSEER_ID = p_overseer_id
    ) AS q(overseer_id, stopped_at);
END
$fn$;
-- @end stop_overseer
