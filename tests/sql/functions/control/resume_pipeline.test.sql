-- resume_pipeline: closes the open pause with the actor, the time and the reason; a pipeline that is not paused, or
-- unknown, is refused with nothing written.
BEGIN;
SELECT plan(6);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.gates_fixture();
SELECT etl_test.gates_at('2026-01-02 06:00:00+00');

SELECT etl_test.refused($$ SELECT * FROM etl_craft.resume_pipeline(p_pipeline_id => etl_test.gates_pipeline('g_down'),
                          p_reason => 'x') $$,
                        'EC023', 'pipeline g_down is not paused, expected paused; there is nothing to resume',
                        'a pipeline never paused is not resumed (EC023)');
SELECT * FROM etl_craft.pause_pipeline(p_pipeline_id => etl_test.gates_pipeline('g_down'), p_reason => 'freeze',
                                       p_actor => 'alice@host');
SELECT etl_test.gates_at('2026-01-02 08:00:00+00');
SELECT is((SELECT row(pause_id = (SELECT max(pause_id) FROM etl_craft.aud_pipeline_pauses), resumed_at)::text
             FROM etl_craft.resume_pipeline(p_pipeline_id => etl_test.gates_pipeline('g_down'), p_reason => 'thaw',
                                            p_actor => 'bob@host', p_actor_kind => 'HUMAN')),
          (SELECT row(true, timestamptz '2026-01-02 08:00:00+00')::text), 'the open pause is closed now');
SELECT is((SELECT row(paused_by, pause_reason, resumed_at, resumed_by, resumed_by_kind, resume_reason)::text
             FROM etl_craft.aud_pipeline_pauses),
          (SELECT row('alice@host', 'freeze', timestamptz '2026-01-02 08:00:00+00', 'bob@host', 'HUMAN', 'thaw')::text),
          'the pause keeps who paused it and records who resumed it, when and why');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.resume_pipeline(p_pipeline_id => etl_test.gates_pipeline('g_down'),
                          p_reason => 'again') $$,
                        'EC023', 'pipeline g_down is not paused (it was resumed 2026-01-02 08:00:00 UTC by bob@host), expected paused%',
                        'a resumed pipeline is not resumed again (EC023), naming the last resume');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.resume_pipeline(p_pipeline_id => 999, p_reason => 'x') $$,
                        'EC021', 'pipeline 999 does not exist%', 'an unknown pipeline is not found (EC021)');
SELECT is((SELECT resume_reason FROM etl_craft.aud_pipeline_pauses), 'thaw', 'refused calls change nothing');

SELECT * FROM finish();
ROLLBACK;
