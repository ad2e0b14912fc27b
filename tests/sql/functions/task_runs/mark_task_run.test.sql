-- Proves mark_task_run: an operator sets SUCCESS, FAILED or SKIPPED on a task run in any status, or creates it;
-- it writes exactly the status, dates, message and ROWS_WRITTEN, and a MARK intervention with its actor. A live lease
-- of another process refuses the mark (EC023, B16); an expired one is marked LOST first, with the lost message on
-- the attempt and the task run; a QUEUED attempt is cancelled. A mark in an ended run reopens it (REOPEN, then
-- MARK), unless another run of the pipeline is active (EC023). Other statuses, QUEUED runs (EC023) and unknown
-- runs or tasks (EC021) are refused.
BEGIN;
SELECT etl_test.serialize();
SELECT plan(20);

SELECT etl_test.act();
SELECT etl_test.ready_seed();
CREATE TEMP TABLE ids ON COMMIT DROP AS
SELECT etl_test.ready_run('manual:r1') AS r1, etl_test.ready_run('manual:q', 'QUEUED') AS q;

-- 3: (none) -> SUCCESS: the task run is created with exactly what the mark says, and one MARK is recorded.
SELECT results_eq(
  $$SELECT status, run_status FROM etl_craft.mark_task_run((SELECT r1 FROM ids), etl_test.ready_task('a'), 'SUCCESS',
                                                           'loaded by hand', 42, p_actor => 'ops@host')$$,
  $$VALUES ('SUCCESS'::text, 'IN-PROGRESS'::text)$$,
  'a task without a task run is marked SUCCESS; the run stays IN-PROGRESS');
SELECT results_eq(
  $$SELECT status::text, attempt_count, start_date, end_date, message, error_message, rows_written, target_count
      FROM etl_craft.aud_task_run_log WHERE task_id = etl_test.ready_task('a')$$,
  $$VALUES ('SUCCESS'::text, 0, now(), now(), 'marked SUCCESS: loaded by hand'::text, NULL::text, 42::bigint,
            NULL::bigint)$$,
  'the created task run holds the status, START_DATE = END_DATE = now, the message and ROWS_WRITTEN');
SELECT results_eq(
  $$SELECT pipeline_run_id, task_run_id, attempt_id, intervention::text, from_status, to_status, rows_written, reason,
           requested_by::text, requested_by_kind::text, requested_at
      FROM etl_craft.aud_run_interventions$$,
  $$SELECT pipeline_run_id, task_run_id, NULL::bigint, 'MARK'::text, NULL::varchar, 'SUCCESS'::varchar, 42::bigint,
           'loaded by hand'::text, 'ops@host'::text, 'HUMAN'::text, now()
      FROM etl_craft.aud_task_run_log WHERE task_id = etl_test.ready_task('a')$$,
  'one MARK intervention: the task run, FROM_STATUS NULL (created), TO_STATUS, ROWS_WRITTEN, reason and actor');

-- 4: refused: a status other than SUCCESS, FAILED or SKIPPED, a QUEUED run, an unknown run.
SELECT etl_test.refused(
  format('SELECT * FROM etl_craft.mark_task_run(%s, %s, %L, %L, p_actor => %L)', r1, etl_test.ready_task('c'), s, 'x',
         'pgtap@test'),
  'EC023', format('mark_task_run sets SUCCESS, FAILED or SKIPPED, not %s; %%', s),
  format('mark_task_run refuses the status %s (EC023)', s))
  FROM ids, unnest(ARRAY['CANCELLED', 'IN-PROGRESS']) AS s;
SELECT etl_test.refused(
  format('SELECT * FROM etl_craft.mark_task_run(%s, %s, %L, %L, p_actor => %L)', q, etl_test.ready_task('c'), 'SUCCESS',
         'x', 'pgtap@test'),
  'EC023', format('run %s is QUEUED and has not started; %%', q),
  'a task of a QUEUED run is not marked (EC023)') FROM ids;
SELECT etl_test.refused(
  format('SELECT * FROM etl_craft.mark_task_run(-1, %s, %L, %L, p_actor => %L)', etl_test.ready_task('c'), 'SUCCESS', 'x',
         'pgtap@test'),
  'EC021', 'run -1 does not exist; %', 'an unknown run is not found (EC021)');

-- 3: B16: a live lease held by a process refuses the mark, naming the attempt, its owner and its lease.
CREATE TEMP TABLE live ON COMMIT DROP AS
SELECT etl_test.ready_attempt(etl_test.ready_task_run('manual:r1', 'c', 'IN-PROGRESS'), 'RUNNING', 'host:9:z',
                              now() + interval '1 hour') AS attempt_id;
SELECT etl_test.refused(
  format('SELECT * FROM etl_craft.mark_task_run(%s, %s, %L, %L, p_actor => %L)', r1, etl_test.ready_task('c'), 'FAILED',
         'hangs', 'pgtap@test'),
  'EC023',
  format('task c in run %s is being run: attempt %s is RUNNING by owner host:9:z whose lease runs until %s UTC; %%',
         r1, attempt_id, to_char((now() + interval '1 hour') AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')),
  'B16: a task whose attempt holds a live lease is not marked (EC023)') FROM ids, live;
UPDATE etl_craft.aud_task_attempts SET lease_expires_at = now() WHERE attempt_id = (SELECT attempt_id FROM live);
SELECT etl_test.refused(
  format('SELECT * FROM etl_craft.mark_task_run(%s, %s, %L, %L, p_actor => %L)', r1, etl_test.ready_task('c'), 'FAILED',
         'hangs', 'pgtap@test'),
  'EC023', 'task c in run % is being run: attempt %',
  'a lease expiring at this very instant is still live (EC023)') FROM ids;
SELECT etl_test.refused(
  format('SELECT * FROM etl_craft.mark_task_run(%s, %s, %L, %L, p_actor => %L)', r1, etl_test.ready_task('x'), 'FAILED',
         'x', 'pgtap@test'),
  'EC021', format('task %s is not a task of pipeline rp_pl, which run %s runs; %%', etl_test.ready_task('x'), r1),
  'a task of another pipeline is not found in the run (EC021)') FROM ids;

-- 3: once the lease has expired, the attempt is LOST first, with the lost message on it and on the task run.
UPDATE etl_craft.aud_task_attempts SET lease_expires_at = TIMESTAMPTZ '2026-01-01 07:00:00+00'
 WHERE attempt_id = (SELECT attempt_id FROM live);
SELECT results_eq(
  $$SELECT status FROM etl_craft.mark_task_run((SELECT r1 FROM ids), etl_test.ready_task('c'), 'FAILED', 'host died',
                                               p_actor => 'ops@host')$$,
  $$VALUES ('FAILED'::text)$$,
  'a task whose attempt''s lease expired is marked');
SELECT results_eq(
  'SELECT status::text, ended_at, error_message, owner_id::text FROM etl_craft.aud_task_attempts WHERE attempt_id = '
    || (SELECT attempt_id FROM live),
  format($$VALUES ('LOST'::text, now(), %L::text, 'host:9:z'::text)$$,
         'attempt ' || (SELECT attempt_id FROM live)
         || ' was lost: owner host:9:z stopped renewing its lease at 2026-01-01 07:00:00 UTC'),
  'the expired attempt is LOST, ended now, with the lost message naming its owner and lease');
SELECT results_eq(
  $$SELECT t.status::text, t.error_message, t.message, i.from_status::text
      FROM etl_craft.aud_task_run_log t JOIN etl_craft.aud_run_interventions i USING (task_run_id)
     WHERE t.pipeline_run_id = (SELECT r1 FROM ids) AND t.task_id = etl_test.ready_task('c')$$,
  format($$VALUES ('FAILED'::text, %L::text, 'marked FAILED: host died'::text, 'IN-PROGRESS'::text)$$,
         'attempt ' || (SELECT attempt_id FROM live)
         || ' was lost: owner host:9:z stopped renewing its lease at 2026-01-01 07:00:00 UTC'),
  'the task run is marked over its lost attempt: its ERROR_MESSAGE says how, MARK is recorded from IN-PROGRESS');

-- 2: a QUEUED attempt is cancelled by the mark.
CREATE TEMP TABLE queued ON COMMIT DROP AS
SELECT etl_test.ready_attempt(etl_test.ready_task_run('manual:r1', 'd', 'IN-PROGRESS'), 'QUEUED') AS attempt_id;
SELECT results_eq(
  $$SELECT status FROM etl_craft.mark_task_run((SELECT r1 FROM ids), etl_test.ready_task('d'), 'SKIPPED', 'not needed',
                                               p_actor => 'ops@host')$$,
  $$VALUES ('SKIPPED'::text)$$,
  'a task with a QUEUED attempt is marked');
SELECT results_eq(
  $$SELECT status::text, ended_at, error_message FROM etl_craft.aud_task_attempts
     WHERE attempt_id = (SELECT attempt_id FROM queued)$$,
  $$VALUES ('CANCELLED'::text, now(), 'cancelled before it started: the task was marked SKIPPED'::text)$$,
  'the QUEUED attempt of the marked task is CANCELLED, ended now, saying why');

-- 1: every starting status of a task run may be marked; FROM_STATUS records it; the error and TARGET_COUNT stay.
-- r1 is done with: it ends SUCCESS. The runs manual:m_<status> then run one after another: in each, task b's task
-- run is put in that status (ROWS_WRITTEN 3, TARGET_COUNT 100) and marked FAILED, and the run ends.
SELECT etl_test.ready_end('manual:r1');
DO $$
DECLARE
  v_status text;
  v_key text;
  v_task_run bigint;
BEGIN
  FOREACH v_status IN ARRAY ARRAY['IN-PROGRESS', 'SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED'] LOOP
    v_key := 'manual:m_' || lower(v_status);
    v_task_run := etl_test.ready_task_run(v_key, 'b', v_status, 3);
    UPDATE etl_craft.aud_task_run_log SET target_count = 100 WHERE task_run_id = v_task_run;
    PERFORM etl_craft.mark_task_run(etl_test.ready_run(v_key), etl_test.ready_task('b'), 'FAILED', 'by hand',
                                    p_actor => 'ops@host');
    PERFORM etl_test.ready_end(v_key);
  END LOOP;
END $$;
SELECT results_eq(
  $$SELECT r.run_key::text, t.status::text, t.end_date, t.message, t.error_message, t.rows_written, t.target_count,
           i.from_status::text, i.to_status::text
      FROM etl_craft.aud_task_run_log t JOIN etl_craft.aud_pipelines_run_log r USING (pipeline_run_id)
      JOIN etl_craft.aud_run_interventions i ON i.task_run_id = t.task_run_id
     WHERE r.run_key LIKE 'manual:m\_%' ORDER BY r.run_key$$,
  $$VALUES ('manual:m_cancelled'::text, 'FAILED'::text, now(), 'marked FAILED: by hand'::text, NULL::text, 3::bigint,
            100::bigint, 'CANCELLED'::text, 'FAILED'::text),
           ('manual:m_failed', 'FAILED', now(), 'marked FAILED: by hand', 'pgtap failure', 3, 100, 'FAILED', 'FAILED'),
           ('manual:m_in-progress', 'FAILED', now(), 'marked FAILED: by hand', NULL, 3, 100, 'IN-PROGRESS', 'FAILED'),
           ('manual:m_skipped', 'FAILED', now(), 'marked FAILED: by hand', NULL, 3, 100, 'SKIPPED', 'FAILED'),
           ('manual:m_success', 'FAILED', now(), 'marked FAILED: by hand', NULL, 3, 100, 'SUCCESS', 'FAILED')$$,
  'a task run in any status is marked: status, END_DATE and message set, error, ROWS_WRITTEN and TARGET_COUNT kept');

-- 4: a mark in an ended run reopens it: IN-PROGRESS, REPAIR_PENDING after SUCCESS, REOPEN then MARK recorded.
CREATE TEMP TABLE done ON COMMIT DROP AS SELECT etl_test.ready_run('manual:done') AS run_id;
DO $$ BEGIN
  PERFORM etl_test.ready_task_run('manual:done', 'a', 'FAILED');
  PERFORM etl_test.ready_end('manual:done');
  PERFORM etl_test.ready_end('manual:q', 'SKIPPED');
END $$;
SELECT results_eq(
  $$SELECT status, run_status FROM etl_craft.mark_task_run((SELECT run_id FROM done), etl_test.ready_task('a'),
                                                           'SUCCESS', 'fixed', p_actor => 'ops@host')$$,
  $$VALUES ('SUCCESS'::text, 'IN-PROGRESS'::text)$$,
  'a mark in an ended run reopens it: the run is IN-PROGRESS after the call');
SELECT results_eq(
  $$SELECT status::text, end_date, repair_pending::text, message FROM etl_craft.aud_pipelines_run_log
     WHERE pipeline_run_id = (SELECT run_id FROM done)$$,
  $$VALUES ('IN-PROGRESS'::text, NULL::timestamptz, 'Y'::text, 'reopened to mark task a SUCCESS: fixed'::text)$$,
  'the reopened run has no END_DATE and, as it had succeeded, REPAIR_PENDING = Y');
SELECT results_eq(
  $$SELECT intervention::text, task_run_id IS NULL, from_status::text, to_status::text, reason, requested_by::text
      FROM etl_craft.aud_run_interventions WHERE pipeline_run_id = (SELECT run_id FROM done) ORDER BY intervention_id$$,
  $$VALUES ('REOPEN'::text, true, 'SUCCESS'::text, 'IN-PROGRESS'::text, 'fixed'::text, 'ops@host'::text),
           ('MARK', false, 'FAILED', 'SUCCESS', 'fixed', 'ops@host')$$,
  'REOPEN (of the run) is recorded before MARK (of the task run), both with the actor');
SELECT etl_test.refused(
  format('SELECT * FROM etl_craft.mark_task_run(%s, %s, %L, %L, p_actor => %L)', r1, etl_test.ready_task('a'), 'FAILED',
         'x', 'pgtap@test'),
  'EC023',
  format('run %s has ended SUCCESS and marking a task reopens it, which is refused while run %s (manual:done) of the same pipeline is IN-PROGRESS; %%',
         r1, (SELECT run_id FROM done)),
  'a mark that would reopen a run is refused while another run of the pipeline is active (EC023)') FROM ids;

SELECT * FROM finish();
ROLLBACK;
