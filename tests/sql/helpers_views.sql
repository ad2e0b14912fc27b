-- Helpers for the views suite (tests/sql/schema/views.test.sql).

-- The AUD_V_ views as sql/views.yaml describes them, filled by tests/sql/run_pgtap.py from that file: names lower
-- case (as PostgreSQL folds them), types as format_type() spells them.
CREATE TABLE IF NOT EXISTS etl_test.spec_views (view_name text PRIMARY KEY, description text NOT NULL);
CREATE TABLE IF NOT EXISTS etl_test.spec_view_columns (
  view_name text NOT NULL, ord int NOT NULL, column_name text NOT NULL, column_type text NOT NULL,
  description text NOT NULL, PRIMARY KEY (view_name, ord));

-- views_at(seconds): pin the Engine DB's clock for this transaction at T0 + seconds (T0 = 2026-03-01 12:00 UTC).
CREATE OR REPLACE FUNCTION etl_test.views_at(p_seconds double precision)
RETURNS void LANGUAGE sql AS $$
  SELECT set_config('etl_craft.now', (timestamptz '2026-03-01 12:00:00+00' + make_interval(secs => p_seconds))::text,
                    true);
  SELECT NULL::void;
$$;

-- views_attempt(start, end, status, error, rows): claim the one queued attempt at T0 + start - 1, start its process
-- at T0 + start (host pg-host, pid 4242), finish it with status at T0 + end. Returns ATTEMPT_ID.
CREATE OR REPLACE FUNCTION etl_test.views_attempt(p_start double precision, p_end double precision, p_status text,
                                                  p_error text DEFAULT NULL, p_rows bigint DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_attempt bigint;
BEGIN
  PERFORM etl_test.views_at(p_start - 1);
  SELECT attempt_id INTO v_attempt
    FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => 'warehouse', p_owner_id => 'pgtap-owner');
  PERFORM etl_test.views_at(p_start);
  PERFORM etl_craft.start_attempt(p_attempt_id => v_attempt, p_owner_id => 'pgtap-owner', p_host => 'pg-host',
                                  p_pid => 4242, p_process_start => 'pgtap');
  PERFORM etl_test.views_at(p_end);
  PERFORM etl_craft.finish_attempt(p_attempt_id => v_attempt, p_owner_id => 'pgtap-owner', p_status => p_status,
                                   p_error_message => p_error, p_rows_written => p_rows,
                                   p_exit_code => CASE WHEN p_status = 'SUCCESS' THEN 0 ELSE 1 END);
  RETURN v_attempt;
END
$$;

-- views_run(pipeline, key, seconds, status): create_run at T0 + seconds. Returns PIPELINE_RUN_ID.
CREATE OR REPLACE FUNCTION etl_test.views_run(p_pipeline text, p_key text, p_seconds double precision,
                                              p_status text DEFAULT 'IN-PROGRESS')
RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  PERFORM etl_test.views_at(p_seconds);
  RETURN (SELECT pipeline_run_id FROM etl_craft.create_run(
            p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = p_pipeline),
            p_run_key => p_key, p_run_date => DATE '2026-01-01', p_status => p_status));
END
$$;

-- views_history(): call act() first. Project vp: pipeline v_orders (task load, SLA_MINUTES 1) and v_reports (task
-- build), which depends on v_orders (pipeline dependency) and on v_orders.load (task dependency). Runs of v_orders:
-- manual:old 40 days before T0 (load fails, no retries yet: FAILED); then load gets RETRIES 1 and
-- RETRY_DELAY_SECONDS 0; manual:ok at T0 (load from +2 s to +12.5 s, 5 rows; SUCCESS at +15 s); manual:retry at +60 s
-- (load fails from +62 to +70 s and, retried, from +72 to +80 s; FAILED at +200 s, SLA BREACHED); manual:cancel at
-- +300 s (load queued; cancelled at +310 s). manual:rep of v_reports created QUEUED and admitted at +400 s, build
-- queued at +410 s. v_orders paused at +500 s, resumed at +560 s; v_reports paused at +600 s. The clock is left at
-- T0 + 1 hour.
CREATE OR REPLACE FUNCTION etl_test.views_history()
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_project bigint;
  v_orders bigint;
  v_reports bigint;
  v_load bigint;
  v_build bigint;
  v_run bigint;
  v_old double precision := -40 * 86400;
BEGIN
  PERFORM etl_test.views_at(0);
  INSERT INTO etl_craft.cfg_projects (project_code) VALUES ('vp') RETURNING project_id INTO v_project;
  INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code, sla_minutes) VALUES (v_project, 'v_orders', 1)
    RETURNING pipeline_id INTO v_orders;
  INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code) VALUES (v_project, 'v_reports')
    RETURNING pipeline_id INTO v_reports;
  INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file)
    VALUES (v_orders, 'load', 'SQL', 'OVERWRITE_TABLE', 'load.sql') RETURNING task_id INTO v_load;
  INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file)
    VALUES (v_reports, 'build', 'SQL', 'OVERWRITE_TABLE', 'build.sql') RETURNING task_id INTO v_build;
  INSERT INTO etl_craft.cfg_pipeline_dependency (pipeline_id, depends_on_pipeline_id) VALUES (v_reports, v_orders);
  INSERT INTO etl_craft.cfg_task_dependency (task_id, depends_on_task_id) VALUES (v_build, v_load);

  v_run := etl_test.views_run('v_orders', 'manual:old', v_old);
  PERFORM etl_craft.queue_attempt(p_run_id => v_run, p_task_id => v_load);
  PERFORM etl_test.views_attempt(v_old + 2, v_old + 5, 'FAILED', 'old failure');
  PERFORM etl_test.views_at(v_old + 6);
  PERFORM etl_craft.finalize_run(p_run_id => v_run);
  INSERT INTO etl_craft.cfg_task_parameters (task_id, parameter_name, parameter_value)
    VALUES (v_load, 'RETRIES', '1'), (v_load, 'RETRY_DELAY_SECONDS', '0');

  v_run := etl_test.views_run('v_orders', 'manual:ok', 0);
  PERFORM etl_craft.queue_attempt(p_run_id => v_run, p_task_id => v_load);
  PERFORM etl_test.views_attempt(2, 12.5, 'SUCCESS', NULL, 5);
  PERFORM etl_test.views_at(15);
  PERFORM etl_craft.finalize_run(p_run_id => v_run);

  v_run := etl_test.views_run('v_orders', 'manual:retry', 60);
  PERFORM etl_craft.queue_attempt(p_run_id => v_run, p_task_id => v_load);
  PERFORM etl_test.views_attempt(62, 70, 'FAILED', 'boom');
  PERFORM etl_test.views_attempt(72, 80, 'FAILED', 'boom again');
  PERFORM etl_test.views_at(200);
  PERFORM etl_craft.finalize_run(p_run_id => v_run);

  v_run := etl_test.views_run('v_orders', 'manual:cancel', 300);
  PERFORM etl_craft.queue_attempt(p_run_id => v_run, p_task_id => v_load);
  PERFORM etl_test.views_at(310);
  PERFORM etl_craft.cancel_run(p_run_id => v_run, p_reason => 'not needed');

  v_run := etl_test.views_run('v_reports', 'manual:rep', 400, 'QUEUED');
  PERFORM etl_craft.admit_run(p_run_id => v_run);
  PERFORM etl_test.views_at(410);
  PERFORM etl_craft.queue_attempt(p_run_id => v_run, p_task_id => v_build);

  PERFORM etl_test.views_at(500);
  PERFORM etl_craft.pause_pipeline(p_pipeline_id => v_orders, p_reason => 'maintenance');
  PERFORM etl_test.views_at(560);
  PERFORM etl_craft.resume_pipeline(p_pipeline_id => v_orders, p_reason => 'done');
  PERFORM etl_test.views_at(600);
  PERFORM etl_craft.pause_pipeline(p_pipeline_id => v_reports, p_reason => 'holiday');
  PERFORM etl_test.views_at(3600);
END
$$;
