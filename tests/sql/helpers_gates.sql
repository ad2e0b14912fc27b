-- Helpers for the pgTAP suites of admission, queuing, finalization and control (tests/sql/functions/gates,
-- finalize, control). Call etl_test.act() first; every write goes through an engine-marked transaction and
-- respects the transition triggers.

-- gates_fixture(): project gp; pipelines g_up (task g_extract, SQL) and g_down (PRIORITY 3, SLA 60 minutes; tasks
-- g_build (SQL, depends on g_extract: a task edge across pipelines) and g_ingest (PYTHON, parameter POOL = heavy));
-- g_down depends on g_up (pipeline edge, SUCCESS, CONSUME_REPAIRS Y). The project's DEFAULT_POOL is gpool.
CREATE OR REPLACE FUNCTION etl_test.gates_fixture()
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_project bigint; v_up bigint; v_down bigint; v_extract bigint; v_build bigint; v_ingest bigint;
BEGIN
  INSERT INTO etl_craft.cfg_projects (project_code, default_pool) VALUES ('gp', 'gpool') RETURNING project_id INTO v_project;
  INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code) VALUES (v_project, 'g_up') RETURNING pipeline_id INTO v_up;
  INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code, priority, sla_minutes)
    VALUES (v_project, 'g_down', 3, 60) RETURNING pipeline_id INTO v_down;
  INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file)
    VALUES (v_up, 'g_extract', 'SQL', 'OVERWRITE_TABLE', 'g_extract.sql') RETURNING task_id INTO v_extract;
  INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file)
    VALUES (v_down, 'g_build', 'SQL', 'OVERWRITE_TABLE', 'g_build.sql') RETURNING task_id INTO v_build;
  INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, script_file)
    VALUES (v_down, 'g_ingest', 'PYTHON', 'g_ingest.py') RETURNING task_id INTO v_ingest;
  INSERT INTO etl_craft.cfg_task_parameters (task_id, parameter_name, parameter_value) VALUES (v_ingest, 'POOL', 'heavy');
  INSERT INTO etl_craft.cfg_pipeline_dependency (pipeline_id, depends_on_pipeline_id) VALUES (v_down, v_up);
  INSERT INTO etl_craft.cfg_task_dependency (task_id, depends_on_task_id) VALUES (v_build, v_extract);
END
$$;

CREATE OR REPLACE FUNCTION etl_test.gates_pipeline(p_code text)
RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = p_code AND active_flag = 'Y'
$$;

-- gates_task(task code, pipeline code): the task of that pipeline; without a pipeline, of the fixture's g_up or
-- g_down (a twin has tasks of the same codes).
CREATE OR REPLACE FUNCTION etl_test.gates_task(p_code text, p_pipeline text DEFAULT NULL)
RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT t.task_id FROM etl_craft.cfg_tasks t JOIN etl_craft.cfg_pipelines p ON p.pipeline_id = t.pipeline_id
   WHERE t.task_code = p_code AND t.active_flag = 'Y' AND p.active_flag = 'Y'
     AND (p.pipeline_code = p_pipeline OR (p_pipeline IS NULL AND p.pipeline_code IN ('g_up', 'g_down')))
$$;

-- gates_twin(pipeline code, twin code): a new pipeline `twin` of the same project, priority and SLA, with the
-- same tasks and task parameters but none of the dependencies; returns the twin's code. A pipeline runs one run
-- at a time (ux_one_running_run): a suite needing another live run beside the pipeline's runs it in a twin.
CREATE OR REPLACE FUNCTION etl_test.gates_twin(p_pipeline text, p_twin text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_pipeline bigint := etl_test.gates_pipeline(p_pipeline);
  v_twin bigint;
  v_task record;
  v_copy bigint;
BEGIN
  INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code, priority, sla_minutes)
    SELECT project_id, p_twin, priority, sla_minutes FROM etl_craft.cfg_pipelines WHERE pipeline_id = v_pipeline
    RETURNING pipeline_id INTO v_twin;
  FOR v_task IN SELECT * FROM etl_craft.cfg_tasks WHERE pipeline_id = v_pipeline AND active_flag = 'Y' ORDER BY task_id LOOP
    INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file, script_file, target_object)
      VALUES (v_twin, v_task.task_code, v_task.handler, v_task.action, v_task.sql_file, v_task.script_file,
              v_task.target_object)
      RETURNING task_id INTO v_copy;
    INSERT INTO etl_craft.cfg_task_parameters (task_id, parameter_name, parameter_value)
      SELECT v_copy, parameter_name, parameter_value FROM etl_craft.cfg_task_parameters
       WHERE task_id = v_task.task_id AND active_flag = 'Y';
  END LOOP;
  RETURN p_twin;
END
$$;

-- gates_run(pipeline code, run key, status, trigger kind): a run inserted QUEUED or IN-PROGRESS and moved on to
-- status (ended now when status is an ending); returns its id.
CREATE OR REPLACE FUNCTION etl_test.gates_run(p_pipeline text, p_key text, p_status text DEFAULT 'IN-PROGRESS',
                                              p_trigger_kind text DEFAULT 'MANUAL')
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_run bigint;
BEGIN
  INSERT INTO etl_craft.aud_pipelines_run_log
    (pipeline_id, run_key, trigger_kind, run_date, status, queued_at, start_date, started_by, started_by_kind)
  VALUES (etl_test.gates_pipeline(p_pipeline), p_key, p_trigger_kind, DATE '2026-01-01',
          CASE WHEN p_status = 'QUEUED' THEN 'QUEUED' ELSE 'IN-PROGRESS' END, etl_craft.clock_now(),
          CASE WHEN p_status <> 'QUEUED' THEN etl_craft.clock_now() END, 'pgtap@test', 'HUMAN')
  RETURNING pipeline_run_id INTO v_run;
  IF p_status NOT IN ('QUEUED', 'IN-PROGRESS') THEN
    UPDATE etl_craft.aud_pipelines_run_log SET status = p_status, end_date = etl_craft.clock_now(),
           ended_by = 'pgtap@test', ended_by_kind = 'HUMAN'
     WHERE pipeline_run_id = v_run;
  END IF;
  RETURN v_run;
END
$$;

-- gates_task_run(run, task code, status, rows written): a task run of the task of that code in the run's pipeline,
-- inserted IN-PROGRESS (one attempt counted) and moved on to status (ended now when status is an ending); returns
-- its id.
CREATE OR REPLACE FUNCTION etl_test.gates_task_run(p_run bigint, p_task text, p_status text DEFAULT 'SUCCESS',
                                                   p_rows bigint DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_task_run bigint;
BEGIN
  INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status, attempt_count, start_date)
  VALUES (p_run, (SELECT t.task_id FROM etl_craft.cfg_tasks t JOIN etl_craft.aud_pipelines_run_log r USING (pipeline_id)
                   WHERE r.pipeline_run_id = p_run AND t.task_code = p_task AND t.active_flag = 'Y'),
          'IN-PROGRESS', 1, etl_craft.clock_now())
  RETURNING task_run_id INTO v_task_run;
  IF p_status <> 'IN-PROGRESS' THEN
    UPDATE etl_craft.aud_task_run_log SET status = p_status, rows_written = p_rows, end_date = etl_craft.clock_now()
     WHERE task_run_id = v_task_run;
  END IF;
  RETURN v_task_run;
END
$$;

-- gates_attempt(task run, status, owner): an attempt inserted QUEUED and moved QUEUED -> CLAIMED -> RUNNING ->
-- status as far as status needs; returns its id.
CREATE OR REPLACE FUNCTION etl_test.gates_attempt(p_task_run bigint, p_status text DEFAULT 'RUNNING',
                                                  p_owner text DEFAULT 'host:1:a')
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_attempt bigint;
BEGIN
  INSERT INTO etl_craft.aud_task_attempts (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
  VALUES (p_task_run, (SELECT COALESCE(max(attempt_number), 0) + 1 FROM etl_craft.aud_task_attempts
                        WHERE task_run_id = p_task_run), 'QUEUED', etl_craft.clock_now(), 'pgtap@test', 'HUMAN')
  RETURNING attempt_id INTO v_attempt;
  IF p_status <> 'QUEUED' THEN
    UPDATE etl_craft.aud_task_attempts SET status = 'CLAIMED', owner_id = p_owner, claimed_at = etl_craft.clock_now(),
           lease_expires_at = etl_craft.clock_now() + interval '60 seconds'
     WHERE attempt_id = v_attempt;
  END IF;
  IF p_status NOT IN ('QUEUED', 'CLAIMED') THEN
    UPDATE etl_craft.aud_task_attempts SET status = 'RUNNING', started_at = etl_craft.clock_now() WHERE attempt_id = v_attempt;
  END IF;
  IF p_status NOT IN ('QUEUED', 'CLAIMED', 'RUNNING') THEN
    UPDATE etl_craft.aud_task_attempts SET status = p_status, ended_at = etl_craft.clock_now() WHERE attempt_id = v_attempt;
  END IF;
  RETURN v_attempt;
END
$$;

-- gates_at(time): pin the Engine DB clock for the rest of the transaction.
CREATE OR REPLACE FUNCTION etl_test.gates_at(p_time timestamptz)
RETURNS void LANGUAGE sql AS $$
  SELECT set_config('etl_craft.now', p_time::text, true);
  SELECT NULL::void;
$$;
