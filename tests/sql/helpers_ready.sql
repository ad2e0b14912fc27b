-- Helpers for the task-run and ready-set suites (tests/sql/functions/task_runs, tests/sql/functions/ready), loaded
-- after helpers.sql. Call etl_test.act() before any of them: they write like the engine does.

-- ready_seed(): project rp, pipeline rp_pl with tasks a, b, c, d (b and c depend on a, d on b and c: SUCCESS
-- edges), pipeline rp_other with task x, and run manual:r1 of rp_pl, IN-PROGRESS.
CREATE OR REPLACE FUNCTION etl_test.ready_seed()
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_project bigint; v_pipeline bigint; v_other bigint;
BEGIN
  INSERT INTO etl_craft.cfg_projects (project_code) VALUES ('rp') RETURNING project_id INTO v_project;
  INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code) VALUES (v_project, 'rp_pl')
    RETURNING pipeline_id INTO v_pipeline;
  INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code) VALUES (v_project, 'rp_other')
    RETURNING pipeline_id INTO v_other;
  INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file)
    SELECT v_pipeline, code, 'SQL', 'OVERWRITE_TABLE', code || '.sql' FROM unnest(ARRAY['a', 'b', 'c', 'd']) AS code;
  INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file)
    VALUES (v_other, 'x', 'SQL', 'OVERWRITE_TABLE', 'x.sql');
  INSERT INTO etl_craft.cfg_task_dependency (task_id, depends_on_task_id)
    SELECT etl_test.ready_task(t), etl_test.ready_task(u)
      FROM (VALUES ('b', 'a'), ('c', 'a'), ('d', 'b'), ('d', 'c')) AS e(t, u);
  PERFORM etl_test.ready_run('manual:r1');
END
$$;

-- ready_task(code): the id of an active task of rp_pl (or of rp_other for x).
CREATE OR REPLACE FUNCTION etl_test.ready_task(p_code text)
RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT t.task_id FROM etl_craft.cfg_tasks t JOIN etl_craft.cfg_pipelines p USING (pipeline_id)
   WHERE p.pipeline_code IN ('rp_pl', 'rp_other') AND t.task_code = p_code AND t.active_flag = 'Y'
$$;

-- ready_run(key, status): the id of run `key` of rp_pl, created in `status` (IN-PROGRESS or QUEUED) when missing.
-- A pipeline has at most one IN-PROGRESS run (ux_one_running_run), so the suites use rp_pl's runs one after another:
-- end a run with ready_end before the next one starts. Starting one while another runs is refused, naming both.
CREATE OR REPLACE FUNCTION etl_test.ready_run(p_key text, p_status text DEFAULT 'IN-PROGRESS')
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_run bigint;
  v_pipeline bigint := (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'rp_pl');
  v_running text;
BEGIN
  SELECT pipeline_run_id INTO v_run
    FROM etl_craft.aud_pipelines_run_log WHERE pipeline_id = v_pipeline AND run_key = p_key;
  IF v_run IS NULL THEN
    SELECT run_key INTO v_running
      FROM etl_craft.aud_pipelines_run_log WHERE pipeline_id = v_pipeline AND status = 'IN-PROGRESS';
    IF p_status = 'IN-PROGRESS' AND v_running IS NOT NULL THEN
      RAISE EXCEPTION 'etl_test.ready_run: run % of rp_pl is IN-PROGRESS; end it with etl_test.ready_end before % starts',
        v_running, p_key;
    END IF;
    INSERT INTO etl_craft.aud_pipelines_run_log
      (pipeline_id, run_key, trigger_kind, run_date, status, queued_at, start_date, started_by, started_by_kind)
      VALUES (v_pipeline, p_key, 'MANUAL', DATE '2026-01-01', p_status, now(), now(), 'pgtap@test', 'HUMAN')
      RETURNING pipeline_run_id INTO v_run;
  END IF;
  RETURN v_run;
END
$$;

-- ready_end(key, status): end run `key` of rp_pl, IN-PROGRESS or QUEUED, in `status` (SUCCESS unless told) with
-- END_DATE = now, so that the next run of rp_pl may start.
CREATE OR REPLACE FUNCTION etl_test.ready_end(p_key text, p_status text DEFAULT 'SUCCESS')
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE etl_craft.aud_pipelines_run_log r SET status = p_status, end_date = now()
    FROM etl_craft.cfg_pipelines p
   WHERE p.pipeline_id = r.pipeline_id AND p.pipeline_code = 'rp_pl' AND r.run_key = p_key
     AND r.status IN ('QUEUED', 'IN-PROGRESS');
  IF NOT FOUND THEN
    RAISE EXCEPTION 'etl_test.ready_end: rp_pl has no QUEUED or IN-PROGRESS run %', p_key;
  END IF;
END
$$;

-- ready_task_run(run key, task code, status, rows written): a task run inserted in `status` (CANCELLED by way of
-- IN-PROGRESS, as the transition guard requires).
CREATE OR REPLACE FUNCTION etl_test.ready_task_run(p_key text, p_code text, p_status text, p_rows bigint DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint;
BEGIN
  INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status, rows_written, error_message)
    VALUES (etl_test.ready_run(p_key), etl_test.ready_task(p_code),
            CASE WHEN p_status = 'CANCELLED' THEN 'IN-PROGRESS' ELSE p_status END, p_rows,
            CASE WHEN p_status = 'FAILED' THEN 'pgtap failure' END)
    RETURNING task_run_id INTO v_id;
  IF p_status = 'CANCELLED' THEN
    UPDATE etl_craft.aud_task_run_log SET status = 'CANCELLED' WHERE task_run_id = v_id;
  END IF;
  RETURN v_id;
END
$$;

-- ready_attempt(task run, status, owner, lease expiry): an attempt taken QUEUED -> CLAIMED -> RUNNING as far as
-- `status` needs.
CREATE OR REPLACE FUNCTION etl_test.ready_attempt(p_task_run bigint, p_status text, p_owner text DEFAULT 'host:1:a',
                                                  p_lease timestamptz DEFAULT now() + interval '1 hour')
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint;
BEGIN
  INSERT INTO etl_craft.aud_task_attempts
    (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
    VALUES (p_task_run, 1, 'QUEUED', now(), 'pgtap@test', 'HUMAN') RETURNING attempt_id INTO v_id;
  IF p_status IN ('CLAIMED', 'RUNNING') THEN
    UPDATE etl_craft.aud_task_attempts
       SET status = 'CLAIMED', owner_id = p_owner, claimed_at = now(), lease_expires_at = p_lease
     WHERE attempt_id = v_id;
  END IF;
  IF p_status = 'RUNNING' THEN
    UPDATE etl_craft.aud_task_attempts SET status = 'RUNNING', started_at = now() WHERE attempt_id = v_id;
  END IF;
  RETURN v_id;
END
$$;
