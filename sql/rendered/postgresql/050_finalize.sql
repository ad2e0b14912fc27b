-- 050_finalize: ending a run from its task runs, with its SLA and its consumption, in one transaction (B9).


-- @function finalize_run
-- @args run_id bigint, owner_id text = NULL
-- @returns pipeline_run_id bigint, status text, sla_status text, output_revision int, consumed int
-- @purpose End an IN-PROGRESS run from its task runs, in one transaction: status, SLA, revision and consumption
--   are written together or not at all (B9). Refused while an attempt of the run is QUEUED, CLAIMED or RUNNING (B24),
--   and while an active task of the pipeline has no settled task run (SUCCESS, FAILED, SKIPPED or CANCELLED) unless the
--   run is being cancelled (B25). Status: CANCELLED when a cancel was requested; else from the task runs, leaving out
--   EMAIL_ALERT tasks unless every task run is an alert's (a documented decision, docs/guides/alerts.md: a broken relay
--   must not fail or block the data, so an alert task's failure is recorded on its task run but does not fail the
--   run; a pipeline of alert tasks only is judged by them): all SKIPPED ->
--   SKIPPED (B30), any FAILED or CANCELLED -> FAILED, else SUCCESS. SLA_STATUS is decided once (B13): kept when set,
--   else MET when the run ended within the pipeline's SLA_MINUTES of its START_DATE, BREACHED otherwise, NULL without
--   SLA_MINUTES. A repair (REPAIR_PENDING) that ends SUCCESS publishes OUTPUT_REVISION + 1 and clears it; a failed
--   repair keeps it. On SUCCESS, the latest SATISFIED pipeline decision of each dependency of the run is consumed
--   (AUD_DEPENDENCY_CONSUMPTION), never re-judged (B62); consumed counts the rows written. END_DATE is now, ENDED_BY
--   the actor (SYSTEM when the engine finalizes); owner and lease are cleared; open gate waits end ABANDONED. Alerts
--   are raised in the same transaction when an active rule applies (CFG_ALERT_RULES): RUN_FAILED when the run ends
--   FAILED, SLA_BREACHED when its SLA_STATUS is BREACHED, RUN_RECOVERED when it ends SUCCESS and the pipeline's
--   previous ended run (by END_DATE) is FAILED; one alert per run and kind. With
--   owner_id, a run supervised by
--   another owner whose lease is live is refused.
-- @transition RUN IN-PROGRESS -> SUCCESS, FAILED, SKIPPED or CANCELLED
-- @locks PostgreSQL: the run row (FOR NO KEY UPDATE: finalizing, queuing and cancelling one run take turns, while
--   rows that only reference it are not held up). SQLite: the database (BEGIN IMMEDIATE)
-- @errors EC021 no such run; EC020 the run is not IN-PROGRESS (it ended or was cancelled meanwhile: nothing is
--   written, B32), or another owner's lease on it is live; EC023 an attempt of the run is live, or a task has not
--   settled
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'finalize_run' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.finalize_run(
  p_run_id bigint,
  p_owner_id text DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (pipeline_run_id bigint, status text, sla_status text, output_revision integer, consumed integer)
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
  v_new_status text;
  v_consumed bigint;
BEGIN
  -- PostgreSQL: lock the run row for this call (SQLite: BEGIN IMMEDIATE already admits one writer).
  SELECT r.STATUS INTO v_status FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id FOR NO KEY UPDATE;
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC020: ' || ('run ' || r.PIPELINE_RUN_ID || ' is ' || r.STATUS || COALESCE(' (ended ' || COALESCE(to_char(r.END_DATE AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' by ' || r.ENDED_BY || ')', '') || ', expected IN-PROGRESS; only a run in progress is finalized: read its status again') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS <> 'IN-PROGRESS';
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT 'EC020: ' || ('run ' || r.PIPELINE_RUN_ID || ' is supervised by ' || r.OWNER_ID || ' (lease until ' || COALESCE(to_char(r.LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || '), expected ' || p_owner_id || '; its supervisor finalizes it: wait for it, or let its lease expire') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r
   WHERE r.PIPELINE_RUN_ID = p_run_id AND p_owner_id IS NOT NULL AND r.OWNER_ID <> p_owner_id
     AND r.LEASE_EXPIRES_AT >= v_now;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT 'EC023: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' cannot be finalized while ' || x.live || '; wait for them to end, cancel the run, or run etl-craft reconcile once their owners are gone') INTO v_failure
    FROM (SELECT string_agg(l.item, ', ') AS live
            FROM (SELECT 'attempt ' || a.ATTEMPT_ID || ' of task ' || t.TASK_CODE || ' is ' || a.STATUS
                         || COALESCE(' by ' || a.OWNER_ID || ' (lease until ' || COALESCE(to_char(a.LEASE_EXPIRES_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ')', '') AS item
                    FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
                    JOIN etl_craft.CFG_TASKS t ON t.TASK_ID = tr.TASK_ID
                   WHERE tr.PIPELINE_RUN_ID = p_run_id AND a.STATUS IN ('QUEUED', 'CLAIMED', 'RUNNING')
                   ORDER BY a.ATTEMPT_ID) l) x
   WHERE x.live IS NOT NULL;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  SELECT 'EC023: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' cannot be finalized: task(s) ' || x.unsettled || ' have not settled (SUCCESS, FAILED, SKIPPED or CANCELLED); resume the run to run them, skip them, or cancel the run') INTO v_failure
    FROM (SELECT string_agg(u.item, ', ') AS unsettled
            FROM (SELECT t.TASK_CODE || ' (' || COALESCE(tr.STATUS, 'never ran') || ')' AS item
                    FROM etl_craft.AUD_PIPELINES_RUN_LOG r JOIN etl_craft.CFG_TASKS t ON t.PIPELINE_ID = r.PIPELINE_ID AND t.ACTIVE_FLAG = 'Y'
                    LEFT JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND tr.TASK_ID = t.TASK_ID
                   WHERE r.PIPELINE_RUN_ID = p_run_id AND r.CANCEL_REQUESTED_AT IS NULL
                     AND (tr.STATUS IS NULL OR tr.STATUS NOT IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED'))
                   ORDER BY t.TASK_CODE) u) x
   WHERE x.unsettled IS NOT NULL;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  -- The ending the task runs give; alert tasks count only when every task run is an alert's.
  SELECT CASE WHEN r.CANCEL_REQUESTED_AT IS NOT NULL THEN 'CANCELLED'
              WHEN s.counted > 0 AND s.skipped = s.counted THEN 'SKIPPED'
              WHEN s.failed > 0 THEN 'FAILED'
              ELSE 'SUCCESS' END INTO v_new_status
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r CROSS JOIN (
      SELECT COUNT(*) AS counted,
             COALESCE(SUM(CASE WHEN tr.STATUS = 'SKIPPED' THEN 1 ELSE 0 END), 0) AS skipped,
             COALESCE(SUM(CASE WHEN tr.STATUS IN ('FAILED', 'CANCELLED') THEN 1 ELSE 0 END), 0) AS failed
        FROM etl_craft.AUD_TASK_RUN_LOG tr JOIN etl_craft.CFG_TASKS t ON t.TASK_ID = tr.TASK_ID
       WHERE tr.PIPELINE_RUN_ID = p_run_id
         AND (t.HANDLER <> 'EMAIL_ALERT'
              OR NOT EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_RUN_LOG o JOIN etl_craft.CFG_TASKS ot ON ot.TASK_ID = o.TASK_ID
                              WHERE o.PIPELINE_RUN_ID = tr.PIPELINE_RUN_ID AND ot.HANDLER <> 'EMAIL_ALERT'))
    ) s
   WHERE r.PIPELINE_RUN_ID = p_run_id;
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG AS r
     SET STATUS = v_new_status, END_DATE = v_now,
         ENDED_BY = etl_craft._actor(), ENDED_BY_KIND = etl_craft._actor_kind(), OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL,
         SLA_STATUS = COALESCE(r.SLA_STATUS, (
           SELECT CASE WHEN p.SLA_MINUTES IS NULL OR r.START_DATE IS NULL THEN NULL
                       WHEN v_now <= (r.START_DATE + make_interval(secs => p.SLA_MINUTES * 60)) THEN 'MET'
                       ELSE 'BREACHED' END
             FROM etl_craft.CFG_PIPELINES p WHERE p.PIPELINE_ID = r.PIPELINE_ID)),
         OUTPUT_REVISION = r.OUTPUT_REVISION
           + CASE WHEN v_new_status = 'SUCCESS' AND r.REPAIR_PENDING = 'Y' THEN 1 ELSE 0 END,
         REPAIR_PENDING = CASE WHEN v_new_status = 'SUCCESS' THEN 'N' ELSE r.REPAIR_PENDING END
   WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS = 'IN-PROGRESS'
     AND (p_owner_id IS NULL OR r.OWNER_ID IS NULL OR r.OWNER_ID = p_owner_id
          OR r.LEASE_EXPIRES_AT < v_now);
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC020: ' || ('run ' || r.PIPELINE_RUN_ID || ' is ' || r.STATUS || COALESCE(' supervised by ' || r.OWNER_ID, '') || ', expected IN-PROGRESS' || COALESCE(' supervised by ' || p_owner_id || ' or unowned', '') || '; someone else changed it: read its status again') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id AND v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  -- Consumption from the recorded decisions (B62): the latest pipeline decision of each dependency, when SATISFIED.
  INSERT INTO etl_craft.AUD_DEPENDENCY_CONSUMPTION
    (PIPELINE_RUN_ID, PIPELINE_DEPENDENCY_ID, CONSUMED_PIPELINE_RUN_ID, CONSUMED_REVISION, DECISION_ID, CONSUMED_AT)
  SELECT g.PIPELINE_RUN_ID, g.PIPELINE_DEPENDENCY_ID, g.SELECTED_PIPELINE_RUN_ID, g.SELECTED_REVISION, g.DECISION_ID,
         v_now
    FROM etl_craft.AUD_GATE_DECISIONS g
   WHERE g.PIPELINE_RUN_ID = p_run_id AND v_new_status = 'SUCCESS'
     AND g.PIPELINE_DEPENDENCY_ID IS NOT NULL AND g.RESULT = 'SATISFIED'
     AND g.DECISION_ID = (SELECT MAX(l.DECISION_ID) FROM etl_craft.AUD_GATE_DECISIONS l
                           WHERE l.PIPELINE_RUN_ID = g.PIPELINE_RUN_ID AND l.PIPELINE_DEPENDENCY_ID = g.PIPELINE_DEPENDENCY_ID)
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_DEPENDENCY_CONSUMPTION k
                      WHERE k.PIPELINE_RUN_ID = g.PIPELINE_RUN_ID AND k.PIPELINE_DEPENDENCY_ID = g.PIPELINE_DEPENDENCY_ID
                        AND k.TASK_DEPENDENCY_ID IS NULL AND k.CONSUMED_PIPELINE_RUN_ID = g.SELECTED_PIPELINE_RUN_ID
                        AND k.CONSUMED_REVISION = g.SELECTED_REVISION)
   ORDER BY g.PIPELINE_DEPENDENCY_ID;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT v_rows INTO v_consumed;
  UPDATE etl_craft.AUD_GATE_WAITS
     SET OUTCOME = 'ABANDONED', ENDED_AT = v_now, NEXT_CHECK_AT = NULL
   WHERE PIPELINE_RUN_ID = p_run_id AND ENDED_AT IS NULL;
  -- Alerts the ending calls for (issue 23), decided here with it: a FAILED run (naming its first failed task run), an
  -- SLA found BREACHED (once per run: breach_slas may have raised it while the run ran), a SUCCESS after a FAILED end.
  INSERT INTO etl_craft.AUD_ALERTS
    (PIPELINE_RUN_ID, ALERT_KIND, ALERT_RULE_ID, CHANNELS, TASK_ID, TASK_RUN_ID, ATTEMPT_ID, STATUS, ERROR_MESSAGE,
     RAISED_AT)
  SELECT c.PIPELINE_RUN_ID, 'RUN_FAILED', ar.ALERT_RULE_ID, ar.CHANNELS, c.TASK_ID, c.TASK_RUN_ID, c.ATTEMPT_ID,
         c.STATUS, c.ERROR_MESSAGE, v_now
    FROM (SELECT r.PIPELINE_RUN_ID, f.TASK_ID, f.TASK_RUN_ID, CAST(NULL AS BIGINT) AS ATTEMPT_ID, r.STATUS, f.ERROR_MESSAGE
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r LEFT JOIN etl_craft.AUD_TASK_RUN_LOG f ON f.TASK_RUN_ID = (SELECT MIN(x.TASK_RUN_ID) FROM etl_craft.AUD_TASK_RUN_LOG x
                                                           WHERE x.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND x.STATUS = 'FAILED')
   WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS = 'FAILED') c
    JOIN etl_craft.AUD_PIPELINES_RUN_LOG ar_r ON ar_r.PIPELINE_RUN_ID = c.PIPELINE_RUN_ID
    JOIN etl_craft.CFG_PIPELINES ar_p ON ar_p.PIPELINE_ID = ar_r.PIPELINE_ID
    JOIN etl_craft.CFG_ALERT_RULES ar
      ON ar.PROJECT_ID = ar_p.PROJECT_ID AND ar.ALERT_KIND = 'RUN_FAILED' AND ar.ACTIVE_FLAG = 'Y'
     AND (ar.PIPELINE_ID = ar_p.PIPELINE_ID
          OR (ar.PIPELINE_ID IS NULL
              AND NOT EXISTS (SELECT 1 FROM etl_craft.CFG_ALERT_RULES o
                               WHERE o.PIPELINE_ID = ar_p.PIPELINE_ID AND o.ALERT_KIND = 'RUN_FAILED'
                                 AND o.ACTIVE_FLAG = 'Y')))
   WHERE 1 = 1
   ORDER BY c.PIPELINE_RUN_ID
  ON CONFLICT DO NOTHING;
  INSERT INTO etl_craft.AUD_ALERT_DELIVERIES (ALERT_ID, CHANNEL, DELIVERY_STATUS, ATTEMPTS, NEXT_ATTEMPT_AT)
  SELECT a.ALERT_ID, ch.value, 'PENDING', 0, v_now
    FROM etl_craft.AUD_ALERTS a CROSS JOIN LATERAL unnest(string_to_array(replace(a.CHANNELS, ' ', ''), ',')) AS ch(value)
   WHERE a.ALERT_KIND = 'RUN_FAILED' AND a.PIPELINE_RUN_ID IN (SELECT c.PIPELINE_RUN_ID FROM (SELECT r.PIPELINE_RUN_ID, f.TASK_ID, f.TASK_RUN_ID, CAST(NULL AS BIGINT) AS ATTEMPT_ID, r.STATUS, f.ERROR_MESSAGE
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r LEFT JOIN etl_craft.AUD_TASK_RUN_LOG f ON f.TASK_RUN_ID = (SELECT MIN(x.TASK_RUN_ID) FROM etl_craft.AUD_TASK_RUN_LOG x
                                                           WHERE x.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND x.STATUS = 'FAILED')
   WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS = 'FAILED') c)
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_ALERT_DELIVERIES d WHERE d.ALERT_ID = a.ALERT_ID)
   ORDER BY a.ALERT_ID
  ON CONFLICT DO NOTHING;
  INSERT INTO etl_craft.AUD_ALERTS
    (PIPELINE_RUN_ID, ALERT_KIND, ALERT_RULE_ID, CHANNELS, TASK_ID, TASK_RUN_ID, ATTEMPT_ID, STATUS, ERROR_MESSAGE,
     RAISED_AT)
  SELECT c.PIPELINE_RUN_ID, 'SLA_BREACHED', ar.ALERT_RULE_ID, ar.CHANNELS, c.TASK_ID, c.TASK_RUN_ID, c.ATTEMPT_ID,
         c.STATUS, c.ERROR_MESSAGE, v_now
    FROM (SELECT r.PIPELINE_RUN_ID, CAST(NULL AS BIGINT) AS TASK_ID, CAST(NULL AS BIGINT) AS TASK_RUN_ID,
         CAST(NULL AS BIGINT) AS ATTEMPT_ID, r.STATUS, CAST(NULL AS TEXT) AS ERROR_MESSAGE
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id AND r.SLA_STATUS = 'BREACHED') c
    JOIN etl_craft.AUD_PIPELINES_RUN_LOG ar_r ON ar_r.PIPELINE_RUN_ID = c.PIPELINE_RUN_ID
    JOIN etl_craft.CFG_PIPELINES ar_p ON ar_p.PIPELINE_ID = ar_r.PIPELINE_ID
    JOIN etl_craft.CFG_ALERT_RULES ar
      ON ar.PROJECT_ID = ar_p.PROJECT_ID AND ar.ALERT_KIND = 'SLA_BREACHED' AND ar.ACTIVE_FLAG = 'Y'
     AND (ar.PIPELINE_ID = ar_p.PIPELINE_ID
          OR (ar.PIPELINE_ID IS NULL
              AND NOT EXISTS (SELECT 1 FROM etl_craft.CFG_ALERT_RULES o
                               WHERE o.PIPELINE_ID = ar_p.PIPELINE_ID AND o.ALERT_KIND = 'SLA_BREACHED'
                                 AND o.ACTIVE_FLAG = 'Y')))
   WHERE 1 = 1
   ORDER BY c.PIPELINE_RUN_ID
  ON CONFLICT DO NOTHING;
  INSERT INTO etl_craft.AUD_ALERT_DELIVERIES (ALERT_ID, CHANNEL, DELIVERY_STATUS, ATTEMPTS, NEXT_ATTEMPT_AT)
  SELECT a.ALERT_ID, ch.value, 'PENDING', 0, v_now
    FROM etl_craft.AUD_ALERTS a CROSS JOIN LATERAL unnest(string_to_array(replace(a.CHANNELS, ' ', ''), ',')) AS ch(value)
   WHERE a.ALERT_KIND = 'SLA_BREACHED' AND a.PIPELINE_RUN_ID IN (SELECT c.PIPELINE_RUN_ID FROM (SELECT r.PIPELINE_RUN_ID, CAST(NULL AS BIGINT) AS TASK_ID, CAST(NULL AS BIGINT) AS TASK_RUN_ID,
         CAST(NULL AS BIGINT) AS ATTEMPT_ID, r.STATUS, CAST(NULL AS TEXT) AS ERROR_MESSAGE
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id AND r.SLA_STATUS = 'BREACHED') c)
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_ALERT_DELIVERIES d WHERE d.ALERT_ID = a.ALERT_ID)
   ORDER BY a.ALERT_ID
  ON CONFLICT DO NOTHING;
  INSERT INTO etl_craft.AUD_ALERTS
    (PIPELINE_RUN_ID, ALERT_KIND, ALERT_RULE_ID, CHANNELS, TASK_ID, TASK_RUN_ID, ATTEMPT_ID, STATUS, ERROR_MESSAGE,
     RAISED_AT)
  SELECT c.PIPELINE_RUN_ID, 'RUN_RECOVERED', ar.ALERT_RULE_ID, ar.CHANNELS, c.TASK_ID, c.TASK_RUN_ID, c.ATTEMPT_ID,
         c.STATUS, c.ERROR_MESSAGE, v_now
    FROM (SELECT r.PIPELINE_RUN_ID, CAST(NULL AS BIGINT) AS TASK_ID, CAST(NULL AS BIGINT) AS TASK_RUN_ID,
         CAST(NULL AS BIGINT) AS ATTEMPT_ID, r.STATUS, CAST(NULL AS TEXT) AS ERROR_MESSAGE
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS = 'SUCCESS' AND 'FAILED' = (
           SELECT e.STATUS FROM etl_craft.AUD_PIPELINES_RUN_LOG e
            WHERE e.PIPELINE_ID = r.PIPELINE_ID AND e.PIPELINE_RUN_ID <> r.PIPELINE_RUN_ID AND e.END_DATE IS NOT NULL
              AND e.STATUS IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED')
            ORDER BY e.END_DATE DESC, e.PIPELINE_RUN_ID DESC LIMIT 1)) c
    JOIN etl_craft.AUD_PIPELINES_RUN_LOG ar_r ON ar_r.PIPELINE_RUN_ID = c.PIPELINE_RUN_ID
    JOIN etl_craft.CFG_PIPELINES ar_p ON ar_p.PIPELINE_ID = ar_r.PIPELINE_ID
    JOIN etl_craft.CFG_ALERT_RULES ar
      ON ar.PROJECT_ID = ar_p.PROJECT_ID AND ar.ALERT_KIND = 'RUN_RECOVERED' AND ar.ACTIVE_FLAG = 'Y'
     AND (ar.PIPELINE_ID = ar_p.PIPELINE_ID
          OR (ar.PIPELINE_ID IS NULL
              AND NOT EXISTS (SELECT 1 FROM etl_craft.CFG_ALERT_RULES o
                               WHERE o.PIPELINE_ID = ar_p.PIPELINE_ID AND o.ALERT_KIND = 'RUN_RECOVERED'
                                 AND o.ACTIVE_FLAG = 'Y')))
   WHERE 1 = 1
   ORDER BY c.PIPELINE_RUN_ID
  ON CONFLICT DO NOTHING;
  INSERT INTO etl_craft.AUD_ALERT_DELIVERIES (ALERT_ID, CHANNEL, DELIVERY_STATUS, ATTEMPTS, NEXT_ATTEMPT_AT)
  SELECT a.ALERT_ID, ch.value, 'PENDING', 0, v_now
    FROM etl_craft.AUD_ALERTS a CROSS JOIN LATERAL unnest(string_to_array(replace(a.CHANNELS, ' ', ''), ',')) AS ch(value)
   WHERE a.ALERT_KIND = 'RUN_RECOVERED' AND a.PIPELINE_RUN_ID IN (SELECT c.PIPELINE_RUN_ID FROM (SELECT r.PIPELINE_RUN_ID, CAST(NULL AS BIGINT) AS TASK_ID, CAST(NULL AS BIGINT) AS TASK_RUN_ID,
         CAST(NULL AS BIGINT) AS ATTEMPT_ID, r.STATUS, CAST(NULL AS TEXT) AS ERROR_MESSAGE
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS = 'SUCCESS' AND 'FAILED' = (
           SELECT e.STATUS FROM etl_craft.AUD_PIPELINES_RUN_LOG e
            WHERE e.PIPELINE_ID = r.PIPELINE_ID AND e.PIPELINE_RUN_ID <> r.PIPELINE_RUN_ID AND e.END_DATE IS NOT NULL
              AND e.STATUS IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED')
            ORDER BY e.END_DATE DESC, e.PIPELINE_RUN_ID DESC LIMIT 1)) c)
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_ALERT_DELIVERIES d WHERE d.ALERT_ID = a.ALERT_ID)
   ORDER BY a.ALERT_ID
  ON CONFLICT DO NOTHING;
  RETURN QUERY
  SELECT q.pipeline_run_id::bigint, q.status::text, q.sla_status::text, q.output_revision::integer, q.consumed::integer
    FROM (
      SELECT r.PIPELINE_RUN_ID, r.STATUS, r.SLA_STATUS, r.OUTPUT_REVISION, v_consumed
        FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id
    ) AS q(pipeline_run_id, status, sla_status, output_revision, consumed);
END
$fn$;
-- @end finalize_run

-- @function breach_slas
-- @args 
-- @returns pipeline_run_id bigint, pipeline_code text, sla_minutes int, start_date timestamptz
-- @purpose Record SLA_STATUS = BREACHED on every IN-PROGRESS run still running past its pipeline's SLA_MINUTES
--   from its START_DATE, while it runs rather than when it ends (finalize_run keeps it: an SLA is decided once, B13).
--   Raises an SLA_BREACHED alert (one per run) for each of them when an active rule applies. Returns every
--   IN-PROGRESS run whose SLA is breached, those recorded earlier included. The server calls it every heartbeat, and
--   etl-craft run between its turns.
-- @transition none (SLA_STATUS of running runs)
-- @locks the IN-PROGRESS runs past their SLA
-- @errors none
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'breach_slas' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.breach_slas(
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (pipeline_run_id bigint, pipeline_code text, sla_minutes integer, start_date timestamptz)
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
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG AS r
     SET SLA_STATUS = 'BREACHED'
   WHERE r.STATUS = 'IN-PROGRESS' AND r.SLA_STATUS IS NULL AND r.START_DATE IS NOT NULL
     AND EXISTS (SELECT 1 FROM etl_craft.CFG_PIPELINES p
                  WHERE p.PIPELINE_ID = r.PIPELINE_ID AND p.SLA_MINUTES IS NOT NULL
                    AND v_now > (r.START_DATE + make_interval(secs => p.SLA_MINUTES * 60)));
  INSERT INTO etl_craft.AUD_ALERTS
    (PIPELINE_RUN_ID, ALERT_KIND, ALERT_RULE_ID, CHANNELS, TASK_ID, TASK_RUN_ID, ATTEMPT_ID, STATUS, ERROR_MESSAGE,
     RAISED_AT)
  SELECT c.PIPELINE_RUN_ID, 'SLA_BREACHED', ar.ALERT_RULE_ID, ar.CHANNELS, c.TASK_ID, c.TASK_RUN_ID, c.ATTEMPT_ID,
         c.STATUS, c.ERROR_MESSAGE, v_now
    FROM (SELECT r.PIPELINE_RUN_ID, CAST(NULL AS BIGINT) AS TASK_ID, CAST(NULL AS BIGINT) AS TASK_RUN_ID,
         CAST(NULL AS BIGINT) AS ATTEMPT_ID, r.STATUS, CAST(NULL AS TEXT) AS ERROR_MESSAGE
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.STATUS = 'IN-PROGRESS' AND r.SLA_STATUS = 'BREACHED') c
    JOIN etl_craft.AUD_PIPELINES_RUN_LOG ar_r ON ar_r.PIPELINE_RUN_ID = c.PIPELINE_RUN_ID
    JOIN etl_craft.CFG_PIPELINES ar_p ON ar_p.PIPELINE_ID = ar_r.PIPELINE_ID
    JOIN etl_craft.CFG_ALERT_RULES ar
      ON ar.PROJECT_ID = ar_p.PROJECT_ID AND ar.ALERT_KIND = 'SLA_BREACHED' AND ar.ACTIVE_FLAG = 'Y'
     AND (ar.PIPELINE_ID = ar_p.PIPELINE_ID
          OR (ar.PIPELINE_ID IS NULL
              AND NOT EXISTS (SELECT 1 FROM etl_craft.CFG_ALERT_RULES o
                               WHERE o.PIPELINE_ID = ar_p.PIPELINE_ID AND o.ALERT_KIND = 'SLA_BREACHED'
                                 AND o.ACTIVE_FLAG = 'Y')))
   WHERE 1 = 1
   ORDER BY c.PIPELINE_RUN_ID
  ON CONFLICT DO NOTHING;
  INSERT INTO etl_craft.AUD_ALERT_DELIVERIES (ALERT_ID, CHANNEL, DELIVERY_STATUS, ATTEMPTS, NEXT_ATTEMPT_AT)
  SELECT a.ALERT_ID, ch.value, 'PENDING', 0, v_now
    FROM etl_craft.AUD_ALERTS a CROSS JOIN LATERAL unnest(string_to_array(replace(a.CHANNELS, ' ', ''), ',')) AS ch(value)
   WHERE a.ALERT_KIND = 'SLA_BREACHED' AND a.PIPELINE_RUN_ID IN (SELECT c.PIPELINE_RUN_ID FROM (SELECT r.PIPELINE_RUN_ID, CAST(NULL AS BIGINT) AS TASK_ID, CAST(NULL AS BIGINT) AS TASK_RUN_ID,
         CAST(NULL AS BIGINT) AS ATTEMPT_ID, r.STATUS, CAST(NULL AS TEXT) AS ERROR_MESSAGE
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.STATUS = 'IN-PROGRESS' AND r.SLA_STATUS = 'BREACHED') c)
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_ALERT_DELIVERIES d WHERE d.ALERT_ID = a.ALERT_ID)
   ORDER BY a.ALERT_ID
  ON CONFLICT DO NOTHING;
  RETURN QUERY
  SELECT q.pipeline_run_id::bigint, q.pipeline_code::text, q.sla_minutes::integer, q.start_date::timestamptz
    FROM (
      SELECT r.PIPELINE_RUN_ID, p.PIPELINE_CODE, p.SLA_MINUTES, r.START_DATE
        FROM etl_craft.AUD_PIPELINES_RUN_LOG r JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
       WHERE r.STATUS = 'IN-PROGRESS' AND r.SLA_STATUS = 'BREACHED'
       ORDER BY r.PIPELINE_RUN_ID
    ) AS q(pipeline_run_id, pipeline_code, sla_minutes, start_date);
END
$fn$;
-- @end breach_slas
