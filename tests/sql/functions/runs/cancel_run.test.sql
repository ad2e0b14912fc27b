-- cancel_run: queued attempts end at once, live ones are asked to stop, the run ends when none is live.
BEGIN;
SELECT plan(8);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();

SELECT is((SELECT row(status, live_attempts)::text FROM etl_craft.cancel_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
             p_reason => 'wrong day', p_actor => 'carol@host')),
          '(CANCELLED,0)', 'a run whose only attempt is QUEUED ends CANCELLED at once');
SELECT is((SELECT status FROM etl_craft.aud_task_attempts), 'CANCELLED', 'its QUEUED attempt is cancelled');
SELECT is((SELECT status FROM etl_craft.aud_task_run_log), 'CANCELLED', 'and the task run summary too');
SELECT is((SELECT intervention || ' ' || from_status || '->' || to_status || ' by ' || requested_by
             FROM etl_craft.aud_run_interventions WHERE intervention = 'CANCEL'),
          'CANCEL IN-PROGRESS->CANCELLED by carol@host', 'the cancel is recorded with its actor');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.cancel_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
                          p_reason => 'again', p_actor => 'carol@host') $$,
                        'EC020', 'run % already ended CANCELLED; there is nothing to cancel', 'an ended run is not cancelled again');

-- a run with a RUNNING attempt: asked to stop, not ended
SELECT * FROM etl_craft.reopen_run(
  p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
  p_reason => 'again', p_actor => 'carol@host');
INSERT INTO etl_craft.aud_task_attempts (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
  SELECT task_run_id, 2, 'QUEUED', now(), 'x', 'HUMAN' FROM etl_craft.aud_task_run_log;
UPDATE etl_craft.aud_task_run_log SET status = 'IN-PROGRESS', attempt_count = 2;
UPDATE etl_craft.aud_task_attempts SET status = 'CLAIMED', owner_id = 'w1', claimed_at = now() WHERE attempt_number = 2;
UPDATE etl_craft.aud_task_attempts SET status = 'RUNNING' WHERE attempt_number = 2;
SELECT is((SELECT row(status, live_attempts)::text FROM etl_craft.cancel_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
             p_reason => 'stop it', p_actor => 'carol@host')),
          '(IN-PROGRESS,1)', 'a run with a RUNNING attempt stays IN-PROGRESS until its owner stops it');
SELECT isnt((SELECT cancel_requested_at FROM etl_craft.aud_task_attempts WHERE attempt_number = 2), NULL,
            'the running attempt is asked to stop');
SELECT isnt((SELECT cancel_requested_at FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'), NULL,
            'the run remembers the request');
SELECT * FROM finish();
ROLLBACK;
