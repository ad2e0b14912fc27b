-- The seed helper puts a row in every AUD_ and CFG_ table, so the guard suites can try every write.
BEGIN;
SELECT plan(2);
SELECT etl_test.act();
SELECT lives_ok($$ SELECT etl_test.seed() $$, 'seed() writes one row per table through the marker');
SELECT is(
  (SELECT count(*)::int FROM unnest(ARRAY[
    (SELECT count(*) FROM etl_craft.cfg_projects), (SELECT count(*) FROM etl_craft.cfg_pools),
    (SELECT count(*) FROM etl_craft.cfg_pipelines), (SELECT count(*) FROM etl_craft.cfg_tasks),
    (SELECT count(*) FROM etl_craft.cfg_task_parameters), (SELECT count(*) FROM etl_craft.cfg_pipeline_dependency),
    (SELECT count(*) FROM etl_craft.cfg_task_dependency), (SELECT count(*) FROM etl_craft.aud_pipelines_run_log),
    (SELECT count(*) FROM etl_craft.aud_task_run_log), (SELECT count(*) FROM etl_craft.aud_task_attempts),
    (SELECT count(*) FROM etl_craft.aud_gate_decisions), (SELECT count(*) FROM etl_craft.aud_dependency_consumption),
    (SELECT count(*) FROM etl_craft.aud_run_interventions), (SELECT count(*) FROM etl_craft.aud_pipeline_pauses),
    (SELECT count(*) FROM etl_craft.aud_actions), (SELECT count(*) FROM etl_craft.aud_metadata_changes),
    (SELECT count(*) FROM etl_craft.aud_task_offsets)]) AS n WHERE n > 0),
  17, 'every AUD_ and CFG_ table has a row');
SELECT * FROM finish();
ROLLBACK;
