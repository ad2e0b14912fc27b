-- record_bundle and the pinning of bundles: a bundle row keeps its manifest and the actor who published it; the
-- latest bundle's manifest again records nothing; an unknown project and a malformed digest are refused; a new run
-- pins its project's latest bundle (none before the first); the table refuses writes by hand.
BEGIN;
SELECT plan(9);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.gates_fixture();
SELECT etl_test.gates_at('2026-01-02 06:00:00+00');

-- (the run is read by a later statement: the one that calls create_run does not see the row it inserts)
SELECT created FROM etl_craft.create_run(p_pipeline_id => etl_test.gates_pipeline('g_up'), p_run_key => 'manual:1',
  p_run_date => '2026-01-02', p_status => 'QUEUED', p_actor => 'pgtap@test');
SELECT is((SELECT bundle_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:1'),
          NULL::bigint, 'a run of a project without a bundle pins none');
SELECT is((SELECT row(created, created_at)::text FROM etl_craft.record_bundle(p_project_code => 'gp',
             p_manifest => '{"sql_files/a.sql":"' || repeat('1', 64) || '"}', p_manifest_sha256 => repeat('a', 64),
             p_file_count => 1, p_total_bytes => 12, p_store_url => 'file:///srv/a', p_actor => 'ana@host')),
          row(true, timestamptz '2026-01-02 06:00:00+00')::text, 'a new manifest is recorded now');
SELECT is((SELECT row(manifest_sha256, file_count, total_bytes, store_url, created_by, created_by_kind)::text
             FROM etl_craft.aud_project_bundles),
          row(repeat('a', 64), 1, 12::bigint, 'file:///srv/a', 'ana@host', 'HUMAN')::text,
          'the row keeps the digest, counts, store and publisher');
SELECT is((SELECT row(bundle_id = (SELECT min(bundle_id) FROM etl_craft.aud_project_bundles), created)::text
             FROM etl_craft.record_bundle(p_project_code => 'gp', p_manifest => '{}',
             p_manifest_sha256 => repeat('a', 64), p_file_count => 1, p_total_bytes => 12,
             p_store_url => 'file:///srv/a', p_actor => 'bob@host')),
          row(true, false)::text, 'the latest bundle''s manifest again returns that bundle and records nothing');
SELECT is((SELECT count(*) FROM etl_craft.aud_project_bundles), 1::bigint, 'one row');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.record_bundle(p_project_code => 'nope', p_manifest => '{}',
                          p_manifest_sha256 => repeat('b', 64), p_file_count => 0, p_total_bytes => 0,
                          p_store_url => 'file:///srv/a') $$,
                        'EC021', 'there is no active project nope in this Engine DB%',
                        'an unknown project is refused (EC021)');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.record_bundle(p_project_code => 'gp', p_manifest => '{}',
                          p_manifest_sha256 => 'abc', p_file_count => 0, p_total_bytes => 0,
                          p_store_url => 'file:///srv/a') $$,
                        'EC023', 'the manifest SHA-256 of the bundle of project gp is abc, expected 64 lower-case%',
                        'a digest that is not 64 characters is refused (EC023)');
SELECT created FROM etl_craft.create_run(p_pipeline_id => etl_test.gates_pipeline('g_up'), p_run_key => 'manual:2',
  p_run_date => '2026-01-02', p_status => 'QUEUED', p_actor => 'pgtap@test');
SELECT is((SELECT bundle_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:2'),
          (SELECT max(bundle_id) FROM etl_craft.aud_project_bundles), 'a new run pins the latest bundle');
SELECT etl_test.unmark();
SELECT etl_test.refused($$ UPDATE etl_craft.aud_project_bundles SET store_url = 'file:///elsewhere' $$,
                        'EC001', '%AUD_PROJECT_BUNDLES is written only by etl-craft%',
                        'a write by hand is refused (EC001)');

SELECT * FROM finish();
ROLLBACK;
