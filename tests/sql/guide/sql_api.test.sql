-- docs/guides/sql-api.sql, exactly as the guide shows it, takes the example pipeline from create_run to
-- finalize_run with plain function calls.
BEGIN;
SELECT plan(7);
SELECT etl_test.serialize();
SELECT etl_test.act('migration@example');

-- the example pipeline's tasks and dependencies (etl-craft init writes them in migrations/0002_customer_orders.sql)
INSERT INTO etl_craft.cfg_projects (project_code) VALUES ('demo');
INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code)
  SELECT project_id, 'customer_orders' FROM etl_craft.cfg_projects WHERE project_code = 'demo';
INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file, target_object)
  SELECT pipeline_id, t.code, 'SQL', t.action, t.code || '.sql', 'main.' || t.code
    FROM etl_craft.cfg_pipelines,
         (VALUES ('load_customers', 'OVERWRITE_TABLE'), ('load_orders', 'OVERWRITE_TABLE'),
                 ('customer_totals', 'SCD1_MERGE')) AS t(code, action)
   WHERE pipeline_code = 'customer_orders';
INSERT INTO etl_craft.cfg_task_dependency (task_id, depends_on_task_id)
  SELECT t.task_id, u.task_id FROM etl_craft.cfg_tasks t, etl_craft.cfg_tasks u
   WHERE t.task_code = 'customer_totals' AND u.task_code IN ('load_customers', 'load_orders');
SELECT etl_test.unmark();

\ir ../../../docs/guides/sql-api.sql

SELECT is((SELECT status FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:sql-api-guide'), 'SUCCESS',
          'the run ends SUCCESS');
SELECT is((SELECT string_agg(t.task_code || '=' || r.status, ',' ORDER BY t.task_code)
             FROM etl_craft.aud_task_run_log r JOIN etl_craft.cfg_tasks t USING (task_id)),
          'customer_totals=SUCCESS,load_customers=SUCCESS,load_orders=SUCCESS', 'every task ran and succeeded');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_task_attempts WHERE status = 'SUCCESS' AND owner_id = 'dba:alice:psql'),
          3, 'three attempts, owned by the psql session');
SELECT is((SELECT started_by || '/' || ended_by FROM etl_craft.aud_pipelines_run_log
            WHERE run_key = 'manual:sql-api-guide'), 'dba:alice/dba:alice', 'the DBA started and ended it');
SELECT is_empty($$ SELECT * FROM etl_craft.ready_tasks(p_run_id => (SELECT pipeline_run_id
                    FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:sql-api-guide')) $$,
                'nothing is left to run in the ended run');
SELECT is((SELECT sum(rows_written)::int FROM etl_craft.aud_task_run_log), 8, 'rows written are recorded per task run');
SELECT results_eq(
  $$ SELECT pipeline_code::text, status::text, task_runs, task_runs_succeeded, task_runs_failed, started_by::text,
            ended_by::text
       FROM etl_craft.aud_v_runs WHERE run_key = 'manual:sql-api-guide' $$,
  $$ VALUES ('customer_orders', 'SUCCESS', 3::bigint, 3::bigint, 0::bigint, 'dba:alice', 'dba:alice') $$,
  'AUD_V_RUNS shows the run as the guide says: SUCCESS, three task runs that all succeeded, by dba:alice');
SELECT * FROM finish();
ROLLBACK;
