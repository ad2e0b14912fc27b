-- cancel_attempt: without an owner, a QUEUED attempt ends CANCELLED at once and a CLAIMED or RUNNING one is asked
-- to stop (recorded as a CANCEL intervention); with its owner, a CLAIMED or RUNNING attempt ends CANCELLED and
-- acknowledged. An ended attempt, or another owner, is a stale transition.
BEGIN;
SELECT plan(17);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT set_config('etl_craft.now', '2026-03-01 12:00:00+00', true);
CREATE TEMP TABLE a ON COMMIT DROP AS
SELECT etl_test.attempts_in('QUEUED') AS queued, etl_test.attempts_in('RUNNING') AS running;

SELECT results_eq(
  $$SELECT attempt_id, status, cancel_requested_at FROM etl_craft.cancel_attempt(p_attempt_id => (SELECT queued FROM a),
                                                                                  p_reason => 'not today')$$,
  $$SELECT (SELECT queued FROM a), 'CANCELLED'::text, '2026-03-01 12:00:00+00'::timestamptz$$,
  'QUEUED -> CANCELLED at once');
SELECT results_eq(
  $$SELECT x.ended_at, x.cancel_acknowledged_at, x.error_message, t.status, t.end_date, t.message
      FROM etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_run_log t USING (task_run_id) WHERE x.attempt_id = (SELECT queued FROM a)$$,
  $$VALUES ('2026-03-01 12:00:00+00'::timestamptz, NULL::timestamptz, 'cancelled before it started: not today'::text,
            'CANCELLED'::varchar, '2026-03-01 12:00:00+00'::timestamptz, 'cancelled: not today'::text)$$,
  'the attempt ends with the reason; its task run reads CANCELLED');

SELECT set_config('etl_craft.now', '2026-03-01 12:00:05+00', true);
SELECT results_eq(
  $$SELECT status, cancel_requested_at FROM etl_craft.cancel_attempt(p_attempt_id => (SELECT running FROM a), p_reason => 'stop')$$,
  $$VALUES ('RUNNING'::text, '2026-03-01 12:00:05+00'::timestamptz)$$,
  'a RUNNING attempt is only asked to stop');
SELECT set_config('etl_craft.now', '2026-03-01 12:00:08+00', true);
SELECT is((SELECT cancel_requested_at FROM etl_craft.cancel_attempt(p_attempt_id => (SELECT running FROM a), p_reason => 'stop now')),
          '2026-03-01 12:00:05+00'::timestamptz, 'asking again keeps the first request''s time');
SELECT results_eq(
  $$SELECT x.status, x.lease_expires_at IS NOT NULL, x.ended_at, t.status FROM etl_craft.aud_task_attempts x
      JOIN etl_craft.aud_task_run_log t USING (task_run_id) WHERE x.attempt_id = (SELECT running FROM a)$$,
  $$VALUES ('RUNNING'::varchar, true, NULL::timestamptz, 'IN-PROGRESS'::varchar)$$,
  'until its owner acts, the attempt keeps running and its lease');
SELECT results_eq(
  $$SELECT attempt_id, intervention, from_status, to_status, reason, requested_by FROM etl_craft.aud_run_interventions
     WHERE attempt_id IS NOT NULL ORDER BY intervention_id$$,
  $$VALUES ((SELECT queued FROM a), 'CANCEL'::varchar, 'QUEUED'::varchar, 'CANCELLED'::varchar, 'not today'::text, 'pgtap@test'::varchar),
           ((SELECT running FROM a), 'CANCEL', 'RUNNING', 'CANCELLED', 'stop', 'pgtap@test'),
           ((SELECT running FROM a), 'CANCEL', 'RUNNING', 'CANCELLED', 'stop now', 'pgtap@test')$$,
  'each request is recorded as a CANCEL intervention with its actor');

SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.cancel_attempt(p_attempt_id => %s, p_reason => 'mine', p_owner_id => 'w9')$$, (SELECT running FROM a)),
  'EC020', 'attempt % is RUNNING owned by w1 (lease until %), expected CLAIMED or RUNNING owned by w9;%',
  'only its owner acknowledges the cancel');
SELECT set_config('etl_craft.now', '2026-03-01 12:00:12+00', true);
SELECT results_eq(
  $$SELECT status, cancel_requested_at FROM etl_craft.cancel_attempt(p_attempt_id => (SELECT running FROM a),
                                                                       p_reason => 'stopped on request', p_owner_id => 'w1')$$,
  $$VALUES ('CANCELLED'::text, '2026-03-01 12:00:05+00'::timestamptz)$$, 'its owner ends it CANCELLED');
SELECT results_eq(
  $$SELECT x.cancel_acknowledged_at, x.ended_at, x.lease_expires_at, x.error_message, t.status, t.end_date
      FROM etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_run_log t USING (task_run_id) WHERE x.attempt_id = (SELECT running FROM a)$$,
  $$VALUES ('2026-03-01 12:00:12+00'::timestamptz, '2026-03-01 12:00:12+00'::timestamptz, NULL::timestamptz,
            'cancelled: stopped on request'::text, 'CANCELLED'::varchar, '2026-03-01 12:00:12+00'::timestamptz)$$,
  'acknowledged, ended, lease cleared; the task run reads CANCELLED');
SELECT is((SELECT count(*) FROM etl_craft.aud_run_interventions WHERE attempt_id IS NOT NULL), 3::bigint,
          'an owner''s acknowledgement is not an intervention');

SELECT etl_test.attempts_refusals(
  $$SELECT * FROM etl_craft.cancel_attempt(p_attempt_id => %s, p_reason => 'too late')$$,
  ARRAY['SUCCESS', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'LOST'], 'EC020', 'an ended attempt is not cancelled');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.cancel_attempt(p_attempt_id => %s, p_reason => 'x', p_owner_id => 'w1')$$, etl_test.attempts_in('QUEUED')),
  'EC020', 'attempt % is QUEUED (unowned), expected CLAIMED or RUNNING owned by w1;%', 'nobody owns a QUEUED attempt');

SELECT etl_test.refused($$SELECT * FROM etl_craft.cancel_attempt(p_attempt_id => 999999, p_reason => 'x')$$,
                        'EC021', 'attempt 999999 does not exist;%', 'an unknown attempt is not found');

SELECT * FROM finish();
ROLLBACK;
