-- reconcile_expired: CLAIMED and RUNNING attempts whose lease expired (more than grace_seconds ago; with host,
-- only that host's and unknown hosts') end LOST and their task runs FAILED; expired runs without live attempts are
-- released (still IN-PROGRESS, unowned). Returns the attempts it lost.
BEGIN;
SELECT plan(10);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT set_config('etl_craft.now', '2026-03-01 12:00:00+00', true);
-- leases until 12:01:00: here on pg-host, there on host-b, unstarted (HOST unknown); renewed until 12:05:00: live
CREATE TEMP TABLE a ON COMMIT DROP AS
SELECT etl_test.attempts_in('RUNNING', 'w1') AS here, etl_test.attempts_in('RUNNING', 'w2') AS there,
       etl_test.attempts_in('CLAIMED', 'w1') AS unstarted, etl_test.attempts_in('RUNNING', 'w1') AS live;
UPDATE etl_craft.aud_task_attempts SET host = 'host-b' WHERE attempt_id = (SELECT there FROM a);
UPDATE etl_craft.aud_task_attempts SET lease_expires_at = '2026-03-01 12:05:00+00' WHERE attempt_id = (SELECT live FROM a);
-- runs: manual:up1 supervised by w1 until 12:01:00, no live attempt; the run of `live` supervised until 12:01:00
SELECT * FROM etl_craft.start_run(p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
                                  p_owner_id => 'w1');
UPDATE etl_craft.aud_task_attempts SET status = 'CANCELLED', ended_at = etl_craft.clock_now()
 WHERE task_run_id IN (SELECT task_run_id FROM etl_craft.aud_task_run_log JOIN etl_craft.aud_pipelines_run_log USING (pipeline_run_id)
                        WHERE run_key = 'manual:up1');
CREATE TEMP TABLE live_run ON COMMIT DROP AS
SELECT t.pipeline_run_id AS id FROM etl_craft.aud_task_run_log t JOIN etl_craft.aud_task_attempts x USING (task_run_id)
 WHERE x.attempt_id = (SELECT live FROM a);
SELECT * FROM etl_craft.start_run(p_run_id => (SELECT id FROM live_run), p_owner_id => 'w1');

SELECT set_config('etl_craft.now', '2026-03-01 12:01:00+00', true);
SELECT is((SELECT count(*) FROM etl_craft.reconcile_expired()), 0::bigint, 'nothing has expired at the expiry time itself');

SELECT set_config('etl_craft.now', '2026-03-01 12:02:00+00', true);
SELECT is((SELECT count(*) FROM etl_craft.reconcile_expired(p_grace_seconds => 120)), 0::bigint,
          'within the grace nothing is lost');
SELECT results_eq(
  $$SELECT attempt_id, owner_id, task_run_status FROM etl_craft.reconcile_expired(p_host => 'pg-host')$$,
  $$SELECT x, 'w1'::text, 'FAILED'::text FROM a, unnest(ARRAY[here, unstarted]) x ORDER BY x$$,
  'with host, the expired attempts of that host and of unknown hosts are lost');
SELECT results_eq(
  $$SELECT x.status, x.ended_at, x.lease_expires_at, x.error_message, t.status, t.end_date, t.error_message
      FROM etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_run_log t USING (task_run_id) WHERE x.attempt_id = (SELECT here FROM a)$$,
  $$SELECT 'LOST'::varchar, '2026-03-01 12:02:00+00'::timestamptz, NULL::timestamptz,
           'attempt ' || (SELECT here FROM a) || ' was lost: owner w1 stopped renewing its lease at 2026-03-01 12:01:00 UTC',
           'FAILED'::varchar, '2026-03-01 12:02:00+00'::timestamptz,
           'attempt ' || (SELECT here FROM a) || ' was lost: owner w1 stopped renewing its lease at 2026-03-01 12:01:00 UTC'$$,
  'a lost attempt and its task run carry the lost message');
SELECT is((SELECT status FROM etl_craft.aud_task_attempts WHERE attempt_id = (SELECT there FROM a)), 'RUNNING',
          'another host''s attempt is left to a pass without host');
SELECT results_eq(
  $$SELECT attempt_id, owner_id, task_run_status FROM etl_craft.reconcile_expired()$$,
  $$SELECT (SELECT there FROM a), 'w2'::text, 'FAILED'::text$$, 'without host, every expired attempt is judged');
SELECT is((SELECT status FROM etl_craft.aud_task_attempts WHERE attempt_id = (SELECT live FROM a)), 'RUNNING',
          'an attempt with a live lease is kept');
SELECT results_eq(
  $$SELECT status, owner_id, lease_expires_at FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'$$,
  $$VALUES ('IN-PROGRESS'::varchar, NULL::varchar, NULL::timestamptz)$$,
  'an expired run without live attempts is released, still IN-PROGRESS');
SELECT results_eq(
  $$SELECT owner_id, lease_expires_at FROM etl_craft.aud_pipelines_run_log WHERE pipeline_run_id = (SELECT id FROM live_run)$$,
  $$VALUES ('w1'::varchar, '2026-03-01 12:01:00+00'::timestamptz)$$,
  'an expired run with a live attempt keeps its owner');
SELECT etl_test.refused($$SELECT * FROM etl_craft.reconcile_expired(p_grace_seconds => -1)$$,
                        'EC023', 'grace_seconds must be 0 or more, not -1', 'a negative grace is refused');

SELECT * FROM finish();
ROLLBACK;
