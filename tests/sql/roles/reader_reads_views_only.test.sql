-- The reader role (BI tools) selects every AUD_V_* view of the schema and nothing else: no base table, no function
-- but those the views call. With no AUD_V_ view yet, it holds USAGE on the schema only.
BEGIN;
SELECT etl_test.serialize();
SELECT plan(6);

SELECT etl_test.act();
SELECT etl_test.seed();

-- 1: the reader can use the schema.
SELECT ok(has_schema_privilege(etl_test.role('reader'), 'etl_craft', 'USAGE'), 'the reader role has USAGE on etl_craft');

-- 2: it selects every AUD_V_ view, for real, and the catalog says those are all it may select.
SELECT is_empty($$SELECT v, p.code, p.message FROM etl_test.views() v
                    CROSS JOIN LATERAL etl_test.probe_as('reader', 'SELECT * FROM ' || v || ' LIMIT 5') p
                   WHERE p.code <> '00000'$$,
                format('the reader role selects every AUD_V_ view (%s found)', (SELECT count(*) FROM etl_test.views())));
SELECT is_empty($$(SELECT 'etl_craft.' || c.relname FROM pg_class c
                    WHERE c.relnamespace = 'etl_craft'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')
                      AND has_table_privilege(etl_test.role('reader'), c.oid, 'SELECT'))
                  EXCEPT SELECT * FROM etl_test.views()$$,
                'the reader role may select nothing but the AUD_V_ views');

-- 1: each base table refuses it.
SELECT is_empty($$SELECT t, p.code, p.message FROM etl_test.owned_tables() t
                    CROSS JOIN LATERAL etl_test.probe_as('reader', format('SELECT * FROM etl_craft.%I LIMIT 1', lower(t))) p
                   WHERE p.code <> '42501'$$,
                'a SELECT of any base table (AUD_, CFG_, ENG_, SCHEMA_MIGRATIONS) as the reader role is refused (42501)');

-- 1: it executes no function but those the AUD_V_ views call (and _pinned_now, which clock_now calls).
CREATE TEMP VIEW view_calls AS
SELECT DISTINCT p.proname::text FROM pg_rewrite w JOIN pg_class v ON v.oid = w.ev_class
  JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid AND d.refclassid = 'pg_proc'::regclass
  JOIN pg_proc p ON p.oid = d.refobjid
 WHERE v.relnamespace = 'etl_craft'::regnamespace AND v.relname LIKE 'aud\_v\_%';
SELECT is_empty($$SELECT p.proname FROM pg_proc p
                   WHERE p.pronamespace = 'etl_craft'::regnamespace
                     AND has_function_privilege(etl_test.role('reader'), p.oid, 'EXECUTE')
                     AND p.proname NOT IN (SELECT proname FROM view_calls)
                     AND NOT (p.proname = '_pinned_now' AND 'clock_now' IN (SELECT proname FROM view_calls))$$,
                'the reader role executes no function of etl_craft but those its views call');

-- 1: the operator role has everything the reader has (it is a member).
SELECT ok(pg_has_role(etl_test.role('operator'), etl_test.role('reader'), 'USAGE'),
          'the operator role holds the reader role''s grants (it is a member of it)');

SELECT * FROM finish();
ROLLBACK;
