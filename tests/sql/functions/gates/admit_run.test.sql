-- admit_run: a QUEUED run passes its pipeline gate (IN-PROGRESS, owner and lease) or stays QUEUED; every judged
-- dependency is recorded once, with the upstream run and revision it selected; other statuses, paused pipelines
-- and a sibling IN-PROGRESS run are refused with nothing written.
BEGIN;
SELECT plan(22);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.gates_fixture();
SELECT etl_test.gates_at('2026-01-02 06:00:00+00');

-- 1-3: no upstream run yet: the run stays QUEUED and the UNSATISFIED decision says why.
SELECT etl_test.gates_run('g_down', 'schedule:1', 'QUEUED');
SELECT is((SELECT row(status, satisfied, unsatisfied)::text FROM etl_craft.admit_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'))),
          '(QUEUED,0,1)', 'an unmet dependency leaves the run QUEUED');
SELECT is((SELECT row(result, reason, selected_pipeline_run_id, attempt_id)::text FROM etl_craft.aud_gate_decisions),
          '(UNSATISFIED,"g_up has no SUCCESS run that is not a backfill (SUCCESS dependency)",,)',
          'the UNSATISFIED decision names the upstream and the edge');
SELECT is((SELECT row(status, start_date, owner_id)::text FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
          '(QUEUED,,)', 'the queued run is unchanged');

-- 4-8: the upstream succeeds: the run is admitted with its owner and lease, and the decision names the upstream run.
SELECT etl_test.gates_run('g_up', 'schedule:u1', 'SUCCESS');
SELECT etl_test.gates_at('2026-01-02 06:05:00+00');
SELECT is((SELECT row(status, satisfied, unsatisfied)::text FROM etl_craft.admit_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
             p_owner_id => 'host:1:a', p_lease_seconds => 90, p_actor => 'overseer:1', p_actor_kind => 'SCHEDULE')),
          '(IN-PROGRESS,1,0)', 'a met dependency admits the run');
SELECT is((SELECT row(status, start_date, owner_id, lease_expires_at, heartbeat_at)::text
             FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
          (SELECT row('IN-PROGRESS', t, 'host:1:a', t + interval '90 seconds', t)::text
             FROM (SELECT timestamptz '2026-01-02 06:05:00+00' AS t) x),
          'the admitted run starts now, owned with a lease of lease_seconds');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_gate_decisions), 2, 'one decision per admission attempt');
SELECT is((SELECT row(d.result, d.selected_pipeline_run_id = u.pipeline_run_id, d.selected_task_run_id,
                      d.selected_revision, d.attempt_id, d.task_run_id, d.task_dependency_id,
                      d.pipeline_dependency_id = p.pipeline_dependency_id, d.decided_at, d.decided_by, d.decided_by_kind)::text
             FROM etl_craft.aud_gate_decisions d
             JOIN etl_craft.aud_pipelines_run_log u ON u.run_key = 'schedule:u1'
             JOIN etl_craft.cfg_pipeline_dependency p ON true
            WHERE d.result = 'SATISFIED'),
          (SELECT row('SATISFIED', true, NULL::bigint, 1, NULL::bigint, NULL::bigint, NULL::bigint, true,
                      timestamptz '2026-01-02 06:05:00+00', 'overseer:1', 'SCHEDULE')::text),
          'the SATISFIED decision selects the upstream run and its revision, decided by the actor');
SELECT matches((SELECT reason FROM etl_craft.aud_gate_decisions WHERE result = 'SATISFIED'),
               '^g_up run [0-9]+ revision 1 ended SUCCESS at 2026-01-02 06:00:00 UTC$', 'its reason names run, revision and end');

-- 9-14: every other starting status is refused (EC020), and nothing is written. The runs are of g_down's twin
-- g_down_k: schedule:1 is IN-PROGRESS, and a pipeline runs one run at a time.
SELECT etl_test.gates_twin('g_down', 'g_down_k');
SELECT etl_test.refused(format($$ SELECT * FROM etl_craft.admit_run(p_run_id => etl_test.gates_run('g_down_k', 'k:%s', %L)) $$,
                               s, s),
                        'EC020', 'run % is ' || s || ', expected QUEUED; only a queued run is admitted%',
                        'a run that is ' || s || ' is not admitted (EC020)')
  FROM unnest(ARRAY['IN-PROGRESS', 'SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED']) AS s;
SELECT etl_test.refused($$ SELECT * FROM etl_craft.admit_run(p_run_id => 999) $$,
                        'EC021', 'run 999 does not exist%', 'an unknown run is not found (EC021)');

-- 15-16: another IN-PROGRESS run of the pipeline (B23): refused, and that run is left alone.
SELECT etl_test.gates_run('g_down', 'schedule:2', 'QUEUED');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.admit_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:2')) $$,
                        'EC023', 'run % of pipeline g_down cannot be admitted while run % (schedule:1) of the same pipeline is IN-PROGRESS%',
                        'a sibling IN-PROGRESS run refuses the admission (EC023), naming it');
SELECT is((SELECT row(status, owner_id)::text FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
          '(IN-PROGRESS,host:1:a)', 'the sibling run keeps its status and owner');

-- 17-18: a paused pipeline starts no run (EC023).
UPDATE etl_craft.aud_pipelines_run_log SET status = 'SUCCESS', end_date = etl_craft.clock_now(), owner_id = NULL,
       lease_expires_at = NULL WHERE run_key = 'schedule:1';
SELECT etl_test.act('ops@host');  -- the pause records the actor its transaction is marked with
INSERT INTO etl_craft.aud_pipeline_pauses (pipeline_id, paused_at, paused_by, paused_by_kind, pause_reason)
  VALUES (etl_test.gates_pipeline('g_down'), etl_craft.clock_now(), 'ops@host', 'HUMAN', 'freeze');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.admit_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:2')) $$,
                        'EC023', 'pipeline g_down is paused since 2026-01-02 06:05:00 UTC by ops@host (freeze); a paused pipeline starts no run%',
                        'a paused pipeline starts no run (EC023)');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_gate_decisions), 2, 'refused calls record no decision');
DELETE FROM etl_craft.aud_pipeline_pauses;

-- 19-20: the upstream run was consumed by schedule:1; a backfill of g_up never feeds the gate (B4).
INSERT INTO etl_craft.aud_dependency_consumption
  (pipeline_run_id, pipeline_dependency_id, consumed_pipeline_run_id, consumed_revision, consumed_at)
  SELECT r.pipeline_run_id, d.pipeline_dependency_id, u.pipeline_run_id, 1, etl_craft.clock_now()
    FROM etl_craft.aud_pipelines_run_log r, etl_craft.aud_pipelines_run_log u, etl_craft.cfg_pipeline_dependency d
   WHERE r.run_key = 'schedule:1' AND u.run_key = 'schedule:u1';
SELECT etl_test.gates_run('g_up', 'backfill:u0', 'SUCCESS', 'BACKFILL');
SELECT is((SELECT row(status, unsatisfied)::text FROM etl_craft.admit_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:2'))),
          '(QUEUED,1)', 'a consumed upstream run and a backfill run leave the gate unmet');
SELECT matches((SELECT reason FROM etl_craft.aud_gate_decisions ORDER BY decision_id DESC LIMIT 1),
               '^g_up run [0-9]+ revision 1 was already consumed by run [0-9]+ at 2026-01-02 06:05:00 UTC; a newer run or a repair',
               'the reason names the consumed run, its revision and the consumer');

-- 21-22: bypass: every dependency BYPASSED with the reason given, and the run is admitted.
SELECT is((SELECT row(status, satisfied, unsatisfied)::text FROM etl_craft.admit_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:2'),
             p_bypass_reason => 'approved by ops')),
          '(IN-PROGRESS,1,0)', 'bypass_reason admits the run');
SELECT is((SELECT row(result, reason, selected_pipeline_run_id, selected_revision)::text FROM etl_craft.aud_gate_decisions
            ORDER BY decision_id DESC LIMIT 1),
          '(BYPASSED,"bypassed (SUCCESS dependency on g_up): approved by ops",,)',
          'and records the dependency BYPASSED with the reason, selecting nothing');

SELECT * FROM finish();
ROLLBACK;
