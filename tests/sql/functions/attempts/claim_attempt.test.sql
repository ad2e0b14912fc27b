-- claim_attempt: claims the ready QUEUED attempts of a pool and its slot kinds, best first, up to max_attempts,
-- with the owner and a lease; skips attempts not due and attempts of runs not IN-PROGRESS or asked to cancel.
BEGIN;
SELECT plan(16);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT set_config('etl_craft.now', '2026-03-01 12:00:00+00', true);

SELECT etl_test.attempts_run('manual:queued-run', 'QUEUED');
-- the seed's attempt 1 of extract in manual:up1 is QUEUED (pool default, warehouse, priority 0)
CREATE TEMP TABLE q ON COMMIT DROP AS
SELECT (SELECT attempt_id FROM etl_craft.aud_task_attempts) AS seeded,
       etl_test.attempts_queue('manual:high', p_priority => 5) AS high,
       etl_test.attempts_queue('manual:later', p_not_before => '2026-03-01 12:00:30+00') AS later,
       etl_test.attempts_queue('manual:ingest', p_slot_kind => 'ingestion', p_priority => 9) AS ingest,
       etl_test.attempts_queue('manual:gpu', p_pool => 'gpu', p_priority => 9) AS gpu,
       etl_test.attempts_queue('manual:queued-run', p_priority => 9) AS in_queued_run,
       etl_test.attempts_queue('manual:cancelled-run', p_priority => 9) AS in_cancelled_run;
UPDATE etl_craft.aud_pipelines_run_log SET cancel_requested_at = etl_craft.clock_now() WHERE run_key = 'manual:cancelled-run';

SELECT is((SELECT count(*) FROM etl_craft.claim_attempt(p_pool => 'nowhere', p_slot_kinds => 'warehouse', p_owner_id => 'w1')),
          0::bigint, 'a pool without queued attempts gives no rows, and no error');

SELECT results_eq(
  $$SELECT attempt_id, task_run_id, pipeline_run_id, task_id, attempt_number, lease_expires_at
      FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => 'warehouse', p_owner_id => 'w1',
                                   p_lease_seconds => 90, p_max_attempts => 5)$$,
  $$SELECT a.attempt_id, a.task_run_id, t.pipeline_run_id, t.task_id, a.attempt_number,
           '2026-03-01 12:01:30+00'::timestamptz
      FROM etl_craft.aud_task_attempts a JOIN etl_craft.aud_task_run_log t USING (task_run_id)
     WHERE a.attempt_id IN ((SELECT high FROM q), (SELECT seeded FROM q))
     ORDER BY a.priority DESC$$,
  'the ready warehouse attempts of pool default are claimed, highest priority first, with their ids and lease');

SELECT results_eq(
  $$SELECT status, owner_id, claimed_at, heartbeat_at, lease_expires_at FROM etl_craft.aud_task_attempts
     WHERE attempt_id IN ((SELECT high FROM q), (SELECT seeded FROM q)) ORDER BY attempt_id$$,
  $$VALUES ('CLAIMED'::varchar, 'w1'::varchar, '2026-03-01 12:00:00+00'::timestamptz, '2026-03-01 12:00:00+00'::timestamptz,
            '2026-03-01 12:01:30+00'::timestamptz),
           ('CLAIMED', 'w1', '2026-03-01 12:00:00+00', '2026-03-01 12:00:00+00', '2026-03-01 12:01:30+00')$$,
  'each claimed attempt is CLAIMED by its owner, with CLAIMED_AT, HEARTBEAT_AT and LEASE_EXPIRES_AT from the clock');
SELECT is((SELECT started_at FROM etl_craft.aud_task_attempts WHERE attempt_id = (SELECT high FROM q)), NULL,
          'a claim does not start the attempt');

SELECT results_eq(
  $$SELECT attempt_id, status FROM etl_craft.aud_task_attempts
     WHERE attempt_id IN ((SELECT later FROM q), (SELECT ingest FROM q), (SELECT gpu FROM q),
                          (SELECT in_queued_run FROM q), (SELECT in_cancelled_run FROM q)) ORDER BY attempt_id$$,
  $$SELECT x, 'QUEUED'::varchar FROM q, unnest(ARRAY[later, ingest, gpu, in_queued_run, in_cancelled_run]) x ORDER BY x$$,
  'not yet due, another slot kind, another pool, a QUEUED run and a run asked to cancel: all left QUEUED');

SELECT set_config('etl_craft.now', '2026-03-01 12:00:30+00', true);
SELECT is((SELECT array_agg(attempt_id) FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => 'warehouse',
                                                                      p_owner_id => 'w2', p_max_attempts => 5)),
          ARRAY[(SELECT later FROM q)], 'an attempt is claimed once its NOT_BEFORE has come');

SELECT is((SELECT array_agg(attempt_id) FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => 'ingestion,warehouse',
                                                                      p_owner_id => 'w2', p_max_attempts => 5)),
          ARRAY[(SELECT ingest FROM q)], 'a comma list of slot kinds claims each kind');
SELECT is((SELECT array_agg(attempt_id) FROM etl_craft.claim_attempt(p_pool => 'gpu', p_slot_kinds => 'warehouse',
                                                                      p_owner_id => 'w2')),
          ARRAY[(SELECT gpu FROM q)], 'another pool is claimed by naming it');

-- max_attempts and disjoint claimers: five ready attempts, two claimers taking two at a time
CREATE TEMP TABLE five ON COMMIT DROP AS
SELECT etl_test.attempts_queue('manual:five-' || i, p_queued_at => '2026-03-01 11:00:00+00'::timestamptz + i * interval '1 minute') AS attempt_id
  FROM generate_series(1, 5) i;
CREATE TEMP TABLE got ON COMMIT DROP AS
SELECT 'w3' AS owner, attempt_id FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => 'warehouse', p_owner_id => 'w3', p_max_attempts => 2);
INSERT INTO got SELECT 'w4', attempt_id FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => 'warehouse', p_owner_id => 'w4', p_max_attempts => 2);
INSERT INTO got SELECT 'w3', attempt_id FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => 'warehouse', p_owner_id => 'w3', p_max_attempts => 2);
SELECT results_eq('SELECT owner, count(*) FROM got GROUP BY owner ORDER BY owner',
                  $$VALUES ('w3', 3::bigint), ('w4', 2::bigint)$$, 'max_attempts bounds each claim');
SELECT set_eq('SELECT attempt_id FROM got', 'SELECT attempt_id FROM five',
              'two claimers took every attempt, each exactly once (oldest first)');
SELECT is((SELECT array_agg(attempt_id ORDER BY attempt_id) FROM got WHERE owner = 'w4'),
          (SELECT array_agg(attempt_id ORDER BY attempt_id) FROM five WHERE attempt_id IN (SELECT attempt_id FROM five ORDER BY attempt_id OFFSET 2 LIMIT 2)),
          'the second claimer got the next two in QUEUED_AT order');
SELECT is((SELECT count(*) FROM got g JOIN etl_craft.aud_task_attempts a USING (attempt_id) WHERE a.owner_id <> g.owner),
          0::bigint, 'every attempt is owned by the claimer it was returned to');

SELECT etl_test.refused($$SELECT * FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => 'warehouse', p_owner_id => '')$$,
                        'EC023', 'claim_attempt needs an owner_id%', 'a claim without an owner is refused');
SELECT etl_test.refused($$SELECT * FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => 'warehouse', p_owner_id => 'w1',
                                                                 p_max_attempts => 0)$$,
                        'EC023', 'max_attempts must be at least 1, not 0', 'max_attempts below 1 is refused');

-- durable: every claim above was durable, so the transaction still commits synchronously; a claim with durable
-- false turns synchronous_commit off for the rest of its transaction only (SET LOCAL), and claims as usual.
SELECT is(current_setting('synchronous_commit'), 'on', 'a durable claim (the default) leaves synchronous_commit on');
SELECT etl_test.attempts_queue('manual:not-durable');
SELECT is((SELECT count(*) FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => 'warehouse',
                                                        p_owner_id => 'w5', p_durable => false))::text
            || ' ' || current_setting('synchronous_commit'),
          '1 off', 'a claim with durable false claims, and its transaction commits without waiting for the flush');

SELECT * FROM finish();
ROLLBACK;
