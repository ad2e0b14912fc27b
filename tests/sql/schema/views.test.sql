-- The AUD_V_ views (sql/functions/080_views.sql.j2) are the ones sql/views.yaml describes (loaded into
-- etl_test.spec_views and etl_test.spec_view_columns by run_pgtap.py): no other view, the spec's columns with their
-- types in order, each view and each column commented with its spec text, read-only; and each lists the rows of a
-- history written through the write API (etl_test.views_history, helpers_views.sql).
BEGIN;
SELECT plan(24);

SELECT views_are('etl_craft', ARRAY(SELECT view_name FROM etl_test.spec_views),
                 'etl_craft has exactly the views of sql/views.yaml');
SELECT has_view('etl_craft', view_name::name, upper(view_name) || ' exists') FROM etl_test.spec_views ORDER BY view_name;

SELECT results_eq(
  $$ SELECT c.relname::text COLLATE "default", a.attnum::int, a.attname::text COLLATE "default",
            format_type(a.atttypid, a.atttypmod)
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'etl_craft' AND c.relkind = 'v' AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY 1, 2 $$,
  $$ SELECT view_name, ord, column_name, column_type FROM etl_test.spec_view_columns ORDER BY 1, 2 $$,
  'each view has the spec''s columns, in its order, with its types');

SELECT is_empty(
  $$ SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'etl_craft' AND c.relkind = 'v'
        AND btrim(COALESCE(obj_description(c.oid, 'pg_class'), '')) = '' $$,
  'every view has a comment');
SELECT set_eq(
  $$ SELECT c.relname::text COLLATE "default", obj_description(c.oid, 'pg_class') FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'etl_craft' AND c.relkind = 'v' $$,
  $$ SELECT view_name, description FROM etl_test.spec_views $$,
  'each view''s comment is its description in sql/views.yaml');
SELECT is_empty(
  $$ SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'etl_craft' AND c.relkind = 'v' AND a.attnum > 0 AND NOT a.attisdropped
        AND btrim(COALESCE(col_description(c.oid, a.attnum), '')) = '' $$,
  'every column of every view has a comment');
SELECT set_eq(
  $$ SELECT c.relname::text COLLATE "default", a.attname::text COLLATE "default",
            col_description(c.oid, a.attnum) FROM pg_attribute a
       JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'etl_craft' AND c.relkind = 'v' AND a.attnum > 0 AND NOT a.attisdropped $$,
  $$ SELECT view_name, column_name, description FROM etl_test.spec_view_columns $$,
  'each column''s comment is its description in sql/views.yaml');

SELECT is_empty(
  $$ SELECT table_name FROM information_schema.views
      WHERE table_schema = 'etl_craft' AND (is_updatable = 'YES' OR is_insertable_into = 'YES') $$,
  'no view can be written through');
SELECT etl_test.refused($$ INSERT INTO etl_craft.aud_v_runs (pipeline_run_id) VALUES (1) $$, '55000',
                        'cannot insert into view "aud_v_runs"', 'an INSERT into a view is refused');

-- The history: see etl_test.views_history. T0 = 2026-03-01 12:00 UTC; the clock is left at T0 + 1 hour.
SELECT etl_test.serialize();
SELECT etl_test.act('pgtap@views');
SELECT etl_test.views_history();

SELECT results_eq(
  $$ SELECT run_key::text, status::text, to_char(started_at AT TIME ZONE 'UTC', 'HH24:MI:SS'),
            to_char(ended_at AT TIME ZONE 'UTC', 'HH24:MI:SS'), duration_seconds::text,
            format('%s/%s/%s/%s/%s/%s', task_runs, task_runs_succeeded, task_runs_failed, task_runs_skipped,
                   task_runs_cancelled, task_runs_in_progress),
            COALESCE(sla_status, '-')::text, started_by::text, COALESCE(ended_by, '-')::text
       FROM etl_craft.aud_v_runs WHERE project_code = 'vp' ORDER BY pipeline_run_id $$,
  $$ VALUES ('manual:old', 'FAILED', '12:00:00', '12:00:06', '6.000', '1/0/1/0/0/0', 'MET', 'pgtap@views',
             'pgtap@views'),
            ('manual:ok', 'SUCCESS', '12:00:00', '12:00:15', '15.000', '1/1/0/0/0/0', 'MET', 'pgtap@views',
             'pgtap@views'),
            ('manual:retry', 'FAILED', '12:01:00', '12:03:20', '140.000', '1/0/1/0/0/0', 'BREACHED', 'pgtap@views',
             'pgtap@views'),
            ('manual:cancel', 'CANCELLED', '12:05:00', '12:05:10', '10.000', '1/0/0/0/1/0', '-', 'pgtap@views',
             'pgtap@views'),
            ('manual:rep', 'IN-PROGRESS', '12:06:40', NULL, NULL, '1/0/0/0/0/1', '-', 'pgtap@views', '-') $$,
  'AUD_V_RUNS: one row per run, with its times, duration, task-run counts by status, SLA and actors');

SELECT results_eq(
  $$ SELECT run_key::text, task_code::text, status::text, attempt_count,
            to_char(first_started_at AT TIME ZONE 'UTC', 'HH24:MI:SS'), duration_seconds::text, rows_written,
            error_message
       FROM etl_craft.aud_v_task_runs WHERE project_code = 'vp' ORDER BY task_run_id $$,
  $$ VALUES ('manual:old', 'load', 'FAILED', 1, '12:00:02', '3.000', NULL::bigint, 'old failure'),
            ('manual:ok', 'load', 'SUCCESS', 1, '12:00:02', '10.500', 5, NULL),
            ('manual:retry', 'load', 'FAILED', 2, '12:01:02', '18.000', NULL, 'boom again'),
            ('manual:cancel', 'load', 'CANCELLED', 1, NULL, NULL, NULL, NULL),
            ('manual:rep', 'build', 'IN-PROGRESS', 1, NULL, NULL, NULL, NULL) $$,
  'AUD_V_TASK_RUNS: the first start is the first attempt''s, not the retry''s queue time');

SELECT results_eq(
  $$ SELECT a.run_key::text, a.task_code::text, a.attempt_number, a.retry_number, a.status::text, a.owner_id::text,
            a.host::text, a.pid, to_char(a.queued_at AT TIME ZONE 'UTC', 'HH24:MI:SS'),
            to_char(a.claimed_at AT TIME ZONE 'UTC', 'HH24:MI:SS'), a.duration_seconds::text, a.exit_code
       FROM etl_craft.aud_v_attempts a JOIN etl_craft.aud_v_runs r USING (pipeline_run_id)
      WHERE r.project_code = 'vp' AND a.run_key <> 'manual:old' ORDER BY a.attempt_id $$,
  $$ VALUES ('manual:ok', 'load', 1, 0, 'SUCCESS', 'pgtap-owner', 'pg-host', 4242, '12:00:00', '12:00:01', '10.500', 0),
            ('manual:retry', 'load', 1, 0, 'FAILED', 'pgtap-owner', 'pg-host', 4242, '12:01:00', '12:01:01', '8.000',
             1),
            ('manual:retry', 'load', 2, 1, 'FAILED', 'pgtap-owner', 'pg-host', 4242, '12:01:10', '12:01:11', '8.000',
             1),
            ('manual:cancel', 'load', 1, 0, 'CANCELLED', NULL, NULL, NULL, '12:05:00', NULL, NULL, NULL),
            ('manual:rep', 'build', 1, 0, 'QUEUED', NULL, NULL, NULL, '12:06:50', NULL, NULL, NULL) $$,
  'AUD_V_ATTEMPTS: one row per attempt, the retry with RETRY_NUMBER 1');

SELECT results_eq(
  $$ SELECT run_key::text, COALESCE(task_code, '-')::text, dependency_kind::text, dependency_type::text,
            upstream_pipeline_code::text, COALESCE(upstream_task_code, '-')::text, result::text,
            selected_run_key::text, selected_revision, decided_by::text
       FROM etl_craft.aud_v_gate_decisions WHERE pipeline_code = 'v_reports' ORDER BY decision_id $$,
  $$ VALUES ('manual:rep', '-', 'PIPELINE', 'SUCCESS', 'v_orders', '-', 'SATISFIED', 'manual:ok', 1, 'pgtap@views'),
            ('manual:rep', 'build', 'TASK', 'SUCCESS', 'v_orders', 'load', 'SATISFIED', 'manual:ok', 1,
             'pgtap@views') $$,
  'AUD_V_GATE_DECISIONS: the pipeline and the task dependency, with their upstream codes and selected run');

SELECT results_eq(
  $$ SELECT source_table::text, action::text, to_char(acted_at AT TIME ZONE 'UTC', 'HH24:MI:SS'), actor::text,
            pipeline_code::text, COALESCE(run_key, '-')::text, COALESCE(from_status, '-')::text,
            COALESCE(to_status, '-')::text, reason
       FROM etl_craft.aud_v_operator_actions WHERE pipeline_code IN ('v_orders', 'v_reports')
      ORDER BY acted_at, source_table, source_id $$,
  $$ VALUES ('AUD_RUN_INTERVENTIONS', 'CANCEL', '12:05:10', 'pgtap@views', 'v_orders', 'manual:cancel', 'IN-PROGRESS',
             'CANCELLED', 'not needed'),
            ('AUD_PIPELINE_PAUSES', 'PAUSE', '12:08:20', 'pgtap@views', 'v_orders', '-', '-', '-', 'maintenance'),
            ('AUD_PIPELINE_PAUSES', 'RESUME', '12:09:20', 'pgtap@views', 'v_orders', '-', '-', '-', 'done'),
            ('AUD_PIPELINE_PAUSES', 'PAUSE', '12:10:00', 'pgtap@views', 'v_reports', '-', '-', '-', 'holiday') $$,
  'AUD_V_OPERATOR_ACTIONS: the cancel, the pause and its resume, and the open pause, one row each');

SELECT results_eq(
  $$ SELECT pipeline_code::text, last_run_key::text, last_run_status::text, runs_ended_30d, runs_succeeded_30d,
            success_rate_30d::text, avg_duration_seconds_30d::text, sla_breaches_30d, runs_in_progress,
            is_paused::text
       FROM etl_craft.aud_v_pipeline_health WHERE project_code = 'vp' ORDER BY pipeline_id $$,
  $$ VALUES ('v_orders', 'manual:cancel', 'CANCELLED', 3::bigint, 1::bigint, '0.3333', '55.000', 1::bigint, 0::bigint,
             'N'),
            ('v_reports', 'manual:rep', 'IN-PROGRESS', 0, 0, NULL, NULL, 0, 1, 'Y') $$,
  'AUD_V_PIPELINE_HEALTH: the runs ended in 30 days (not manual:old, 40 days older), their rate and average');

SELECT etl_test.views_at(31 * 86400);
SELECT results_eq(
  $$ SELECT runs_ended_30d, success_rate_30d, sla_breaches_30d FROM etl_craft.aud_v_pipeline_health
      WHERE pipeline_code = 'v_orders' $$,
  $$ VALUES (0::bigint, NULL::numeric, 0::bigint) $$,
  'AUD_V_PIPELINE_HEALTH: 31 days later by the Engine DB clock, those runs are out of the window');

SELECT * FROM finish();
ROLLBACK;
