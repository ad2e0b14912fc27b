-- 055_alerts: the alert outbox (issue 23). Alerts are raised by the decisions that call for them (finalize_run,
-- breach_slas, lose_attempt, reconcile_expired; fn.raise_alerts) and by the sweep here for gate waits past their
-- rule's threshold. Each alert's deliveries (one per channel) are claimed by the process that drives runs, sent,
-- and recorded; a claim expires, so a delivery claimed by a process that died is claimed again by the next one.

-- @function raise_overdue_alerts
-- @args 
-- @returns alert_id bigint, pipeline_run_id bigint, alert_kind text
-- @purpose Raise a GATE_WAITING alert (one per run) for every open gate wait (AUD_GATE_WAITS, ENDED_AT NULL) that
--   has waited, since its first look, at least the THRESHOLD_MINUTES of the active GATE_WAITING rule that applies to
--   its run's pipeline (its own rule, else its project's default). Set-based: one pass over the open waits. The server
--   calls it every heartbeat and etl-craft run between its turns (SLA breaches are raised by breach_slas). Returns the
--   alerts it raised.
-- @transition none (AUD_ALERTS and AUD_ALERT_DELIVERIES rows are written)
-- @locks none beyond the rows it inserts
-- @errors none
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'raise_overdue_alerts' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.raise_overdue_alerts(
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (alert_id bigint, pipeline_run_id bigint, alert_kind text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_before bigint;
BEGIN
  SELECT COALESCE(MAX(ALERT_ID), 0) INTO v_before FROM etl_craft.AUD_ALERTS;
  INSERT INTO etl_craft.AUD_ALERTS
    (PIPELINE_RUN_ID, ALERT_KIND, ALERT_RULE_ID, CHANNELS, TASK_ID, TASK_RUN_ID, ATTEMPT_ID, STATUS, ERROR_MESSAGE,
     RAISED_AT)
  SELECT c.PIPELINE_RUN_ID, 'GATE_WAITING', ar.ALERT_RULE_ID, ar.CHANNELS, c.TASK_ID, c.TASK_RUN_ID, c.ATTEMPT_ID,
         c.STATUS, c.ERROR_MESSAGE, v_now
    FROM (SELECT w.PIPELINE_RUN_ID, w.TASK_ID, tr.TASK_RUN_ID, CAST(NULL AS BIGINT) AS ATTEMPT_ID,
         CAST('WAITING' AS TEXT) AS STATUS, w.WAITING_FOR AS ERROR_MESSAGE, w.FIRST_CHECK_AT
    FROM etl_craft.AUD_GATE_WAITS w LEFT JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.PIPELINE_RUN_ID = w.PIPELINE_RUN_ID AND tr.TASK_ID = w.TASK_ID
   WHERE w.ENDED_AT IS NULL) c
    JOIN etl_craft.AUD_PIPELINES_RUN_LOG ar_r ON ar_r.PIPELINE_RUN_ID = c.PIPELINE_RUN_ID
    JOIN etl_craft.CFG_PIPELINES ar_p ON ar_p.PIPELINE_ID = ar_r.PIPELINE_ID
    JOIN etl_craft.CFG_ALERT_RULES ar
      ON ar.PROJECT_ID = ar_p.PROJECT_ID AND ar.ALERT_KIND = 'GATE_WAITING' AND ar.ACTIVE_FLAG = 'Y'
     AND (ar.PIPELINE_ID = ar_p.PIPELINE_ID
          OR (ar.PIPELINE_ID IS NULL
              AND NOT EXISTS (SELECT 1 FROM etl_craft.CFG_ALERT_RULES o
                               WHERE o.PIPELINE_ID = ar_p.PIPELINE_ID AND o.ALERT_KIND = 'GATE_WAITING'
                                 AND o.ACTIVE_FLAG = 'Y')))
   WHERE (c.FIRST_CHECK_AT + make_interval(secs => ar.THRESHOLD_MINUTES * 60)) <= v_now
   ORDER BY c.PIPELINE_RUN_ID
  ON CONFLICT DO NOTHING;
  INSERT INTO etl_craft.AUD_ALERT_DELIVERIES (ALERT_ID, CHANNEL, DELIVERY_STATUS, ATTEMPTS, NEXT_ATTEMPT_AT)
  SELECT a.ALERT_ID, ch.value, 'PENDING', 0, v_now
    FROM etl_craft.AUD_ALERTS a CROSS JOIN LATERAL unnest(string_to_array(replace(a.CHANNELS, ' ', ''), ',')) AS ch(value)
   WHERE a.ALERT_KIND = 'GATE_WAITING' AND a.PIPELINE_RUN_ID IN (SELECT c.PIPELINE_RUN_ID FROM (SELECT w.PIPELINE_RUN_ID, w.TASK_ID, tr.TASK_RUN_ID, CAST(NULL AS BIGINT) AS ATTEMPT_ID,
         CAST('WAITING' AS TEXT) AS STATUS, w.WAITING_FOR AS ERROR_MESSAGE, w.FIRST_CHECK_AT
    FROM etl_craft.AUD_GATE_WAITS w LEFT JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.PIPELINE_RUN_ID = w.PIPELINE_RUN_ID AND tr.TASK_ID = w.TASK_ID
   WHERE w.ENDED_AT IS NULL) c)
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_ALERT_DELIVERIES d WHERE d.ALERT_ID = a.ALERT_ID)
   ORDER BY a.ALERT_ID
  ON CONFLICT DO NOTHING;
  RETURN QUERY
  SELECT q.alert_id::bigint, q.pipeline_run_id::bigint, q.alert_kind::text
    FROM (
      SELECT a.ALERT_ID, a.PIPELINE_RUN_ID, a.ALERT_KIND
        FROM etl_craft.AUD_ALERTS a
       WHERE a.ALERT_KIND = 'GATE_WAITING' AND a.ALERT_ID > v_before
       ORDER BY a.ALERT_ID
    ) AS q(alert_id, pipeline_run_id, alert_kind);
END
$fn$;
-- @end raise_overdue_alerts

-- @function claim_alert_deliveries
-- @args owner_id text, max_deliveries int = 10, lease_seconds int = 60
-- @returns delivery_id bigint, alert_id bigint, channel text, attempts int, claim_expires_at timestamptz
-- @purpose Claim up to max_deliveries alert deliveries that are due: PENDING, NEXT_ATTEMPT_AT reached, and not
--   claimed or their claim expired (a process that claimed them died or stopped). The claim (OWNER_ID,
--   CLAIM_EXPIRES_AT = now + lease_seconds) fences record_alert_delivery: only its owner records the outcome. The
--   oldest due first. Returns the deliveries claimed, with the attempts made before this one.
-- @transition none (AUD_ALERT_DELIVERIES: claim taken)
-- @locks PostgreSQL: the deliveries claimed (FOR UPDATE SKIP LOCKED: two processes claim disjoint rows). SQLite:
--   the database (BEGIN IMMEDIATE)
-- @errors EC023 owner_id is empty, max_deliveries is below 1, or lease_seconds is below 1
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'claim_alert_deliveries' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.claim_alert_deliveries(
  p_owner_id text,
  p_max_deliveries integer DEFAULT 10,
  p_lease_seconds integer DEFAULT 60,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (delivery_id bigint, alert_id bigint, channel text, attempts integer, claim_expires_at timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_claimed bigint[];
BEGIN
  IF p_owner_id IS NULL OR p_owner_id = '' OR p_max_deliveries IS NULL OR p_max_deliveries < 1 OR p_lease_seconds IS NULL OR p_lease_seconds < 1 THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('claim_alert_deliveries needs an owner_id, max_deliveries >= 1 and lease_seconds >= 1, not ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || ', ' || COALESCE(CAST(p_max_deliveries AS text), 'NULL') || ' and ' || COALESCE(CAST(p_lease_seconds AS text), 'NULL') || '; pass them'), 'EC023');
  END IF;
  SELECT array_agg(q.DELIVERY_ID) INTO v_claimed
    FROM (SELECT DELIVERY_ID FROM etl_craft.AUD_ALERT_DELIVERIES
           WHERE DELIVERY_STATUS = 'PENDING' AND NEXT_ATTEMPT_AT <= v_now
             AND (CLAIM_EXPIRES_AT IS NULL OR CLAIM_EXPIRES_AT < v_now)
           ORDER BY NEXT_ATTEMPT_AT, DELIVERY_ID
           LIMIT p_max_deliveries
             FOR UPDATE SKIP LOCKED
         ) q;
  UPDATE etl_craft.AUD_ALERT_DELIVERIES
     SET OWNER_ID = p_owner_id, CLAIM_EXPIRES_AT = (v_now + make_interval(secs => p_lease_seconds))
   WHERE DELIVERY_ID = ANY (v_claimed);
  RETURN QUERY
  SELECT q.delivery_id::bigint, q.alert_id::bigint, q.channel::text, q.attempts::integer, q.claim_expires_at::timestamptz
    FROM (
      SELECT d.DELIVERY_ID, d.ALERT_ID, d.CHANNEL, d.ATTEMPTS, d.CLAIM_EXPIRES_AT
        FROM etl_craft.AUD_ALERT_DELIVERIES d
       WHERE d.DELIVERY_ID = ANY (v_claimed)
       ORDER BY d.NEXT_ATTEMPT_AT, d.DELIVERY_ID
    ) AS q(delivery_id, alert_id, channel, attempts, claim_expires_at);
END
$fn$;
-- @end claim_alert_deliveries

-- @function record_alert_delivery
-- @args delivery_id bigint, owner_id text, outcome text, detail text = NULL, warning text = NULL, retry_after_seconds int = NULL
-- @returns delivery_id bigint, delivery_status text, attempts int, next_attempt_at timestamptz
-- @purpose Record one delivery attempt of a claimed alert delivery, by the owner of its claim, and release the
--   claim. outcome DELIVERED: the delivery ends DELIVERED (warning kept: something was refused on the way, such as
--   some of an e-mail's recipients). outcome FAILED with retry_after_seconds: it stays PENDING, due again after that
--   many seconds; FAILED without: it ends FAILED for good (the caller passes no retry_after_seconds once its maximum
--   number of attempts is reached, or when trying again cannot help). Either way ATTEMPTS grows by one and
--   LAST_DETAIL and WARNING hold what the channel answered (never a secret).
-- @transition DELIVERY PENDING -> DELIVERED, FAILED or PENDING (due again)
-- @locks the delivery row
-- @errors EC021 no such delivery; EC023 outcome is neither DELIVERED nor FAILED, or retry_after_seconds is
--   negative; EC020 the delivery is not PENDING and claimed by owner_id (its claim expired and another process claimed
--   it, or its outcome was recorded): nothing is recorded
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'record_alert_delivery' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.record_alert_delivery(
  p_delivery_id bigint,
  p_owner_id text,
  p_outcome text,
  p_detail text DEFAULT NULL,
  p_warning text DEFAULT NULL,
  p_retry_after_seconds integer DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (delivery_id bigint, delivery_status text, attempts integer, next_attempt_at timestamptz)
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
  IF COALESCE(p_outcome, '') NOT IN ('DELIVERED', 'FAILED') OR COALESCE(p_retry_after_seconds, 0) < 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('an alert delivery''s outcome is DELIVERED or FAILED, and retry_after_seconds 0 or more, not ' || COALESCE(CAST(p_outcome AS text), 'NULL') || ' and ' || COALESCE(CAST(p_retry_after_seconds AS text), 'NULL') || '; pass one of them'), 'EC023');
  END IF;
  SELECT 'EC021: ' || ('alert delivery ' || COALESCE(CAST(p_delivery_id AS text), 'NULL') || ' does not exist; list alerts and their deliveries with etl-craft alerts list') INTO v_failure
   WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_ALERT_DELIVERIES WHERE DELIVERY_ID = p_delivery_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  UPDATE etl_craft.AUD_ALERT_DELIVERIES
     SET DELIVERY_STATUS = CASE WHEN p_outcome = 'DELIVERED' THEN 'DELIVERED'
                                WHEN p_retry_after_seconds IS NOT NULL THEN 'PENDING'
                                ELSE 'FAILED' END,
         NEXT_ATTEMPT_AT = CASE WHEN p_outcome = 'FAILED' AND p_retry_after_seconds IS NOT NULL
                                THEN (v_now + make_interval(secs => p_retry_after_seconds)) END,
         DELIVERED_AT = CASE WHEN p_outcome = 'DELIVERED' THEN v_now END,
         ATTEMPTS = ATTEMPTS + 1, LAST_ATTEMPT_AT = v_now,
         LAST_DETAIL = p_detail, WARNING = p_warning,
         OWNER_ID = NULL, CLAIM_EXPIRES_AT = NULL
   WHERE DELIVERY_ID = p_delivery_id AND DELIVERY_STATUS = 'PENDING' AND OWNER_ID = p_owner_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC020: ' || ('alert delivery ' || d.DELIVERY_ID || ' (channel ' || d.CHANNEL || ') is ' || d.DELIVERY_STATUS || COALESCE(' claimed by ' || d.OWNER_ID, ' and unclaimed') || ', expected PENDING claimed by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || '; nothing was recorded: its claim expired and another process claimed it, or its outcome was recorded already; leave it to that process') INTO v_failure
    FROM etl_craft.AUD_ALERT_DELIVERIES d WHERE d.DELIVERY_ID = p_delivery_id AND v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  RETURN QUERY
  SELECT q.delivery_id::bigint, q.delivery_status::text, q.attempts::integer, q.next_attempt_at::timestamptz
    FROM (
      SELECT d.DELIVERY_ID, d.DELIVERY_STATUS, d.ATTEMPTS, d.NEXT_ATTEMPT_AT
        FROM etl_craft.AUD_ALERT_DELIVERIES d WHERE d.DELIVERY_ID = p_delivery_id
    ) AS q(delivery_id, delivery_status, attempts, next_attempt_at);
END
$fn$;
-- @end record_alert_delivery
