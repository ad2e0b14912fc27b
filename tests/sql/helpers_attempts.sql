-- Helpers for the attempt and lease suites (tests/sql/functions/attempts, tests/sql/functions/leases). Call
-- etl_test.act() and etl_test.seed() first. Rows are written directly (as queue_attempt will), so each suite
-- tests its one function; times come from etl_craft.clock_now(), which a suite moves with
-- set_config('etl_craft.now', ..., true). A pipeline has at most one IN-PROGRESS run (ux_one_running_run), so each
-- run key these helpers create has a pipeline of its own, with up_pl's tasks.

-- attempts_run(key, status): the run with run key `key` (the seed's manual:up1 or manual:down1, or one made here),
-- inserted when missing, directly (the seed pauses up_pl), into a new pipeline up_pl_<key> (every character of the
-- key that is not a letter, a digit or _ read as _) with the tasks of up_pl and their parameters.
CREATE OR REPLACE FUNCTION etl_test.attempts_run(p_key text, p_status text DEFAULT 'IN-PROGRESS')
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_run bigint;
  v_up bigint := (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'up_pl' AND active_flag = 'Y');
  v_pipeline bigint;
  v_task record;
  v_copy bigint;
BEGIN
  SELECT pipeline_run_id INTO v_run FROM etl_craft.aud_pipelines_run_log WHERE run_key = p_key;
  IF v_run IS NULL THEN
    INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code)
      SELECT project_id, 'up_pl_' || regexp_replace(p_key, '[^A-Za-z0-9_]', '_', 'g') FROM etl_craft.cfg_pipelines
       WHERE pipeline_id = v_up
      RETURNING pipeline_id INTO v_pipeline;
    FOR v_task IN SELECT * FROM etl_craft.cfg_tasks WHERE pipeline_id = v_up AND active_flag = 'Y' ORDER BY task_id LOOP
      INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file, script_file, target_object)
        VALUES (v_pipeline, v_task.task_code, v_task.handler, v_task.action, v_task.sql_file, v_task.script_file,
                v_task.target_object)
        RETURNING task_id INTO v_copy;
      INSERT INTO etl_craft.cfg_task_parameters (task_id, parameter_name, parameter_value)
        SELECT v_copy, parameter_name, parameter_value FROM etl_craft.cfg_task_parameters
         WHERE task_id = v_task.task_id AND active_flag = 'Y';
    END LOOP;
    INSERT INTO etl_craft.aud_pipelines_run_log
      (pipeline_id, run_key, trigger_kind, run_date, status, queued_at, start_date, started_by, started_by_kind)
    VALUES (v_pipeline, p_key, 'MANUAL', DATE '2026-01-01', p_status, etl_craft.clock_now(),
            CASE WHEN p_status = 'IN-PROGRESS' THEN etl_craft.clock_now() END, 'pgtap@test', 'HUMAN')
    RETURNING pipeline_run_id INTO v_run;
  END IF;
  RETURN v_run;
END
$$;

-- attempts_queue(run key, ...): the next attempt of a task (default extract) of the run's pipeline in that run
-- (made by attempts_run when missing), QUEUED; its task run is created IN-PROGRESS (ATTEMPT_COUNT 1) or set back to
-- IN-PROGRESS with ATTEMPT_COUNT + 1. Returns ATTEMPT_ID.
CREATE OR REPLACE FUNCTION etl_test.attempts_queue(
  p_run_key text, p_task text DEFAULT 'extract', p_pool text DEFAULT 'default', p_slot_kind text DEFAULT 'warehouse',
  p_priority int DEFAULT 0, p_not_before timestamptz DEFAULT NULL, p_queued_at timestamptz DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_run bigint := etl_test.attempts_run(p_run_key);
  v_task bigint := (SELECT t.task_id FROM etl_craft.cfg_tasks t JOIN etl_craft.aud_pipelines_run_log r USING (pipeline_id)
                     WHERE r.pipeline_run_id = v_run AND t.task_code = p_task AND t.active_flag = 'Y');
  v_task_run bigint;
  v_number int;
  v_attempt bigint;
BEGIN
  SELECT task_run_id, attempt_count + 1 INTO v_task_run, v_number
    FROM etl_craft.aud_task_run_log WHERE pipeline_run_id = v_run AND task_id = v_task;
  IF v_task_run IS NULL THEN
    INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status, attempt_count)
      VALUES (v_run, v_task, 'IN-PROGRESS', 1) RETURNING task_run_id, attempt_count INTO v_task_run, v_number;
  ELSE
    UPDATE etl_craft.aud_task_run_log SET status = 'IN-PROGRESS', end_date = NULL, attempt_count = v_number
     WHERE task_run_id = v_task_run;
  END IF;
  INSERT INTO etl_craft.aud_task_attempts
    (task_run_id, attempt_number, status, pool, slot_kind, priority, not_before, queued_at, requested_by,
     requested_by_kind)
  VALUES (v_task_run, v_number, 'QUEUED', p_pool, p_slot_kind, p_priority, p_not_before,
          COALESCE(p_queued_at, etl_craft.clock_now()), 'pgtap@test', 'HUMAN')
  RETURNING attempt_id INTO v_attempt;
  RETURN v_attempt;
END
$$;

-- attempts_in(status, owner): an attempt of extract in a run (and pipeline) of its own (run key 'manual:in-<n>'),
-- brought to `status` along the transitions the state machine allows: CLAIMED by owner with a lease of 60 s from
-- the clock, RUNNING on host pg-host; an ended attempt has ENDED_AT, no lease, and its task run reads its summary.
CREATE OR REPLACE FUNCTION etl_test.attempts_in(p_status text, p_owner text DEFAULT 'w1')
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz := etl_craft.clock_now();
  v_attempt bigint := etl_test.attempts_queue(
    'manual:in-' || (SELECT count(*) + 1 FROM etl_craft.aud_pipelines_run_log));
BEGIN
  IF p_status = 'QUEUED' THEN
    RETURN v_attempt;
  END IF;
  IF p_status = 'CANCELLED' THEN
    UPDATE etl_craft.aud_task_attempts SET status = 'CANCELLED', ended_at = v_now, cancel_requested_at = v_now
     WHERE attempt_id = v_attempt;
  ELSE
    UPDATE etl_craft.aud_task_attempts
       SET status = 'CLAIMED', owner_id = p_owner, claimed_at = v_now, heartbeat_at = v_now,
           lease_expires_at = v_now + interval '60 seconds'
     WHERE attempt_id = v_attempt;
    IF p_status IN ('RUNNING', 'TIMED_OUT') THEN
      UPDATE etl_craft.aud_task_attempts SET status = 'RUNNING', host = 'pg-host', pid = 4242, started_at = v_now
       WHERE attempt_id = v_attempt;
    END IF;
    IF p_status NOT IN ('CLAIMED', 'RUNNING') THEN
      UPDATE etl_craft.aud_task_attempts SET status = p_status, ended_at = v_now, lease_expires_at = NULL
       WHERE attempt_id = v_attempt;
    END IF;
  END IF;
  UPDATE etl_craft.aud_task_run_log
     SET status = (SELECT summary_status FROM etl_craft.eng_statuses WHERE entity = 'ATTEMPT' AND status = p_status),
         end_date = CASE WHEN p_status IN ('QUEUED', 'CLAIMED', 'RUNNING') THEN NULL ELSE v_now END
   WHERE task_run_id = (SELECT task_run_id FROM etl_craft.aud_task_attempts WHERE attempt_id = v_attempt);
  RETURN v_attempt;
END
$$;

-- attempts_refusals(sql with %s for an attempt id, statuses, code, description): one pgTAP assertion per status
-- that `sql` on an attempt in that status (owned by w1) raises `code` with a message naming the attempt and the
-- status it found.
CREATE OR REPLACE FUNCTION etl_test.attempts_refusals(p_sql text, p_statuses text[], p_code text, p_description text)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  v_status text;
  v_attempt bigint;
BEGIN
  FOREACH v_status IN ARRAY p_statuses LOOP
    v_attempt := etl_test.attempts_in(v_status);
    RETURN NEXT etl_test.refused(format(p_sql, v_attempt), p_code, 'attempt ' || v_attempt || ' is ' || v_status || ' %',
                                 p_description || ' (' || v_status || ')');
  END LOOP;
END
$$;
