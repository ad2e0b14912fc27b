-- create_api_token, revoke_api_token, touch_api_token: a token row keeps its name, role, hash and expiry with the
-- actor who created it; a taken name, a past expiry, an unknown or revoked token are refused with nothing written;
-- the last use is noted at most once a minute; the table refuses writes by hand.
BEGIN;
SELECT plan(13);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.gates_at('2026-01-02 06:00:00+00');

SELECT is((SELECT created_at FROM etl_craft.create_api_token(p_name => 'ci', p_role => 'operator',
             p_token_sha256 => repeat('ab', 32), p_expires_at => '2026-04-02 06:00:00+00', p_actor => 'alice@host')),
          timestamptz '2026-01-02 06:00:00+00', 'a token is created now');
SELECT is((SELECT row(token_name, token_role, token_sha256, expires_at, created_by, revoked_at, last_used_at)::text
             FROM etl_craft.cfg_api_tokens),
          (SELECT row('ci', 'operator', repeat('ab', 32), timestamptz '2026-04-02 06:00:00+00', 'alice@host',
                      NULL::timestamptz, NULL::timestamptz)::text),
          'the row keeps the name, role, hash, expiry and creator');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.create_api_token(p_name => 'ci', p_role => 'viewer',
                          p_token_sha256 => repeat('cd', 32)) $$,
                        'EC023', 'an API token named ci exists already (role operator, created 2026-01-02 06:00:00 UTC by alice@host), expected a name not used before%',
                        'a taken name is refused (EC023), naming the token that has it');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.create_api_token(p_name => 'old', p_role => 'viewer',
                          p_token_sha256 => repeat('cd', 32), p_expires_at => '2026-01-01 00:00:00+00') $$,
                        'EC023', 'the expiry of API token old is 2026-01-01 00:00:00 UTC, expected a time after now (2026-01-02 06:00:00 UTC)%',
                        'an expiry in the past is refused (EC023)');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.create_api_token(p_name => 'x', p_role => 'root',
                          p_token_sha256 => repeat('cd', 32)) $$,
                        '23514', '%token_role_is_valid%', 'a role that is not viewer, operator or admin is refused');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.create_api_token(p_name => 'y', p_role => 'viewer',
                          p_token_sha256 => 'not-a-hash') $$,
                        '23514', '%token_sha256_is_hex%', 'a hash that is not 64 hex digits is refused');

SELECT is((SELECT last_used_at FROM etl_craft.touch_api_token(
             p_token_id => (SELECT token_id FROM etl_craft.cfg_api_tokens WHERE token_name = 'ci'), p_actor => 'ci')),
          timestamptz '2026-01-02 06:00:00+00', 'the first use is noted');
SELECT etl_test.gates_at('2026-01-02 06:00:30+00');
SELECT is((SELECT last_used_at FROM etl_craft.touch_api_token(
             p_token_id => (SELECT token_id FROM etl_craft.cfg_api_tokens WHERE token_name = 'ci'), p_actor => 'ci')),
          timestamptz '2026-01-02 06:00:00+00', 'a use within a minute of the last one writes nothing');
SELECT etl_test.gates_at('2026-01-02 06:01:00+00');
SELECT is((SELECT last_used_at FROM etl_craft.touch_api_token(
             p_token_id => (SELECT token_id FROM etl_craft.cfg_api_tokens WHERE token_name = 'ci'), p_actor => 'ci')),
          timestamptz '2026-01-02 06:01:00+00', 'a use a minute later is noted');

SELECT * FROM etl_craft.revoke_api_token(p_name => 'ci', p_actor => 'bob@host');
SELECT is((SELECT row(revoked_at, revoked_by)::text FROM etl_craft.cfg_api_tokens WHERE token_name = 'ci'),
          (SELECT row(timestamptz '2026-01-02 06:01:00+00', 'bob@host')::text), 'a revoke records when and by whom');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.revoke_api_token(p_name => 'ci') $$,
                        'EC023', 'API token ci is revoked already (since 2026-01-02 06:01:00 UTC by bob@host)%',
                        'a revoked token is not revoked again (EC023)');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.revoke_api_token(p_name => 'nobody') $$,
                        'EC021', 'there is no API token named nobody%', 'an unknown token is not found (EC021)');

SELECT etl_test.unmark();
SELECT etl_test.refused($$ UPDATE etl_craft.cfg_api_tokens SET revoked_at = NULL, revoked_by = NULL $$,
                        'EC001', '%CFG_API_TOKENS is written only by etl-craft%', 'a revoke cannot be undone by hand');

SELECT * FROM finish();
ROLLBACK;
