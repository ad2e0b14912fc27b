-- mark_run: an operator sets a run's ending, never while an attempt of it is live; a repaired SUCCESS publishes.
BEGIN;
SELECT plan(7);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
UPDATE etl_craft.aud_task_attempts SET status = 'CLAIMED', owner_id = 'w1', claimed_at = now();

SELECT etl_test.refused($$ SELECT * FROM etl_craft.mark_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
                          p_status => 'SUCCESS', p_reason => 'looks fine', p_actor => 'erin@host') $$,
                        'EC023', 'run % has attempt % CLAIMED by w1 (lease until never)%', 'a live attempt blocks the mark');
UPDATE etl_craft.aud_task_attempts SET status = 'FAILED';
UPDATE etl_craft.aud_task_run_log SET status = 'FAILED';
SELECT is((SELECT row(status, output_revision)::text FROM etl_craft.mark_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
             p_status => 'SUCCESS', p_reason => 'checked by hand', p_actor => 'erin@host')),
          '(SUCCESS,1)', 'an IN-PROGRESS run without live attempts is marked');
SELECT is((SELECT ended_by || ' ' || message FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
          'erin@host marked SUCCESS: checked by hand', 'who marked it and why');
SELECT * FROM etl_craft.reopen_run(
  p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
  p_reason => 'repair', p_actor => 'erin@host');
SELECT is((SELECT output_revision FROM etl_craft.mark_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
             p_status => 'SUCCESS', p_reason => 'repaired', p_actor => 'erin@host')),
          2, 'a repaired run marked SUCCESS publishes revision 2');
SELECT is((SELECT output_revision FROM etl_craft.mark_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
             p_status => 'SUCCESS', p_reason => 'again', p_actor => 'erin@host')),
          2, 'marking SUCCESS again publishes nothing more');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.mark_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
                          p_status => 'IN-PROGRESS', p_reason => 'x', p_actor => 'erin@host') $$,
                        'EC023', 'mark_run sets SUCCESS, FAILED or SKIPPED, not IN-PROGRESS%', 'only endings are marked');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_run_interventions WHERE intervention = 'MARK' AND requested_by = 'erin@host'),
          3, 'each mark is recorded');
SELECT * FROM finish();
ROLLBACK;
