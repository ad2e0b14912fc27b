-- record_action: one AUD_ACTIONS row per request, with the actor, the arguments as jsonb and OUTCOME REQUESTED.
BEGIN;
SELECT plan(4);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.gates_fixture();
SELECT etl_test.gates_at('2026-01-02 06:00:00+00');

SELECT isnt((SELECT action_id FROM etl_craft.record_action(p_command => 'pause',
               p_arguments => '{"pipeline_code": "g_down", "reason": "freeze"}', p_pipeline_id => etl_test.gates_pipeline('g_down'),
               p_host => 'laptop', p_actor => 'alice@host')), NULL, 'the action is recorded');
SELECT is((SELECT row(started_at, ended_at, actor, actor_kind, host, command, arguments, pipeline_id = etl_test.gates_pipeline('g_down'),
                      pipeline_run_id, task_id, outcome, exit_code)::text
             FROM etl_craft.aud_actions WHERE command = 'pause'),
          (SELECT row(timestamptz '2026-01-02 06:00:00+00', timestamptz '2026-01-02 06:00:00+00', 'alice@host', 'HUMAN',
                      'laptop', 'pause', '{"reason": "freeze", "pipeline_code": "g_down"}'::jsonb, true, NULL::bigint,
                      NULL::bigint, 'REQUESTED', NULL::int)::text),
          'the row: the request''s time, actor, host, command, arguments as jsonb, what it names, REQUESTED');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.record_action(p_command => 'run', p_arguments => '{not json') $$,
                        '22P02', '%json%', 'arguments that are not JSON are refused by the cast');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_actions WHERE command IN ('pause', 'run')), 1, 'and record nothing');

SELECT * FROM finish();
ROLLBACK;
