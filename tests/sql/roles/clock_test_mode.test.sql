-- The clock can be pinned (etl_craft.now) only in a test database: ENG_SETTINGS TEST_MODE = Y, which only the
-- schema's owner writes. Elsewhere a session that pins it is refused with EC023 by every function that reads the
-- clock, so nobody can push it ahead and have live attempts reconciled LOST.
BEGIN;
SELECT etl_test.serialize();
SELECT plan(11);

SELECT etl_test.act();
SELECT etl_test.seed();

-- 3: in test mode (tests/sql/run_pgtap.py enabled it), a pinned clock is honoured, by the write API too.
SELECT is((SELECT value FROM etl_craft.eng_settings WHERE setting = 'TEST_MODE'), 'Y', 'this database is in test mode');
SELECT set_config('etl_craft.now', '2030-06-01 12:00:00+00', true);
SELECT is(etl_craft.clock_now(), timestamptz '2030-06-01 12:00:00+00', 'clock_now() answers the pinned time');
SELECT is((SELECT paused_at FROM etl_craft.pause_pipeline(
             p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
             p_reason => 'pinned', p_actor => 'dba:alice')),
          timestamptz '2030-06-01 12:00:00+00', 'a function records the pinned time (PAUSED_AT)');

-- 2: nobody but the owner changes test mode: ENG_SETTINGS refuses every etl-craft role.
SELECT etl_test.refused_as('engine', $$UPDATE etl_craft.eng_settings SET value = 'Y' WHERE setting = 'TEST_MODE'$$,
  '42501', 'permission denied for table eng_settings', 'the engine role cannot change ENG_SETTINGS (42501)');
SELECT etl_test.refused_as('operator', $$INSERT INTO etl_craft.eng_settings (setting, value, set_at)
                                         VALUES ('TEST_MODE', 'Y', now())$$,
  '42501', 'permission denied for table eng_settings', 'the operator role cannot write ENG_SETTINGS (42501)');

-- The owner makes this a production database (rolled back with the suite).
SELECT etl_test.act('dba:owner');
UPDATE etl_craft.eng_settings SET value = 'N' WHERE setting = 'TEST_MODE';
SELECT etl_test.act();

-- 4: outside test mode a pinned clock is refused, by clock_now() and by the functions, whoever calls them.
SELECT etl_test.refused($$SELECT etl_craft.clock_now()$$, 'EC023',
  'this session pins the clock (etl_craft.now = ''2030-06-01 12:00:00+00''), but database % is not in test mode%RESET etl_craft.now%',
  'outside test mode, clock_now() refuses a pinned clock (EC023), naming the setting and what to do');
SELECT etl_test.refused_as('engine', $$SELECT * FROM etl_craft.reconcile_expired(p_actor => 'w')$$,
  'EC023', 'this session pins the clock%not in test mode%',
  'outside test mode, reconcile_expired with a pinned clock is refused (EC023): no attempt is reconciled LOST early');
SELECT etl_test.refused_as('operator', $$SELECT * FROM etl_craft.resume_pipeline(
                               p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
                               p_reason => 'r', p_actor => 'dba:alice')$$,
  'EC023', 'this session pins the clock%not in test mode%',
  'outside test mode, an operator function with a pinned clock is refused (EC023)');
SELECT etl_test.refused($$SELECT set_config('etl_craft.actor', 'dba:owner', true);
                          INSERT INTO etl_craft.cfg_pools (pool_name) VALUES ('pinned_pool')$$, 'EC023',
  'this session pins the clock%not in test mode%',
  'outside test mode, even the owner''s marked hand write is refused while the clock is pinned (its stamps read it)');

-- 2: with the pin cleared, the clock is the server's again.
SELECT set_config('etl_craft.now', '', true);
SELECT is(etl_craft.clock_now(), now(), 'an empty etl_craft.now is no pin: clock_now() is the transaction''s time');
SELECT is((SELECT resumed_at FROM etl_craft.resume_pipeline(
             p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
             p_reason => 'unpinned', p_actor => 'dba:alice')),
          now(), 'outside test mode, a function without a pinned clock runs on the server''s time');

SELECT * FROM finish();
ROLLBACK;
