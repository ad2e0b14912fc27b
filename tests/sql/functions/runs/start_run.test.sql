-- start_run: an owner takes an IN-PROGRESS run with a lease; another owner waits until the lease expires.
BEGIN;
SELECT plan(7);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.seed();
SELECT set_config('etl_craft.now', '2026-01-01 10:00:00+00', true);

SELECT is((SELECT owner_id || ' ' || lease_expires_at::text FROM etl_craft.start_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
             p_owner_id => 'h:1:a', p_lease_seconds => 60, p_actor => 'pgtap@test')),
          'h:1:a 2026-01-01 10:01:00+00', 'an unowned run is taken with a lease from the pinned clock');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.start_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
                          p_owner_id => 'h:2:b', p_actor => 'pgtap@test') $$,
                        'EC023', 'run % is supervised by h:1:a (lease until 2026-01-01 10:01:00 UTC)%',
                        'another owner is refused while the lease lives');
SELECT lives_ok($$ SELECT * FROM etl_craft.start_run(
                   p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
                   p_owner_id => 'h:1:a', p_actor => 'pgtap@test') $$, 'the owner renews its own lease');
SELECT set_config('etl_craft.now', '2026-01-01 10:05:00+00', true);
SELECT is((SELECT owner_id FROM etl_craft.start_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
             p_owner_id => 'h:2:b', p_actor => 'pgtap@test')),
          'h:2:b', 'an expired lease can be taken over');
UPDATE etl_craft.aud_pipelines_run_log SET status = 'FAILED', owner_id = NULL, lease_expires_at = NULL
 WHERE run_key = 'manual:down1';
SELECT etl_test.refused($$ SELECT * FROM etl_craft.start_run(
                          p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
                          p_owner_id => 'h:2:b', p_actor => 'pgtap@test') $$,
                        'EC020', 'run % is FAILED, expected IN-PROGRESS%', 'an ended run cannot be started');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.start_run(p_run_id => 99999, p_owner_id => 'h:2:b',
                          p_actor => 'pgtap@test') $$, 'EC021', 'run 99999 does not exist%', 'an unknown run is not found');
SELECT is((SELECT owner_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'), NULL,
          'a refused start changed nothing');
SELECT * FROM finish();
ROLLBACK;
