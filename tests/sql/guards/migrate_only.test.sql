-- Proves ENG_STATUSES, ENG_TRANSITIONS, ENG_ERROR_CODES and SCHEMA_MIGRATIONS are written only by etl-craft migrate:
-- a transaction marked with an actor but without migrate's lock is refused (EC001, naming the table and how it is
-- kept), so a hand edit cannot make them disagree with the triggers rendered from the same files; the same write
-- under the lock passes.
BEGIN;
SELECT etl_test.serialize();
SELECT plan(19);

-- 1: the statement trigger _015_migrate_only is on exactly these tables.
SELECT set_eq($$SELECT c.relname::text FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
                 WHERE c.relnamespace = 'etl_craft'::regnamespace AND g.tgname = '_015_migrate_only'
                   AND g.tgtype = 2 + 4 + 8 + 16 + 32 AND g.tgfoid = 'etl_craft.tg_migrate_only'::regproc$$,
              ARRAY['eng_statuses', 'eng_transitions', 'eng_error_codes', 'schema_migrations'],
              'ENG_STATUSES, ENG_TRANSITIONS, ENG_ERROR_CODES and SCHEMA_MIGRATIONS carry _015_migrate_only '
              '(BEFORE INSERT, UPDATE, DELETE and TRUNCATE, per statement)');

CREATE TEMP TABLE writes (tbl text, op text, stmt text) ON COMMIT DROP;
INSERT INTO writes VALUES
  ('ENG_TRANSITIONS', 'INSERT', $$INSERT INTO etl_craft.eng_transitions VALUES ('RUN', 'AUD_PIPELINES_RUN_LOG', 'SUCCESS', 'QUEUED')$$),
  ('ENG_TRANSITIONS', 'DELETE', $$DELETE FROM etl_craft.eng_transitions WHERE entity = 'ATTEMPT'$$),
  ('ENG_STATUSES', 'UPDATE', $$UPDATE etl_craft.eng_statuses SET is_terminal = 'N' WHERE status = 'SUCCESS'$$),
  ('ENG_STATUSES', 'INSERT', $$INSERT INTO etl_craft.eng_statuses VALUES ('RUN', 'PAUSED', 'N', NULL)$$),
  ('ENG_ERROR_CODES', 'UPDATE', $$UPDATE etl_craft.eng_error_codes SET exit_code = 0$$),
  ('ENG_ERROR_CODES', 'DELETE', $$DELETE FROM etl_craft.eng_error_codes WHERE code = 'EC020'$$),
  ('SCHEMA_MIGRATIONS', 'INSERT', $$INSERT INTO etl_craft.schema_migrations VALUES
     ('ENGINE', '9999', 'from_the_future', 'VERSIONED', repeat('0', 64), now(), 'pgtap')$$),
  ('SCHEMA_MIGRATIONS', 'UPDATE', $$UPDATE etl_craft.schema_migrations SET checksum = repeat('0', 64)
     WHERE version = 'R:090_guards'$$),
  ('SCHEMA_MIGRATIONS', 'DELETE', $$DELETE FROM etl_craft.schema_migrations WHERE version = '0013'$$);

-- 9: with the actor marker but without migrate's lock, each write is refused.
SELECT etl_test.act('dba:alice');
SELECT etl_test.refused(stmt, 'EC001',
  format('%s on %s refused: %2$s is written only by etl-craft migrate; _%%', op, tbl),
  format('%s on %s with the marker, outside etl-craft migrate, is refused (EC001)', op, tbl))
  FROM writes ORDER BY tbl, op;

-- 9: under migrate's lock the same writes pass (each rolled back with its probe).
SELECT etl_test.as_migrate();
SELECT is((etl_test.probe(stmt)).code, '00000', format('%s on %s under etl-craft migrate''s lock passes', op, tbl))
  FROM writes ORDER BY tbl, op;

SELECT * FROM finish();
ROLLBACK;
