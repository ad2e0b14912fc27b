-- 045_gates: admission of queued runs (pipeline gates) and queuing of task attempts (task gates across pipelines).
-- Both judge their dependencies with one gate judgement (judge_into) and record every judged dependency in
-- AUD_GATE_DECISIONS in the transaction that admits the run or queues the attempt (B62: the choice is recorded
-- when it is made and never rebuilt later; finalize_run consumes exactly what was recorded).


-- @function admit_run
-- @args run_id bigint, owner_id text = NULL, lease_seconds int = 60, bypass_reason text = NULL, gate_wait_seconds int = 0, skip_unmet bool = false, durable bool = true
-- @returns pipeline_run_id bigint, status text, satisfied int, unsatisfied int, next_check_at timestamptz, reason text
-- @purpose Admit a QUEUED run through its pipeline gate. Every active pipeline dependency of its pipeline is
--   judged (the latest ended, non-backfill upstream run whose status satisfies the edge and that no other run of the
--   pipeline has consumed yet: the same revision with CONSUME_REPAIRS = 'Y', any revision with 'N'; backfills never feed
--   gates, a backfill's FAILURE edges are unmet, and backfills neither consume for others nor wait on consumption) and
--   recorded in
--   AUD_GATE_DECISIONS, one row each (PIPELINE_DEPENDENCY_ID set, ATTEMPT_ID NULL). When none is UNSATISFIED the run
--   becomes IN-PROGRESS (START_DATE now; OWNER_ID and a lease of lease_seconds when owner_id is given); else it stays
--   QUEUED and the caller retries later or ends it SKIPPED with finish_run. bypass_reason (operator
--   --ignore-dependencies) records every dependency BYPASSED with that reason. satisfied counts the SATISFIED and
--   BYPASSED decisions of this call, unsatisfied the UNSATISFIED ones. With gate_wait_seconds > 0 an unmet gate that
--   may still be met (the upstream has a run queued or in progress) waits instead of deciding: the wait is kept in
--   AUD_GATE_WAITS (TASK_ID NULL) with its next look, returned as next_check_at, and no decision is recorded; the
--   caller admits again at that time (a new caller too: the wait and its deadline survive a restart). reason says
--   what is unmet and, while waiting, the look and the deadline. With skip_unmet (the server) an unmet gate that does not
--   wait ends the run SKIPPED here, with that reason as its MESSAGE, instead of leaving it QUEUED. With durable false
--   (PostgreSQL; SQLite ignores it) the commit does not wait for the WAL flush: a server admits again what a crash of
--   the database loses. Never changes another run (B23, B7).
-- @transition RUN QUEUED -> IN-PROGRESS, or SKIPPED with skip_unmet (else stays QUEUED when a dependency is unmet)
-- @locks PostgreSQL: the pipeline row (FOR NO KEY UPDATE, so admissions of one pipeline take turns), then the
--   run row (FOR NO KEY UPDATE). SQLite: the database (BEGIN IMMEDIATE)
-- @errors EC021 no such run; EC020 the run is not QUEUED; EC023 the pipeline is paused, or another run of the
--   pipeline is IN-PROGRESS
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'admit_run' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.admit_run(
  p_run_id bigint,
  p_owner_id text DEFAULT NULL,
  p_lease_seconds integer DEFAULT 60,
  p_bypass_reason text DEFAULT NULL,
  p_gate_wait_seconds integer DEFAULT 0,
  p_skip_unmet boolean DEFAULT false,
  p_durable boolean DEFAULT true,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (pipeline_run_id bigint, status text, satisfied integer, unsatisfied integer, next_check_at timestamptz, reason text)
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
  v_pipeline_id bigint;
  v_judged jsonb;
  v_durability text;
  v_unmet bigint;
  v_unmet_reason text;
  v_final_unmet bigint;
  v_next_look_in double precision;
  v_wait_id bigint;
  v_wait_since timestamptz;
  v_wait_until timestamptz;
  v_looks bigint;
  v_waiting integer;
  v_next_check timestamptz;
BEGIN
  IF NOT COALESCE(p_durable, true) THEN
    v_durability := set_config('synchronous_commit', 'off', true);  -- an expression: no executor, unlike PERFORM
  END IF;
  -- Admissions of one pipeline take turns on its pipeline row, so the second sees the first's IN-PROGRESS run; the
  -- run row is locked next (SQLite admits one writer under BEGIN IMMEDIATE and needs neither lock).
  SELECT p.PIPELINE_ID INTO v_pipeline_id FROM etl_craft.CFG_PIPELINES p JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_ID = p.PIPELINE_ID
   WHERE r.PIPELINE_RUN_ID = p_run_id FOR NO KEY UPDATE OF p;
  SELECT r.STATUS INTO v_status FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id FOR NO KEY UPDATE;
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC020: ' || ('run ' || r.PIPELINE_RUN_ID || ' is ' || r.STATUS || ', expected QUEUED; only a queued run is admitted: someone else admitted or ended it, read its status again') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS <> 'QUEUED';
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT 'EC023: ' || ('pipeline ' || p.PIPELINE_CODE || ' is paused since ' || COALESCE(to_char(z.PAUSED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' by ' || z.PAUSED_BY || COALESCE(' (' || z.PAUSE_REASON || ')', '') || '; a paused pipeline starts no run: resume it with etl-craft resume --pipeline-code ' || p.PIPELINE_CODE) INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
    JOIN etl_craft.AUD_PIPELINE_PAUSES z ON z.PIPELINE_ID = r.PIPELINE_ID AND z.RESUMED_AT IS NULL
   WHERE r.PIPELINE_RUN_ID = p_run_id;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  SELECT 'EC023: ' || ('run ' || r.PIPELINE_RUN_ID || ' of pipeline ' || p.PIPELINE_CODE || ' cannot be admitted while run ' || o.PIPELINE_RUN_ID || ' (' || o.RUN_KEY || ') of the same pipeline is IN-PROGRESS (started ' || COALESCE(to_char(o.START_DATE AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' by ' || o.STARTED_BY || '); it stays QUEUED: admit it again once that run has ended, or cancel that run') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
    JOIN etl_craft.AUD_PIPELINES_RUN_LOG o ON o.PIPELINE_ID = r.PIPELINE_ID AND o.PIPELINE_RUN_ID <> r.PIPELINE_RUN_ID AND o.STATUS = 'IN-PROGRESS'
   WHERE r.PIPELINE_RUN_ID = p_run_id;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  SELECT COALESCE(jsonb_agg(jsonb_build_object('dependency_id', j.dependency_id, 'result', j.result, 'selected_run_id', j.selected_run_id, 'selected_task_run_id', j.selected_task_run_id, 'selected_revision', j.selected_revision, 'reason', j.reason, 'waitable', j.waitable, 'next_look_in', j.next_look_in) ORDER BY j.dependency_id), '[]'::jsonb)
    INTO v_judged
    FROM (
      SELECT g.dependency_id,
             CASE WHEN g.verdict = 'BYPASS' THEN 'BYPASSED' WHEN g.verdict = 'OK' THEN 'SATISFIED' ELSE 'UNSATISFIED' END
               AS result,
             CASE WHEN g.verdict = 'OK' THEN g.cand_run_id END AS selected_run_id,
             CASE WHEN g.verdict = 'OK' THEN g.cand_task_run_id END AS selected_task_run_id,
             CASE WHEN g.verdict = 'OK' THEN g.cand_revision END AS selected_revision,
             CASE g.verdict
               WHEN 'BYPASS' THEN 'bypassed (' || g.dependency_type || ' dependency on ' || g.upstream || '): ' || p_bypass_reason
               WHEN 'BACKFILL_FAILURE' THEN 'backfills don''t evaluate FAILURE dependencies on other pipelines (FAILURE dependency on ' || g.upstream || ')'
               WHEN 'NONE' THEN g.upstream || ' has no '
                 || CASE g.dependency_type WHEN 'SUCCESS' THEN 'SUCCESS' WHEN 'FAILURE' THEN 'FAILED'
                                           WHEN 'HAS_DATA' THEN 'SUCCESS (with rows written)' ELSE 'ended' END
                 || ' run that is not a backfill (' || g.dependency_type || ' dependency)'
               WHEN 'CONSUMED' THEN g.upstream || ' run ' || g.cand_run_id || ' revision ' || g.cand_revision
                 || ' was already consumed by run ' || g.consumer_run_id || ' at ' || COALESCE(to_char(g.consumed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never')
                 || CASE WHEN g.consume_repairs = 'Y' THEN '; a newer run or a repair of it satisfies this dependency again'
                         ELSE '; a newer run satisfies this dependency again (CONSUME_REPAIRS = N: repairs are not consumed)' END
               ELSE g.upstream || ' run ' || g.cand_run_id || ' revision ' || g.cand_revision
                 || ' ended ' || g.cand_status || ' at ' || COALESCE(to_char(g.cand_end AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never')
                 || CASE WHEN g.dependency_type = 'HAS_DATA' THEN ' with ' || g.cand_rows || ' rows written' ELSE '' END
             END AS reason,
             CASE WHEN g.verdict IN ('NONE', 'CONSUMED') AND g.live_since IS NOT NULL THEN 'Y' ELSE 'N' END AS waitable,
             CASE WHEN g.verdict IN ('NONE', 'CONSUMED') AND g.live_since IS NOT NULL AND g.avg_seconds > 0
                  THEN g.avg_seconds * GREATEST(0.7, (FLOOR(g.elapsed / g.avg_seconds * 10) + 1) / 10.0)
                       - g.elapsed END AS next_look_in
        FROM (
          SELECT e.*, GREATEST(0, EXTRACT(EPOCH FROM (v_now - e.live_since))) AS elapsed,
                 CASE WHEN p_bypass_reason IS NOT NULL THEN 'BYPASS'
                      WHEN e.backfill = 'Y' AND e.dependency_type = 'FAILURE' THEN 'BACKFILL_FAILURE'
                      WHEN e.cand_run_id IS NULL THEN 'NONE'
                      WHEN e.consumer_run_id IS NOT NULL THEN 'CONSUMED'
                      ELSE 'OK' END AS verdict
            FROM (
              SELECT dep.PIPELINE_DEPENDENCY_ID AS dependency_id, dep.DEPENDENCY_TYPE AS dependency_type,
                     dep.CONSUME_REPAIRS AS consume_repairs, up.PIPELINE_CODE AS upstream,
                     CASE WHEN d.TRIGGER_KIND = 'BACKFILL' THEN 'Y' ELSE 'N' END AS backfill,
                     c.PIPELINE_RUN_ID AS cand_run_id, NULL AS cand_task_run_id, c.OUTPUT_REVISION AS cand_revision,
                     c.STATUS AS cand_status, c.END_DATE AS cand_end,
                     (SELECT SUM(w.ROWS_WRITTEN) FROM etl_craft.AUD_TASK_RUN_LOG w WHERE w.PIPELINE_RUN_ID = c.PIPELINE_RUN_ID) AS cand_rows,
                     k.PIPELINE_RUN_ID AS consumer_run_id, k.CONSUMED_AT AS consumed_at,
                     (SELECT MIN(COALESCE(u.START_DATE, v_now)) FROM etl_craft.AUD_PIPELINES_RUN_LOG u
                       WHERE u.PIPELINE_ID = dep.DEPENDS_ON_PIPELINE_ID AND u.TRIGGER_KIND <> 'BACKFILL'
                         AND u.STATUS IN ('QUEUED', 'IN-PROGRESS')) AS live_since,
                     (SELECT AVG(EXTRACT(EPOCH FROM (u.END_DATE - u.START_DATE))) FROM etl_craft.AUD_PIPELINES_RUN_LOG u
                       WHERE u.PIPELINE_ID = dep.DEPENDS_ON_PIPELINE_ID AND u.TRIGGER_KIND <> 'BACKFILL'
                         AND u.STATUS IN ('SUCCESS', 'FAILED') AND u.END_DATE > u.START_DATE) AS avg_seconds
                FROM etl_craft.CFG_PIPELINE_DEPENDENCY dep
                JOIN etl_craft.AUD_PIPELINES_RUN_LOG d ON d.PIPELINE_RUN_ID = p_run_id AND d.PIPELINE_ID = dep.PIPELINE_ID
                JOIN etl_craft.CFG_PIPELINES up ON up.PIPELINE_ID = dep.DEPENDS_ON_PIPELINE_ID
                LEFT JOIN etl_craft.AUD_PIPELINES_RUN_LOG c ON c.PIPELINE_RUN_ID = (
                  SELECT u.PIPELINE_RUN_ID FROM etl_craft.AUD_PIPELINES_RUN_LOG u
                   WHERE u.PIPELINE_ID = dep.DEPENDS_ON_PIPELINE_ID AND u.TRIGGER_KIND <> 'BACKFILL'
                     AND ((dep.DEPENDENCY_TYPE = 'SUCCESS' AND u.STATUS = 'SUCCESS')
                       OR (dep.DEPENDENCY_TYPE = 'FAILURE' AND u.STATUS = 'FAILED')
                       OR (dep.DEPENDENCY_TYPE = 'HAS_DATA' AND u.STATUS = 'SUCCESS'
                           AND (SELECT SUM(w.ROWS_WRITTEN) FROM etl_craft.AUD_TASK_RUN_LOG w WHERE w.PIPELINE_RUN_ID = u.PIPELINE_RUN_ID) > 0)
                       OR (dep.DEPENDENCY_TYPE = 'ALWAYS' AND u.STATUS IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED')))
                   ORDER BY u.END_DATE DESC NULLS LAST, u.PIPELINE_RUN_ID DESC LIMIT 1)
                LEFT JOIN etl_craft.AUD_DEPENDENCY_CONSUMPTION k ON k.CONSUMPTION_ID = (
                  SELECT x.CONSUMPTION_ID FROM etl_craft.AUD_DEPENDENCY_CONSUMPTION x JOIN etl_craft.AUD_PIPELINES_RUN_LOG xr ON xr.PIPELINE_RUN_ID = x.PIPELINE_RUN_ID
                   WHERE x.PIPELINE_DEPENDENCY_ID = dep.PIPELINE_DEPENDENCY_ID AND x.CONSUMED_PIPELINE_RUN_ID = c.PIPELINE_RUN_ID
                     AND (dep.CONSUME_REPAIRS = 'N' OR x.CONSUMED_REVISION = c.OUTPUT_REVISION)
                     AND xr.PIPELINE_RUN_ID <> d.PIPELINE_RUN_ID AND xr.TRIGGER_KIND <> 'BACKFILL' AND d.TRIGGER_KIND <> 'BACKFILL'
                   ORDER BY x.CONSUMPTION_ID DESC LIMIT 1)
               WHERE dep.ACTIVE_FLAG = 'Y'
            ) e
        ) g
       ORDER BY g.dependency_id
    ) j;
  SELECT COUNT(*), string_agg(j.reason, '; '), SUM(CASE WHEN j.waitable = 'Y' THEN 0 ELSE 1 END),
         MIN(j.next_look_in) INTO v_unmet, v_unmet_reason, v_final_unmet, v_next_look_in
    FROM jsonb_to_recordset(v_judged) AS j(dependency_id bigint, result text, selected_run_id bigint, selected_task_run_id bigint, selected_revision integer, reason text, waitable text, next_look_in double precision) WHERE j.result = 'UNSATISFIED';
  SELECT w.GATE_WAIT_ID, w.FIRST_CHECK_AT, w.WAIT_UNTIL, w.LOOKS INTO v_wait_id, v_wait_since, v_wait_until, v_looks
    FROM etl_craft.AUD_GATE_WAITS w
   WHERE w.PIPELINE_RUN_ID = p_run_id AND COALESCE(w.TASK_ID, 0) = COALESCE(NULL, 0) AND w.ENDED_AT IS NULL;
  SELECT CASE WHEN v_unmet > 0 AND COALESCE(v_final_unmet, 0) = 0
               AND COALESCE(p_gate_wait_seconds, 0) > 0 AND v_now < COALESCE(v_wait_until, (v_now + make_interval(secs => p_gate_wait_seconds)))
              THEN 1 ELSE 0 END INTO v_waiting;
  SELECT CASE WHEN v_waiting = 1 THEN LEAST(COALESCE(v_wait_until, (v_now + make_interval(secs => p_gate_wait_seconds))), (v_now + make_interval(secs => LEAST(300, GREATEST(1, COALESCE(v_next_look_in, EXTRACT(EPOCH FROM (COALESCE(v_wait_until, (v_now + make_interval(secs => p_gate_wait_seconds))) - v_now)) / GREATEST(1, 10 - COALESCE(v_looks, 0)))))))) END INTO v_next_check;
  UPDATE etl_craft.AUD_GATE_WAITS
     SET LAST_CHECK_AT = v_now, NEXT_CHECK_AT = v_next_check, LOOKS = LOOKS + 1,
         WAITING_FOR = v_unmet_reason
   WHERE GATE_WAIT_ID = v_wait_id AND v_waiting = 1;
  INSERT INTO etl_craft.AUD_GATE_WAITS
    (PIPELINE_RUN_ID, TASK_ID, FIRST_CHECK_AT, LAST_CHECK_AT, NEXT_CHECK_AT, WAIT_UNTIL, LOOKS, WAITING_FOR)
  SELECT p_run_id, NULL, v_now, v_now, v_next_check, COALESCE(v_wait_until, (v_now + make_interval(secs => p_gate_wait_seconds))), 1,
         v_unmet_reason
   WHERE v_waiting = 1 AND v_wait_id IS NULL;
  UPDATE etl_craft.AUD_GATE_WAITS
     SET OUTCOME = CASE WHEN p_bypass_reason IS NOT NULL THEN 'BYPASSED'
                        WHEN v_unmet = 0 THEN 'SATISFIED' ELSE 'UNSATISFIED' END, ENDED_AT = v_now,
         LAST_CHECK_AT = v_now, NEXT_CHECK_AT = NULL, LOOKS = LOOKS + 1,
         WAITING_FOR = COALESCE(v_unmet_reason, WAITING_FOR)
   WHERE GATE_WAIT_ID = v_wait_id AND v_waiting = 0;
  SELECT w.LOOKS, COALESCE(w.WAIT_UNTIL, v_wait_until) INTO v_looks, v_wait_until
    FROM (SELECT 1 AS one) x LEFT JOIN etl_craft.AUD_GATE_WAITS w
      ON w.PIPELINE_RUN_ID = p_run_id AND COALESCE(w.TASK_ID, 0) = COALESCE(NULL, 0) AND w.ENDED_AT IS NULL;
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG
     SET STATUS = 'IN-PROGRESS', START_DATE = v_now, OWNER_ID = p_owner_id,
         LEASE_EXPIRES_AT = CASE WHEN p_owner_id IS NOT NULL THEN (v_now + make_interval(secs => p_lease_seconds)) END,
         HEARTBEAT_AT = CASE WHEN p_owner_id IS NOT NULL THEN v_now END
   WHERE PIPELINE_RUN_ID = p_run_id AND STATUS = 'QUEUED' AND v_unmet = 0;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC020: ' || ('run ' || r.PIPELINE_RUN_ID || ' is ' || r.STATUS || ', expected QUEUED; someone else changed it: read its status again') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id AND v_rows = 0 AND v_unmet = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  INSERT INTO etl_craft.AUD_GATE_DECISIONS
    (PIPELINE_RUN_ID, TASK_RUN_ID, ATTEMPT_ID, PIPELINE_DEPENDENCY_ID, TASK_DEPENDENCY_ID, SELECTED_PIPELINE_RUN_ID,
     SELECTED_TASK_RUN_ID, SELECTED_REVISION, RESULT, REASON, DECIDED_AT, DECIDED_BY, DECIDED_BY_KIND)
  SELECT p_run_id, NULL, NULL,
         j.dependency_id, NULL,
         j.selected_run_id, j.selected_task_run_id, j.selected_revision, j.result, j.reason,
         v_now, etl_craft._actor(), etl_craft._actor_kind()
    FROM jsonb_to_recordset(v_judged) AS j(dependency_id bigint, result text, selected_run_id bigint, selected_task_run_id bigint, selected_revision integer, reason text, waitable text, next_look_in double precision)
   WHERE v_waiting = 0
   ORDER BY j.dependency_id;
  -- skip_unmet: a gate that is not met and does not wait ends the run SKIPPED (the server's rule for its runs).
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG
     SET STATUS = 'SKIPPED', END_DATE = v_now, OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL,
         MESSAGE = 'pipeline gate not met: ' || v_unmet_reason || CASE WHEN v_wait_id IS NULL THEN ''
       WHEN v_now >= v_wait_until THEN '; the gate waited from ' || COALESCE(to_char(v_wait_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' until its deadline ' || COALESCE(to_char(v_wait_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' (Gate_wait_minutes)'
       ELSE '; the gate waited from ' || COALESCE(to_char(v_wait_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' until the upstream could no longer meet it' END,
         ENDED_BY = etl_craft._actor(), ENDED_BY_KIND = etl_craft._actor_kind()
   WHERE PIPELINE_RUN_ID = p_run_id AND STATUS = 'QUEUED' AND COALESCE(p_skip_unmet, false)
     AND v_unmet > 0 AND v_waiting = 0;
  UPDATE etl_craft.AUD_GATE_WAITS
     SET OUTCOME = 'ABANDONED', ENDED_AT = v_now, NEXT_CHECK_AT = NULL
   WHERE PIPELINE_RUN_ID = p_run_id AND ENDED_AT IS NULL
     AND EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id AND STATUS = 'SKIPPED');
  RETURN QUERY
  SELECT q.pipeline_run_id::bigint, q.status::text, q.satisfied::integer, q.unsatisfied::integer, q.next_check_at::timestamptz, q.reason::text
    FROM (
      SELECT r.PIPELINE_RUN_ID, r.STATUS,
             (SELECT COUNT(*) FROM jsonb_to_recordset(v_judged) AS j(dependency_id bigint, result text, selected_run_id bigint, selected_task_run_id bigint, selected_revision integer, reason text, waitable text, next_look_in double precision) WHERE j.result <> 'UNSATISFIED'), v_unmet,
             v_next_check,
             CASE WHEN v_unmet = 0 THEN NULL
                  WHEN v_waiting = 1 THEN 'waiting for its pipeline gate: ' || v_unmet_reason || '; ' || 'look ' || v_looks || ', next at ' || COALESCE(to_char(v_next_check AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ', waiting at most until ' || COALESCE(to_char(v_wait_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never')
                  ELSE 'pipeline gate not met: ' || v_unmet_reason || CASE WHEN v_wait_id IS NULL THEN ''
           WHEN v_now >= v_wait_until THEN '; the gate waited from ' || COALESCE(to_char(v_wait_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' until its deadline ' || COALESCE(to_char(v_wait_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' (Gate_wait_minutes)'
           ELSE '; the gate waited from ' || COALESCE(to_char(v_wait_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' until the upstream could no longer meet it' END END
        FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id
    ) AS q(pipeline_run_id, status, satisfied, unsatisfied, next_check_at, reason);
END
$fn$;
-- @end admit_run


-- @function queue_attempt
-- @args run_id bigint, task_id bigint, not_before timestamptz = NULL, bypass_reason text = NULL, rerun bool = false, gate_wait_seconds int = 0
-- @returns attempt_id bigint, task_run_id bigint, attempt_number int, outcome text, reason text, next_check_at timestamptz
-- @purpose Queue one attempt of a task in an IN-PROGRESS run, after its task gate. The task's active dependencies
--   on tasks of other pipelines are judged like admit_run's (pipeline edges are admit_run's) and recorded in
--   AUD_GATE_DECISIONS (TASK_DEPENDENCY_ID set). When none is UNSATISFIED: the task run is created IN-PROGRESS or
--   moved back to IN-PROGRESS (a FAILED, SKIPPED or CANCELLED one; a SUCCESS one only with rerun), ATTEMPT_COUNT + 1,
--   with MESSAGE cleared (a skip's, cancel's or mark's note described the outcome it leaves) and, when it never had an
--   attempt, START_DATE too (its first attempt's start sets it); the attempt is inserted QUEUED with ATTEMPT_NUMBER =
--   ATTEMPT_COUNT, NOT_BEFORE, POOL (the task's POOL parameter, else the project's DEFAULT_POOL), SLOT_KIND
--   (ingestion for PYTHON tasks, else warehouse), PRIORITY (the pipeline's) and REQUESTED_BY the actor; the
--   decisions name the attempt. When a dependency is unmet nothing is queued: outcome UNSATISFIED, the decisions
--   have ATTEMPT_ID NULL (TASK_RUN_ID of an existing task run) and reason lists the unmet dependencies. With
--   gate_wait_seconds > 0 an unmet task gate that may still be met waits as admit_run's pipeline gate does: outcome
--   WAITING, the wait kept in AUD_GATE_WAITS with its next look (next_check_at; ready_tasks leaves the task out until
--   then), nothing queued and no decision recorded. bypass_reason records every dependency BYPASSED. A task is queued
--   once (B1): a live attempt refuses the call.
-- @transition TASK_RUN (none), FAILED, SKIPPED, CANCELLED or SUCCESS (rerun) -> IN-PROGRESS; ATTEMPT (none) -> QUEUED
-- @locks PostgreSQL: the run row (FOR NO KEY UPDATE), so callers queuing tasks of one run take turns; the unique
--   index ux_attempt_live backs it. SQLite: the database (BEGIN IMMEDIATE)
-- @errors EC021 no such run, or the task is not an active task of the run's pipeline; EC020 the run is not
--   IN-PROGRESS or is being cancelled, the task already has a live attempt, or its task run is IN-PROGRESS without
--   one; EC023 the pipeline is paused, or the task already succeeded in this run and rerun is false
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'queue_attempt' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.queue_attempt(
  p_run_id bigint,
  p_task_id bigint,
  p_not_before timestamptz DEFAULT NULL,
  p_bypass_reason text DEFAULT NULL,
  p_rerun boolean DEFAULT false,
  p_gate_wait_seconds integer DEFAULT 0,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (attempt_id bigint, task_run_id bigint, attempt_number integer, outcome text, reason text, next_check_at timestamptz)
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
  v_existing_task_run_id bigint;
  v_task_run_status text;
  v_judged jsonb;
  v_queued_task_run_id bigint;
  v_attempt_number bigint;
  v_attempt_id bigint;
  v_unmet bigint;
  v_unmet_reason text;
  v_final_unmet bigint;
  v_next_look_in double precision;
  v_wait_id bigint;
  v_wait_since timestamptz;
  v_wait_until timestamptz;
  v_looks bigint;
  v_waiting integer;
  v_next_check timestamptz;
BEGIN
  -- PostgreSQL: callers queuing tasks of one run take turns on its row (SQLite: BEGIN IMMEDIATE, one writer).
  SELECT r.STATUS INTO v_status FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id FOR NO KEY UPDATE;
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC020: ' || ('run ' || r.PIPELINE_RUN_ID || ' is ' || r.STATUS || ', expected IN-PROGRESS; only a run in progress queues tasks: admit a queued run first, or reopen an ended one with etl-craft reopen') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS <> 'IN-PROGRESS';
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT 'EC020: ' || ('run ' || r.PIPELINE_RUN_ID || ' is IN-PROGRESS but being cancelled (requested at ' || COALESCE(to_char(r.CANCEL_REQUESTED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || '), expected no cancel request; a cancelled run queues no task: finalize it, then start a new run') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id AND r.CANCEL_REQUESTED_AT IS NOT NULL;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT 'EC023: ' || ('pipeline ' || p.PIPELINE_CODE || ' is paused since ' || COALESCE(to_char(z.PAUSED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' by ' || z.PAUSED_BY || COALESCE(' (' || z.PAUSE_REASON || ')', '') || '; a paused pipeline starts no task: resume it with etl-craft resume --pipeline-code ' || p.PIPELINE_CODE) INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
    JOIN etl_craft.AUD_PIPELINE_PAUSES z ON z.PIPELINE_ID = r.PIPELINE_ID AND z.RESUMED_AT IS NULL
   WHERE r.PIPELINE_RUN_ID = p_run_id;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  SELECT 'EC021: ' || ('task ' || COALESCE(CAST(p_task_id AS text), 'NULL') || ' is not an active task of pipeline ' || p.PIPELINE_CODE || ' (run ' || r.PIPELINE_RUN_ID || '); list its tasks with etl-craft list --pipeline-code ' || p.PIPELINE_CODE) INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
   WHERE r.PIPELINE_RUN_ID = p_run_id
     AND NOT EXISTS (SELECT 1 FROM etl_craft.CFG_TASKS t
                      WHERE t.TASK_ID = p_task_id AND t.PIPELINE_ID = r.PIPELINE_ID AND t.ACTIVE_FLAG = 'Y');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT tr.TASK_RUN_ID, tr.STATUS INTO v_existing_task_run_id, v_task_run_status
    FROM etl_craft.AUD_TASK_RUN_LOG tr WHERE tr.PIPELINE_RUN_ID = p_run_id AND tr.TASK_ID = p_task_id;
  SELECT 'EC020: ' || ('task ' || t.TASK_CODE || ' of run ' || tr.PIPELINE_RUN_ID || ' (task run ' || tr.TASK_RUN_ID || ') already has attempt ' || a.ATTEMPT_ID || ' ' || a.STATUS || COALESCE(' by ' || a.OWNER_ID, '') || ', queued at ' || COALESCE(to_char(a.QUEUED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ', expected no live attempt; a task is queued once: wait for that attempt to end, or cancel it') INTO v_failure
    FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID JOIN etl_craft.CFG_TASKS t ON t.TASK_ID = tr.TASK_ID
   WHERE tr.PIPELINE_RUN_ID = p_run_id AND tr.TASK_ID = p_task_id AND a.STATUS IN ('QUEUED', 'CLAIMED', 'RUNNING');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT 'EC020: ' || ('task ' || t.TASK_CODE || ' of run ' || tr.PIPELINE_RUN_ID || ' (task run ' || tr.TASK_RUN_ID || ') is IN-PROGRESS without a live attempt, expected FAILED, SKIPPED or CANCELLED; run etl-craft reconcile, or mark the task, before queuing it again') INTO v_failure
    FROM etl_craft.AUD_TASK_RUN_LOG tr JOIN etl_craft.CFG_TASKS t ON t.TASK_ID = tr.TASK_ID
   WHERE tr.PIPELINE_RUN_ID = p_run_id AND tr.TASK_ID = p_task_id AND tr.STATUS = 'IN-PROGRESS';
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT 'EC023: ' || ('task ' || t.TASK_CODE || ' already succeeded in run ' || tr.PIPELINE_RUN_ID || ' (task run ' || tr.TASK_RUN_ID || ', ended ' || COALESCE(to_char(tr.END_DATE AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || '); pass rerun to run it again') INTO v_failure
    FROM etl_craft.AUD_TASK_RUN_LOG tr JOIN etl_craft.CFG_TASKS t ON t.TASK_ID = tr.TASK_ID
   WHERE tr.PIPELINE_RUN_ID = p_run_id AND tr.TASK_ID = p_task_id AND tr.STATUS = 'SUCCESS'
     AND COALESCE(CAST(p_rerun AS text), 'NULL') NOT IN ('true', 'Y');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  SELECT COALESCE(jsonb_agg(jsonb_build_object('dependency_id', j.dependency_id, 'result', j.result, 'selected_run_id', j.selected_run_id, 'selected_task_run_id', j.selected_task_run_id, 'selected_revision', j.selected_revision, 'reason', j.reason, 'waitable', j.waitable, 'next_look_in', j.next_look_in) ORDER BY j.dependency_id), '[]'::jsonb)
    INTO v_judged
    FROM (
      SELECT g.dependency_id,
             CASE WHEN g.verdict = 'BYPASS' THEN 'BYPASSED' WHEN g.verdict = 'OK' THEN 'SATISFIED' ELSE 'UNSATISFIED' END
               AS result,
             CASE WHEN g.verdict = 'OK' THEN g.cand_run_id END AS selected_run_id,
             CASE WHEN g.verdict = 'OK' THEN g.cand_task_run_id END AS selected_task_run_id,
             CASE WHEN g.verdict = 'OK' THEN g.cand_revision END AS selected_revision,
             CASE g.verdict
               WHEN 'BYPASS' THEN 'bypassed (' || g.dependency_type || ' dependency on ' || g.upstream || '): ' || p_bypass_reason
               WHEN 'BACKFILL_FAILURE' THEN 'backfills don''t evaluate FAILURE dependencies on other pipelines (FAILURE dependency on ' || g.upstream || ')'
               WHEN 'NONE' THEN g.upstream || ' has no '
                 || CASE g.dependency_type WHEN 'SUCCESS' THEN 'SUCCESS' WHEN 'FAILURE' THEN 'FAILED'
                                           WHEN 'HAS_DATA' THEN 'SUCCESS (with rows written)' ELSE 'ended' END
                 || ' task run that is not a backfill (' || g.dependency_type || ' dependency)'
               WHEN 'CONSUMED' THEN g.upstream || ' run ' || g.cand_run_id || ' revision ' || g.cand_revision
                 || ' was already consumed by run ' || g.consumer_run_id || ' at ' || COALESCE(to_char(g.consumed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never')
                 || CASE WHEN g.consume_repairs = 'Y' THEN '; a newer run or a repair of it satisfies this dependency again'
                         ELSE '; a newer run satisfies this dependency again (CONSUME_REPAIRS = N: repairs are not consumed)' END
               ELSE g.upstream || ' task run ' || g.cand_task_run_id || ' in' || ' run ' || g.cand_run_id || ' revision ' || g.cand_revision
                 || ' ended ' || g.cand_status || ' at ' || COALESCE(to_char(g.cand_end AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never')
                 || CASE WHEN g.dependency_type = 'HAS_DATA' THEN ' with ' || g.cand_rows || ' rows written' ELSE '' END
             END AS reason,
             CASE WHEN g.verdict IN ('NONE', 'CONSUMED') AND g.live_since IS NOT NULL THEN 'Y' ELSE 'N' END AS waitable,
             CASE WHEN g.verdict IN ('NONE', 'CONSUMED') AND g.live_since IS NOT NULL AND g.avg_seconds > 0
                  THEN g.avg_seconds * GREATEST(0.7, (FLOOR(g.elapsed / g.avg_seconds * 10) + 1) / 10.0)
                       - g.elapsed END AS next_look_in
        FROM (
          SELECT e.*, GREATEST(0, EXTRACT(EPOCH FROM (v_now - e.live_since))) AS elapsed,
                 CASE WHEN p_bypass_reason IS NOT NULL THEN 'BYPASS'
                      WHEN e.backfill = 'Y' AND e.dependency_type = 'FAILURE' THEN 'BACKFILL_FAILURE'
                      WHEN e.cand_run_id IS NULL THEN 'NONE'
                      WHEN e.consumer_run_id IS NOT NULL THEN 'CONSUMED'
                      ELSE 'OK' END AS verdict
            FROM (
              SELECT dep.TASK_DEPENDENCY_ID AS dependency_id, dep.DEPENDENCY_TYPE AS dependency_type,
                     dep.CONSUME_REPAIRS AS consume_repairs, up.PIPELINE_CODE || '.' || ut.TASK_CODE AS upstream,
                     CASE WHEN d.TRIGGER_KIND = 'BACKFILL' THEN 'Y' ELSE 'N' END AS backfill,
                     c.PIPELINE_RUN_ID AS cand_run_id, ct.TASK_RUN_ID AS cand_task_run_id, c.OUTPUT_REVISION AS cand_revision,
                     ct.STATUS AS cand_status, ct.END_DATE AS cand_end, ct.ROWS_WRITTEN AS cand_rows,
                     k.PIPELINE_RUN_ID AS consumer_run_id, k.CONSUMED_AT AS consumed_at,
                     (SELECT MIN(COALESCE(t.START_DATE, v_now)) FROM etl_craft.AUD_PIPELINES_RUN_LOG u
                        LEFT JOIN etl_craft.AUD_TASK_RUN_LOG t ON t.PIPELINE_RUN_ID = u.PIPELINE_RUN_ID AND t.TASK_ID = dep.DEPENDS_ON_TASK_ID
                       WHERE u.PIPELINE_ID = ut.PIPELINE_ID AND u.TRIGGER_KIND <> 'BACKFILL'
                         AND u.STATUS IN ('QUEUED', 'IN-PROGRESS')
                         AND (t.TASK_RUN_ID IS NULL OR t.STATUS = 'IN-PROGRESS')) AS live_since,
                     (SELECT AVG(EXTRACT(EPOCH FROM (t.END_DATE - t.START_DATE))) FROM etl_craft.AUD_TASK_RUN_LOG t
                        JOIN etl_craft.AUD_PIPELINES_RUN_LOG u ON u.PIPELINE_RUN_ID = t.PIPELINE_RUN_ID
                       WHERE t.TASK_ID = dep.DEPENDS_ON_TASK_ID AND u.TRIGGER_KIND <> 'BACKFILL'
                         AND t.STATUS IN ('SUCCESS', 'FAILED') AND t.END_DATE > t.START_DATE) AS avg_seconds
                FROM etl_craft.CFG_TASK_DEPENDENCY dep
                JOIN etl_craft.CFG_TASKS dt ON dt.TASK_ID = dep.TASK_ID
                JOIN etl_craft.CFG_TASKS ut ON ut.TASK_ID = dep.DEPENDS_ON_TASK_ID AND ut.PIPELINE_ID <> dt.PIPELINE_ID
                JOIN etl_craft.CFG_PIPELINES up ON up.PIPELINE_ID = ut.PIPELINE_ID
                JOIN etl_craft.AUD_PIPELINES_RUN_LOG d ON d.PIPELINE_RUN_ID = p_run_id
                LEFT JOIN etl_craft.AUD_TASK_RUN_LOG ct ON ct.TASK_RUN_ID = (
                  SELECT t.TASK_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG t JOIN etl_craft.AUD_PIPELINES_RUN_LOG u ON u.PIPELINE_RUN_ID = t.PIPELINE_RUN_ID
                   WHERE t.TASK_ID = dep.DEPENDS_ON_TASK_ID AND u.TRIGGER_KIND <> 'BACKFILL'
                     AND ((dep.DEPENDENCY_TYPE = 'SUCCESS' AND t.STATUS = 'SUCCESS')
                       OR (dep.DEPENDENCY_TYPE = 'FAILURE' AND t.STATUS = 'FAILED')
                       OR (dep.DEPENDENCY_TYPE = 'HAS_DATA' AND t.STATUS = 'SUCCESS' AND t.ROWS_WRITTEN > 0)
                       OR (dep.DEPENDENCY_TYPE = 'ALWAYS' AND t.STATUS IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED')))
                   ORDER BY t.END_DATE DESC NULLS LAST, t.TASK_RUN_ID DESC LIMIT 1)
                LEFT JOIN etl_craft.AUD_PIPELINES_RUN_LOG c ON c.PIPELINE_RUN_ID = ct.PIPELINE_RUN_ID
                LEFT JOIN etl_craft.AUD_DEPENDENCY_CONSUMPTION k ON k.CONSUMPTION_ID = (
                  SELECT x.CONSUMPTION_ID FROM etl_craft.AUD_DEPENDENCY_CONSUMPTION x JOIN etl_craft.AUD_PIPELINES_RUN_LOG xr ON xr.PIPELINE_RUN_ID = x.PIPELINE_RUN_ID
                   WHERE x.TASK_DEPENDENCY_ID = dep.TASK_DEPENDENCY_ID AND x.CONSUMED_PIPELINE_RUN_ID = c.PIPELINE_RUN_ID
                     AND (dep.CONSUME_REPAIRS = 'N' OR x.CONSUMED_REVISION = c.OUTPUT_REVISION)
                     AND xr.PIPELINE_RUN_ID <> d.PIPELINE_RUN_ID AND xr.TRIGGER_KIND <> 'BACKFILL' AND d.TRIGGER_KIND <> 'BACKFILL'
                   ORDER BY x.CONSUMPTION_ID DESC LIMIT 1)
               WHERE dep.TASK_ID = p_task_id AND dep.ACTIVE_FLAG = 'Y'
            ) e
        ) g
       ORDER BY g.dependency_id
    ) j;
  SELECT COUNT(*), string_agg(j.reason, '; '), SUM(CASE WHEN j.waitable = 'Y' THEN 0 ELSE 1 END),
         MIN(j.next_look_in) INTO v_unmet, v_unmet_reason, v_final_unmet, v_next_look_in
    FROM jsonb_to_recordset(v_judged) AS j(dependency_id bigint, result text, selected_run_id bigint, selected_task_run_id bigint, selected_revision integer, reason text, waitable text, next_look_in double precision) WHERE j.result = 'UNSATISFIED';
  SELECT w.GATE_WAIT_ID, w.FIRST_CHECK_AT, w.WAIT_UNTIL, w.LOOKS INTO v_wait_id, v_wait_since, v_wait_until, v_looks
    FROM etl_craft.AUD_GATE_WAITS w
   WHERE w.PIPELINE_RUN_ID = p_run_id AND COALESCE(w.TASK_ID, 0) = COALESCE(p_task_id, 0) AND w.ENDED_AT IS NULL;
  SELECT CASE WHEN v_unmet > 0 AND COALESCE(v_final_unmet, 0) = 0
               AND COALESCE(p_gate_wait_seconds, 0) > 0 AND v_now < COALESCE(v_wait_until, (v_now + make_interval(secs => p_gate_wait_seconds)))
              THEN 1 ELSE 0 END INTO v_waiting;
  SELECT CASE WHEN v_waiting = 1 THEN LEAST(COALESCE(v_wait_until, (v_now + make_interval(secs => p_gate_wait_seconds))), (v_now + make_interval(secs => LEAST(300, GREATEST(1, COALESCE(v_next_look_in, EXTRACT(EPOCH FROM (COALESCE(v_wait_until, (v_now + make_interval(secs => p_gate_wait_seconds))) - v_now)) / GREATEST(1, 10 - COALESCE(v_looks, 0)))))))) END INTO v_next_check;
  UPDATE etl_craft.AUD_GATE_WAITS
     SET LAST_CHECK_AT = v_now, NEXT_CHECK_AT = v_next_check, LOOKS = LOOKS + 1,
         WAITING_FOR = v_unmet_reason
   WHERE GATE_WAIT_ID = v_wait_id AND v_waiting = 1;
  INSERT INTO etl_craft.AUD_GATE_WAITS
    (PIPELINE_RUN_ID, TASK_ID, FIRST_CHECK_AT, LAST_CHECK_AT, NEXT_CHECK_AT, WAIT_UNTIL, LOOKS, WAITING_FOR)
  SELECT p_run_id, p_task_id, v_now, v_now, v_next_check, COALESCE(v_wait_until, (v_now + make_interval(secs => p_gate_wait_seconds))), 1,
         v_unmet_reason
   WHERE v_waiting = 1 AND v_wait_id IS NULL;
  UPDATE etl_craft.AUD_GATE_WAITS
     SET OUTCOME = CASE WHEN p_bypass_reason IS NOT NULL THEN 'BYPASSED'
                        WHEN v_unmet = 0 THEN 'SATISFIED' ELSE 'UNSATISFIED' END, ENDED_AT = v_now,
         LAST_CHECK_AT = v_now, NEXT_CHECK_AT = NULL, LOOKS = LOOKS + 1,
         WAITING_FOR = COALESCE(v_unmet_reason, WAITING_FOR)
   WHERE GATE_WAIT_ID = v_wait_id AND v_waiting = 0;
  SELECT w.LOOKS, COALESCE(w.WAIT_UNTIL, v_wait_until) INTO v_looks, v_wait_until
    FROM (SELECT 1 AS one) x LEFT JOIN etl_craft.AUD_GATE_WAITS w
      ON w.PIPELINE_RUN_ID = p_run_id AND COALESCE(w.TASK_ID, 0) = COALESCE(p_task_id, 0) AND w.ENDED_AT IS NULL;
  -- START_DATE is the task run's first start (start_attempt sets it), not when an attempt was queued.
  INSERT INTO etl_craft.AUD_TASK_RUN_LOG (PIPELINE_RUN_ID, TASK_ID, STATUS, ATTEMPT_COUNT)
  SELECT p_run_id, p_task_id, 'IN-PROGRESS', 0
   WHERE v_unmet = 0 AND v_existing_task_run_id IS NULL;
  -- Compare-and-set on the status read above: a new task run is IN-PROGRESS with no attempt yet. The note of the
  -- outcome it leaves (a skip's reason, a cancel's, a mark's) no longer describes it, and a task run that never had an
  -- attempt (skipped or marked) has not started yet: START_DATE is set by its first attempt's start.
  UPDATE etl_craft.AUD_TASK_RUN_LOG
     SET STATUS = 'IN-PROGRESS', ATTEMPT_COUNT = ATTEMPT_COUNT + 1, END_DATE = NULL, MESSAGE = NULL,
         START_DATE = CASE WHEN ATTEMPT_COUNT = 0 THEN NULL ELSE START_DATE END
   WHERE PIPELINE_RUN_ID = p_run_id AND TASK_ID = p_task_id AND v_unmet = 0
     AND STATUS = COALESCE(v_task_run_status, 'IN-PROGRESS')
  RETURNING TASK_RUN_ID, ATTEMPT_COUNT INTO v_queued_task_run_id, v_attempt_number;
  SELECT 'EC020: ' || ('task run ' || tr.TASK_RUN_ID || ' is ' || tr.STATUS || ', expected ' || COALESCE(CAST(v_task_run_status AS text), 'NULL') || '; someone else changed it: read its status again') INTO v_failure
    FROM etl_craft.AUD_TASK_RUN_LOG tr
   WHERE tr.PIPELINE_RUN_ID = p_run_id AND tr.TASK_ID = p_task_id
     AND v_unmet = 0 AND v_queued_task_run_id IS NULL;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  INSERT INTO etl_craft.AUD_TASK_ATTEMPTS
    (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, POOL, SLOT_KIND, PRIORITY, NOT_BEFORE, QUEUED_AT, REQUESTED_BY, REQUESTED_BY_KIND)
  SELECT v_queued_task_run_id, v_attempt_number, 'QUEUED',
         COALESCE((SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                    WHERE tp.TASK_ID = t.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'POOL' AND tp.ACTIVE_FLAG = 'Y'),
                  pr.DEFAULT_POOL),
         CASE WHEN t.HANDLER = 'PYTHON' THEN 'ingestion' ELSE 'warehouse' END,
         p.PRIORITY, p_not_before, v_now, etl_craft._actor(), etl_craft._actor_kind()
    FROM etl_craft.CFG_TASKS t JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID
    JOIN etl_craft.CFG_PROJECTS pr ON pr.PROJECT_ID = p.PROJECT_ID
   WHERE t.TASK_ID = p_task_id AND v_queued_task_run_id IS NOT NULL
  RETURNING ATTEMPT_ID INTO v_attempt_id;
  PERFORM pg_notify('etl_craft_queue', p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n
                   WHERE n.POOL = p.POOL_NAME AND n.STATUS = 'QUEUED' AND n.ATTEMPT_ID = v_attempt_id);
  INSERT INTO etl_craft.AUD_GATE_DECISIONS
    (PIPELINE_RUN_ID, TASK_RUN_ID, ATTEMPT_ID, PIPELINE_DEPENDENCY_ID, TASK_DEPENDENCY_ID, SELECTED_PIPELINE_RUN_ID,
     SELECTED_TASK_RUN_ID, SELECTED_REVISION, RESULT, REASON, DECIDED_AT, DECIDED_BY, DECIDED_BY_KIND)
  SELECT p_run_id, COALESCE(v_queued_task_run_id, v_existing_task_run_id), v_attempt_id,
         NULL, j.dependency_id,
         j.selected_run_id, j.selected_task_run_id, j.selected_revision, j.result, j.reason,
         v_now, etl_craft._actor(), etl_craft._actor_kind()
    FROM jsonb_to_recordset(v_judged) AS j(dependency_id bigint, result text, selected_run_id bigint, selected_task_run_id bigint, selected_revision integer, reason text, waitable text, next_look_in double precision)
   WHERE v_waiting = 0
   ORDER BY j.dependency_id;
  RETURN QUERY
  SELECT q.attempt_id::bigint, q.task_run_id::bigint, q.attempt_number::integer, q.outcome::text, q.reason::text, q.next_check_at::timestamptz
    FROM (
      SELECT a.ATTEMPT_ID, COALESCE(v_queued_task_run_id, v_existing_task_run_id), a.ATTEMPT_NUMBER,
             CASE WHEN a.ATTEMPT_ID IS NOT NULL THEN 'QUEUED' WHEN v_waiting = 1 THEN 'WAITING' ELSE 'UNSATISFIED' END,
             CASE WHEN a.ATTEMPT_ID IS NOT NULL
                  THEN 'queued attempt ' || a.ATTEMPT_NUMBER || ' of task run ' || a.TASK_RUN_ID || ' in pool ' || a.POOL
                       || ' (' || a.SLOT_KIND || ' slot, priority ' || a.PRIORITY || ')'
                  WHEN v_waiting = 1
                  THEN 'waiting for its dependencies: ' || v_unmet_reason || '; ' || 'look ' || v_looks || ', next at ' || COALESCE(to_char(v_next_check AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ', waiting at most until ' || COALESCE(to_char(v_wait_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never')
                  ELSE 'dependencies not met: ' || v_unmet_reason || CASE WHEN v_wait_id IS NULL THEN ''
           WHEN v_now >= v_wait_until THEN '; the gate waited from ' || COALESCE(to_char(v_wait_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' until its deadline ' || COALESCE(to_char(v_wait_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' (Gate_wait_minutes)'
           ELSE '; the gate waited from ' || COALESCE(to_char(v_wait_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' until the upstream could no longer meet it' END END,
             v_next_check
        FROM (SELECT 1 AS one) x LEFT JOIN etl_craft.AUD_TASK_ATTEMPTS a ON a.ATTEMPT_ID = v_attempt_id
    ) AS q(attempt_id, task_run_id, attempt_number, outcome, reason, next_check_at);
END
$fn$;
-- @end queue_attempt
-- @function queue_attempts
-- @args run_id bigint, task_ids text
-- @returns task_id bigint, attempt_id bigint, task_run_id bigint, attempt_number int, pool text, slot_kind text, outcome text, reason text
-- @purpose Queue one attempt for each task of task_ids (a comma list of task ids, such as '12,13,14') in an
--   IN-PROGRESS run, in one transaction, as queue_attempt queues one task with its defaults (no not_before, no
--   bypass, no rerun): for the tasks the run's supervisor found ready together (a fan-out's branches). A task with an
--   active dependency on a task of another pipeline is left alone, outcome GATED: its task gate is judged, waited for
--   and recorded by queue_attempt, which the caller calls for it. Every other task is queued as queue_attempt queues it
--   (its task run created, or moved back to IN-PROGRESS from FAILED, SKIPPED or CANCELLED, ATTEMPT_COUNT + 1; the
--   attempt QUEUED with the task's pool, slot kind, the pipeline's priority and the actor as requester), outcome
--   QUEUED with the attempt's pool and slot kind; the attempts are numbered in the order of the list, which is the order they are claimed in. One row per
--   task of the list, in its order. The refusals are queue_attempt's, for the first task of the list they apply to,
--   and refuse the whole list: nothing is queued.
-- @transition TASK_RUN (none), FAILED, SKIPPED or CANCELLED -> IN-PROGRESS; ATTEMPT (none) -> QUEUED
-- @locks PostgreSQL: the run row (FOR NO KEY UPDATE), as queue_attempt takes it; SQLite: the database (BEGIN
--   IMMEDIATE)
-- @errors EC023 task_ids is not a comma list of task ids, names a task twice, a task already succeeded in this
--   run, or the pipeline is paused; EC021 no such run, or a task is not an active task of the run's pipeline; EC020 the
--   run is not IN-PROGRESS or is being cancelled, a task already has a live attempt, or its task run is IN-PROGRESS
--   without one
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'queue_attempts' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.queue_attempts(
  p_run_id bigint,
  p_task_ids text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (task_id bigint, attempt_id bigint, task_run_id bigint, attempt_number integer, pool text, slot_kind text, outcome text, reason text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_status text;
  v_ids bigint[];
BEGIN
  IF p_task_ids IS NULL OR replace(p_task_ids, ' ', '') !~ '^[0-9]+(,[0-9]+)*$' THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('task_ids must be a comma list of task ids such as ''12,13'', not ' || COALESCE(CAST(p_task_ids AS text), 'NULL') || '; pass the ids of the tasks to queue, each once'), 'EC023');
  END IF;
  v_ids := CAST(string_to_array(replace(p_task_ids, ' ', ''), ',') AS bigint[]);
  -- PostgreSQL: callers queuing tasks of one run take turns on its row (SQLite: BEGIN IMMEDIATE, one writer).
  SELECT r.STATUS INTO v_status FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id FOR NO KEY UPDATE;
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC020: ' || ('run ' || r.PIPELINE_RUN_ID || ' is ' || r.STATUS || ', expected IN-PROGRESS; only a run in progress queues tasks: admit a queued run first, or reopen an ended one with etl-craft reopen') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS <> 'IN-PROGRESS';
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT 'EC020: ' || ('run ' || r.PIPELINE_RUN_ID || ' is IN-PROGRESS but being cancelled (requested at ' || COALESCE(to_char(r.CANCEL_REQUESTED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || '), expected no cancel request; a cancelled run queues no task: finalize it, then start a new run') INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = p_run_id AND r.CANCEL_REQUESTED_AT IS NOT NULL;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT 'EC023: ' || ('pipeline ' || p.PIPELINE_CODE || ' is paused since ' || COALESCE(to_char(z.PAUSED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' by ' || z.PAUSED_BY || COALESCE(' (' || z.PAUSE_REASON || ')', '') || '; a paused pipeline starts no task: resume it with etl-craft resume --pipeline-code ' || p.PIPELINE_CODE) INTO v_failure
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
    JOIN etl_craft.AUD_PIPELINE_PAUSES z ON z.PIPELINE_ID = r.PIPELINE_ID AND z.RESUMED_AT IS NULL
   WHERE r.PIPELINE_RUN_ID = p_run_id;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  SELECT 'EC023: ' || ('task_ids names task ' || l.task_id || ' twice (' || COALESCE(CAST(p_task_ids AS text), 'NULL') || '); name each task once') INTO v_failure
    FROM (SELECT u.task_id, u.pos,
          (SELECT x.TASK_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.PIPELINE_RUN_ID = p_run_id AND x.TASK_ID = u.task_id) AS task_run_id
     FROM unnest(v_ids) WITH ORDINALITY AS u(task_id, pos)) AS l GROUP BY l.task_id HAVING COUNT(*) > 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  SELECT 'EC021: ' || ('task ' || l.task_id || ' is not an active task of pipeline ' || p.PIPELINE_CODE || ' (run ' || r.PIPELINE_RUN_ID || '); list its tasks with etl-craft list --pipeline-code ' || p.PIPELINE_CODE) INTO v_failure
    FROM (SELECT u.task_id, u.pos,
          (SELECT x.TASK_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.PIPELINE_RUN_ID = p_run_id AND x.TASK_ID = u.task_id) AS task_run_id
     FROM unnest(v_ids) WITH ORDINALITY AS u(task_id, pos)) AS l JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = p_run_id
    JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
   -- The task by its key (kept apart by OFFSET 0 from the checks on it: never a walk of the pipeline's active tasks).
   WHERE (SELECT 1 FROM (SELECT x.PIPELINE_ID, x.ACTIVE_FLAG FROM etl_craft.CFG_TASKS x WHERE x.TASK_ID = l.task_id OFFSET 0) t
           WHERE t.PIPELINE_ID = r.PIPELINE_ID AND t.ACTIVE_FLAG = 'Y') IS NULL
   ORDER BY l.pos LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC020: ' || ('task ' || t.TASK_CODE || ' of run ' || tr.PIPELINE_RUN_ID || ' (task run ' || tr.TASK_RUN_ID || ') already has attempt ' || a.ATTEMPT_ID || ' ' || a.STATUS || COALESCE(' by ' || a.OWNER_ID, '') || ', queued at ' || COALESCE(to_char(a.QUEUED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ', expected no live attempt; a task is queued once: wait for that attempt to end, or cancel it') INTO v_failure
    FROM (SELECT u.task_id, u.pos,
          (SELECT x.TASK_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.PIPELINE_RUN_ID = p_run_id AND x.TASK_ID = u.task_id) AS task_run_id
     FROM unnest(v_ids) WITH ORDINALITY AS u(task_id, pos)) AS l JOIN LATERAL (SELECT x.* FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.TASK_RUN_ID = l.task_run_id OFFSET 0) tr ON true
    JOIN LATERAL (SELECT x.* FROM etl_craft.AUD_TASK_ATTEMPTS x WHERE x.TASK_RUN_ID = tr.TASK_RUN_ID AND x.STATUS IN ('QUEUED', 'CLAIMED', 'RUNNING') OFFSET 0) a ON true
    JOIN LATERAL (SELECT x.* FROM etl_craft.CFG_TASKS x WHERE x.TASK_ID = tr.TASK_ID OFFSET 0) t ON true
   ORDER BY l.pos LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT 'EC020: ' || ('task ' || t.TASK_CODE || ' of run ' || tr.PIPELINE_RUN_ID || ' (task run ' || tr.TASK_RUN_ID || ') is IN-PROGRESS without a live attempt, expected FAILED, SKIPPED or CANCELLED; run etl-craft reconcile, or mark the task, before queuing it again') INTO v_failure
    FROM (SELECT u.task_id, u.pos,
          (SELECT x.TASK_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.PIPELINE_RUN_ID = p_run_id AND x.TASK_ID = u.task_id) AS task_run_id
     FROM unnest(v_ids) WITH ORDINALITY AS u(task_id, pos)) AS l JOIN LATERAL (SELECT x.* FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.TASK_RUN_ID = l.task_run_id OFFSET 0) tr ON true
    JOIN LATERAL (SELECT x.* FROM etl_craft.CFG_TASKS x WHERE x.TASK_ID = tr.TASK_ID OFFSET 0) t ON true
   WHERE tr.STATUS = 'IN-PROGRESS'
   ORDER BY l.pos LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT 'EC023: ' || ('task ' || t.TASK_CODE || ' already succeeded in run ' || tr.PIPELINE_RUN_ID || ' (task run ' || tr.TASK_RUN_ID || ', ended ' || COALESCE(to_char(tr.END_DATE AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || '); queue it with queue_attempt and rerun to run it again') INTO v_failure
    FROM (SELECT u.task_id, u.pos,
          (SELECT x.TASK_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.PIPELINE_RUN_ID = p_run_id AND x.TASK_ID = u.task_id) AS task_run_id
     FROM unnest(v_ids) WITH ORDINALITY AS u(task_id, pos)) AS l JOIN LATERAL (SELECT x.* FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.TASK_RUN_ID = l.task_run_id OFFSET 0) tr ON true
    JOIN LATERAL (SELECT x.* FROM etl_craft.CFG_TASKS x WHERE x.TASK_ID = tr.TASK_ID OFFSET 0) t ON true
   WHERE tr.STATUS = 'SUCCESS'
   ORDER BY l.pos LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  -- START_DATE is the task run's first start (start_attempt sets it), not when an attempt was queued.
  INSERT INTO etl_craft.AUD_TASK_RUN_LOG (PIPELINE_RUN_ID, TASK_ID, STATUS, ATTEMPT_COUNT)
  SELECT p_run_id, l.task_id, 'IN-PROGRESS', 0
    FROM (SELECT u.task_id, u.pos,
          (SELECT x.TASK_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.PIPELINE_RUN_ID = p_run_id AND x.TASK_ID = u.task_id) AS task_run_id
     FROM unnest(v_ids) WITH ORDINALITY AS u(task_id, pos)) AS l
   WHERE NOT (SELECT 1 FROM etl_craft.CFG_TASK_DEPENDENCY dep
            JOIN etl_craft.CFG_TASKS dt ON dt.TASK_ID = dep.TASK_ID
            JOIN etl_craft.CFG_TASKS ut ON ut.TASK_ID = dep.DEPENDS_ON_TASK_ID AND ut.PIPELINE_ID <> dt.PIPELINE_ID
           WHERE dep.TASK_ID = l.task_id AND dep.ACTIVE_FLAG = 'Y' LIMIT 1) IS NOT NULL
     AND l.task_run_id IS NULL
   ORDER BY l.pos;
  -- After the refusals above, a listed task run IN-PROGRESS is one just created (no attempt yet); the others are
  -- FAILED, SKIPPED or CANCELLED. The note of the outcome they leave no longer describes them, and one that never had
  -- an attempt (skipped or marked) has not started yet.
  UPDATE etl_craft.AUD_TASK_RUN_LOG
     SET STATUS = 'IN-PROGRESS', ATTEMPT_COUNT = ATTEMPT_COUNT + 1, END_DATE = NULL, MESSAGE = NULL,
         START_DATE = CASE WHEN ATTEMPT_COUNT = 0 THEN NULL ELSE START_DATE END
   WHERE TASK_RUN_ID IN (
           SELECT tr.TASK_RUN_ID FROM (SELECT u.task_id, u.pos,
          (SELECT x.TASK_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.PIPELINE_RUN_ID = p_run_id AND x.TASK_ID = u.task_id) AS task_run_id
     FROM unnest(v_ids) WITH ORDINALITY AS u(task_id, pos)) AS l
             JOIN LATERAL (SELECT x.* FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.TASK_RUN_ID = l.task_run_id OFFSET 0) tr ON true
            WHERE (tr.STATUS IN ('FAILED', 'SKIPPED', 'CANCELLED') OR (tr.STATUS = 'IN-PROGRESS' AND tr.ATTEMPT_COUNT = 0))
              AND NOT (SELECT 1 FROM etl_craft.CFG_TASK_DEPENDENCY dep
            JOIN etl_craft.CFG_TASKS dt ON dt.TASK_ID = dep.TASK_ID
            JOIN etl_craft.CFG_TASKS ut ON ut.TASK_ID = dep.DEPENDS_ON_TASK_ID AND ut.PIPELINE_ID <> dt.PIPELINE_ID
           WHERE dep.TASK_ID = l.task_id AND dep.ACTIVE_FLAG = 'Y' LIMIT 1) IS NOT NULL);
  INSERT INTO etl_craft.AUD_TASK_ATTEMPTS
    (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, POOL, SLOT_KIND, PRIORITY, NOT_BEFORE, QUEUED_AT, REQUESTED_BY, REQUESTED_BY_KIND)
  SELECT tr.TASK_RUN_ID, tr.ATTEMPT_COUNT, 'QUEUED',
         COALESCE((SELECT NULLIF(TRIM(tp.PARAMETER_VALUE), '') FROM etl_craft.CFG_TASK_PARAMETERS tp
                    WHERE tp.TASK_ID = t.TASK_ID AND UPPER(tp.PARAMETER_NAME) = 'POOL' AND tp.ACTIVE_FLAG = 'Y'),
                  pr.DEFAULT_POOL),
         CASE WHEN t.HANDLER = 'PYTHON' THEN 'ingestion' ELSE 'warehouse' END,
         p.PRIORITY, NULL, v_now, etl_craft._actor(), etl_craft._actor_kind()
    FROM (SELECT u.task_id, u.pos,
          (SELECT x.TASK_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.PIPELINE_RUN_ID = p_run_id AND x.TASK_ID = u.task_id) AS task_run_id
     FROM unnest(v_ids) WITH ORDINALITY AS u(task_id, pos)) AS l
    JOIN LATERAL (SELECT x.* FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.TASK_RUN_ID = l.task_run_id OFFSET 0) tr ON true
    JOIN LATERAL (SELECT x.* FROM etl_craft.CFG_TASKS x WHERE x.TASK_ID = l.task_id OFFSET 0) t ON true
    JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID
    JOIN etl_craft.CFG_PROJECTS pr ON pr.PROJECT_ID = p.PROJECT_ID
   WHERE tr.STATUS = 'IN-PROGRESS' AND NOT (SELECT 1 FROM etl_craft.CFG_TASK_DEPENDENCY dep
            JOIN etl_craft.CFG_TASKS dt ON dt.TASK_ID = dep.TASK_ID
            JOIN etl_craft.CFG_TASKS ut ON ut.TASK_ID = dep.DEPENDS_ON_TASK_ID AND ut.PIPELINE_ID <> dt.PIPELINE_ID
           WHERE dep.TASK_ID = l.task_id AND dep.ACTIVE_FLAG = 'Y' LIMIT 1) IS NOT NULL
   ORDER BY l.pos;
  PERFORM pg_notify('etl_craft_queue', p.POOL_NAME)
     FROM etl_craft.CFG_POOLS p
    WHERE p.ACTIVE_FLAG = 'Y' AND p.PROVIDER = 'QUEUE'
      AND EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS n
                   WHERE n.POOL = p.POOL_NAME AND n.STATUS = 'QUEUED' AND n.PIPELINE_RUN_ID = p_run_id AND n.QUEUED_AT = v_now);
  RETURN QUERY
  SELECT q.task_id::bigint, q.attempt_id::bigint, q.task_run_id::bigint, q.attempt_number::integer, q.pool::text, q.slot_kind::text, q.outcome::text, q.reason::text
    FROM (
      SELECT l.task_id, a.ATTEMPT_ID, tr.TASK_RUN_ID, a.ATTEMPT_NUMBER, a.POOL, a.SLOT_KIND,
             CASE WHEN a.ATTEMPT_ID IS NOT NULL THEN 'QUEUED' ELSE 'GATED' END,
             CASE WHEN a.ATTEMPT_ID IS NOT NULL
                  THEN 'queued attempt ' || a.ATTEMPT_NUMBER || ' of task run ' || a.TASK_RUN_ID || ' in pool ' || a.POOL
                       || ' (' || a.SLOT_KIND || ' slot, priority ' || a.PRIORITY || ')'
                  ELSE 'it depends on tasks of other pipelines: its task gate is judged by queue_attempt' END
        FROM (SELECT u.task_id, u.pos,
              (SELECT x.TASK_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.PIPELINE_RUN_ID = p_run_id AND x.TASK_ID = u.task_id) AS task_run_id
         FROM unnest(v_ids) WITH ORDINALITY AS u(task_id, pos)) AS l
        LEFT JOIN LATERAL (SELECT x.* FROM etl_craft.AUD_TASK_RUN_LOG x WHERE x.TASK_RUN_ID = l.task_run_id OFFSET 0) tr ON true
        -- Its live attempt is the one just queued (a live one refused the list above): found by ux_attempt_live.
        LEFT JOIN LATERAL (SELECT x.* FROM etl_craft.AUD_TASK_ATTEMPTS x WHERE x.TASK_RUN_ID = tr.TASK_RUN_ID AND x.STATUS IN ('QUEUED', 'CLAIMED', 'RUNNING') OFFSET 0) a ON true
       ORDER BY l.pos
    ) AS q(task_id, attempt_id, task_run_id, attempt_number, pool, slot_kind, outcome, reason);
END
$fn$;
-- @end queue_attempts
