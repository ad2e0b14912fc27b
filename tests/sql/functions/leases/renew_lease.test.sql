-- renew_lease: extends a lease its owner holds (a run, an attempt, or every live attempt of the owner) and stamps
-- HEARTBEAT_AT; a lease someone else holds, or that of an ended row, is a stale transition.
BEGIN;
SELECT plan(14);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT set_config('etl_craft.now', '2026-03-01 12:00:00+00', true);
CREATE TEMP TABLE a ON COMMIT DROP AS
SELECT etl_test.attempts_in('RUNNING', 'w1') AS running, etl_test.attempts_in('CLAIMED', 'w1') AS claimed,
       etl_test.attempts_in('SUCCESS', 'w1') AS ended, etl_test.attempts_in('RUNNING', 'w2') AS theirs,
       (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1') AS run;
SELECT * FROM etl_craft.start_run(p_run_id => (SELECT run FROM a), p_owner_id => 'w1');
SELECT set_config('etl_craft.now', '2026-03-01 12:00:40+00', true);

SELECT results_eq(
  $$SELECT kind, id, lease_expires_at FROM etl_craft.renew_lease(p_owner_id => 'w1', p_run_id => (SELECT run FROM a), p_lease_seconds => 45)$$,
  $$SELECT 'run'::text, (SELECT run FROM a), '2026-03-01 12:01:25+00'::timestamptz$$, 'a run''s lease is renewed for its owner');
SELECT results_eq(
  $$SELECT owner_id, heartbeat_at, lease_expires_at FROM etl_craft.aud_pipelines_run_log WHERE pipeline_run_id = (SELECT run FROM a)$$,
  $$VALUES ('w1'::varchar, '2026-03-01 12:00:40+00'::timestamptz, '2026-03-01 12:01:25+00'::timestamptz)$$,
  'the run records the heartbeat and the new expiry');
SELECT results_eq(
  $$SELECT kind, id, lease_expires_at FROM etl_craft.renew_lease(p_owner_id => 'w1', p_attempt_id => (SELECT claimed FROM a))$$,
  $$SELECT 'attempt'::text, (SELECT claimed FROM a), '2026-03-01 12:01:40+00'::timestamptz$$, 'an attempt''s lease is renewed for its owner');

SELECT set_config('etl_craft.now', '2026-03-01 12:00:50+00', true);
SELECT results_eq(
  $$SELECT kind, id, lease_expires_at FROM etl_craft.renew_lease(p_owner_id => 'w1', p_lease_seconds => 30)$$,
  $$SELECT 'attempt'::text, x, '2026-03-01 12:01:20+00'::timestamptz FROM a, unnest(ARRAY[running, claimed]) x ORDER BY x$$,
  'with neither id, every CLAIMED or RUNNING attempt of the owner is renewed, one row each');
SELECT results_eq(
  $$SELECT attempt_id, heartbeat_at, lease_expires_at FROM etl_craft.aud_task_attempts
     WHERE attempt_id IN ((SELECT running FROM a), (SELECT claimed FROM a), (SELECT theirs FROM a)) ORDER BY attempt_id$$,
  $$SELECT x, CASE WHEN x = theirs THEN '2026-03-01 12:00:00+00' ELSE '2026-03-01 12:00:50+00' END::timestamptz,
           CASE WHEN x = theirs THEN '2026-03-01 12:01:00+00' ELSE '2026-03-01 12:01:20+00' END::timestamptz
      FROM a, unnest(ARRAY[running, claimed, theirs]) x ORDER BY x$$,
  'another owner''s attempt is left alone');
SELECT is((SELECT count(*) FROM etl_craft.renew_lease(p_owner_id => 'nobody')), 0::bigint,
          'an owner without live attempts renews nothing, and that is no error');

SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.renew_lease(p_owner_id => 'w2', p_run_id => %s)$$, (SELECT run FROM a)),
  'EC020', 'run % is IN-PROGRESS owned by w1 (lease until 2026-03-01 12:01:25 UTC), expected IN-PROGRESS owned by w2; stop supervising it%',
  'another owner cannot renew the run''s lease, and is told who holds it');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.renew_lease(p_owner_id => 'w2', p_attempt_id => %s)$$, (SELECT running FROM a)),
  'EC020', 'attempt % is RUNNING owned by w1 (lease until 2026-03-01 12:01:20 UTC), expected CLAIMED or RUNNING owned by w2; stop working on it%',
  'another owner cannot renew the attempt''s lease');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.renew_lease(p_owner_id => 'w1', p_attempt_id => %s)$$, (SELECT ended FROM a)),
  'EC020', 'attempt % is SUCCESS owned by w1 (ended %), expected CLAIMED or RUNNING owned by w1;%',
  'an ended attempt has no lease to renew');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.renew_lease(p_owner_id => 'w1', p_attempt_id => %s)$$, etl_test.attempts_in('QUEUED')),
  'EC020', 'attempt % is QUEUED (unowned), expected CLAIMED or RUNNING owned by w1;%', 'a QUEUED attempt has no lease');
SELECT * FROM etl_craft.mark_run(p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
                                 p_status => 'FAILED', p_reason => 'by hand');
SELECT etl_test.refused(
  $$SELECT * FROM etl_craft.renew_lease(p_owner_id => 'w1', p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'))$$,
  'EC020', 'run % is FAILED (unowned), expected IN-PROGRESS owned by w1;%', 'an ended run has no lease to renew');
SELECT etl_test.refused($$SELECT * FROM etl_craft.renew_lease(p_owner_id => 'w1', p_run_id => 999999)$$,
                        'EC021', 'run 999999 does not exist;%', 'an unknown run is not found');
SELECT etl_test.refused($$SELECT * FROM etl_craft.renew_lease(p_owner_id => 'w1', p_attempt_id => 999999)$$,
                        'EC021', 'attempt 999999 does not exist;%', 'an unknown attempt is not found');
SELECT etl_test.refused($$SELECT * FROM etl_craft.renew_lease(p_owner_id => 'w1', p_lease_seconds => 0)$$,
                        'EC023', 'lease_seconds must be a whole number of seconds of at least 1, not 0', 'a lease of 0 s is refused');

SELECT * FROM finish();
ROLLBACK;
