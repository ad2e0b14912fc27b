-- reopen_run: an ended run goes back to IN-PROGRESS; a succeeded one becomes a pending repair.
BEGIN;
SELECT plan(6);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
DELETE FROM etl_craft.aud_task_offsets;
UPDATE etl_craft.aud_task_attempts SET status = 'CANCELLED';
UPDATE etl_craft.aud_task_run_log SET status = 'SUCCESS';
UPDATE etl_craft.aud_pipelines_run_log SET status = 'SUCCESS', end_date = now() WHERE run_key = 'manual:up1';

SELECT is((SELECT row(status, output_revision, repair_pending)::text FROM etl_craft.reopen_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
             p_reason => 'late data', p_actor => 'dave@host')),
          '(IN-PROGRESS,1,t)', 'a succeeded run reopens as a pending repair');
SELECT is((SELECT end_date FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'), NULL, 'its end is cleared');
SELECT is((SELECT from_status || '->' || to_status || ' ' || reason || ' by ' || requested_by FROM etl_craft.aud_run_interventions
            WHERE intervention = 'REOPEN'), 'SUCCESS->IN-PROGRESS late data by dave@host', 'the reopen is recorded');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.reopen_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
                          p_reason => 'again', p_actor => 'dave@host') $$,
                        'EC020', 'run % is IN-PROGRESS and has not ended; only an ended run can be reopened',
                        'a run that has not ended is not reopened');
UPDATE etl_craft.aud_pipelines_run_log SET status = 'FAILED', end_date = now() WHERE run_key = 'manual:up1';
UPDATE etl_craft.aud_pipelines_run_log SET status = 'FAILED', end_date = now() WHERE run_key = 'manual:down1';
SELECT * FROM etl_craft.create_run(
  p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
  p_run_key => 'manual:down2', p_run_date => DATE '2026-01-02', p_bypass_reason => 'set-up', p_actor => 'x');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.reopen_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
                          p_reason => 'again', p_actor => 'dave@host') $$,
                        'EC023', 'run % cannot be reopened while run % (manual:down2) of the same pipeline is IN-PROGRESS%',
                        'a run is not reopened while another run of its pipeline is active');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.reopen_run(p_run_id => 99999, p_reason => 'x', p_actor => 'x') $$,
                        'EC021', 'run 99999 does not exist%', 'an unknown run is not found');
SELECT * FROM finish();
ROLLBACK;
