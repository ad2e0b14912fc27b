-- time_out_attempt: the owner of a RUNNING attempt ends it TIMED_OUT with its message; the task run reads FAILED.
BEGIN;
SELECT plan(12);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT set_config('etl_craft.now', '2026-03-01 12:00:00+00', true);
CREATE TEMP TABLE a ON COMMIT DROP AS SELECT etl_test.attempts_in('RUNNING') AS id;
SELECT set_config('etl_craft.now', '2026-03-01 13:00:00+00', true);

SELECT results_eq(
  $$SELECT attempt_id, status, task_run_status FROM etl_craft.time_out_attempt(
      p_attempt_id => (SELECT id FROM a), p_owner_id => 'w1', p_message => 'stopped at its time limit of 3600 s')$$,
  $$SELECT (SELECT id FROM a), 'TIMED_OUT'::text, 'FAILED'::text$$,
  'RUNNING -> TIMED_OUT for its owner; the task run reads FAILED');
SELECT results_eq(
  $$SELECT x.status, x.ended_at, x.lease_expires_at, x.error_message, t.status, t.end_date, t.error_message
      FROM etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_run_log t USING (task_run_id) WHERE x.attempt_id = (SELECT id FROM a)$$,
  $$VALUES ('TIMED_OUT'::varchar, '2026-03-01 13:00:00+00'::timestamptz, NULL::timestamptz, 'stopped at its time limit of 3600 s'::text,
            'FAILED'::varchar, '2026-03-01 13:00:00+00'::timestamptz, 'stopped at its time limit of 3600 s'::text)$$,
  'the attempt ends with the message and no lease; the summary carries the same message and end');

SELECT etl_test.attempts_refusals(
  $$SELECT * FROM etl_craft.time_out_attempt(p_attempt_id => %s, p_owner_id => 'w1', p_message => 'late')$$,
  ARRAY['QUEUED', 'CLAIMED', 'SUCCESS', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'LOST'], 'EC020',
  'time_out_attempt ends only a RUNNING attempt');
CREATE TEMP TABLE theirs ON COMMIT DROP AS SELECT etl_test.attempts_in('RUNNING', 'w1') AS id;
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.time_out_attempt(p_attempt_id => %s, p_owner_id => 'w9', p_message => 'late')$$, (SELECT id FROM theirs)),
  'EC020', 'attempt % is RUNNING owned by w1 (lease until 2026-03-01 13:01:00 UTC), expected RUNNING owned by w9;%',
  'another owner cannot time it out');
SELECT is((SELECT status FROM etl_craft.aud_task_attempts WHERE attempt_id = (SELECT id FROM theirs)), 'RUNNING',
          'and it keeps running');
SELECT etl_test.refused(
  $$SELECT * FROM etl_craft.time_out_attempt(p_attempt_id => 999999, p_owner_id => 'w1', p_message => 'late')$$,
  'EC021', 'attempt 999999 does not exist;%', 'an unknown attempt is not found');

SELECT * FROM finish();
ROLLBACK;
