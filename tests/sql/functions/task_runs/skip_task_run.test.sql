-- Proves skip_task_run: a task without a task run gets one SKIPPED (message, dates, no attempt), once; an existing
-- SKIPPED task run is left as it is; every other status is refused with EC020 and keeps its outcome (B28: a FAILED
-- task keeps its error); a run not IN-PROGRESS is refused (EC020), an unknown run or a task of another pipeline is
-- not found (EC021); an operator's skip is recorded once as a SKIP intervention with its actor, the engine's is not.
BEGIN;
SELECT etl_test.serialize();
SELECT plan(16);

SELECT etl_test.act();
SELECT etl_test.ready_seed();
CREATE TEMP TABLE ids ON COMMIT DROP AS
SELECT etl_test.ready_run('manual:r1') AS r1, etl_test.ready_run('manual:q', 'QUEUED') AS q;

-- 3: the allowed transition, (none) -> SKIPPED, and exactly what it writes.
SELECT results_eq(
  $$SELECT status, created FROM etl_craft.skip_task_run((SELECT r1 FROM ids), etl_test.ready_task('b'), 'a failed',
                                                        p_actor => 'pgtap@test')$$,
  $$VALUES ('SKIPPED'::text, true)$$,
  'a task without a task run is skipped: SKIPPED, created = true');
SELECT results_eq(
  $$SELECT status::text, attempt_count, start_date, end_date, message, error_message, rows_written
      FROM etl_craft.aud_task_run_log WHERE pipeline_run_id = (SELECT r1 FROM ids) AND task_id = etl_test.ready_task('b')$$,
  $$VALUES ('SKIPPED'::text, 0, now(), now(), 'a failed'::text, NULL::text, NULL::bigint)$$,
  'the task run is SKIPPED with the reason as its message, START_DATE = END_DATE = now and no attempt');
SELECT is_empty('SELECT * FROM etl_craft.aud_run_interventions',
  'the engine''s skip records no intervention');

-- 3: a second skip returns the same row, created = false, and changes nothing.
CREATE TEMP TABLE before_again ON COMMIT DROP AS SELECT * FROM etl_craft.aud_task_run_log;
SELECT results_eq(
  $$SELECT task_run_id, status, created FROM etl_craft.skip_task_run((SELECT r1 FROM ids), etl_test.ready_task('b'),
                                                                     'again', p_actor => 'pgtap@test')$$,
  $$SELECT task_run_id, 'SKIPPED'::text, false FROM etl_craft.aud_task_run_log WHERE task_id = etl_test.ready_task('b')$$,
  'skipping a SKIPPED task run again returns it with created = false');
SELECT set_eq('SELECT * FROM etl_craft.aud_task_run_log', 'SELECT * FROM before_again',
  'a second skip leaves the SKIPPED task run exactly as it was');
SELECT is_empty('SELECT * FROM etl_craft.aud_run_interventions', 'a second engine skip records nothing either');

-- 3: the run must exist and be IN-PROGRESS, and the task must be of its pipeline.
SELECT etl_test.refused(
  format('SELECT * FROM etl_craft.skip_task_run(%s, %s, %L, p_actor => %L)', q, etl_test.ready_task('a'), 'x', 'pgtap@test'),
  'EC020', format('run %s is QUEUED, expected IN-PROGRESS; %%', q),
  'a task of a run that is not IN-PROGRESS is not skipped (EC020)') FROM ids;
SELECT etl_test.refused(
  format('SELECT * FROM etl_craft.skip_task_run(-1, %s, %L, p_actor => %L)', etl_test.ready_task('a'), 'x', 'pgtap@test'),
  'EC021', 'run -1 does not exist; %', 'an unknown run is not found (EC021)');
SELECT etl_test.refused(
  format('SELECT * FROM etl_craft.skip_task_run(%s, %s, %L, p_actor => %L)', r1, etl_test.ready_task('x'), 'x', 'pgtap@test'),
  'EC021', format('task %s is not a task of pipeline rp_pl, which run %s runs; %%', etl_test.ready_task('x'), r1),
  'a task of another pipeline is not found in the run (EC021)') FROM ids;

-- 2: an operator's skip is recorded as SKIP with the task run, the actor and the time; only once.
SELECT results_eq(
  $$SELECT status, created FROM etl_craft.skip_task_run((SELECT r1 FROM ids), etl_test.ready_task('c'), 'not today',
                                                        true, p_actor => 'ops@host', p_actor_kind => 'HUMAN')$$,
  $$VALUES ('SKIPPED'::text, true)$$,
  'an operator skips a task: SKIPPED, created = true');
DO $$ BEGIN
  PERFORM etl_craft.skip_task_run((SELECT r1 FROM ids), etl_test.ready_task('c'), 'twice', true, p_actor => 'ops@host');
END $$;
SELECT results_eq(
  $$SELECT pipeline_run_id, task_run_id, intervention::text, from_status, to_status, rows_written, reason,
           requested_by::text, requested_by_kind::text, requested_at
      FROM etl_craft.aud_run_interventions$$,
  $$SELECT (SELECT r1 FROM ids), task_run_id, 'SKIP'::text, NULL::varchar, 'SKIPPED'::varchar, NULL::bigint,
           'not today'::text, 'ops@host'::text, 'HUMAN'::text, now()
      FROM etl_craft.aud_task_run_log WHERE pipeline_run_id = (SELECT r1 FROM ids) AND task_id = etl_test.ready_task('c')$$,
  'the operator''s skip is one SKIP intervention (FROM_STATUS NULL: created) naming the task run and the actor');

-- 4: every other status of the task run is refused with EC020, naming the task run, its task, run and status.
-- r1 is done with: it ends, and r2 runs (a pipeline has one IN-PROGRESS run), its task runs in four statuses.
SELECT etl_test.ready_end('manual:r1');
CREATE TEMP TABLE run2 ON COMMIT DROP AS SELECT etl_test.ready_run('manual:r2') AS r2;
DO $$ BEGIN
  PERFORM etl_test.ready_task_run('manual:r2', 'a', 'FAILED'), etl_test.ready_task_run('manual:r2', 'b', 'IN-PROGRESS'),
          etl_test.ready_task_run('manual:r2', 'c', 'SUCCESS'), etl_test.ready_task_run('manual:r2', 'd', 'CANCELLED');
END $$;
SELECT etl_test.refused(
  format('SELECT * FROM etl_craft.skip_task_run(%s, %s, %L, p_actor => %L)', run2.r2, t.task_id, 'skip', 'pgtap@test'),
  'EC020',
  format('task run %s (task %s in run %s) is %s, expected no task run or SKIPPED; a skip never overwrites an outcome (%s)%%',
         t.task_run_id, k.task_code, run2.r2, t.status, CASE WHEN t.status = 'FAILED' THEN 'its error stays'
                                                              ELSE 'it keeps its status' END),
  format('a task run in status %s is never overwritten by SKIPPED (EC020)', t.status))
  FROM run2, etl_craft.aud_task_run_log t JOIN etl_craft.cfg_tasks k USING (task_id)
 WHERE t.pipeline_run_id = run2.r2 ORDER BY k.task_code;
-- 1: B28: the refused skip left the FAILED task run and its error alone.
SELECT results_eq(
  $$SELECT status::text, error_message FROM etl_craft.aud_task_run_log
     WHERE pipeline_run_id = (SELECT r2 FROM run2) AND task_id = etl_test.ready_task('a')$$,
  $$VALUES ('FAILED'::text, 'pgtap failure'::text)$$,
  'B28: the FAILED task run keeps its status and its error');

SELECT * FROM finish();
ROLLBACK;
