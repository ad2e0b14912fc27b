-- Gate waits (AUD_GATE_WAITS): with gate_wait_seconds > 0 a gate that is not met yet but may still be met (its
-- upstream has a non-backfill run QUEUED or IN-PROGRESS in which the upstream task has not ended) waits instead of
-- deciding: queue_attempt returns WAITING and admit_run leaves the run QUEUED, one open wait per (run, task) keeps
-- LOOKS, NEXT_CHECK_AT and WAIT_UNTIL, and no decision is recorded (B62: the decision is recorded when it is made).
-- The next look: the time left spread over ten looks without an average, else at 70%, 80%, ... of the upstream's
-- average duration after it started; never past WAIT_UNTIL. A look that does not wait closes the wait SATISFIED or
-- UNSATISFIED (the gate gave up) and records the decisions; ready_tasks leaves a waiting task out until its next
-- look; cancel_run and finalize_run close open waits ABANDONED. The clock is pinned: nothing sleeps.
BEGIN;
SET LOCAL TimeZone = 'UTC';  -- times compared as text below read +00
SELECT plan(50);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.gates_fixture();
SELECT etl_test.gates_at('2026-01-02 06:00:00+00');

-- g_down_w: a twin of g_down whose g_build also depends on g_up.g_extract (a task edge); g_down_p: a twin whose
-- runs pass a pipeline gate on g_up. Runs: d1 of g_down and w1 of g_down_w IN-PROGRESS, p1 of g_down_p QUEUED.
SELECT etl_test.gates_twin('g_down', 'g_down_w');
SELECT etl_test.gates_twin('g_down', 'g_down_p');
INSERT INTO etl_craft.cfg_task_dependency (task_id, depends_on_task_id)
  VALUES (etl_test.gates_task('g_build', 'g_down_w'), etl_test.gates_task('g_extract'));
INSERT INTO etl_craft.cfg_pipeline_dependency (pipeline_id, depends_on_pipeline_id)
  VALUES (etl_test.gates_pipeline('g_down_p'), etl_test.gates_pipeline('g_up'));
SELECT etl_test.gates_run('g_down', 'd1');
SELECT etl_test.gates_run('g_down_w', 'w1');
SELECT etl_test.gates_run('g_down_p', 'p1', 'QUEUED');

-- rk(key): the id of the run with that RUN_KEY (the keys of this suite are unique across its pipelines).
CREATE FUNCTION pg_temp.rk(p_key text) RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = p_key
$$;

-- 1-3: g_up has no run at all: nothing can meet the edge, so the gate does not wait, whatever gate_wait_seconds.
SELECT is((SELECT row(attempt_id, task_run_id, outcome, reason, next_check_at)::text FROM etl_craft.queue_attempt(
             p_run_id => pg_temp.rk('d1'), p_task_id => etl_test.gates_task('g_build'), p_gate_wait_seconds => 600)),
          '(,,UNSATISFIED,"dependencies not met: g_up.g_extract has no SUCCESS task run that is not a backfill (SUCCESS dependency)",)',
          'with no live upstream run the gate does not wait: UNSATISFIED at once, no next look');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_gate_waits), 0, 'and no wait is kept');
SELECT is((SELECT string_agg(result, ',') FROM etl_craft.aud_gate_decisions WHERE pipeline_run_id = pg_temp.rk('d1')),
          'UNSATISFIED', 'the UNSATISFIED decision is recorded as before');

-- 4-5: g_up's run u1 is queued: the edge may still be met, but gate_wait_seconds 0 never waits.
SELECT etl_test.gates_run('g_up', 'u1', 'QUEUED');
SELECT is((SELECT row(attempt_id, outcome, next_check_at)::text FROM etl_craft.queue_attempt(
             p_run_id => pg_temp.rk('d1'), p_task_id => etl_test.gates_task('g_build'), p_gate_wait_seconds => 0)),
          '(,UNSATISFIED,)', 'gate_wait_seconds 0 never waits, even while the upstream may still meet the edge');
SELECT is((SELECT row(count(*), (SELECT count(*) FROM etl_craft.aud_gate_waits))::text FROM etl_craft.aud_gate_decisions
            WHERE pipeline_run_id = pg_temp.rk('d1')),
          '(2,0)', 'it records its decision and keeps no wait');

-- 6-11: with gate_wait_seconds 600 the task gate waits (W1). No average yet: the 600 s left over ten looks, 60 s.
SELECT is((SELECT row(attempt_id, task_run_id, attempt_number, outcome, reason, next_check_at)::text
             FROM etl_craft.queue_attempt(p_run_id => pg_temp.rk('d1'), p_task_id => etl_test.gates_task('g_build'),
                                          p_gate_wait_seconds => 600)),
          (SELECT row(NULL::bigint, NULL::bigint, NULL::int, 'WAITING',
                      'waiting for its dependencies: g_up.g_extract has no SUCCESS task run that is not a backfill (SUCCESS dependency); look 1, next at 2026-01-02 06:01:00 UTC, waiting at most until 2026-01-02 06:10:00 UTC',
                      timestamptz '2026-01-02 06:01:00+00')::text),
          'a gate that may still be met waits: outcome WAITING, nothing queued, the next look and the deadline');
SELECT is((SELECT row(w.task_id = etl_test.gates_task('g_build'), w.looks, w.first_check_at, w.last_check_at,
                      w.next_check_at, w.wait_until, w.outcome, w.ended_at, w.waiting_for)::text
             FROM etl_craft.aud_gate_waits w WHERE w.pipeline_run_id = pg_temp.rk('d1')),
          (SELECT row(true, 1, t, t, t + interval '1 minute', t + interval '600 seconds', NULL::text,
                      NULL::timestamptz, 'g_up.g_extract has no SUCCESS task run that is not a backfill (SUCCESS dependency)')::text
             FROM (SELECT timestamptz '2026-01-02 06:00:00+00' AS t) x),
          'one open wait of (d1, g_build): LOOKS 1, first and last look now, WAIT_UNTIL now + gate_wait_seconds');
SELECT ok((SELECT w.next_check_at BETWEEN etl_craft.clock_now() + interval '1 second'
                                      AND etl_craft.clock_now() + interval '300 seconds'
             FROM etl_craft.aud_gate_waits w WHERE w.pipeline_run_id = pg_temp.rk('d1')),
          'the next look is between 1 s and 300 s away');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_gate_decisions WHERE pipeline_run_id = pg_temp.rk('d1')), 2,
          'a look that waits records no decision (B62)');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_task_run_log WHERE pipeline_run_id = pg_temp.rk('d1')), 0,
          'and creates no task run');
SELECT is((SELECT string_agg(task_code, ',' ORDER BY task_code) FROM etl_craft.ready_tasks(p_run_id => pg_temp.rk('d1'))),
          'g_ingest', 'ready_tasks leaves the waiting task out before its NEXT_CHECK_AT');

-- 12-13: W2, the task gate of w1, waits at most 90 s (next look in 9 s); W3, p1's pipeline gate, waits at most 150 s.
SELECT is((SELECT row(outcome, next_check_at)::text FROM etl_craft.queue_attempt(
             p_run_id => pg_temp.rk('w1'), p_task_id => etl_test.gates_task('g_build', 'g_down_w'),
             p_gate_wait_seconds => 90)),
          '(WAITING,"2026-01-02 06:00:09+00")', 'a 90 s wait looks again in 9 s');
SELECT is((SELECT row(status, satisfied, unsatisfied, next_check_at, reason)::text FROM etl_craft.admit_run(
             p_run_id => pg_temp.rk('p1'), p_gate_wait_seconds => 150)),
          (SELECT row('QUEUED', 0, 1, timestamptz '2026-01-02 06:00:15+00',
                      'waiting for its pipeline gate: g_up has no SUCCESS run that is not a backfill (SUCCESS dependency); look 1, next at 2026-01-02 06:00:15 UTC, waiting at most until 2026-01-02 06:02:30 UTC')::text),
          'a pipeline gate waits the same way through admit_run: the run stays QUEUED, with its next look and reason');

-- 14-15: the pipeline gate's wait has TASK_ID NULL, and no decision; the run is unchanged.
SELECT is((SELECT row(w.task_id, w.looks, w.next_check_at, w.wait_until, w.outcome)::text
             FROM etl_craft.aud_gate_waits w WHERE w.pipeline_run_id = pg_temp.rk('p1')),
          '(,1,"2026-01-02 06:00:15+00","2026-01-02 06:02:30+00",)', 'the pipeline gate''s open wait has TASK_ID NULL');
SELECT is((SELECT row(r.status, r.start_date, (SELECT count(*) FROM etl_craft.aud_gate_decisions d
                                                WHERE d.pipeline_run_id = r.pipeline_run_id))::text
             FROM etl_craft.aud_pipelines_run_log r WHERE r.run_key = 'p1'),
          '(QUEUED,,0)', 'the waiting run stays QUEUED, not started, and no decision is recorded');

-- 16-19: at 06:01, W1's NEXT_CHECK_AT, ready_tasks returns g_build again; the second look keeps the first look and
-- the deadline (a different gate_wait_seconds does not move it) and spreads the 540 s left over the 9 looks left.
SELECT etl_test.gates_at('2026-01-02 06:01:00+00');
SELECT is((SELECT string_agg(task_code, ',' ORDER BY task_code) FROM etl_craft.ready_tasks(p_run_id => pg_temp.rk('d1'))),
          'g_build,g_ingest', 'ready_tasks returns the waiting task once its NEXT_CHECK_AT has come');
SELECT is((SELECT row(outcome, next_check_at)::text FROM etl_craft.queue_attempt(
             p_run_id => pg_temp.rk('d1'), p_task_id => etl_test.gates_task('g_build'), p_gate_wait_seconds => 30)),
          '(WAITING,"2026-01-02 06:02:00+00")', 'a second look before the deadline waits again');
SELECT is((SELECT row(count(*), min(w.looks), min(w.first_check_at), min(w.last_check_at), min(w.wait_until))::text
             FROM etl_craft.aud_gate_waits w WHERE w.pipeline_run_id = pg_temp.rk('d1')),
          '(1,2,"2026-01-02 06:00:00+00","2026-01-02 06:01:00+00","2026-01-02 06:10:00+00")',
          'the same wait: LOOKS 2, FIRST_CHECK_AT and WAIT_UNTIL kept, LAST_CHECK_AT now');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_gate_decisions WHERE pipeline_run_id = pg_temp.rk('d1')), 2,
          'the second look records no decision either');

-- 20-22: at 06:01:30, W2's WAIT_UNTIL, its look gives up: UNSATISFIED, the wait closed, the decision recorded.
SELECT etl_test.gates_at('2026-01-02 06:01:30+00');
SELECT is((SELECT row(attempt_id, outcome, reason, next_check_at)::text FROM etl_craft.queue_attempt(
             p_run_id => pg_temp.rk('w1'), p_task_id => etl_test.gates_task('g_build', 'g_down_w'),
             p_gate_wait_seconds => 90)),
          '(,UNSATISFIED,"dependencies not met: g_up.g_extract has no SUCCESS task run that is not a backfill (SUCCESS dependency); the gate waited from 2026-01-02 06:00:00 UTC until its deadline 2026-01-02 06:01:30 UTC (Gate_wait_minutes)",)',
          'past WAIT_UNTIL the look does not wait: UNSATISFIED, and the reason says the gate gave up');
SELECT is((SELECT row(w.outcome, w.ended_at, w.next_check_at, w.looks, w.last_check_at)::text
             FROM etl_craft.aud_gate_waits w WHERE w.pipeline_run_id = pg_temp.rk('w1')),
          '(UNSATISFIED,"2026-01-02 06:01:30+00",,2,"2026-01-02 06:01:30+00")',
          'the wait is closed UNSATISFIED: ENDED_AT now, no next look');
SELECT is((SELECT row(d.result, d.decided_at)::text FROM etl_craft.aud_gate_decisions d
            WHERE d.pipeline_run_id = pg_temp.rk('w1')),
          '(UNSATISFIED,"2026-01-02 06:01:30+00")', 'and the UNSATISFIED decision is recorded when the gate gives up');

-- Earlier g_up runs give an average: h1 and h2 FAILED (no candidate for the SUCCESS edges), their runs and their
-- g_extract task runs lasting 100 s and 300 s: 200 s on average. Then u1 starts, and g_extract in it, at 06:01:30.
CREATE FUNCTION pg_temp.ended_upstream(p_key text, p_start timestamptz, p_seconds int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_run bigint;
BEGIN
  INSERT INTO etl_craft.aud_pipelines_run_log
    (pipeline_id, run_key, trigger_kind, run_date, status, queued_at, start_date, started_by, started_by_kind)
  VALUES (etl_test.gates_pipeline('g_up'), p_key, 'MANUAL', DATE '2026-01-01', 'IN-PROGRESS', p_start, p_start,
          'pgtap@test', 'HUMAN')
  RETURNING pipeline_run_id INTO v_run;
  INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status, attempt_count, start_date)
  VALUES (v_run, etl_test.gates_task('g_extract'), 'IN-PROGRESS', 1, p_start);
  UPDATE etl_craft.aud_task_run_log SET status = 'FAILED', end_date = p_start + make_interval(secs => p_seconds)
   WHERE pipeline_run_id = v_run;
  UPDATE etl_craft.aud_pipelines_run_log SET status = 'FAILED', end_date = p_start + make_interval(secs => p_seconds),
         ended_by = 'pgtap@test', ended_by_kind = 'HUMAN'
   WHERE pipeline_run_id = v_run;
END
$$;
SELECT pg_temp.ended_upstream('h1', '2026-01-01 05:00:00+00', 100);
SELECT pg_temp.ended_upstream('h2', '2026-01-01 05:10:00+00', 300);
UPDATE etl_craft.aud_pipelines_run_log SET status = 'IN-PROGRESS', start_date = etl_craft.clock_now() WHERE run_key = 'u1';
SELECT etl_test.gates_task_run(pg_temp.rk('u1'), 'g_extract', 'IN-PROGRESS');

-- 23-24: at 06:02 (30 s after g_extract started) W1's next look is at 70% of the 200 s average after it started.
SELECT etl_test.gates_at('2026-01-02 06:02:00+00');
SELECT is((SELECT next_check_at FROM etl_craft.queue_attempt(
             p_run_id => pg_temp.rk('d1'), p_task_id => etl_test.gates_task('g_build'), p_gate_wait_seconds => 600)),
          timestamptz '2026-01-02 06:01:30+00' + 0.7 * interval '200 seconds',
          'with an average the next look is at 70% of it after the upstream started (06:03:50)');
SELECT is((SELECT row(w.looks, w.next_check_at)::text FROM etl_craft.aud_gate_waits w
            WHERE w.pipeline_run_id = pg_temp.rk('d1')),
          '(3,"2026-01-02 06:03:50+00")', 'the wait keeps that look: LOOKS 3');

-- 25-26: the pipeline gate's next look (70% of g_up's 200 s average run: 06:03:50) is cut to its WAIT_UNTIL.
SELECT is((SELECT row(status, next_check_at)::text FROM etl_craft.admit_run(
             p_run_id => pg_temp.rk('p1'), p_gate_wait_seconds => 150)),
          '(QUEUED,"2026-01-02 06:02:30+00")', 'a next look is never past WAIT_UNTIL');
SELECT is((SELECT row(w.looks, w.next_check_at, w.wait_until)::text FROM etl_craft.aud_gate_waits w
            WHERE w.pipeline_run_id = pg_temp.rk('p1')),
          '(2,"2026-01-02 06:02:30+00","2026-01-02 06:02:30+00")', 'the pipeline gate''s wait: LOOKS 2, next look at the deadline');

-- 27-29: g_build failed in w1 and g_ingest succeeded; queuing g_build again waits (W4) on the existing task run.
SELECT etl_test.gates_task_run(pg_temp.rk('w1'), 'g_build', 'FAILED');
SELECT etl_test.gates_task_run(pg_temp.rk('w1'), 'g_ingest', 'SUCCESS');
SELECT is((SELECT row(attempt_id, task_run_id = (SELECT task_run_id FROM etl_craft.aud_task_run_log
                                                   WHERE pipeline_run_id = pg_temp.rk('w1')
                                                     AND task_id = etl_test.gates_task('g_build', 'g_down_w')),
                      outcome, next_check_at)::text
             FROM etl_craft.queue_attempt(p_run_id => pg_temp.rk('w1'),
                                          p_task_id => etl_test.gates_task('g_build', 'g_down_w'),
                                          p_gate_wait_seconds => 600)),
          '(,t,WAITING,"2026-01-02 06:03:50+00")', 'a retry of a failed task waits too, naming its task run');
SELECT is((SELECT row(tr.status, tr.attempt_count, (SELECT count(*) FROM etl_craft.aud_task_attempts a
                                                     WHERE a.task_run_id = tr.task_run_id))::text
             FROM etl_craft.aud_task_run_log tr
            WHERE tr.pipeline_run_id = pg_temp.rk('w1') AND tr.task_id = etl_test.gates_task('g_build', 'g_down_w')),
          '(FAILED,1,0)', 'the waiting task run stays FAILED, with no attempt queued');
SELECT is((SELECT string_agg(coalesce(outcome, 'open'), ',' ORDER BY gate_wait_id) FROM etl_craft.aud_gate_waits
            WHERE pipeline_run_id = pg_temp.rk('w1')),
          'UNSATISFIED,open', 'a new wait opens beside the closed one');

-- 30-33: cancel_run ends the queued run p1 and closes its open wait ABANDONED, and only its own.
SELECT is((SELECT status FROM etl_craft.cancel_run(p_run_id => pg_temp.rk('p1'), p_reason => 'not needed')), 'CANCELLED',
          'cancel_run ends the waiting QUEUED run');
SELECT is((SELECT row(w.outcome, w.ended_at, w.next_check_at, w.looks)::text FROM etl_craft.aud_gate_waits w
            WHERE w.pipeline_run_id = pg_temp.rk('p1')),
          '(ABANDONED,"2026-01-02 06:02:00+00",,2)', 'its open wait ends ABANDONED: ENDED_AT now, no next look');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_gate_decisions WHERE pipeline_run_id = pg_temp.rk('p1')), 0,
          'an abandoned wait decided nothing');
SELECT is((SELECT string_agg(r.run_key, ',' ORDER BY r.run_key) FROM etl_craft.aud_gate_waits w
             JOIN etl_craft.aud_pipelines_run_log r USING (pipeline_run_id) WHERE w.ended_at IS NULL),
          'd1,w1', 'the open waits of other runs are left alone');

-- 34-35: finalize_run ends w1 (its tasks settled: g_build FAILED, g_ingest SUCCESS) and closes W4 ABANDONED.
SELECT is((SELECT status FROM etl_craft.finalize_run(p_run_id => pg_temp.rk('w1'))), 'FAILED',
          'finalize_run ends the run whose task waits');
SELECT is((SELECT string_agg(w.outcome || ' ' || coalesce(w.next_check_at::text, 'none') || ' '
                             || coalesce(w.ended_at::text, 'open'), ',' ORDER BY w.gate_wait_id)
             FROM etl_craft.aud_gate_waits w WHERE w.pipeline_run_id = pg_temp.rk('w1')),
          'UNSATISFIED none 2026-01-02 06:01:30+00,ABANDONED none 2026-01-02 06:02:00+00',
          'its open wait ends ABANDONED; the one that had ended is unchanged');

-- 36-37: at 06:03:50 (70%) W1 looks again: the next look at 80% of the average after the upstream started.
SELECT etl_test.gates_at('2026-01-02 06:03:50+00');
SELECT is((SELECT row(outcome, next_check_at)::text FROM etl_craft.queue_attempt(
             p_run_id => pg_temp.rk('d1'), p_task_id => etl_test.gates_task('g_build'), p_gate_wait_seconds => 600)),
          (SELECT row('WAITING', timestamptz '2026-01-02 06:01:30+00' + 0.8 * interval '200 seconds')::text),
          'the look at 70% of the average waits for the one at 80% (06:04:10)');
SELECT is((SELECT looks FROM etl_craft.aud_gate_waits WHERE pipeline_run_id = pg_temp.rk('d1')), 4, 'LOOKS 4');

-- 38-43: g_extract succeeds in u1 at 06:04:10: the next look queues g_build, closes W1 SATISFIED and records the
-- SATISFIED decision, naming the attempt, at the time it is made.
SELECT etl_test.gates_at('2026-01-02 06:04:10+00');
UPDATE etl_craft.aud_task_run_log SET status = 'SUCCESS', rows_written = 5, end_date = etl_craft.clock_now()
 WHERE pipeline_run_id = pg_temp.rk('u1');
SELECT is((SELECT row(attempt_number, outcome, next_check_at)::text FROM etl_craft.queue_attempt(
             p_run_id => pg_temp.rk('d1'), p_task_id => etl_test.gates_task('g_build'), p_gate_wait_seconds => 600)),
          '(1,QUEUED,)', 'once the upstream has succeeded the next look queues the attempt');
SELECT is((SELECT row(w.outcome, w.ended_at, w.next_check_at, w.looks, w.first_check_at, w.wait_until)::text
             FROM etl_craft.aud_gate_waits w WHERE w.pipeline_run_id = pg_temp.rk('d1')),
          '(SATISFIED,"2026-01-02 06:04:10+00",,5,"2026-01-02 06:00:00+00","2026-01-02 06:10:00+00")',
          'the wait is closed SATISFIED at that look');
SELECT is((SELECT string_agg(d.result, ',' ORDER BY d.decision_id) FROM etl_craft.aud_gate_decisions d
            WHERE d.pipeline_run_id = pg_temp.rk('d1')),
          'UNSATISFIED,UNSATISFIED,SATISFIED', 'the looks that waited recorded nothing; the one that decided recorded its decision');
SELECT is((SELECT row(d.decided_at, d.attempt_id = a.attempt_id, d.task_run_id = a.task_run_id,
                      d.selected_pipeline_run_id = pg_temp.rk('u1'), d.selected_task_run_id = ut.task_run_id,
                      d.selected_revision)::text
             FROM etl_craft.aud_gate_decisions d
             JOIN etl_craft.aud_task_run_log dt ON dt.pipeline_run_id = pg_temp.rk('d1')
                                                 AND dt.task_id = etl_test.gates_task('g_build')
             JOIN etl_craft.aud_task_attempts a ON a.task_run_id = dt.task_run_id
             JOIN etl_craft.aud_task_run_log ut ON ut.pipeline_run_id = pg_temp.rk('u1')
            WHERE d.result = 'SATISFIED'),
          '("2026-01-02 06:04:10+00",t,t,t,t,1)',
          'the SATISFIED decision is made now and names the attempt, its task run and the upstream run, task run and revision');
SELECT is((SELECT string_agg(r.run_key || ':' || w.outcome, ',' ORDER BY w.gate_wait_id) FROM etl_craft.aud_gate_waits w
             JOIN etl_craft.aud_pipelines_run_log r USING (pipeline_run_id)),
          'd1:SATISFIED,w1:UNSATISFIED,p1:ABANDONED,w1:ABANDONED', 'every wait has ended, each with its outcome');
SELECT is((SELECT string_agg(task_code, ',' ORDER BY task_code) FROM etl_craft.ready_tasks(p_run_id => pg_temp.rk('d1'))),
          'g_ingest', 'the queued task has left the ready set');

-- 44-46: an edge that is met never waits, though its upstream has another run in progress (u2 of g_up).
SELECT etl_test.gates_twin('g_down', 'g_down_b');
INSERT INTO etl_craft.cfg_task_dependency (task_id, depends_on_task_id)
  VALUES (etl_test.gates_task('g_build', 'g_down_b'), etl_test.gates_task('g_extract'));
SELECT etl_test.gates_run('g_down_b', 'b1');
UPDATE etl_craft.aud_pipelines_run_log SET status = 'SUCCESS', end_date = etl_craft.clock_now(), ended_by = 'pgtap@test',
       ended_by_kind = 'HUMAN' WHERE run_key = 'u1';
SELECT etl_test.gates_run('g_up', 'u2');
SELECT is((SELECT outcome FROM etl_craft.queue_attempt(
             p_run_id => pg_temp.rk('b1'), p_task_id => etl_test.gates_task('g_build', 'g_down_b'),
             p_gate_wait_seconds => 600)),
          'QUEUED', 'a met edge never waits, though the upstream has another run in progress');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_gate_waits WHERE pipeline_run_id = pg_temp.rk('b1')), 0,
          'and keeps no wait');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_gate_waits WHERE ended_at IS NULL), 0, 'no wait is left open');

-- 47-50: g_down_f's g_build depends on g_extract of g_up2 (a twin of g_up) whose only run, v1, is in progress:
-- its gate waits. An operator's skip of the task ends the wait ABANDONED; a rerun with --ignore-dependencies
-- in another run of it ends that run's wait BYPASSED.
SELECT etl_test.gates_twin('g_up', 'g_up2');
SELECT etl_test.gates_twin('g_down', 'g_down_f');
INSERT INTO etl_craft.cfg_task_dependency (task_id, depends_on_task_id)
  VALUES (etl_test.gates_task('g_build', 'g_down_f'), etl_test.gates_task('g_extract', 'g_up2'));
SELECT etl_test.gates_run('g_up2', 'v1');
SELECT etl_test.gates_run('g_down_f', 'f1');
SELECT is((SELECT outcome FROM etl_craft.queue_attempt(
             p_run_id => pg_temp.rk('f1'), p_task_id => etl_test.gates_task('g_build', 'g_down_f'),
             p_gate_wait_seconds => 600)),
          'WAITING', 'an unmet edge whose upstream is in progress waits');
SELECT etl_craft.skip_task_run(p_run_id => pg_temp.rk('f1'), p_task_id => etl_test.gates_task('g_build', 'g_down_f'),
                               p_reason => 'not today', p_by_operator => true);
SELECT is((SELECT row(outcome, next_check_at IS NULL)::text FROM etl_craft.aud_gate_waits
            WHERE pipeline_run_id = pg_temp.rk('f1')),
          '(ABANDONED,t)', 'an operator''s skip of the waiting task ends its wait ABANDONED');
UPDATE etl_craft.aud_pipelines_run_log SET status = 'SUCCESS', end_date = etl_craft.clock_now(), ended_by = 'pgtap@test',
       ended_by_kind = 'HUMAN' WHERE run_key = 'f1';
SELECT etl_test.gates_run('g_down_f', 'f2');
SELECT is((SELECT outcome FROM etl_craft.queue_attempt(
             p_run_id => pg_temp.rk('f2'), p_task_id => etl_test.gates_task('g_build', 'g_down_f'),
             p_gate_wait_seconds => 600)),
          'WAITING', 'the next run of it waits too');
SELECT etl_craft.queue_attempt(p_run_id => pg_temp.rk('f2'), p_task_id => etl_test.gates_task('g_build', 'g_down_f'),
                               p_gate_wait_seconds => 600, p_bypass_reason => 'operator: run it anyway');
SELECT is((SELECT row(w.outcome, (SELECT count(*) FROM etl_craft.aud_task_attempts a
                                    JOIN etl_craft.aud_task_run_log t USING (task_run_id)
                                   WHERE t.pipeline_run_id = pg_temp.rk('f2')))::text
             FROM etl_craft.aud_gate_waits w WHERE w.pipeline_run_id = pg_temp.rk('f2')),
          '(BYPASSED,1)', 'a bypass queues the attempt and ends the wait BYPASSED, not SATISFIED');

SELECT * FROM finish();
ROLLBACK;
