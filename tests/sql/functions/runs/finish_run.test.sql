-- finish_run: a QUEUED run that ran nothing ends from the status its caller saw, and only then.
BEGIN;
SELECT plan(4);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT * FROM etl_craft.create_run(
  p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
  p_run_key => 'schedule:t1', p_run_date => DATE '2026-01-02', p_trigger_kind => 'SCHEDULE', p_status => 'QUEUED',
  p_catching_up => true,
  p_actor => 'overseer', p_actor_kind => 'SCHEDULE');

SELECT is((SELECT status FROM etl_craft.finish_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:t1'),
             p_from_status => 'QUEUED', p_status => 'SKIPPED', p_message => 'gate refused', p_actor => 'etl-craft',
             p_actor_kind => 'SYSTEM')),
          'SKIPPED', 'a QUEUED run ends SKIPPED');
SELECT is((SELECT ended_by || '/' || ended_by_kind || '/' || message FROM etl_craft.aud_pipelines_run_log
            WHERE run_key = 'schedule:t1'), 'etl-craft/SYSTEM/gate refused', 'who ended it and why are recorded');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.finish_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:t1'),
                          p_from_status => 'QUEUED', p_status => 'CANCELLED', p_actor => 'x') $$,
                        'EC020', 'run % is SKIPPED, expected QUEUED%', 'a stale caller is refused');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.finish_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
                          p_from_status => 'IN-PROGRESS', p_status => 'SUCCESS', p_actor => 'x') $$,
                        'EC023', 'run % has task runs; end it with finalize_run', 'a run with task runs ends through finalize_run');
SELECT * FROM finish();
ROLLBACK;
