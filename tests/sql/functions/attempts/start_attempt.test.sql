-- start_attempt: the owner of a CLAIMED attempt records its process (host, pid, birth identity) and renews the
-- lease; the task run gets its START_DATE once. Any other status, or another owner, is a stale transition.
BEGIN;
SELECT plan(14);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT set_config('etl_craft.now', '2026-03-01 12:00:00+00', true);
CREATE TEMP TABLE a ON COMMIT DROP AS SELECT etl_test.attempts_in('CLAIMED') AS id;
SELECT set_config('etl_craft.now', '2026-03-01 12:00:10+00', true);

SELECT results_eq(
  $$SELECT attempt_id, status, lease_expires_at FROM etl_craft.start_attempt(
      p_attempt_id => (SELECT id FROM a), p_owner_id => 'w1', p_host => 'host-a', p_pid => 4242,
      p_process_start => '1700000000.25', p_lease_seconds => 120)$$,
  $$SELECT (SELECT id FROM a), 'RUNNING'::text, '2026-03-01 12:02:10+00'::timestamptz$$,
  'CLAIMED -> RUNNING for its owner, with a lease renewed from now');
SELECT results_eq(
  $$SELECT status, owner_id, host, pid, process_start, claimed_at, started_at, heartbeat_at, lease_expires_at
      FROM etl_craft.aud_task_attempts WHERE attempt_id = (SELECT id FROM a)$$,
  $$VALUES ('RUNNING'::varchar, 'w1'::varchar, 'host-a'::varchar, 4242, '1700000000.25'::varchar,
            '2026-03-01 12:00:00+00'::timestamptz, '2026-03-01 12:00:10+00'::timestamptz,
            '2026-03-01 12:00:10+00'::timestamptz, '2026-03-01 12:02:10+00'::timestamptz)$$,
  'the attempt records its process, STARTED_AT, HEARTBEAT_AT and the new lease; CLAIMED_AT is kept');
SELECT is((SELECT t.start_date FROM etl_craft.aud_task_run_log t JOIN etl_craft.aud_task_attempts x USING (task_run_id)
            WHERE x.attempt_id = (SELECT id FROM a)),
          '2026-03-01 12:00:10+00'::timestamptz, 'the task run gets its START_DATE');

-- a retry in a task run that already started keeps the task run's START_DATE
UPDATE etl_craft.aud_task_attempts SET status = 'FAILED', ended_at = etl_craft.clock_now(), lease_expires_at = NULL
 WHERE attempt_id = (SELECT id FROM a);
CREATE TEMP TABLE retry ON COMMIT DROP AS SELECT etl_test.attempts_queue(
  (SELECT r.run_key FROM etl_craft.aud_pipelines_run_log r JOIN etl_craft.aud_task_run_log t USING (pipeline_run_id)
     JOIN etl_craft.aud_task_attempts x USING (task_run_id) WHERE x.attempt_id = (SELECT id FROM a))) AS id;
UPDATE etl_craft.aud_task_attempts SET status = 'CLAIMED', owner_id = 'w2', claimed_at = etl_craft.clock_now(),
       lease_expires_at = etl_craft.clock_now() + interval '1 minute' WHERE attempt_id = (SELECT id FROM retry);
SELECT set_config('etl_craft.now', '2026-03-01 13:00:00+00', true);
SELECT is((SELECT status FROM etl_craft.start_attempt(p_attempt_id => (SELECT id FROM retry), p_owner_id => 'w2',
            p_host => 'host-b', p_pid => 1, p_process_start => '1')), 'RUNNING', 'the retry starts');
SELECT is((SELECT t.start_date FROM etl_craft.aud_task_run_log t JOIN etl_craft.aud_task_attempts x USING (task_run_id)
            WHERE x.attempt_id = (SELECT id FROM retry)),
          '2026-03-01 12:00:10+00'::timestamptz, 'the task run keeps the START_DATE of its first start');

-- refusals
SELECT etl_test.attempts_refusals(
  $$SELECT * FROM etl_craft.start_attempt(p_attempt_id => %s, p_owner_id => 'w1', p_host => 'h', p_pid => 1, p_process_start => '1')$$,
  ARRAY['QUEUED', 'RUNNING', 'SUCCESS', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'LOST'], 'EC020',
  'start_attempt starts only a CLAIMED attempt');
CREATE TEMP TABLE theirs ON COMMIT DROP AS SELECT etl_test.attempts_in('CLAIMED', 'w1') AS id;
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.start_attempt(p_attempt_id => %s, p_owner_id => 'w9', p_host => 'h', p_pid => 1, p_process_start => '1')$$,
         (SELECT id FROM theirs)),
  'EC020', 'attempt % is CLAIMED owned by w1 (lease until 2026-03-01 13:01:00 UTC), expected CLAIMED owned by w9; do not start it%',
  'another owner cannot start it, and is told who owns it');
SELECT etl_test.refused(
  $$SELECT * FROM etl_craft.start_attempt(p_attempt_id => 999999, p_owner_id => 'w1', p_host => 'h', p_pid => 1, p_process_start => '1')$$,
  'EC021', 'attempt 999999 does not exist;%', 'an unknown attempt is not found');

SELECT * FROM finish();
ROLLBACK;
