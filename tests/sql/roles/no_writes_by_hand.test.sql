-- No etl-craft role can write a table by hand: INSERT, UPDATE, DELETE and TRUNCATE of every owned table are refused
-- to the reader, the operator and the engine role (42501, before any trigger runs), even in a transaction marked with
-- an actor; and a function a role was not granted is refused the same way, while PUBLIC executes none.
BEGIN;
SELECT etl_test.serialize();
SELECT plan(9);

SELECT etl_test.act();
SELECT etl_test.seed();

-- One statement per table and operation, each valid as far as the columns go (the refusal comes first).
CREATE TEMP TABLE writes ON COMMIT DROP AS
SELECT t AS tbl, o.op,
       CASE o.op
         WHEN 'INSERT' THEN format('INSERT INTO etl_craft.%I DEFAULT VALUES', lower(t))
         WHEN 'UPDATE' THEN format('UPDATE etl_craft.%I SET %I = %2$I', lower(t),
                                   (SELECT a.attname FROM pg_attribute a
                                     WHERE a.attrelid = format('etl_craft.%I', lower(t))::regclass
                                       AND a.attnum > 0 AND NOT a.attisdropped AND a.attidentity = ''
                                     ORDER BY a.attnum LIMIT 1))
         WHEN 'DELETE' THEN format('DELETE FROM etl_craft.%I', lower(t))
         ELSE format('TRUNCATE etl_craft.%I CASCADE', lower(t))
       END AS stmt
  FROM etl_test.owned_tables() t CROSS JOIN (VALUES ('INSERT'), ('UPDATE'), ('DELETE'), ('TRUNCATE')) AS o(op);

CREATE TEMP TABLE outcomes ON COMMIT DROP AS
SELECT k.kind, w.tbl, w.op, p.code, p.message
  FROM writes w CROSS JOIN (VALUES ('reader'), ('operator'), ('engine')) AS k(kind)
  CROSS JOIN LATERAL etl_test.probe_as(k.kind, w.stmt) p;

-- 1: every owned table was tried, with each operation, by each role.
SELECT is((SELECT count(*)::int FROM outcomes), 3 * 4 * (SELECT count(*)::int FROM etl_test.owned_tables()),
          'each role tried INSERT, UPDATE, DELETE and TRUNCATE on every owned table');

-- 3: each one was refused by privileges (42501), the etl-craft actor marker notwithstanding.
SELECT is_empty(format($$SELECT tbl, op, code, message FROM outcomes WHERE kind = %L AND code <> '42501'$$, kind),
                format('the %s role can write no table by hand: every write is refused with 42501', kind))
  FROM (VALUES ('reader'), ('operator'), ('engine')) AS k(kind);

-- 1: the catalog agrees: no role of this database holds INSERT, UPDATE, DELETE or TRUNCATE on an owned table.
SELECT is_empty(
  $$SELECT r.kind, t FROM etl_test.owned_tables() t CROSS JOIN (VALUES ('reader'), ('operator'), ('engine')) AS r(kind)
     WHERE has_table_privilege(etl_test.role(r.kind), 'etl_craft.' || lower(t), 'INSERT, UPDATE, DELETE, TRUNCATE')$$,
  'no etl-craft role holds INSERT, UPDATE, DELETE or TRUNCATE on any table');

-- 2: a function outside a role's grants is refused to it, before it runs.
SELECT etl_test.refused_as('operator',
  $$SELECT * FROM etl_craft.reconcile_expired(p_actor => 'dba:alice')$$, '42501',
  'permission denied for function reconcile_expired',
  'the operator role cannot call reconcile_expired, which is the engine''s (42501)');
SELECT etl_test.refused_as('reader',
  $$SELECT * FROM etl_craft.mark_run(p_run_id => 1, p_status => 'SUCCESS', p_reason => 'r', p_actor => 'bi')$$,
  '42501', 'permission denied for function mark_run', 'the reader role cannot call mark_run (42501)');

-- 2: PUBLIC executes no function of the schema, and every function of the write API runs as its owner.
SELECT is_empty($$SELECT p.proname FROM pg_proc p WHERE p.pronamespace = 'etl_craft'::regnamespace
                    AND has_function_privilege('public', p.oid, 'EXECUTE')$$,
                'PUBLIC can EXECUTE no function of etl_craft');
SELECT is_empty($$SELECT p.proname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
                   WHERE p.pronamespace = 'etl_craft'::regnamespace AND l.lanname = 'plpgsql' AND p.proretset
                     AND NOT (p.prosecdef
                              AND 'search_path=etl_craft, pg_catalog, pg_temp' = ANY (COALESCE(p.proconfig, '{}')))$$,
                'every write-API function is SECURITY DEFINER with search_path etl_craft, pg_catalog, pg_temp');

SELECT * FROM finish();
ROLLBACK;
