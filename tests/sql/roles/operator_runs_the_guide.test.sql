-- A login with only the operator role's grants runs docs/guides/sql-api.sql, exactly as the guide shows it, from
-- create_run to finalize_run: the functions run as their owner, so EXECUTE on them (and SELECT on CFG_PIPELINES,
-- where the guide finds its pipeline) is all it takes. Everything written names the actor the calls passed.
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

-- 1: the role the script runs as holds no table grant but SELECT on the metadata that names ids.
SELECT etl_test.role('operator') AS operator \gset
SELECT set_eq(format($$SELECT c.relname::text FROM pg_class c
                        WHERE c.relnamespace = 'etl_craft'::regnamespace AND c.relkind IN ('r', 'p')
                          AND has_table_privilege(%L, c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE')$$, :'operator'),
              ARRAY['cfg_pipelines', 'cfg_projects', 'cfg_tasks'],
              'the operator role can use no table but read CFG_PROJECTS, CFG_PIPELINES and CFG_TASKS');

SET LOCAL ROLE :"operator";
\ir ../../../docs/guides/sql-api.sql
RESET ROLE;

-- 6: what the guide's own test checks, and that the operator did it.
SELECT is((SELECT status FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:sql-api-guide'), 'SUCCESS',
          'the run the operator drove ends SUCCESS');
SELECT is((SELECT string_agg(t.task_code || '=' || r.status, ',' ORDER BY t.task_code)
             FROM etl_craft.aud_task_run_log r JOIN etl_craft.cfg_tasks t USING (task_id)),
          'customer_totals=SUCCESS,load_customers=SUCCESS,load_orders=SUCCESS', 'every task ran and succeeded');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_task_attempts WHERE status = 'SUCCESS' AND owner_id = 'dba:alice:psql'
              AND requested_by = 'dba:alice' AND requested_by_kind = 'HUMAN'),
          3, 'three attempts, queued by dba:alice and owned by the psql session');
SELECT is((SELECT started_by || '/' || ended_by FROM etl_craft.aud_pipelines_run_log
            WHERE run_key = 'manual:sql-api-guide'), 'dba:alice/dba:alice', 'the DBA started and ended it');
SELECT is((SELECT sum(rows_written)::int FROM etl_craft.aud_task_run_log), 8, 'rows written are recorded per task run');
SELECT is((SELECT string_agg(DISTINCT session_user || ':' || current_user, ',')), session_user || ':' || session_user,
          'the script ran under SET ROLE, and the suite is itself again after RESET ROLE');

SELECT * FROM finish();
ROLLBACK;
