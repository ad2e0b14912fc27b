-- queue_attempts: the tasks a supervisor found ready together, queued in one call in the order of the list; a task
-- gated on another pipeline is left to queue_attempt (GATED, nothing written for it); a refusal for any task of the
-- list queues none of it.
BEGIN;
SELECT plan(9);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.gates_fixture();
SELECT etl_test.gates_at('2026-01-02 06:00:00+00');
INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file)
  VALUES (etl_test.gates_pipeline('g_down'), 'g_publish', 'SQL', 'OVERWRITE_TABLE', 'g_publish.sql');
SELECT etl_test.gates_run('g_down', 'schedule:1');

-- 1-4: g_publish and g_ingest queued in the order listed, g_build (a task edge on g_up) left GATED.
SELECT is((SELECT string_agg((SELECT c.task_code FROM etl_craft.cfg_tasks c WHERE c.task_id = q.task_id) || ':' || q.outcome || COALESCE(q.attempt_number::text, '-'), ','
                             ORDER BY o)
             FROM etl_craft.queue_attempts(
                    p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
                    p_task_ids => etl_test.gates_task('g_publish') || ', ' || etl_test.gates_task('g_build') || ','
                                  || etl_test.gates_task('g_ingest'),
                    p_actor => 'overseer:1', p_actor_kind => 'SCHEDULE') WITH ORDINALITY AS q(task_id, attempt_id, task_run_id,
                                                                              attempt_number, pool, slot_kind, outcome,
                                                                              reason, o)),
          'g_publish:QUEUED1,g_build:GATED-,g_ingest:QUEUED1', 'one row per listed task, in its order');
SELECT is((SELECT string_agg((SELECT c.task_code FROM etl_craft.cfg_tasks c WHERE c.task_id = t.task_id) || ':' || a.pool || ':' || a.slot_kind || ':' || a.priority
                             || ':' || a.requested_by, ',' ORDER BY a.attempt_id)
             FROM etl_craft.aud_task_attempts a JOIN etl_craft.aud_task_run_log t USING (task_run_id)),
          'g_publish:gpool:warehouse:3:overseer:1,g_ingest:heavy:ingestion:3:overseer:1',
          'the attempts carry pool, slot kind, priority and requester, numbered in the order of the list');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_task_run_log WHERE task_id = etl_test.gates_task('g_build')), 0,
          'the gated task has no task run: queue_attempt judges its gate');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_gate_decisions), 0, 'no decision is recorded');

-- 5-6: a live attempt of one task refuses the whole list.
SELECT etl_test.refused($$ SELECT * FROM etl_craft.queue_attempts(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
                          p_task_ids => etl_test.gates_task('g_build')::text || ',' || etl_test.gates_task('g_ingest')) $$,
                        'EC020', 'task g_ingest of run % (task run %) already has attempt % QUEUED, queued at 2026-01-02 06:00:00 UTC, expected no live attempt%',
                        'a live attempt of one task refuses the list (EC020)');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_task_attempts), 2, 'and nothing more is queued');

-- 7: FAILED task runs are queued again as their next attempt.
UPDATE etl_craft.aud_task_attempts SET status = 'FAILED', ended_at = etl_craft.clock_now();
UPDATE etl_craft.aud_task_run_log SET status = 'FAILED', end_date = etl_craft.clock_now();
SELECT is((SELECT string_agg(q.outcome || q.attempt_number, ',')
             FROM etl_craft.queue_attempts(
                    p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
                    p_task_ids => etl_test.gates_task('g_ingest') || ',' || etl_test.gates_task('g_publish')) q),
          'QUEUED2,QUEUED2', 'FAILED task runs are queued again as attempt 2');

-- 8-9: a list that is not a comma list of ids, and a task of another pipeline.
SELECT etl_test.refused($$ SELECT * FROM etl_craft.queue_attempts(p_run_id => 1, p_task_ids => '1,,2') $$,
                        'EC023', 'task_ids must be a comma list of task ids such as ''12,13'', not 1,,2%',
                        'a malformed list is refused (EC023)');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.queue_attempts(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
                          p_task_ids => etl_test.gates_task('g_extract')::text) $$,
                        'EC021', 'task % is not an active task of pipeline g_down (run %)%', 'a task of another pipeline is not found (EC021)');

SELECT * FROM finish();
ROLLBACK;
