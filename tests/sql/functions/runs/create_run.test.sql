-- create_run: one run per (pipeline, run key), created by the actor, refused for unknown or paused pipelines; a
-- run created IN-PROGRESS on a pipeline with a gate (down_pl depends on up_pl) is refused, or bypasses it on record.
-- Without a trigger kind, a key orchestrator:<id> is recorded ORCHESTRATOR and any other MANUAL.
BEGIN;
SELECT plan(17);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();

SELECT etl_test.refused($$ SELECT * FROM etl_craft.create_run(
                          p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
                          p_run_key => 'manual:new', p_run_date => DATE '2026-01-02', p_actor => 'alice@host') $$,
                        'EC023', 'pipeline down_pl already has run % (manual:down1) IN-PROGRESS since %; a pipeline runs one run at a time%',
                        'a second IN-PROGRESS run of a pipeline is refused');
UPDATE etl_craft.aud_pipelines_run_log SET status = 'FAILED', end_date = now() WHERE run_key = 'manual:down1';

SELECT etl_test.refused($$ SELECT * FROM etl_craft.create_run(
                          p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
                          p_run_key => 'manual:new', p_run_date => DATE '2026-01-02', p_actor => 'alice@host') $$,
                        'EC023', 'pipeline down_pl has a pipeline gate (SUCCESS on up_pl), which a run created IN-PROGRESS would skip; create the run QUEUED and admit it with admit_run%',
                        'an IN-PROGRESS run never skips its pipeline gate silently');
SELECT is((SELECT row(status, created)::text FROM etl_craft.create_run(
             p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
             p_run_key => 'manual:new', p_run_date => DATE '2026-01-02', p_bypass_reason => 'up_pl was loaded by hand',
             p_actor => 'alice@host')),
          '(IN-PROGRESS,t)', 'a new key creates an IN-PROGRESS run when the gate is bypassed on record');
SELECT results_eq(
  $$SELECT d.result::text, d.reason, d.decided_by::text, d.decided_by_kind::text FROM etl_craft.aud_gate_decisions d
      JOIN etl_craft.aud_pipelines_run_log r USING (pipeline_run_id) WHERE r.run_key = 'manual:new'$$,
  $$VALUES ('BYPASSED', 'bypassed (SUCCESS dependency on up_pl): up_pl was loaded by hand', 'alice@host', 'HUMAN')$$,
  'the bypass is a BYPASSED decision with the actor and the reason');
SELECT is((SELECT row(status, created)::text FROM etl_craft.create_run(
             p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
             p_run_key => 'manual:new', p_run_date => DATE '2026-01-02', p_actor => 'bob@host')),
          '(IN-PROGRESS,f)', 'the same key returns the same run, not created');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:new'), 1,
          'one row for the key');
SELECT is((SELECT started_by || '/' || started_by_kind || '/' || trigger_kind FROM etl_craft.aud_pipelines_run_log
            WHERE run_key = 'manual:new'), 'alice@host/HUMAN/MANUAL', 'the creator and trigger kind are recorded');
SELECT is((SELECT status FROM etl_craft.create_run(
             p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
             p_run_key => 'schedule:2026-01-03T06:00:00Z', p_run_date => DATE '2026-01-03', p_trigger_kind => 'SCHEDULE',
             p_status => 'QUEUED', p_catching_up => true, p_actor => 'overseer', p_actor_kind => 'SCHEDULE')),
          'QUEUED', 'a scheduled run can start QUEUED (a missed tick CATCHUP keeps waits behind the active run)');
SELECT etl_craft.create_run(
         p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
         p_run_key => 'schedule:2026-01-03T07:00:00Z', p_run_date => DATE '2026-01-03', p_trigger_kind => 'SCHEDULE',
         p_status => 'QUEUED', p_actor => 'overseer', p_actor_kind => 'SCHEDULE');
SELECT is((SELECT status || ': ' || message FROM etl_craft.aud_pipelines_run_log
            WHERE run_key = 'schedule:2026-01-03T07:00:00Z'),
          'SKIPPED: previous run still active: run ' ||
            (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:new') ||
            ' (manual:new) is IN-PROGRESS and the pipeline''s OVERLAP_POLICY is SKIP',
          'a scheduled tick of a SKIP pipeline with a run still active ends SKIPPED with the reason');
SELECT etl_craft.create_run(
         p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
         p_run_key => 'schedule:2026-01-01T06:00:00Z', p_run_date => DATE '2026-01-01', p_trigger_kind => 'SCHEDULE',
         p_status => 'QUEUED', p_skip_reason => 'missed while no server was running', p_catching_up => true,
         p_actor => 'overseer', p_actor_kind => 'SCHEDULE');
SELECT is((SELECT status || ': ' || message FROM etl_craft.aud_pipelines_run_log
            WHERE run_key = 'schedule:2026-01-01T06:00:00Z'),
          'SKIPPED: missed while no server was running', 'skip_reason records the tick SKIPPED with its reason');
SELECT is((SELECT status FROM etl_craft.create_run(
             p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
             p_run_key => 'manual:queued', p_run_date => DATE '2026-01-03', p_status => 'QUEUED',
             p_actor => 'alice@host')),
          'QUEUED', 'a manual run is queued behind the active run whatever the overlap policy');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_gate_decisions d JOIN etl_craft.aud_pipelines_run_log r USING (pipeline_run_id)
            WHERE r.run_key = 'schedule:2026-01-03T06:00:00Z'), 0,
          'a QUEUED run records no decision: admit_run judges its gate');
SELECT etl_craft.create_run(
         p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
         p_run_key => 'orchestrator:scheduled__2026-01-04T06:00:00+00:00', p_run_date => DATE '2026-01-04',
         p_status => 'QUEUED', p_actor => 'airflow');
SELECT is((SELECT trigger_kind::text FROM etl_craft.aud_pipelines_run_log
            WHERE run_key = 'orchestrator:scheduled__2026-01-04T06:00:00+00:00'),
          'ORCHESTRATOR', 'a run keyed orchestrator:<id> without a trigger kind is recorded ORCHESTRATOR');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.create_run(p_pipeline_id => 999, p_run_key => 'manual:x',
                          p_run_date => DATE '2026-01-02', p_actor => 'alice@host') $$,
                        'EC021', 'pipeline 999 does not exist or is switched off%', 'an unknown pipeline is not found');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.create_run(
                          p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'up_pl'),
                          p_run_key => 'manual:x', p_run_date => DATE '2026-01-02', p_actor => 'alice@host') $$,
                        'EC023', 'pipeline up_pl is paused since % by pgtap@test; a paused pipeline starts no run%',
                        'a paused pipeline starts no run');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.create_run(
                          p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
                          p_run_key => 'manual:y', p_run_date => DATE '2026-01-02', p_trigger_kind => 'WHENEVER',
                          p_status => 'QUEUED', p_actor => 'alice@host') $$,
                        '23514', '%trigger_kind_is_valid%', 'an unknown trigger kind is refused by its CHECK');
SELECT etl_test.unmark();
SELECT etl_test.refused($$ SELECT * FROM etl_craft.create_run(
                          p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
                          p_run_key => 'manual:z', p_run_date => DATE '2026-01-02') $$,
                        'EC001', 'etl-craft functions record who acts: pass p_actor%', 'a call that names no actor is refused');
SELECT * FROM finish();
ROLLBACK;
