-- Workers of QUEUE pools (038_workers, issue 25): register_worker only for a QUEUE pool and once per owner id;
-- heartbeat_worker renews every live attempt of the owner and returns the cancel requests; drain_worker and
-- stop_worker; reap_workers declares a worker 3 heartbeats late GONE, records its attempt LOST and queues the retry;
-- the gone worker's heartbeat and late finish are refused. Then claim_attempt's limits within one batch.
BEGIN;
SELECT plan(16);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT set_config('etl_craft.now', '2026-03-01 12:00:00+00', true);
INSERT INTO etl_craft.cfg_pools (pool_name, provider) VALUES ('remote', 'QUEUE');

SELECT etl_test.refused(
  $$SELECT * FROM etl_craft.register_worker('wa', 'w-a', 'tpool', 'h', 1, '0.1', 2, 1, 10)$$, 'EC023',
  'pool tpool is a LOCAL pool, expected a QUEUE pool%', 'a worker is refused a LOCAL pool');
CREATE TEMP TABLE w ON COMMIT DROP AS
SELECT (SELECT worker_id FROM etl_craft.register_worker('wa', 'w-a', 'remote', 'h', 1, '0.1', 2, 1, 10)) AS a,
       (SELECT worker_id FROM etl_craft.register_worker('wb', 'w-b', 'remote', 'h', 2, '0.1', 2, 1, 10)) AS b;
SELECT results_eq($$SELECT status, pool, heartbeat_at FROM etl_craft.aud_workers WHERE worker_id = (SELECT a FROM w)$$,
                  $$VALUES ('ACTIVE'::varchar, 'remote'::varchar, '2026-03-01 12:00:00+00'::timestamptz)$$,
                  'a registered worker is ACTIVE with its heartbeat now');
SELECT etl_test.refused(
  $$SELECT * FROM etl_craft.register_worker('wa', 'w-a', 'remote', 'h', 1, '0.1', 2, 1, 10)$$, 'EC023',
  'owner wa is already recorded as worker %', 'an owner id registers once');

-- two live attempts of wa, one with a cancel requested; extract may be retried once
UPDATE etl_craft.cfg_task_parameters SET active_flag = 'N' WHERE parameter_name = 'RETRIES';
INSERT INTO etl_craft.cfg_task_parameters (task_id, parameter_name, parameter_value)
  SELECT task_id, 'RETRIES', '1' FROM etl_craft.cfg_tasks WHERE task_code = 'extract';
CREATE TEMP TABLE a ON COMMIT DROP AS
SELECT etl_test.attempts_in('RUNNING', 'wa') AS running, etl_test.attempts_in('CLAIMED', 'wa') AS asked;
UPDATE etl_craft.aud_task_attempts SET pool = 'remote' WHERE attempt_id IN (SELECT running FROM a UNION SELECT asked FROM a);
SELECT * FROM etl_craft.cancel_attempt((SELECT asked FROM a), 'operator stop');

SELECT set_config('etl_craft.now', '2026-03-01 12:00:20+00', true);
SELECT results_eq($$SELECT attempt_id, cancel_requested FROM etl_craft.heartbeat_worker((SELECT a FROM w), 'wa', 45)$$,
                  $$SELECT asked, true FROM a$$, 'the heartbeat returns the attempts asked to stop');
SELECT results_eq($$SELECT DISTINCT lease_expires_at FROM etl_craft.aud_task_attempts WHERE owner_id = 'wa'$$,
                  $$VALUES ('2026-03-01 12:01:05+00'::timestamptz)$$, 'and renews every live attempt of the owner');
SELECT etl_test.refused($$SELECT * FROM etl_craft.heartbeat_worker((SELECT a FROM w), 'intruder', 45)$$, 'EC020',
                        'worker % is ACTIVE, expected ACTIVE or DRAINING owned by intruder%', 'another owner is refused');
SELECT etl_test.refused($$SELECT * FROM etl_craft.heartbeat_worker(424242, 'wa', 45)$$, 'EC021',
                        'worker 424242 does not exist%', 'an unknown worker is refused');
SELECT results_eq($$SELECT status FROM etl_craft.drain_worker((SELECT b FROM w), 'wb', 'SIGTERM')$$,
                  $$VALUES ('DRAINING'::text)$$, 'drain: ACTIVE -> DRAINING');

-- 12:00:50: wa beat at 12:00:20 (30 s ago, 3 x 10 s: not yet late); wb beat at 12:00:00 (50 s ago: late)
SELECT set_config('etl_craft.now', '2026-03-01 12:00:50+00', true);
SELECT results_eq($$SELECT worker_id, owner_id, lost_attempts FROM etl_craft.reap_workers()$$,
                  $$SELECT b, 'wb'::text, 0 FROM w$$, 'the worker 3 heartbeats late is reaped, and only it');
SELECT set_config('etl_craft.now', '2026-03-01 12:00:51+00', true);
SELECT results_eq($$SELECT worker_id, lost_attempts FROM etl_craft.reap_workers()$$,
                  $$SELECT a, 2 FROM w$$, 'a second later the other is, with its two live attempts');
SELECT results_eq(
  $$SELECT status, stop_reason LIKE 'declared gone: missed 3 heartbeats (every 10 s); last heartbeat 2026-03-01 12:00:20 UTC'
      FROM etl_craft.aud_workers WHERE worker_id = (SELECT a FROM w)$$,
  $$VALUES ('GONE'::varchar, true)$$, 'GONE, naming its last heartbeat');
SELECT results_eq(
  $$SELECT x.status, n.status, n.pool, n.retry_number FROM etl_craft.aud_task_attempts x
      JOIN etl_craft.aud_task_attempts n ON n.task_run_id = x.task_run_id AND n.attempt_number = x.attempt_number + 1
     WHERE x.attempt_id = (SELECT running FROM a)$$,
  $$VALUES ('LOST'::varchar, 'QUEUED'::varchar, 'remote'::varchar, 1)$$,
  'its RUNNING attempt is LOST and, with retries left, a retry is QUEUED in its pool');
SELECT etl_test.refused($$SELECT * FROM etl_craft.finish_attempt((SELECT running FROM a), 'wa', 'SUCCESS')$$, 'EC020',
                        'attempt % is LOST owned by wa%', 'the reaped owner''s late finish is refused');
SELECT etl_test.refused($$SELECT * FROM etl_craft.heartbeat_worker((SELECT a FROM w), 'wa', 45)$$, 'EC020',
                        'worker % is GONE since %stop every task process at once%', 'and so is its heartbeat');

-- limits: a pipeline of MAX_PARALLEL_TASKS 1 and a project of MAX_WAREHOUSE_QUERIES 1, in one batch of 32
UPDATE etl_craft.cfg_projects SET max_warehouse_queries = 1 WHERE project_code = 'tp';
CREATE TEMP TABLE q ON COMMIT DROP AS
SELECT etl_test.attempts_queue('manual:lim1', p_pool => 'lim', p_priority => 5) AS first,
       etl_test.attempts_queue('manual:lim2', p_pool => 'lim') AS second;
SELECT results_eq($$SELECT attempt_id FROM etl_craft.claim_attempt('lim', 'warehouse', 'wc', 60, 32)$$,
                  $$SELECT first FROM q$$, 'the project''s one warehouse query is claimed, the highest priority first');
SELECT is((SELECT count(*) FROM etl_craft.claim_attempt('lim', 'warehouse', 'wc', 60, 32)), 0::bigint,
          'and no more while it runs');

SELECT * FROM finish();
ROLLBACK;
