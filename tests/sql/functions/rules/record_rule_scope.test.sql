-- record_rule_scope (B52): the owner of a RUNNING attempt records, for one active rule of the attempt's task, what it
-- found for the keys its run wrote: a failing key in scope gets a flag, an open flag of a key in scope that is not
-- failing closes, and every flag outside the scope is left as it stands, however many there are. Lists that are not
-- keys in scope (more than 1,000, a failing key outside the scope, not a JSON array) and other owners are refused;
-- a refusal changes nothing.
BEGIN;
SELECT plan(14);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT set_config('etl_craft.now', '2026-03-01 12:00:00+00', true);
CREATE TEMP TABLE a ON COMMIT DROP AS SELECT etl_test.attempts_in('RUNNING') AS id;
CREATE TEMP TABLE r ON COMMIT DROP AS SELECT etl_test.rules_add((SELECT id FROM a)) AS id;
CREATE TEMP VIEW a_flags AS
SELECT business_rule_key, active_flag, start_date, end_date, cleared_by_attempt_id
  FROM etl_craft.aud_business_rule_flags WHERE business_rule_id = (SELECT id FROM r);

-- 70,000 open flags, written set-based, as a full check would have left them
INSERT INTO etl_craft.aud_business_rule_flags
  (business_rule_id, business_rule_key, active_flag, start_date, pipeline_run_id, task_run_id, attempt_id)
SELECT (SELECT id FROM r), 'order-' || lpad(i::text, 6, '0'), 'Y', '2026-03-01 12:00:00+00', t.pipeline_run_id,
       x.task_run_id, x.attempt_id
  FROM etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_run_log t USING (task_run_id),
       generate_series(0, 69999) AS g(i)
 WHERE x.attempt_id = (SELECT id FROM a);

-- 6: a scoped call judges its keys only
SELECT set_config('etl_craft.now', '2026-03-01 12:00:10+00', true);
SELECT results_eq(
  $$SELECT business_rule_id, flagged, cleared, active FROM etl_craft.record_rule_scope(
      p_attempt_id => (SELECT id FROM a), p_owner_id => 'w1', p_business_rule_id => (SELECT id FROM r),
      p_scope_keys => '["order-000000", "order-000001", "order-000002", "new-1"]',
      p_failing_keys => '["order-000002", "new-1"]')$$,
  $$SELECT (SELECT id FROM r), 1::bigint, 2::bigint, 69999::bigint$$,
  'keys 0 and 1 meet the rule now and are cleared, 2 still breaks it, new-1 is flagged: 69,999 open');
SELECT results_eq(
  $$SELECT * FROM a_flags WHERE business_rule_key IN ('order-000000', 'order-000001', 'order-000002', 'new-1')
     ORDER BY business_rule_key$$,
  $$VALUES ('new-1'::varchar, 'Y'::varchar, '2026-03-01 12:00:10+00'::timestamptz, NULL::timestamptz, NULL::bigint),
           ('order-000000', 'N', '2026-03-01 12:00:00+00', '2026-03-01 12:00:10+00', (SELECT id FROM a)),
           ('order-000001', 'N', '2026-03-01 12:00:00+00', '2026-03-01 12:00:10+00', (SELECT id FROM a)),
           ('order-000002', 'Y', '2026-03-01 12:00:00+00', NULL, NULL)$$,
  'the cleared flags end now, by the attempt; the flag still breaking is kept as it was; new-1 opens now');
SELECT is((SELECT count(*)::int FROM a_flags
            WHERE active_flag = 'Y' AND start_date = '2026-03-01 12:00:00+00'
              AND business_rule_key NOT IN ('order-000000', 'order-000001', 'order-000002')), 69997,
          'every flag outside the scope is open as it was');
SELECT is((SELECT heartbeat_at FROM etl_craft.aud_task_attempts WHERE attempt_id = (SELECT id FROM a)),
          '2026-03-01 12:00:10+00'::timestamptz, 'the attempt''s heartbeat is renewed');
SELECT results_eq(
  $$SELECT flagged, cleared, active FROM etl_craft.record_rule_scope(
      p_attempt_id => (SELECT id FROM a), p_owner_id => 'w1', p_business_rule_id => (SELECT id FROM r),
      p_scope_keys => '[]', p_failing_keys => '[]')$$,
  $$VALUES (0::bigint, 0::bigint, 69999::bigint)$$, 'an empty scope judges nothing');
SELECT results_eq(
  $$SELECT flagged, cleared FROM etl_craft.record_rule_scope(
      p_attempt_id => (SELECT id FROM a), p_owner_id => 'w1', p_business_rule_id => (SELECT id FROM r),
      p_scope_keys => (SELECT json_agg('k' || i)::text FROM generate_series(1, 1000) AS g(i)),
      p_failing_keys => '["k1"]')$$,
  $$VALUES (1::bigint, 0::bigint)$$, 'a scope of 1,000 keys is taken');

-- 8: refusals (each probe rolls back, so the state is then compared whole)
SELECT set_config('etl_craft.now', '2026-03-01 12:00:30+00', true);
CREATE TEMP TABLE before ON COMMIT DROP AS SELECT * FROM a_flags;
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.record_rule_scope(p_attempt_id => %s, p_owner_id => 'w1', p_business_rule_id => %s,
                                                      p_scope_keys => (SELECT json_agg('k' || i)::text
                                                                         FROM generate_series(1, 1001) AS g(i)),
                                                      p_failing_keys => '[]')$$, (SELECT id FROM a), (SELECT id FROM r)),
  'EC023', 'scope_keys is a JSON array of at most 1000 keys (strings of at most 512 characters) that the run wrote and judged, such as ["42", "57"], not ["k1", %',
  'a scope of 1,001 keys is refused (EC023)');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.record_rule_scope(p_attempt_id => %s, p_owner_id => 'w1', p_business_rule_id => %s,
                                                      p_scope_keys => '["1", null]', p_failing_keys => '[]')$$,
         (SELECT id FROM a), (SELECT id FROM r)),
  'EC023', 'scope_keys is a JSON array % not ["1", null]', 'a null key in scope is refused (EC023)');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.record_rule_scope(p_attempt_id => %s, p_owner_id => 'w1', p_business_rule_id => %s,
                                                      p_scope_keys => 'not json', p_failing_keys => '[]')$$,
         (SELECT id FROM a), (SELECT id FROM r)),
  'EC023', 'scope_keys is a JSON array % not not json', 'scope_keys that is not JSON is refused (EC023)');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.record_rule_scope(p_attempt_id => %s, p_owner_id => 'w1', p_business_rule_id => %s,
                                                      p_scope_keys => '["order-000003"]',
                                                      p_failing_keys => '["order-000004"]')$$,
         (SELECT id FROM a), (SELECT id FROM r)),
  'EC023', 'failing_keys is a JSON array of the keys of scope_keys that break the rule, such as ["42"], not ["order-000004"]',
  'a failing key outside the scope is refused (EC023)');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.record_rule_scope(p_attempt_id => %s, p_owner_id => 'w1', p_business_rule_id => %s,
                                                      p_scope_keys => '["1"]', p_failing_keys => NULL)$$,
         (SELECT id FROM a), (SELECT id FROM r)),
  'EC023', 'failing_keys is a JSON array % not NULL', 'failing_keys NULL is refused (EC023)');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.record_rule_scope(p_attempt_id => %s, p_owner_id => 'w9', p_business_rule_id => %s,
                                                      p_scope_keys => '["order-000003"]', p_failing_keys => '[]')$$,
         (SELECT id FROM a), (SELECT id FROM r)),
  'EC020', 'attempt ' || (SELECT id FROM a) || ' is RUNNING owned by w1%, expected RUNNING owned by w9; no flag was recorded%',
  'another owner cannot record flags');
SELECT results_eq('SELECT * FROM a_flags ORDER BY 1, 3', 'SELECT * FROM before ORDER BY 1, 3',
                  'no refusal touched a flag');
SELECT is((SELECT heartbeat_at FROM etl_craft.aud_task_attempts WHERE attempt_id = (SELECT id FROM a)),
          '2026-03-01 12:00:10+00'::timestamptz, 'nor the attempt''s heartbeat');

SELECT * FROM finish();
ROLLBACK;
