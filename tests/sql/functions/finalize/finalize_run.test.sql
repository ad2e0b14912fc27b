-- finalize_run: an IN-PROGRESS run whose tasks have all settled ends with the status its task runs give, its SLA
-- decided once, a repair's new revision and the consumption of its recorded SATISFIED decisions, all at once; live
-- attempts, unsettled tasks, other starting statuses and another owner's live lease are refused with nothing written.
BEGIN;
SELECT plan(21);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.gates_fixture();
SELECT etl_test.gates_at('2026-01-02 06:00:00+00');

-- The downstream run was admitted on g_up's run schedule:u1 (revision 1), then g_up was repaired (revision 2).
SELECT etl_test.gates_run('g_up', 'schedule:u1', 'SUCCESS');
SELECT etl_test.gates_run('g_down', 'schedule:1', 'QUEUED');
SELECT * FROM etl_craft.admit_run(
  p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'), p_owner_id => 'host:1:a');
UPDATE etl_craft.aud_pipelines_run_log SET output_revision = 2 WHERE run_key = 'schedule:u1';

-- 1-2: live attempts are refused (B24), naming each.
SELECT etl_test.gates_attempt(etl_test.gates_task_run(
  (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'), 'g_build', 'IN-PROGRESS'),
  'RUNNING', 'host:9:z');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.finalize_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1')) $$,
                        'EC023', 'run % cannot be finalized while attempt % of task g_build is RUNNING by host:9:z (lease until 2026-01-02 06:01:00 UTC); wait for them to end%',
                        'a RUNNING attempt refuses the finalization (EC023)');
UPDATE etl_craft.aud_task_attempts SET status = 'SUCCESS', ended_at = etl_craft.clock_now();
UPDATE etl_craft.aud_task_run_log SET status = 'SUCCESS', end_date = etl_craft.clock_now(), rows_written = 3;
SELECT etl_test.gates_attempt(etl_test.gates_task_run(
  (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'), 'g_ingest', 'IN-PROGRESS'),
  'QUEUED');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.finalize_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1')) $$,
                        'EC023', 'run % cannot be finalized while attempt % of task g_ingest is QUEUED; wait for them%',
                        'a QUEUED attempt refuses the finalization too (EC023)');

-- 3: an unsettled task is refused (B25).
UPDATE etl_craft.aud_task_attempts SET status = 'CANCELLED', ended_at = etl_craft.clock_now() WHERE status = 'QUEUED';
SELECT etl_test.refused($$ SELECT * FROM etl_craft.finalize_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1')) $$,
                        'EC023', 'run % cannot be finalized: task(s) g_ingest (IN-PROGRESS) have not settled%',
                        'an unsettled task refuses the finalization (EC023)');

-- 4-5: another owner's live lease is refused (EC020).
UPDATE etl_craft.aud_task_run_log SET status = 'SKIPPED', end_date = etl_craft.clock_now()
 WHERE task_id = etl_test.gates_task('g_ingest');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.finalize_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
                          p_owner_id => 'host:2:b') $$,
                        'EC020', 'run % is supervised by host:1:a (lease until 2026-01-02 06:01:00 UTC), expected host:2:b%',
                        'a wrong owner is refused while the lease lives (EC020)');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_dependency_consumption), 0, 'refused calls consume nothing');

-- 6-9: the allowed transition: SUCCESS, SLA MET, owner released, the recorded decision consumed (revision 1).
SELECT etl_test.gates_at('2026-01-02 06:45:00+00');
SELECT is((SELECT row(status, sla_status, output_revision, consumed)::text FROM etl_craft.finalize_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
             p_owner_id => 'host:1:a', p_actor => 'etl-craft', p_actor_kind => 'SYSTEM')),
          '(SUCCESS,MET,1,1)', 'a settled run ends SUCCESS within its SLA and consumes its decision');
SELECT is((SELECT row(status, end_date, ended_by, ended_by_kind, owner_id, lease_expires_at, sla_status, repair_pending)::text
             FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'),
          (SELECT row('SUCCESS', timestamptz '2026-01-02 06:45:00+00', 'etl-craft', 'SYSTEM', NULL::text, NULL::timestamptz,
                      'MET', 'N')::text),
          'the run row: ended now by the actor, owner and lease cleared');
SELECT is((SELECT row(c.pipeline_run_id = r.pipeline_run_id, c.pipeline_dependency_id = d.pipeline_dependency_id,
                      c.task_dependency_id, c.consumed_pipeline_run_id = u.pipeline_run_id, c.consumed_task_run_id,
                      c.consumed_revision, c.decision_id = g.decision_id, c.consumed_at)::text
             FROM etl_craft.aud_dependency_consumption c
             JOIN etl_craft.aud_pipelines_run_log r ON r.run_key = 'schedule:1'
             JOIN etl_craft.aud_pipelines_run_log u ON u.run_key = 'schedule:u1'
             JOIN etl_craft.cfg_pipeline_dependency d ON true
             JOIN etl_craft.aud_gate_decisions g ON g.pipeline_run_id = r.pipeline_run_id),
          (SELECT row(true, true, NULL::bigint, true, NULL::bigint, 1, true, timestamptz '2026-01-02 06:45:00+00')::text),
          'consumption: the decision''s upstream run and revision 1 (not the repaired revision 2), with the decision (B62)');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.finalize_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1')) $$,
                        'EC020', 'run % is SUCCESS (ended 2026-01-02 06:45:00 UTC by etl-craft), expected IN-PROGRESS%',
                        'an ended run is not finalized again (EC020, B32)');

-- 10-15: every other starting status is refused (EC020); an unknown run is not found (EC021).
SELECT etl_test.refused(format($$ SELECT * FROM etl_craft.finalize_run(p_run_id => etl_test.gates_run('g_up', 'k:%s', %L)) $$, s, s),
                        'EC020', 'run % is ' || s || '%, expected IN-PROGRESS; only a run in progress is finalized%',
                        'a run that is ' || s || ' is not finalized (EC020)')
  FROM unnest(ARRAY['QUEUED', 'SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED']) AS s;
SELECT etl_test.refused($$ SELECT * FROM etl_craft.finalize_run(p_run_id => 999) $$,
                        'EC021', 'run 999 does not exist%', 'an unknown run is not found (EC021)');

-- 16-18: the status its task runs give: all SKIPPED -> SKIPPED (B30); a FAILED task -> FAILED; a cancel request ->
-- CANCELLED without waiting for unsettled tasks. SLA: BREACHED after SLA_MINUTES.
SELECT etl_test.gates_run('g_down', 'schedule:skip');
SELECT etl_test.gates_task_run((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:skip'),
                               t, 'SKIPPED') FROM unnest(ARRAY['g_build', 'g_ingest']) t;
SELECT etl_test.gates_at('2026-01-02 08:00:00+00');
SELECT is((SELECT row(status, sla_status, consumed)::text FROM etl_craft.finalize_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:skip'))),
          '(SKIPPED,BREACHED,0)', 'every task SKIPPED: the run ends SKIPPED (and its SLA is BREACHED after 60 minutes)');
SELECT etl_test.gates_run('g_down', 'schedule:fail');
SELECT etl_test.gates_task_run((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:fail'), t, s)
  FROM (VALUES ('g_build', 'FAILED'), ('g_ingest', 'SUCCESS')) v(t, s);
SELECT is((SELECT status FROM etl_craft.finalize_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:fail'))),
          'FAILED', 'a FAILED task fails the run');
SELECT etl_test.gates_run('g_down', 'schedule:cancel');
UPDATE etl_craft.aud_pipelines_run_log SET cancel_requested_at = etl_craft.clock_now() WHERE run_key = 'schedule:cancel';
SELECT is((SELECT status FROM etl_craft.finalize_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:cancel'))),
          'CANCELLED', 'a run asked to stop ends CANCELLED, its tasks unsettled');

-- 19-21: a repair: the SLA is kept (B13), a failed repair stays pending, a successful one publishes revision 2 once.
UPDATE etl_craft.aud_pipelines_run_log SET status = 'IN-PROGRESS', end_date = NULL, repair_pending = 'Y'
 WHERE run_key = 'schedule:1';
UPDATE etl_craft.aud_task_run_log SET status = 'FAILED'
 WHERE pipeline_run_id = (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1')
   AND task_id = etl_test.gates_task('g_build');
SELECT is((SELECT row(status, sla_status, output_revision, consumed)::text FROM etl_craft.finalize_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'))),
          '(FAILED,MET,1,0)', 'a failed repair keeps the revision and the met SLA, and consumes nothing');
UPDATE etl_craft.aud_pipelines_run_log SET status = 'IN-PROGRESS', end_date = NULL WHERE run_key = 'schedule:1';
UPDATE etl_craft.aud_task_run_log SET status = 'SUCCESS'
 WHERE pipeline_run_id = (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1');
SELECT is((SELECT row(status, sla_status, output_revision, consumed)::text FROM etl_craft.finalize_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'))),
          '(SUCCESS,MET,2,0)', 'a successful repair publishes revision 2, keeps MET and consumes nothing twice');
SELECT is((SELECT repair_pending FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'schedule:1'), 'N',
          'and clears REPAIR_PENDING');

SELECT * FROM finish();
ROLLBACK;
