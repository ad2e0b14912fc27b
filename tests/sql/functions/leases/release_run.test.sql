-- release_run: a supervisor gives up a run it owns without ending it; another owner's run, an ended run or a run
-- whose owner still holds a live attempt is left alone or refused.
BEGIN;
SELECT plan(7);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT set_config('etl_craft.now', '2026-03-01 12:00:00+00', true);
CREATE TEMP TABLE a ON COMMIT DROP AS SELECT etl_test.attempts_in('RUNNING', 'w1') AS running, NULL::bigint AS run;
-- A statement of its own: the rows attempts_in wrote are visible only to the next statement.
UPDATE a SET run = (SELECT t.pipeline_run_id FROM etl_craft.aud_task_attempts x
                      JOIN etl_craft.aud_task_run_log t ON t.task_run_id = x.task_run_id
                     WHERE x.attempt_id = a.running);
SELECT * FROM etl_craft.start_run(p_run_id => (SELECT run FROM a), p_owner_id => 'w1');

SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.release_run(p_run_id => %s, p_owner_id => 'w1')$$, (SELECT run FROM a)),
  'EC023', format('run %s cannot be released by w1: its attempt %s is still RUNNING; finish or stop that attempt first',
                  (SELECT run FROM a), (SELECT running FROM a)),
  'an owner still running an attempt of the run cannot release it');
SELECT results_eq(
  format($$SELECT pipeline_run_id, status, released FROM etl_craft.release_run(p_run_id => %s, p_owner_id => 'w2')$$,
         (SELECT run FROM a)),
  $$SELECT (SELECT run FROM a), 'IN-PROGRESS'::text, false$$,
  'another owner releases nothing, and that is no error');
SELECT is((SELECT owner_id FROM etl_craft.aud_pipelines_run_log WHERE pipeline_run_id = (SELECT run FROM a)),
          'w1'::varchar, 'the owner is kept');

SELECT * FROM etl_craft.finish_attempt(p_attempt_id => (SELECT running FROM a), p_owner_id => 'w1',
                                       p_status => 'SUCCESS', p_exit_code => 0);
SELECT results_eq(
  format($$SELECT pipeline_run_id, status, released FROM etl_craft.release_run(p_run_id => %s, p_owner_id => 'w1')$$,
         (SELECT run FROM a)),
  $$SELECT (SELECT run FROM a), 'IN-PROGRESS'::text, true$$,
  'once its attempt ended, the owner releases the run');
SELECT results_eq(
  $$SELECT owner_id, lease_expires_at, status FROM etl_craft.aud_pipelines_run_log WHERE pipeline_run_id = (SELECT run FROM a)$$,
  $$VALUES (NULL::varchar, NULL::timestamptz, 'IN-PROGRESS'::varchar)$$,
  'the run stays IN-PROGRESS with no owner and no lease');
SELECT lives_ok(
  format($$SELECT * FROM etl_craft.start_run(p_run_id => %s, p_owner_id => 'w3')$$, (SELECT run FROM a)),
  'a new supervisor takes the released run at once, before the old lease would have expired');
SELECT etl_test.refused(
  $$SELECT * FROM etl_craft.release_run(p_run_id => -1, p_owner_id => 'w1')$$,
  'EC021', 'run -1 does not exist; list runs with etl-craft history --pipeline-code P', 'an unknown run is named');

SELECT * FROM finish();
ROLLBACK;
