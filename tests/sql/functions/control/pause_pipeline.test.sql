-- pause_pipeline: opens one pause per pipeline, recording the actor, the time and the reason; a paused or unknown
-- pipeline is refused with nothing written.
BEGIN;
SELECT plan(6);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.gates_fixture();
SELECT etl_test.gates_at('2026-01-02 06:00:00+00');

SELECT is((SELECT paused_at FROM etl_craft.pause_pipeline(p_pipeline_id => etl_test.gates_pipeline('g_down'),
             p_reason => 'warehouse upgrade', p_actor => 'alice@host')),
          timestamptz '2026-01-02 06:00:00+00', 'an unpaused pipeline is paused now');
SELECT is((SELECT row(pipeline_id = etl_test.gates_pipeline('g_down'), paused_at, paused_by, paused_by_kind, pause_reason,
                      resumed_at, resumed_by, resumed_by_kind, resume_reason)::text FROM etl_craft.aud_pipeline_pauses),
          (SELECT row(true, timestamptz '2026-01-02 06:00:00+00', 'alice@host', 'HUMAN', 'warehouse upgrade',
                      NULL::timestamptz, NULL::text, NULL::text, NULL::text)::text),
          'the open pause records the actor, its kind, the time and the reason');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.pause_pipeline(p_pipeline_id => etl_test.gates_pipeline('g_down'),
                          p_reason => 'again', p_actor => 'bob@host') $$,
                        'EC023', 'pipeline g_down is already paused since 2026-01-02 06:00:00 UTC by alice@host (warehouse upgrade), expected not paused; resume it first%',
                        'a paused pipeline is not paused again (EC023), naming since when and by whom');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.pause_pipeline(p_pipeline_id => 999, p_reason => 'x') $$,
                        'EC021', 'pipeline 999 does not exist%', 'an unknown pipeline is not found (EC021)');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_pipeline_pauses), 1, 'refused calls write nothing');
SELECT * FROM etl_craft.pause_pipeline(p_pipeline_id => etl_test.gates_pipeline('g_up'), p_reason => NULL,
                                      p_actor => 'overseer', p_actor_kind => 'SCHEDULE');
SELECT is((SELECT row(paused_by, paused_by_kind, pause_reason)::text FROM etl_craft.aud_pipeline_pauses
            WHERE pipeline_id = etl_test.gates_pipeline('g_up')),
          '(overseer,SCHEDULE,)', 'another pipeline is paused independently, with its actor''s kind');

SELECT * FROM finish();
ROLLBACK;
