-- lose_attempt: a CLAIMED or RUNNING attempt whose owner stopped renewing it ends LOST, fenced by the owner the
-- caller saw; the task run reads FAILED with "attempt N was lost: owner O stopped renewing its lease at T".
BEGIN;
SELECT plan(13);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT set_config('etl_craft.now', '2026-03-01 12:00:00+00', true);
CREATE TEMP TABLE a ON COMMIT DROP AS
SELECT etl_test.attempts_in('RUNNING') AS running, etl_test.attempts_in('CLAIMED', 'w2') AS claimed;
SELECT set_config('etl_craft.now', '2026-03-01 12:05:00+00', true);

SELECT results_eq(
  $$SELECT attempt_id, status, task_run_status FROM etl_craft.lose_attempt(p_attempt_id => (SELECT running FROM a), p_owner_id => 'w1')$$,
  $$SELECT (SELECT running FROM a), 'LOST'::text, 'FAILED'::text$$, 'RUNNING -> LOST; the task run reads FAILED');
SELECT results_eq(
  $$SELECT x.status, x.owner_id, x.ended_at, x.lease_expires_at, x.error_message, t.status, t.end_date, t.error_message
      FROM etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_run_log t USING (task_run_id) WHERE x.attempt_id = (SELECT running FROM a)$$,
  $$SELECT 'LOST'::varchar, 'w1'::varchar, '2026-03-01 12:05:00+00'::timestamptz, NULL::timestamptz,
           'attempt ' || (SELECT running FROM a) || ' was lost: owner w1 stopped renewing its lease at 2026-03-01 12:01:00 UTC',
           'FAILED'::varchar, '2026-03-01 12:05:00+00'::timestamptz,
           'attempt ' || (SELECT running FROM a) || ' was lost: owner w1 stopped renewing its lease at 2026-03-01 12:01:00 UTC'$$,
  'the attempt and its summary name the lost owner and when its lease ran out; the owner is kept, the lease cleared');
SELECT results_eq(
  $$SELECT status, task_run_status FROM etl_craft.lose_attempt(p_attempt_id => (SELECT claimed FROM a), p_owner_id => 'w2',
                                                               p_message => 'host-b was switched off')$$,
  $$VALUES ('LOST'::text, 'FAILED'::text)$$, 'CLAIMED -> LOST');
SELECT is((SELECT t.error_message FROM etl_craft.aud_task_run_log t JOIN etl_craft.aud_task_attempts x USING (task_run_id)
            WHERE x.attempt_id = (SELECT claimed FROM a)), 'host-b was switched off', 'with the message given');

SELECT etl_test.attempts_refusals(
  $$SELECT * FROM etl_craft.lose_attempt(p_attempt_id => %s, p_owner_id => 'w1')$$,
  ARRAY['QUEUED', 'SUCCESS', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'LOST'], 'EC020',
  'lose_attempt ends only a CLAIMED or RUNNING attempt');
-- the attempt was claimed again by another owner since the reconciler read it
CREATE TEMP TABLE reclaimed ON COMMIT DROP AS SELECT etl_test.attempts_in('RUNNING', 'w3') AS id;
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.lose_attempt(p_attempt_id => %s, p_owner_id => 'w1')$$, (SELECT id FROM reclaimed)),
  'EC020', 'attempt % is RUNNING owned by w3 (lease until %), expected CLAIMED or RUNNING owned by w1; nothing was changed%',
  'an attempt owned by someone else than the owner the caller saw is not lost');
SELECT is((SELECT status FROM etl_craft.aud_task_attempts WHERE attempt_id = (SELECT id FROM reclaimed)), 'RUNNING',
          'and keeps running');
SELECT etl_test.refused(
  $$SELECT * FROM etl_craft.lose_attempt(p_attempt_id => 999999, p_owner_id => 'w1')$$,
  'EC021', 'attempt 999999 does not exist;%', 'an unknown attempt is not found');

SELECT * FROM finish();
ROLLBACK;
