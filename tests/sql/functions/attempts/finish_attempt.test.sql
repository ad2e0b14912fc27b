-- finish_attempt: the owner ends its CLAIMED or RUNNING attempt SUCCESS or FAILED in one transaction: the attempt,
-- the task-run summary, the offset (SUCCESS only, B6) and task-level consumption (SUCCESS only). A zombie (another
-- owner, or an attempt already ended or LOST) is refused and changes nothing (B8).
BEGIN;
SELECT plan(22);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT set_config('etl_craft.now', '2026-03-01 12:00:00+00', true);

-- load (down_pl) depends on extract (up_pl): an attempt of load in manual:down1 whose gate chose manual:up1's extract
CREATE TEMP TABLE a ON COMMIT DROP AS
SELECT etl_test.attempts_queue('manual:down1', p_task => 'load', p_slot_kind => 'ingestion') AS id;
UPDATE etl_craft.aud_task_attempts SET status = 'CLAIMED', owner_id = 'w1', claimed_at = etl_craft.clock_now(),
       lease_expires_at = etl_craft.clock_now() + interval '1 minute' WHERE attempt_id = (SELECT id FROM a);
UPDATE etl_craft.aud_task_attempts SET status = 'RUNNING', started_at = etl_craft.clock_now() WHERE attempt_id = (SELECT id FROM a);
INSERT INTO etl_craft.aud_gate_decisions
  (pipeline_run_id, task_run_id, attempt_id, task_dependency_id, selected_pipeline_run_id, selected_task_run_id,
   selected_revision, result, reason, decided_at, decided_by, decided_by_kind)
SELECT t.pipeline_run_id, t.task_run_id, x.attempt_id, (SELECT task_dependency_id FROM etl_craft.cfg_task_dependency),
       (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
       (SELECT task_run_id FROM etl_craft.aud_task_run_log WHERE task_id = (SELECT task_id FROM etl_craft.cfg_tasks WHERE task_code = 'extract')
           AND pipeline_run_id = (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1')),
       r.result_revision, r.result, 'judged', etl_craft.clock_now(), 'etl-craft', 'SYSTEM'
  FROM etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_run_log t USING (task_run_id),
       (VALUES (2, 'SATISFIED'), (NULL, 'UNSATISFIED')) AS r(result_revision, result)
 WHERE x.attempt_id = (SELECT id FROM a);

-- the task run carries the note a requeue leaves (interrupt_attempt, requeue_lost); a SUCCESS clears it
UPDATE etl_craft.aud_task_run_log SET message = 'interrupted: SIGTERM; queued to run again'
 WHERE task_run_id = (SELECT task_run_id FROM etl_craft.aud_task_attempts WHERE attempt_id = (SELECT id FROM a));

SELECT set_config('etl_craft.now', '2026-03-01 12:00:45+00', true);
SELECT results_eq(
  $$SELECT attempt_id, task_run_id, status, task_run_status, attempt_count FROM etl_craft.finish_attempt(
      p_attempt_id => (SELECT id FROM a), p_owner_id => 'w1', p_status => 'SUCCESS', p_exit_code => 0,
      p_source_count => 10, p_insert_count => 4, p_update_count => 3, p_delete_count => 2, p_duplicate_count => 1,
      p_rows_written => 9, p_target_count => 40, p_task_log => 'done', p_log_path => '/logs/a.log', p_retryable => 'N',
      p_offset_value => '2026-02-28', p_offset_type => 'DATE')$$,
  $$SELECT x.attempt_id, x.task_run_id, 'SUCCESS'::text, 'SUCCESS'::text, 1 FROM etl_craft.aud_task_attempts x
     WHERE x.attempt_id = (SELECT id FROM a)$$,
  'RUNNING -> SUCCESS for its owner; the task run reads SUCCESS');
SELECT results_eq(
  $$SELECT status, ended_at, lease_expires_at, owner_id, exit_code, source_count, insert_count, update_count, delete_count,
           duplicate_count, rows_written, target_count, error_message, task_log, log_path, retryable
      FROM etl_craft.aud_task_attempts WHERE attempt_id = (SELECT id FROM a)$$,
  $$VALUES ('SUCCESS'::varchar, '2026-03-01 12:00:45+00'::timestamptz, NULL::timestamptz, 'w1'::varchar, 0,
            10::bigint, 4::bigint, 3::bigint, 2::bigint, 1::bigint, 9::bigint, 40::bigint, NULL::text, 'done'::text,
            '/logs/a.log'::varchar, 'N'::varchar)$$,
  'the attempt records its ending, counts and messages; its lease is cleared, its owner kept');
SELECT results_eq(
  $$SELECT t.status, t.end_date, t.source_count, t.insert_count, t.update_count, t.delete_count, t.duplicate_count,
           t.rows_written, t.target_count, t.error_message, t.task_log, t.attempt_count
      FROM etl_craft.aud_task_run_log t JOIN etl_craft.aud_task_attempts x USING (task_run_id) WHERE x.attempt_id = (SELECT id FROM a)$$,
  $$VALUES ('SUCCESS'::varchar, '2026-03-01 12:00:45+00'::timestamptz, 10::bigint, 4::bigint, 3::bigint, 2::bigint,
            1::bigint, 9::bigint, 40::bigint, NULL::text, 'done'::text, 1)$$,
  'the task-run summary agrees with the attempt');
SELECT is((SELECT t.message FROM etl_craft.aud_task_run_log t JOIN etl_craft.aud_task_attempts x USING (task_run_id)
            WHERE x.attempt_id = (SELECT id FROM a)), NULL,
          'a SUCCESS clears the task run''s note of an earlier outcome (here an interrupt''s requeue)');
SELECT results_eq(
  $$SELECT o.offset_type, o.offset_value, o.task_run_id, o.attempt_id, o.stored_at FROM etl_craft.aud_task_offsets o
     WHERE o.task_id = (SELECT task_id FROM etl_craft.cfg_tasks WHERE task_code = 'load')$$,
  $$SELECT 'DATE'::varchar, '2026-02-28'::text, x.task_run_id, x.attempt_id, '2026-03-01 12:00:45+00'::timestamptz
      FROM etl_craft.aud_task_attempts x WHERE x.attempt_id = (SELECT id FROM a)$$,
  'the offset is stored with the SUCCESS');
SELECT results_eq(
  $$SELECT c.pipeline_run_id, c.task_run_id, c.pipeline_dependency_id, c.task_dependency_id, c.consumed_pipeline_run_id,
           c.consumed_task_run_id, c.consumed_revision, c.decision_id, c.consumed_at
      FROM etl_craft.aud_dependency_consumption c WHERE c.task_dependency_id IS NOT NULL$$,
  $$SELECT d.pipeline_run_id, d.task_run_id, NULL::bigint, d.task_dependency_id, d.selected_pipeline_run_id,
           d.selected_task_run_id, d.selected_revision, d.decision_id, '2026-03-01 12:00:45+00'::timestamptz
      FROM etl_craft.aud_gate_decisions d WHERE d.attempt_id = (SELECT id FROM a) AND d.result = 'SATISFIED'$$,
  'one consumption row for the SATISFIED task decision of this attempt, none for the UNSATISFIED one');

-- FAILED from CLAIMED: no offset, no consumption. The attempt is one of extract, which has the seed's offset: the
-- seed's attempt 1 of extract in manual:up1 (up_pl runs one run at a time), claimed by w1
CREATE TEMP TABLE f ON COMMIT DROP AS
SELECT x.attempt_id AS id FROM etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_run_log t USING (task_run_id)
  JOIN etl_craft.aud_pipelines_run_log r ON r.pipeline_run_id = t.pipeline_run_id WHERE r.run_key = 'manual:up1';
UPDATE etl_craft.aud_task_attempts SET status = 'CLAIMED', owner_id = 'w1', claimed_at = etl_craft.clock_now(),
       heartbeat_at = etl_craft.clock_now(), lease_expires_at = etl_craft.clock_now() + interval '60 seconds'
 WHERE attempt_id = (SELECT id FROM f);
INSERT INTO etl_craft.aud_gate_decisions
  (pipeline_run_id, task_run_id, attempt_id, task_dependency_id, selected_pipeline_run_id, selected_revision, result,
   reason, decided_at, decided_by, decided_by_kind)
SELECT t.pipeline_run_id, t.task_run_id, x.attempt_id, (SELECT task_dependency_id FROM etl_craft.cfg_task_dependency),
       (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'), 1, 'SATISFIED',
       'judged', etl_craft.clock_now(), 'etl-craft', 'SYSTEM'
  FROM etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_run_log t USING (task_run_id) WHERE x.attempt_id = (SELECT id FROM f);
SELECT results_eq(
  $$SELECT status, task_run_status FROM etl_craft.finish_attempt(p_attempt_id => (SELECT id FROM f), p_owner_id => 'w1',
      p_status => 'FAILED', p_error_message => 'relation main.t does not exist', p_retryable => 'Y',
      p_offset_value => '99', p_offset_type => 'INTEGER')$$,
  $$VALUES ('FAILED'::text, 'FAILED'::text)$$, 'CLAIMED -> FAILED; the task run reads FAILED');
SELECT is((SELECT t.error_message FROM etl_craft.aud_task_run_log t JOIN etl_craft.aud_task_attempts x USING (task_run_id)
            WHERE x.attempt_id = (SELECT id FROM f)), 'relation main.t does not exist', 'the summary carries the error');
SELECT is((SELECT offset_value FROM etl_craft.aud_task_offsets
            WHERE task_id = (SELECT t.task_id FROM etl_craft.aud_task_run_log t JOIN etl_craft.aud_task_attempts x USING (task_run_id)
                              WHERE x.attempt_id = (SELECT id FROM f))),
          '42', 'a FAILED attempt stores no offset: the seed''s offset of extract is unchanged (B6)');
SELECT is((SELECT count(*) FROM etl_craft.aud_dependency_consumption WHERE task_dependency_id IS NOT NULL), 1::bigint,
          'a FAILED attempt consumes nothing');

-- refusals
SELECT etl_test.attempts_refusals(
  $$SELECT * FROM etl_craft.finish_attempt(p_attempt_id => %s, p_owner_id => 'w1', p_status => 'SUCCESS')$$,
  ARRAY['QUEUED', 'SUCCESS', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'LOST'], 'EC020',
  'finish_attempt ends only a CLAIMED or RUNNING attempt');
CREATE TEMP TABLE theirs ON COMMIT DROP AS SELECT etl_test.attempts_in('RUNNING', 'w1') AS id;
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.finish_attempt(p_attempt_id => %s, p_owner_id => 'zombie', p_status => 'SUCCESS')$$, (SELECT id FROM theirs)),
  'EC020', 'attempt % is RUNNING owned by w1 (lease until %), expected CLAIMED or RUNNING owned by zombie; nothing was recorded%',
  'another owner cannot finish it (B8)');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.finish_attempt(p_attempt_id => %s, p_owner_id => 'w1', p_status => 'LOST')$$, (SELECT id FROM theirs)),
  'EC023', 'finish_attempt records SUCCESS or FAILED, not LOST;%', 'a status other than SUCCESS or FAILED is refused');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.finish_attempt(p_attempt_id => %s, p_owner_id => 'w1', p_status => 'SUCCESS',
                                                  p_offset_value => '1', p_offset_type => 'DAY')$$, (SELECT id FROM theirs)),
  'EC023', 'the offset 1 needs an offset_type of INTEGER, DECIMAL, TEXT, DATE, TIMESTAMP, not DAY;%',
  'a SUCCESS with an offset of no known type is refused');
-- B8: the reconciler loses the attempt; its owner, still alive, then reports SUCCESS with an offset
SELECT * FROM etl_craft.lose_attempt(p_attempt_id => (SELECT id FROM theirs), p_owner_id => 'w1');
SELECT etl_test.refused(
  format($$SELECT * FROM etl_craft.finish_attempt(p_attempt_id => %s, p_owner_id => 'w1', p_status => 'SUCCESS',
                                                  p_offset_value => '7', p_offset_type => 'INTEGER')$$, (SELECT id FROM theirs)),
  'EC020', 'attempt % is LOST owned by w1 (ended %), expected CLAIMED or RUNNING owned by w1;%',
  'a zombie finish after lose_attempt is refused (B8)');
SELECT results_eq(
  $$SELECT x.status, t.status, x.error_message = t.error_message FROM etl_craft.aud_task_attempts x
      JOIN etl_craft.aud_task_run_log t USING (task_run_id) WHERE x.attempt_id = (SELECT id FROM theirs)$$,
  $$VALUES ('LOST'::varchar, 'FAILED'::varchar, true)$$, 'and the lost attempt and its summary are as lose_attempt left them');
SELECT etl_test.refused(
  $$SELECT * FROM etl_craft.finish_attempt(p_attempt_id => 999999, p_owner_id => 'w1', p_status => 'SUCCESS')$$,
  'EC021', 'attempt 999999 does not exist;%', 'an unknown attempt is not found');

SELECT * FROM finish();
ROLLBACK;
