-- 030_leases: keeping leases alive (renew_lease, a supervisor's or worker's heartbeat) and ending what nobody
-- renews any more (reconcile_expired: attempts whose lease expired are LOST, runs whose lease expired are released).

-- @function renew_lease
-- @args owner_id text, lease_seconds int = 60, run_id bigint = NULL, attempt_id bigint = NULL
-- @returns kind text, id bigint, lease_expires_at timestamptz
-- @purpose Extend leases held by owner_id to now + lease_seconds and stamp HEARTBEAT_AT. With run_id: that
--   IN-PROGRESS run, which owner_id must supervise. With attempt_id: that CLAIMED or RUNNING attempt, which owner_id
--   must own. Both may be given (a supervisor renewing its run and its attempt). With neither: every CLAIMED or
--   RUNNING attempt of owner_id, in one statement (a worker's heartbeat; one row per attempt renewed, none when it
--   holds none). A lease that has expired but was not reconciled yet is
--   still the owner's and is renewed. Returns one row per lease renewed: kind 'run' or 'attempt', its id and its
--   new expiry.
-- @transition none (ownership)
-- @locks the run row, the attempt row, or every live attempt row of owner_id
-- @errors EC021 no such run or attempt; EC020 the run is not IN-PROGRESS under owner_id, or the attempt is not
--   CLAIMED or RUNNING by owner_id (the caller has lost it and must stop working on it); EC023 lease_seconds is
--   below 1
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'renew_lease' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.renew_lease(
  p_owner_id text,
  p_lease_seconds integer DEFAULT 60,
  p_run_id bigint DEFAULT NULL,
  p_attempt_id bigint DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (kind text, id bigint, lease_expires_at timestamptz)
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
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG
     SET HEARTBEAT_AT = v_now, LEASE_EXPIRES_AT = (v_now + make_interval(secs => p_lease_seconds))
   WHERE PIPELINE_RUN_ID = p_run_id AND STATUS = 'IN-PROGRESS' AND OWNER_ID = p_owner_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE p_run_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC020: ' || ('run ' || PIPELINE_RUN_ID || ' is ' || STATUS || COALESCE(' owned by ' || OWNER_ID || ' (lease until ' || COALESCE(to_char(LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')', ' (unowned)') || ', expected IN-PROGRESS owned by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || '; stop supervising it: it has ended, or its lease expired and it was released or taken over') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id AND v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  UPDATE etl_craft.AUD_TASK_ATTEMPTS
     SET HEARTBEAT_AT = v_now, LEASE_EXPIRES_AT = (v_now + make_interval(secs => p_lease_seconds))
   WHERE ATTEMPT_ID = p_attempt_id AND STATUS IN ('CLAIMED', 'RUNNING') AND OWNER_ID = p_owner_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC021: ' || ('attempt ' || COALESCE(CAST(p_attempt_id AS text), 'NULL') || ' does not exist; a run''s attempts are listed by etl-craft status --pipeline-code P') INTO v_failure
    WHERE p_attempt_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC020: ' || ('attempt ' || ATTEMPT_ID || ' is ' || STATUS || COALESCE(' owned by ' || OWNER_ID, ' (unowned)') || CASE WHEN ENDED_AT IS NOT NULL THEN ' (ended ' || COALESCE(to_char(ENDED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')' WHEN LEASE_EXPIRES_AT IS NOT NULL THEN ' (lease until ' || COALESCE(to_char(LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')' ELSE '' END || ', expected ' || 'CLAIMED or RUNNING owned by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || '; stop working on it and record nothing: it has ended, or its lease expired and it was marked LOST') INTO v_failure
    FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id AND v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  UPDATE etl_craft.AUD_TASK_ATTEMPTS
     SET HEARTBEAT_AT = v_now, LEASE_EXPIRES_AT = (v_now + make_interval(secs => p_lease_seconds))
   WHERE p_run_id IS NULL AND p_attempt_id IS NULL
     AND OWNER_ID = p_owner_id AND STATUS IN ('CLAIMED', 'RUNNING');
  RETURN QUERY
  SELECT q.kind::text, q.id::bigint, q.lease_expires_at::timestamptz
    FROM (
      SELECT 'run', PIPELINE_RUN_ID, LEASE_EXPIRES_AT FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id
      UNION ALL
      SELECT 'attempt', ATTEMPT_ID, LEASE_EXPIRES_AT FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id
      UNION ALL
      SELECT 'attempt', ATTEMPT_ID, LEASE_EXPIRES_AT FROM etl_craft.AUD_TASK_ATTEMPTS
       WHERE p_run_id IS NULL AND p_attempt_id IS NULL
         AND OWNER_ID = p_owner_id AND STATUS IN ('CLAIMED', 'RUNNING') AND HEARTBEAT_AT = v_now
       ORDER BY 1 DESC, 2
    ) AS q(kind, id, lease_expires_at);
END
$fn$;
-- @end renew_lease

-- @function release_run
-- @args run_id bigint, owner_id text
-- @returns pipeline_run_id bigint, status text, released bool
-- @purpose A supervisor gives up an IN-PROGRESS run it owns without ending it (it ran what it was asked to, or
--   it was stopped): OWNER_ID and LEASE_EXPIRES_AT are cleared so another etl-craft run can resume it at once instead
--   of waiting for the lease to expire. A run owner_id does not own (ended, never owned, or taken over) is left as it is
--   (released = false).
-- @transition none (ownership of an IN-PROGRESS run released)
-- @locks the run row
-- @errors EC021 no such run; EC023 an attempt of the run owned by owner_id is still CLAIMED or RUNNING (finish or
--   stop it first)
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'release_run' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.release_run(
  p_run_id bigint,
  p_owner_id text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (pipeline_run_id bigint, status text, released boolean)
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
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC023: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' cannot be released by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || ': its attempt ' || a.ATTEMPT_ID || ' is still ' || a.STATUS || '; finish or stop that attempt first') INTO v_failure
    FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
   WHERE t.PIPELINE_RUN_ID = p_run_id AND a.OWNER_ID = p_owner_id
     AND a.STATUS IN ('CLAIMED', 'RUNNING');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG
     SET OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL
   WHERE PIPELINE_RUN_ID = p_run_id AND STATUS = 'IN-PROGRESS' AND OWNER_ID = p_owner_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  PERFORM pg_notify('etl_craft_events', 'release_run:' || COALESCE(CAST(p_run_id AS text), 'NULL'));
  RETURN QUERY
  SELECT q.pipeline_run_id::bigint, q.status::text, q.released::boolean
    FROM (
      SELECT PIPELINE_RUN_ID, STATUS, v_rows = 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id
    ) AS q(pipeline_run_id, status, released);
END
$fn$;
-- @end release_run

-- @function reconcile_expired
-- @args grace_seconds int = 0, host text = NULL
-- @returns attempt_id bigint, owner_id text, task_run_status text
-- @purpose End what nobody renews any more. Every CLAIMED or RUNNING attempt whose lease expired more than
--   grace_seconds ago becomes LOST and its task run FAILED, both with "attempt N was lost: owner O stopped renewing
--   its lease at T". With host, only attempts whose HOST is host or unknown (NULL) are judged: the caller has
--   checked its local processes, and judges other hosts' attempts with host NULL and a larger grace (two lease
--   periods). Then every IN-PROGRESS run whose lease expired more than grace_seconds ago and that has no CLAIMED or
--   RUNNING attempt left is released (OWNER_ID and LEASE_EXPIRES_AT NULL): it stays IN-PROGRESS and can be resumed.
--   Raises an ATTEMPT_LOST alert (one per run) for the attempts it marked LOST when an active rule applies. Returns
--   the attempts it marked LOST.
-- @transition ATTEMPT CLAIMED or RUNNING -> LOST; TASK_RUN IN-PROGRESS -> FAILED; RUN ownership released
-- @locks the expired attempt rows (PostgreSQL: FOR UPDATE SKIP LOCKED, so an attempt being renewed or ended
--   right now is left to the next pass), then their task runs, then the expired runs
-- @errors EC023 grace_seconds is negative
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'reconcile_expired' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.reconcile_expired(
  p_grace_seconds integer DEFAULT 0,
  p_host text DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (attempt_id bigint, owner_id text, task_run_status text)
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
BEGIN
  IF p_grace_seconds IS NULL OR p_grace_seconds < 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('grace_seconds must be 0 or more, not ' || COALESCE(CAST(p_grace_seconds AS text), 'NULL')), 'EC023');
  END IF;
  SELECT array_agg(q.ATTEMPT_ID) INTO v_lost
    FROM (SELECT ATTEMPT_ID FROM etl_craft.AUD_TASK_ATTEMPTS
           WHERE STATUS IN ('CLAIMED', 'RUNNING')
             AND LEASE_EXPIRES_AT < (v_now + make_interval(secs => -p_grace_seconds))
             AND (p_host IS NULL OR HOST = p_host OR HOST IS NULL)
           ORDER BY ATTEMPT_ID
             FOR UPDATE SKIP LOCKED
         ) q;
  UPDATE etl_craft.AUD_TASK_ATTEMPTS
     SET STATUS = 'LOST', ENDED_AT = v_now, LEASE_EXPIRES_AT = NULL, ERROR_MESSAGE = 'attempt ' || ATTEMPT_ID || ' was lost: owner ' || COALESCE(OWNER_ID, 'nobody') || ' stopped renewing its lease at ' || COALESCE(to_char(LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never')
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
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG AS r
     SET OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL
   WHERE r.STATUS = 'IN-PROGRESS' AND r.LEASE_EXPIRES_AT < (v_now + make_interval(secs => -p_grace_seconds))
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
                      WHERE t.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND a.STATUS IN ('CLAIMED', 'RUNNING'));
  RETURN QUERY
  SELECT q.attempt_id::bigint, q.owner_id::text, q.task_run_status::text
    FROM (
      SELECT a.ATTEMPT_ID, a.OWNER_ID, t.STATUS
        FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
       WHERE a.ATTEMPT_ID = ANY (v_lost)
       ORDER BY a.ATTEMPT_ID
    ) AS q(attempt_id, owner_id, task_run_status);
END
$fn$;
-- @end reconcile_expired

-- @function requeue_lost
-- @args run_id bigint
-- @returns attempt_id bigint, task_id bigint, lost_attempt_id bigint
-- @purpose Queue again every task of an IN-PROGRESS run (no cancel requested) whose task run reads FAILED because
--   its latest attempt was LOST and the retry rule did not retry it: nobody knows whether that attempt finished, so
--   the run's next supervisor runs the task again, without using a retry (the new attempt keeps the lost one's
--   RETRY_NUMBER, pool, slot kind and priority and is due at once). The task run reads IN-PROGRESS again with
--   MESSAGE "attempt N was lost; queued again". Returns one row per attempt queued; none when nothing was lost.
-- @transition TASK_RUN FAILED -> IN-PROGRESS; ATTEMPT (none) -> QUEUED
-- @locks PostgreSQL: the run row (FOR NO KEY UPDATE), as queue_attempt takes it; SQLite: the database (BEGIN
--   IMMEDIATE)
-- @errors EC021 no such run
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'requeue_lost' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.requeue_lost(
  p_run_id bigint,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (attempt_id bigint, task_id bigint, lost_attempt_id bigint)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_task_runs bigint[];
BEGIN
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  -- Callers queuing tasks of one run take turns on its row (SQLite: BEGIN IMMEDIATE admits one writer).
  PERFORM 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id FOR NO KEY UPDATE;
  SELECT array_agg(t.TASK_RUN_ID) INTO v_task_runs
    FROM etl_craft.AUD_TASK_RUN_LOG t JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = t.PIPELINE_RUN_ID
   WHERE t.PIPELINE_RUN_ID = p_run_id AND t.STATUS = 'FAILED'
     AND r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL
     AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS a
                  WHERE a.TASK_RUN_ID = t.TASK_RUN_ID AND a.ATTEMPT_NUMBER = t.ATTEMPT_COUNT AND a.STATUS = 'LOST');
  UPDATE etl_craft.AUD_TASK_RUN_LOG
     SET STATUS = 'IN-PROGRESS', END_DATE = NULL, ATTEMPT_COUNT = ATTEMPT_COUNT + 1,
         MESSAGE = 'attempt ' || (SELECT a.ATTEMPT_ID FROM etl_craft.AUD_TASK_ATTEMPTS a
                                   WHERE a.TASK_RUN_ID = etl_craft.AUD_TASK_RUN_LOG.TASK_RUN_ID
                                     AND a.ATTEMPT_NUMBER = etl_craft.AUD_TASK_RUN_LOG.ATTEMPT_COUNT) || ' was lost; queued again'
   WHERE TASK_RUN_ID = ANY (v_task_runs) AND STATUS = 'FAILED';
  INSERT INTO etl_craft.AUD_TASK_ATTEMPTS
    (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, POOL, SLOT_KIND, PRIORITY, QUEUED_AT, REQUESTED_BY, REQUESTED_BY_KIND,
     RETRY_NUMBER)
  SELECT t.TASK_RUN_ID, t.ATTEMPT_COUNT, 'QUEUED', e.POOL, e.SLOT_KIND, e.PRIORITY, v_now, etl_craft._actor(),
         etl_craft._actor_kind(), e.RETRY_NUMBER
    FROM etl_craft.AUD_TASK_RUN_LOG t JOIN etl_craft.AUD_TASK_ATTEMPTS e ON e.TASK_RUN_ID = t.TASK_RUN_ID AND e.ATTEMPT_NUMBER = t.ATTEMPT_COUNT - 1
   WHERE t.TASK_RUN_ID = ANY (v_task_runs) AND e.STATUS = 'LOST';
  PERFORM pg_notify('etl_craft_queue', p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n
                   WHERE n.POOL = p.POOL_NAME AND n.STATUS = 'QUEUED' AND n.TASK_RUN_ID = ANY (v_task_runs));
  RETURN QUERY
  SELECT q.attempt_id::bigint, q.task_id::bigint, q.lost_attempt_id::bigint
    FROM (
      SELECT a.ATTEMPT_ID, t.TASK_ID, e.ATTEMPT_ID
        FROM etl_craft.AUD_TASK_RUN_LOG t
        JOIN etl_craft.AUD_TASK_ATTEMPTS a ON a.TASK_RUN_ID = t.TASK_RUN_ID AND a.ATTEMPT_NUMBER = t.ATTEMPT_COUNT AND a.STATUS = 'QUEUED'
        JOIN etl_craft.AUD_TASK_ATTEMPTS e ON e.TASK_RUN_ID = t.TASK_RUN_ID AND e.ATTEMPT_NUMBER = t.ATTEMPT_COUNT - 1
       WHERE t.TASK_RUN_ID = ANY (v_task_runs)
       ORDER BY a.ATTEMPT_ID
    ) AS q(attempt_id, task_id, lost_attempt_id);
END
$fn$;
-- @end requeue_lost
