-- record_rule_flags: the owner of a RUNNING attempt records, for one active rule of the attempt's task, the keys that
-- break it: each new key gets an open flag, each open flag whose key left the list closes (END_DATE,
-- CLEARED_BY_ATTEMPT_ID), and the heartbeat is renewed. Another owner, an attempt not RUNNING, an unknown attempt, a
-- rule that is not an active rule of the attempt's task or a list that is not a JSON array is refused; a zombie (its
-- attempt lost, a retry running) records nothing.
BEGIN;
SELECT plan(30);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT set_config('etl_craft.now', '2026-03-01 12:00:00+00', true);
CREATE TEMP TABLE a ON COMMIT DROP AS SELECT etl_test.attempts_in('RUNNING') AS id;
CREATE TEMP TABLE r ON COMMIT DROP AS SELECT etl_test.rules_add((SELECT id FROM a)) AS id;
CREATE TEMP VIEW a_flags AS
SELECT business_rule_key, active_flag, start_date, end_date, cleared_by_attempt_id
  FROM etl_craft.aud_business_rule_flags WHERE business_rule_id = (SELECT id FROM r);

-- 5: the allowed call opens flags, then closes those whose key left the list and opens the new ones
SELECT set_config('etl_craft.now', '2026-03-01 12:00:10+00', true);
SELECT results_eq(
  $$SELECT business_rule_id, flagged, cleared, active FROM etl_craft.record_rule_flags(
      p_attempt_id => (SELECT id FROM a), p_owner_id => 'w1', p_business_rule_id => (SELECT id FROM r),
      p_failing_keys => '["42", "57", "42", null]')$$,
  $$SELECT (SELECT id FROM r), 2::bigint, 0::bigint, 2::bigint$$,
  'the owner records keys 42 and 57 (a repeated key and null ignored): two flags opened, none cleared, two open');
SELECT results_eq(
  $$SELECT f.business_rule_key, f.active_flag, f.start_date, f.end_date, f.pipeline_run_id, f.task_run_id, f.attempt_id,
           f.cleared_by_attempt_id
      FROM etl_craft.aud_business_rule_flags f WHERE f.business_rule_id = (SELECT id FROM r) ORDER BY f.business_rule_key$$,
  $$SELECT k.key::varchar, 'Y'::varchar, '2026-03-01 12:00:10+00'::timestamptz, NULL::timestamptz, t.pipeline_run_id,
           x.task_run_id, x.attempt_id, NULL::bigint
      FROM etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_run_log t USING (task_run_id),
           unnest(ARRAY['42', '57']) AS k(key)
     WHERE x.attempt_id = (SELECT id FROM a) ORDER BY k.key$$,
  'each key has one open flag from now, naming the run, the task run and the attempt');
SELECT is((SELECT heartbeat_at FROM etl_craft.aud_task_attempts WHERE attempt_id = (SELECT id FROM a)),
          '2026-03-01 12:00:10+00'::timestamptz, 'the attempt''s heartbeat is renewed');
SELECT set_config('etl_craft.now', '2026-03-01 12:00:20+00', true);
SELECT results_eq(
  $$SELECT business_rule_id, flagged, cleared, active FROM etl_craft.record_rule_flags(
      p_attempt_id => (SELECT id FROM a), p_owner_id => 'w1', p_business_rule_id => (SELECT id FROM r),
      p_failing_keys => '["57", "99"]')$$,
  $$SELECT (SELECT id FROM r), 1::bigint, 1::bigint, 2::bigint$$,
  'recorded again with 57 and 99: 99 opened, 42 cleared, two open');
SELECT results_eq(
  'SELECT * FROM a_flags ORDER BY business_rule_key, start_date',
  $$VALUES ('42'::varchar, 'N'::varchar, '2026-03-01 12:00:10+00'::timestamptz, '2026-03-01 12:00:20+00'::timestamptz,
            (SELECT id FROM a)),
           ('57', 'Y', '2026-03-01 12:00:10+00', NULL, NULL),
           ('99', 'Y', '2026-03-01 12:00:20+00', NULL, NULL)$$,
  'the flag of 42 ends now, cleared by the attempt, and is kept; 57 stays open as it was; 99 opens');

-- 15: refusals (each probe rolls back, so the state is then compared whole)
SELECT set_config('etl_craft.now', '2026-03-01 12:00:30+00', true);
CREATE TEMP TABLE before ON COMMIT DROP AS SELECT * FROM a_flags;
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.record_rule_flags(p_attempt_id => %s, p_owner_id => 'w9', p_business_rule_id => %s,
                                                       p_failing_keys => '[]')$$, (SELECT id FROM a), (SELECT id FROM r)),
  'EC020', 'attempt ' || (SELECT id FROM a) || ' is RUNNING owned by w1%, expected RUNNING owned by w9; no flag was recorded%',
  'another owner cannot record flags, and is told who owns the attempt');
SELECT etl_test.attempts_refusals(
  $$SELECT * FROM etl_craft.record_rule_flags(p_attempt_id => %1$s, p_owner_id => 'w1',
                                              p_business_rule_id => etl_test.rules_add(%1$s), p_failing_keys => '["1"]')$$,
  ARRAY['QUEUED', 'CLAIMED', 'SUCCESS', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'LOST'], 'EC020',
  'record_rule_flags records only for a RUNNING attempt');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.record_rule_flags(p_attempt_id => 999999, p_owner_id => 'w1', p_business_rule_id => %s,
                                                       p_failing_keys => '[]')$$, (SELECT id FROM r)),
  'EC021', 'attempt 999999 does not exist;%', 'an unknown attempt is not found');
-- the seed's task load (of pipeline down_pl) is not the task of the attempt (extract, of its own pipeline)
INSERT INTO etl_craft.cfg_business_rules (task_id, rule_code, rule_type, key_column, rule_sql)
SELECT task_id, 'load_rule', 'WARN', 'id', 'id > 0' FROM etl_craft.cfg_tasks WHERE task_code = 'load';
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.record_rule_flags(p_attempt_id => %s, p_owner_id => 'w1', p_business_rule_id => %s,
                                                       p_failing_keys => '[]')$$, (SELECT id FROM a),
         (SELECT business_rule_id FROM etl_craft.cfg_business_rules WHERE rule_code = 'load_rule')),
  'EC021', 'business rule % is not an active rule of task ' ||
           (SELECT t.task_id FROM etl_craft.aud_task_run_log t JOIN etl_craft.aud_task_attempts x USING (task_run_id)
             WHERE x.attempt_id = (SELECT id FROM a)) || ';%',
  'a rule of another task is not found among the attempt''s rules');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.record_rule_flags(p_attempt_id => %1$s, p_owner_id => 'w1',
                                                       p_business_rule_id => etl_test.rules_add(%1$s, 'retired', 'N'),
                                                       p_failing_keys => '[]')$$, (SELECT id FROM a)),
  'EC021', 'business rule % is not an active rule of task %', 'a switched-off rule (ACTIVE_FLAG N) of the task is not found');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.record_rule_flags(p_attempt_id => %s, p_owner_id => 'w1', p_business_rule_id => %s,
                                                       p_failing_keys => '{"42": 1}')$$, (SELECT id FROM a), (SELECT id FROM r)),
  'EC023', 'failing_keys is a JSON array of the keys (strings of at most 512 characters) that break the rule, such as ["42", "57"], not {"42": 1}',
  'failing_keys that is a JSON object is refused (EC023)');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.record_rule_flags(p_attempt_id => %s, p_owner_id => 'w1', p_business_rule_id => %s,
                                                       p_failing_keys => NULL)$$, (SELECT id FROM a), (SELECT id FROM r)),
  'EC023', 'failing_keys is a JSON array of the keys (strings of at most 512 characters) that break the rule, such as ["42", "57"], not NULL',
  'failing_keys NULL is refused (EC023)');
SELECT results_eq('SELECT * FROM a_flags ORDER BY 1, 3', 'SELECT * FROM before ORDER BY 1, 3',
                  'no refusal touched a flag');
SELECT is((SELECT heartbeat_at FROM etl_craft.aud_task_attempts WHERE attempt_id = (SELECT id FROM a)),
          '2026-03-01 12:00:20+00'::timestamptz, 'nor the attempt''s heartbeat');

-- 7: a zombie: w2's attempt records flags, is lost, and a retry runs; the zombie's call changes nothing
SELECT set_config('etl_craft.now', '2026-03-01 12:01:00+00', true);
CREATE TEMP TABLE z ON COMMIT DROP AS SELECT etl_test.attempts_in('RUNNING', 'w2') AS id;
CREATE TEMP TABLE zr ON COMMIT DROP AS SELECT etl_test.rules_add((SELECT id FROM z)) AS id;
CREATE TEMP VIEW z_flags AS
SELECT business_rule_key, active_flag, start_date, end_date, attempt_id, cleared_by_attempt_id
  FROM etl_craft.aud_business_rule_flags WHERE business_rule_id = (SELECT id FROM zr);
SELECT results_eq(
  $$SELECT flagged, cleared, active FROM etl_craft.record_rule_flags(
      p_attempt_id => (SELECT id FROM z), p_owner_id => 'w2', p_business_rule_id => (SELECT id FROM zr),
      p_failing_keys => '["7", "8"]')$$,
  $$VALUES (2::bigint, 0::bigint, 2::bigint)$$, 'w2 records keys 7 and 8 for its attempt');
SELECT set_config('etl_craft.now', '2026-03-01 12:05:00+00', true);
SELECT results_eq(
  $$SELECT status FROM etl_craft.lose_attempt(p_attempt_id => (SELECT id FROM z), p_owner_id => 'w2')$$,
  $$VALUES ('LOST'::text)$$, 'w2 stops renewing its lease: its attempt is lost');
CREATE TEMP TABLE retry ON COMMIT DROP AS SELECT etl_test.attempts_queue(
  (SELECT r.run_key FROM etl_craft.aud_pipelines_run_log r JOIN etl_craft.aud_task_run_log t USING (pipeline_run_id)
     JOIN etl_craft.aud_task_attempts x USING (task_run_id) WHERE x.attempt_id = (SELECT id FROM z))) AS id;
UPDATE etl_craft.aud_task_attempts
   SET status = 'CLAIMED', owner_id = 'w3', claimed_at = etl_craft.clock_now(), heartbeat_at = etl_craft.clock_now(),
       lease_expires_at = etl_craft.clock_now() + interval '1 minute'
 WHERE attempt_id = (SELECT id FROM retry);
UPDATE etl_craft.aud_task_attempts SET status = 'RUNNING', host = 'pg-host', pid = 1, started_at = etl_craft.clock_now()
 WHERE attempt_id = (SELECT id FROM retry);
SELECT set_config('etl_craft.now', '2026-03-01 12:06:00+00', true);
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.record_rule_flags(p_attempt_id => %s, p_owner_id => 'w2', p_business_rule_id => %s,
                                                       p_failing_keys => '[]')$$, (SELECT id FROM z), (SELECT id FROM zr)),
  'EC020', 'attempt ' || (SELECT id FROM z) || ' is LOST owned by w2%, expected RUNNING owned by w2; no flag was recorded%',
  'the zombie w2, still running after its attempt was lost, is refused');
SELECT results_eq('SELECT * FROM z_flags ORDER BY 1, 3',
  $$VALUES ('7'::varchar, 'Y'::varchar, '2026-03-01 12:01:00+00'::timestamptz, NULL::timestamptz, (SELECT id FROM z), NULL::bigint),
           ('8', 'Y', '2026-03-01 12:01:00+00', NULL, (SELECT id FROM z), NULL)$$,
  'the zombie closed nothing: its flags are open as it recorded them');
SELECT is((SELECT heartbeat_at FROM etl_craft.aud_task_attempts WHERE attempt_id = (SELECT id FROM z)),
          '2026-03-01 12:01:00+00'::timestamptz, 'and renewed no heartbeat of its lost attempt');
SELECT results_eq(
  $$SELECT flagged, cleared, active FROM etl_craft.record_rule_flags(
      p_attempt_id => (SELECT id FROM retry), p_owner_id => 'w3', p_business_rule_id => (SELECT id FROM zr),
      p_failing_keys => '["8"]')$$,
  $$VALUES (0::bigint, 1::bigint, 1::bigint)$$, 'the retry''s owner w3 records key 8 only: 7 is cleared');
SELECT results_eq('SELECT * FROM z_flags ORDER BY 1, 3',
  $$VALUES ('7'::varchar, 'N'::varchar, '2026-03-01 12:01:00+00'::timestamptz, '2026-03-01 12:06:00+00'::timestamptz,
            (SELECT id FROM z), (SELECT id FROM retry)),
           ('8', 'Y', '2026-03-01 12:01:00+00', NULL, (SELECT id FROM z), NULL)$$,
  'the flag of 7 is cleared by the retry; the flag of 8, opened by the lost attempt, stays open');

-- 3: an empty list closes every open flag of the rule, and only of that rule
SELECT results_eq(
  $$SELECT business_rule_id, flagged, cleared, active FROM etl_craft.record_rule_flags(
      p_attempt_id => (SELECT id FROM a), p_owner_id => 'w1', p_business_rule_id => (SELECT id FROM r),
      p_failing_keys => '[]')$$,
  $$SELECT (SELECT id FROM r), 0::bigint, 2::bigint, 0::bigint$$, 'an empty list clears the two open flags');
SELECT is((SELECT count(*)::int FROM a_flags WHERE active_flag = 'N' AND end_date = '2026-03-01 12:06:00+00'
                                                AND cleared_by_attempt_id = (SELECT id FROM a)), 2,
          'both end now, cleared by the attempt; no flag is deleted');
SELECT is((SELECT count(*)::int FROM z_flags WHERE active_flag = 'Y'), 1, 'the other rule''s open flag is untouched');

SELECT * FROM finish();
ROLLBACK;
