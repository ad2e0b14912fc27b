-- queue_attempt: one QUEUED attempt per task of an IN-PROGRESS run, after the task gate on other pipelines: the
-- task run is created or moved back to IN-PROGRESS, the attempt carries pool, slot kind, priority and requester, and
-- the decisions name it; a live attempt, a succeeded task without rerun, a run not IN-PROGRESS, a paused pipeline and
-- a task of another pipeline are refused with nothing written. A task run queued again drops the note of the outcome
-- it leaves (a skip's reason), and one that never had an attempt its START_DATE.
BEGIN;
SELECT plan(29);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.gates_fixture();
SELECT etl_test.gates_at('2026-01-02 06:00:00+00');
SELECT etl_test.gates_run('g_down', 'schedule:1');

-- 1-4: a task without edges to other pipelines: task run created, attempt 1 QUEUED in the task's pool.
SELECT is((SELECT row(attempt_number, outcome)::text FROM etl_craft.queue_attempt(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
             p_task_id => etl_test.gates_task('g_ingest'), p_not_before => timestamptz '2026-01-02 07:00:00+00',
             p_actor => 'overseer:1', p_actor_kind => 'SCHEDULE')),
          '(1,QUEUED)', 'the first attempt of a task is queued');
SELECT is((SELECT row(a.attempt_number, a.status, a.pool, a.slot_kind, a.priority, a.not_before, a.queued_at, a.owner_id,
                      a.requested_by, a.requested_by_kind)::text
             FROM etl_craft.aud_task_attempts a),
          (SELECT row(1, 'QUEUED', 'heavy', 'ingestion', 3, timestamptz '2026-01-02 07:00:00+00',
                      timestamptz '2026-01-02 06:00:00+00', NULL::text, 'overseer:1', 'SCHEDULE')::text),
          'the attempt: POOL parameter, ingestion slot for PYTHON, the pipeline''s priority, NOT_BEFORE, the requester');
SELECT is((SELECT row(t.status, t.attempt_count, t.start_date, t.end_date)::text FROM etl_craft.aud_task_run_log t),
          (SELECT row('IN-PROGRESS', 1, NULL::timestamptz, NULL::timestamptz)::text),
          'its task run is created IN-PROGRESS with ATTEMPT_COUNT 1, not started (START_DATE is its first start)');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_gate_decisions), 0, 'a task without edges to other pipelines records no decision');

-- 5-7: a live attempt (QUEUED, CLAIMED, RUNNING) refuses a second one (B1).
SELECT etl_test.refused($$ SELECT * FROM etl_craft.queue_attempt(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
                          p_task_id => etl_test.gates_task('g_ingest')) $$,
                        'EC020', 'task g_ingest of run % (task run %) already has attempt % QUEUED, queued at 2026-01-02 06:00:00 UTC, expected no live attempt; a task is queued once%',
                        'a QUEUED attempt refuses another (EC020)');
UPDATE etl_craft.aud_task_attempts SET status = 'CLAIMED', owner_id = 'host:1:a', claimed_at = etl_craft.clock_now();
SELECT etl_test.refused($$ SELECT * FROM etl_craft.queue_attempt(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
                          p_task_id => etl_test.gates_task('g_ingest')) $$,
                        'EC020', '%already has attempt % CLAIMED by host:1:a%', 'a CLAIMED attempt refuses another (EC020)');
UPDATE etl_craft.aud_task_attempts SET status = 'RUNNING';
SELECT etl_test.refused($$ SELECT * FROM etl_craft.queue_attempt(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
                          p_task_id => etl_test.gates_task('g_ingest'), p_rerun => true) $$,
                        'EC020', '%already has attempt % RUNNING by host:1:a%', 'a RUNNING attempt refuses another, even with rerun (EC020)');

-- 8-12: the task run's starting status: FAILED, SKIPPED and CANCELLED are queued again (attempt n + 1); SUCCESS
-- needs rerun; IN-PROGRESS without a live attempt is refused.
UPDATE etl_craft.aud_task_attempts SET status = 'FAILED', ended_at = etl_craft.clock_now();
UPDATE etl_craft.aud_task_run_log SET status = 'FAILED', end_date = etl_craft.clock_now();
SELECT is((SELECT row(attempt_number, outcome)::text FROM etl_craft.queue_attempt(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
             p_task_id => etl_test.gates_task('g_ingest'))),
          '(2,QUEUED)', 'a FAILED task run is queued again as attempt 2');
SELECT is((SELECT row(status, attempt_count, end_date)::text FROM etl_craft.aud_task_run_log), '(IN-PROGRESS,2,)',
          'and moved back to IN-PROGRESS with ATTEMPT_COUNT 2');
UPDATE etl_craft.aud_task_attempts SET status = 'CANCELLED', ended_at = etl_craft.clock_now() WHERE status = 'QUEUED';
SELECT etl_test.refused($$ SELECT * FROM etl_craft.queue_attempt(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
                          p_task_id => etl_test.gates_task('g_ingest')) $$,
                        'EC020', 'task g_ingest of run % (task run %) is IN-PROGRESS without a live attempt, expected FAILED, SKIPPED or CANCELLED%',
                        'an IN-PROGRESS task run without a live attempt is refused (EC020)');
-- each in a run of a twin of g_down of its own: schedule:1 is IN-PROGRESS, and a pipeline runs one run at a time
SELECT etl_test.gates_task_run(etl_test.gates_run(etl_test.gates_twin('g_down', 'g_down_' || lower(s)), 'k:' || s,
                                                  'IN-PROGRESS'), 'g_ingest', s)
  FROM unnest(ARRAY['SKIPPED', 'CANCELLED']) AS s;
SELECT is((SELECT string_agg(q.outcome || q.attempt_number, ',' ORDER BY s)
             FROM unnest(ARRAY['SKIPPED', 'CANCELLED']) AS s,
                  LATERAL etl_craft.queue_attempt(
                    p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'k:' || s),
                    p_task_id => etl_test.gates_task('g_ingest', 'g_down_' || lower(s))) q),
          'QUEUED2,QUEUED2', 'SKIPPED and CANCELLED task runs are queued again');
UPDATE etl_craft.aud_pipelines_run_log SET status = 'CANCELLED', end_date = etl_craft.clock_now() WHERE run_key LIKE 'k:%';
UPDATE etl_craft.aud_task_attempts SET status = 'CLAIMED', owner_id = 'w', claimed_at = etl_craft.clock_now()
 WHERE status = 'QUEUED';
UPDATE etl_craft.aud_task_attempts SET status = 'SUCCESS', ended_at = etl_craft.clock_now() WHERE status = 'CLAIMED';
UPDATE etl_craft.aud_task_run_log SET status = 'SUCCESS', end_date = etl_craft.clock_now();
SELECT etl_test.refused($$ SELECT * FROM etl_craft.queue_attempt(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
                          p_task_id => etl_test.gates_task('g_ingest')) $$,
                        'EC023', 'task g_ingest already succeeded in run % (task run %, ended 2026-01-02 06:00:00 UTC); pass rerun to run it again',
                        'a SUCCESS task run is refused without rerun (EC023)');

-- 13-14: with rerun it runs again.
SELECT is((SELECT row(attempt_number, outcome)::text FROM etl_craft.queue_attempt(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
             p_task_id => etl_test.gates_task('g_ingest'), p_rerun => true)),
          '(3,QUEUED)', 'rerun queues a succeeded task again as attempt 3');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_task_attempts a JOIN etl_craft.aud_task_run_log t USING (task_run_id)
            JOIN etl_craft.aud_pipelines_run_log r ON r.pipeline_run_id = t.pipeline_run_id WHERE r.run_key = 'schedule:1'), 3,
          'every attempt of the task run is kept');

-- 15-19: every run status but IN-PROGRESS is refused (EC020). The runs are of g_down's twin g_down_r: schedule:1
-- is IN-PROGRESS, and a pipeline runs one run at a time.
SELECT etl_test.gates_twin('g_down', 'g_down_r');
SELECT etl_test.refused(format($$ SELECT * FROM etl_craft.queue_attempt(
                          p_run_id => etl_test.gates_run('g_down_r', 'r:%s', %L),
                          p_task_id => etl_test.gates_task('g_build', 'g_down_r')) $$, s, s),
                        'EC020', 'run % is ' || s || ', expected IN-PROGRESS; only a run in progress queues tasks%',
                        'a run that is ' || s || ' queues no task (EC020)')
  FROM unnest(ARRAY['QUEUED', 'SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED']) AS s;

-- 20-22: a cancel request, a task of another pipeline, an unknown run.
SELECT etl_test.refused($$ UPDATE etl_craft.aud_pipelines_run_log SET cancel_requested_at = etl_craft.clock_now()
                             WHERE run_key = 'schedule:1';
                           SELECT * FROM etl_craft.queue_attempt(
                             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
                             p_task_id => etl_test.gates_task('g_build'), p_bypass_reason => 'x') $$,
                        'EC020', 'run % is IN-PROGRESS but being cancelled (requested at 2026-01-02 06:00:00 UTC), expected no cancel request%',
                        'a run being cancelled queues no task (EC020)');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.queue_attempt(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
                          p_task_id => etl_test.gates_task('g_extract')) $$,
                        'EC021', 'task % is not an active task of pipeline g_down (run %)%', 'a task of another pipeline is not found (EC021)');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.queue_attempt(p_run_id => 999, p_task_id => etl_test.gates_task('g_build')) $$,
                        'EC021', 'run 999 does not exist%', 'an unknown run is not found (EC021)');

-- 23: a paused pipeline starts no task.
SELECT etl_test.refused($$ SELECT etl_test.act('ops@host');  -- the pause records the actor of its transaction
                           INSERT INTO etl_craft.aud_pipeline_pauses (pipeline_id, paused_at, paused_by, paused_by_kind)
                             VALUES (etl_test.gates_pipeline('g_down'), etl_craft.clock_now(), 'ops@host', 'HUMAN');
                           SELECT * FROM etl_craft.queue_attempt(
                             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
                             p_task_id => etl_test.gates_task('g_build')) $$,
                        'EC023', 'pipeline g_down is paused since % by ops@host; a paused pipeline starts no task%',
                        'a paused pipeline starts no task (EC023)');

-- 24-25: g_build's edge on g_extract is unmet: nothing is queued, the decision has no attempt.
SELECT is((SELECT row(attempt_id, task_run_id, attempt_number, outcome, reason)::text FROM etl_craft.queue_attempt(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
             p_task_id => etl_test.gates_task('g_build'))),
          '(,,,UNSATISFIED,"dependencies not met: g_up.g_extract has no SUCCESS task run that is not a backfill (SUCCESS dependency)")',
          'an unmet task edge queues nothing and says why');
SELECT is((SELECT row(d.result, d.attempt_id, d.task_run_id, d.pipeline_dependency_id, d.task_dependency_id = td.task_dependency_id)::text
             FROM etl_craft.aud_gate_decisions d, etl_craft.cfg_task_dependency td),
          '(UNSATISFIED,,,,t)', 'the UNSATISFIED decision names the task edge, with no attempt and no task run');

-- 26-27: g_extract succeeds in a run of g_up: g_build is queued, and its decision names the attempt and the upstream.
SELECT etl_test.gates_task_run(etl_test.gates_run('g_up', 'schedule:u1'), 'g_extract', 'SUCCESS', 12);
SELECT is((SELECT row(attempt_number, outcome)::text FROM etl_craft.queue_attempt(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
             p_task_id => etl_test.gates_task('g_build'))),
          '(1,QUEUED)', 'a met task edge queues the attempt');
SELECT is((SELECT row(d.result, d.attempt_id = a.attempt_id, d.task_run_id = a.task_run_id,
                      d.selected_pipeline_run_id = u.pipeline_run_id, d.selected_task_run_id = ut.task_run_id,
                      d.selected_revision, a.pool, a.slot_kind)::text
             FROM etl_craft.aud_gate_decisions d
             JOIN etl_craft.aud_task_attempts a ON a.task_run_id = (SELECT task_run_id FROM etl_craft.aud_task_run_log
                                                                      WHERE task_id = etl_test.gates_task('g_build'))
             JOIN etl_craft.aud_pipelines_run_log u ON u.run_key = 'schedule:u1'
             JOIN etl_craft.aud_task_run_log ut ON ut.pipeline_run_id = u.pipeline_run_id
            WHERE d.result = 'SATISFIED'),
          '(SATISFIED,t,t,t,t,1,gpool,warehouse)',
          'the SATISFIED decision names the attempt, its task run, the upstream run, task run and revision');

-- 28-29: in a run of g_down's twin g_down_s, g_ingest was skipped (no attempt) and g_build failed (one attempt), each
-- with a note; queued again two hours later, neither keeps its note, and only g_build keeps its START_DATE.
SELECT etl_test.gates_twin('g_down', 'g_down_s');
SELECT etl_test.gates_run('g_down_s', 's:1');
SELECT etl_craft.skip_task_run(r.pipeline_run_id, etl_test.gates_task('g_ingest', 'g_down_s'), 'g_build ended FAILED')
  FROM etl_craft.aud_pipelines_run_log r WHERE r.run_key = 's:1';
SELECT etl_test.gates_task_run(pipeline_run_id, 'g_build', 'FAILED') FROM etl_craft.aud_pipelines_run_log
 WHERE run_key = 's:1';
UPDATE etl_craft.aud_task_run_log SET message = 'marked FAILED: bad file'
 WHERE task_id = etl_test.gates_task('g_build', 'g_down_s');
SELECT etl_test.gates_at('2026-01-02 08:00:00+00');
SELECT is((SELECT string_agg(q.outcome || q.attempt_number, ',' ORDER BY t)
             FROM unnest(ARRAY['g_build', 'g_ingest']) AS t,
                  LATERAL etl_craft.queue_attempt(
                    p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 's:1'),
                    p_task_id => etl_test.gates_task(t, 'g_down_s')) q),
          'QUEUED2,QUEUED1', 'the failed and the skipped task runs are queued again');
SELECT is((SELECT string_agg(row(k.task_code, t.status, t.start_date = timestamptz '2026-01-02 06:00:00+00',
                                  t.message)::text, ';' ORDER BY k.task_code)
             FROM etl_craft.aud_task_run_log t JOIN etl_craft.cfg_tasks k USING (task_id)
             JOIN etl_craft.aud_pipelines_run_log r USING (pipeline_run_id) WHERE r.run_key = 's:1'),
          '(g_build,IN-PROGRESS,t,);(g_ingest,IN-PROGRESS,,)',
          'queued again, a task run drops its old note; a skipped one (no attempt yet) its START_DATE too');

SELECT * FROM finish();
ROLLBACK;
