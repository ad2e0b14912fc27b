-- The retry rule, as a DBA sees it in psql: the function that records how an attempt ended queues its retry in the
-- same transaction (finish_attempt, time_out_attempt, lose_attempt, reconcile_expired), due after
-- RETRY_DELAY_SECONDS x RETRY_BACKOFF^(n-1) capped at an hour, or does not (no retries left, a non-retryable error,
-- a cancel); interrupt_attempt uses no retry; requeue_lost queues again a lost task the rule did not retry;
-- retry_policy shows the policy each task runs under.
BEGIN;
SELECT plan(15);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT set_config('etl_craft.now', '2026-03-01 12:00:00+00', true);
CREATE TEMP TABLE a ON COMMIT DROP AS
SELECT etl_test.attempts_in('RUNNING') AS flaky, etl_test.attempts_in('RUNNING') AS guarded,
       etl_test.attempts_in('RUNNING') AS slow, etl_test.attempts_in('RUNNING') AS lost,
       etl_test.attempts_in('RUNNING') AS stopped, etl_test.attempts_in('RUNNING') AS gone;
-- task_of(attempt): its task; each attempt above is in a pipeline of its own
CREATE TEMP TABLE params ON COMMIT DROP AS
SELECT * FROM (VALUES ('flaky', 'RETRIES', '2'), ('flaky', 'RETRY_DELAY_SECONDS', '10'), ('flaky', 'RETRY_BACKOFF', '3'),
                      ('guarded', 'RETRIES', '2'), ('slow', 'RETRIES', '1'), ('slow', 'RETRY_DELAY_SECONDS', '5000'),
                      ('lost', 'RETRIES', '1'), ('lost', 'RETRY_DELAY_SECONDS', '0'),
                      ('stopped', 'RETRIES', '1')) p(which, name, value);
INSERT INTO etl_craft.cfg_task_parameters (task_id, parameter_name, parameter_value)
SELECT tr.task_id, p.name, p.value
  FROM params p
  JOIN a ON true
  JOIN etl_craft.aud_task_attempts x ON x.attempt_id = CASE p.which WHEN 'flaky' THEN a.flaky WHEN 'guarded' THEN a.guarded
                                                                     WHEN 'slow' THEN a.slow WHEN 'lost' THEN a.lost
                                                                     ELSE a.stopped END
  JOIN etl_craft.aud_task_run_log tr USING (task_run_id);

-- retries(attempt): (attempt number, status, retry number, not before) of the attempt's task run, in order
CREATE FUNCTION pg_temp.attempts_of(p_attempt bigint) RETURNS TABLE (n int, status text, retry int, due timestamptz)
LANGUAGE sql AS $$
  SELECT y.attempt_number, y.status::text, y.retry_number, y.not_before
    FROM etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_attempts y USING (task_run_id)
   WHERE x.attempt_id = p_attempt ORDER BY y.attempt_number
$$;

SELECT results_eq(
  $$SELECT status, task_run_status, attempt_count
      FROM etl_craft.finish_attempt(p_attempt_id => (SELECT flaky FROM a), p_owner_id => 'w1', p_status => 'FAILED')$$,
  $$VALUES ('FAILED'::text, 'IN-PROGRESS'::text, 2)$$,
  'a failure with retries left reads IN-PROGRESS: its retry is queued in the same call');
SELECT results_eq(
  $$SELECT * FROM pg_temp.attempts_of((SELECT flaky FROM a))$$,
  $$VALUES (1, 'FAILED', 0, NULL::timestamptz), (2, 'QUEUED', 1, '2026-03-01 12:00:10+00'::timestamptz)$$,
  'retry 1 is due after RETRY_DELAY_SECONDS');
SELECT set_config('etl_craft.now', '2026-03-01 12:00:10+00', true);
SELECT is((SELECT count(*)::int FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => 'warehouse', p_owner_id => 'w1',
                                                              p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_task_attempts
                                                                            WHERE attempt_id = (SELECT flaky FROM a)))),
          1, 'the retry is claimed once it falls due');
SELECT lives_ok(
  $$SELECT * FROM etl_craft.finish_attempt(p_attempt_id => (SELECT attempt_id FROM etl_craft.aud_task_attempts
                                                             WHERE status = 'CLAIMED'), p_owner_id => 'w1', p_status => 'FAILED')$$,
  'retry 1 fails too');
SELECT results_eq(
  $$SELECT n, retry, due FROM pg_temp.attempts_of((SELECT flaky FROM a)) WHERE status = 'QUEUED'$$,
  $$VALUES (3, 2, '2026-03-01 12:00:40+00'::timestamptz)$$, 'retry 2 waits RETRY_DELAY_SECONDS x RETRY_BACKOFF');

SELECT results_eq(
  $$SELECT status, task_run_status, next_attempt_id IS NOT NULL
      FROM etl_craft.interrupt_attempt(p_attempt_id => (SELECT stopped FROM a), p_owner_id => 'w1', p_reason => 'SIGTERM')$$,
  $$VALUES ('CANCELLED'::text, 'IN-PROGRESS'::text, true)$$,
  'an interrupted attempt is cancelled and queued again at once');
SELECT results_eq(
  $$SELECT n, status, retry, due FROM pg_temp.attempts_of((SELECT stopped FROM a))$$,
  $$VALUES (1, 'CANCELLED', 0, NULL::timestamptz), (2, 'QUEUED', 0, NULL)$$,
  'the interruption used no retry: the new attempt keeps retry number 0 and is due at once');

SELECT results_eq(
  $$SELECT task_run_status FROM etl_craft.finish_attempt(p_attempt_id => (SELECT guarded FROM a), p_owner_id => 'w1',
                                                         p_status => 'FAILED', p_retryable => 'N',
                                                         p_error_message => 'MERGE_KEY id is NULL in 3 rows')$$,
  $$VALUES ('FAILED'::text)$$, 'a non-retryable error is never retried, whatever RETRIES says');

SELECT results_eq(
  $$SELECT status, task_run_status FROM etl_craft.time_out_attempt(p_attempt_id => (SELECT slow FROM a), p_owner_id => 'w1',
                                                                    p_message => 'limit')$$,
  $$VALUES ('TIMED_OUT'::text, 'IN-PROGRESS'::text)$$, 'a timed-out attempt is retried');
SELECT is((SELECT due FROM pg_temp.attempts_of((SELECT slow FROM a)) WHERE status = 'QUEUED'),
          '2026-03-01 13:00:10+00'::timestamptz, 'no retry waits more than an hour');

SELECT set_config('etl_craft.now', '2026-03-01 12:05:00+00', true);
SELECT results_eq(
  $$SELECT task_run_status FROM etl_craft.reconcile_expired() WHERE attempt_id = (SELECT lost FROM a)$$,
  $$VALUES ('IN-PROGRESS'::text)$$, 'a lost attempt with a retry left is retried by the reconciliation');
SELECT results_eq(
  $$SELECT n, status, retry FROM pg_temp.attempts_of((SELECT gone FROM a))$$,
  $$VALUES (1, 'LOST', 0)$$, 'a lost attempt without retries is not retried');
SELECT results_eq(
  $$SELECT task_id, lost_attempt_id FROM etl_craft.requeue_lost(p_run_id => (SELECT x.pipeline_run_id
                                                                               FROM etl_craft.aud_task_attempts x
                                                                              WHERE x.attempt_id = (SELECT gone FROM a)))$$,
  $$SELECT tr.task_id, x.attempt_id FROM etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_run_log tr USING (task_run_id)
     WHERE x.attempt_id = (SELECT gone FROM a)$$,
  'requeue_lost queues it again, using no retry');
SELECT results_eq(
  $$SELECT n, status, retry FROM pg_temp.attempts_of((SELECT gone FROM a))$$,
  $$VALUES (1, 'LOST', 0), (2, 'QUEUED', 0)$$, 'the new attempt keeps the lost one''s retry number');
SELECT results_eq(
  $$SELECT retries, retry_delay_seconds, retry_backoff, max_delay_seconds
      FROM etl_craft.retry_policy(p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_task_attempts
                                                WHERE attempt_id = (SELECT flaky FROM a)))
     WHERE task_code = 'extract'$$,
  $$VALUES (2, 10, 3.0::double precision, 3600)$$, 'retry_policy shows the policy the rule applied');

SELECT * FROM finish();
ROLLBACK;
