-- Helpers for the role suites (tests/sql/roles). tests/sql/run_pgtap.py set up the reader, operator and engine roles
-- of `etl-craft grant` under a prefix of the test database's own (roles are cluster-wide), recorded in ENG_SETTINGS.

-- role(kind): the name of the reader, operator or engine role of this database.
CREATE OR REPLACE FUNCTION etl_test.role(p_kind text)
RETURNS text LANGUAGE sql STABLE AS $$
  SELECT value || '_' || p_kind FROM etl_craft.eng_settings WHERE setting = 'ROLE_PREFIX'
$$;

-- probe_as(kind, sql): etl_test.probe(sql) run as the role of that kind (SET LOCAL ROLE inside the probe's
-- subtransaction, which its rollback undoes: the caller is itself again afterwards).
CREATE OR REPLACE FUNCTION etl_test.probe_as(p_kind text, p_sql text, OUT code text, OUT message text)
LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    EXECUTE format('SET LOCAL ROLE %I', etl_test.role(p_kind));
    EXECUTE p_sql;
    RAISE EXCEPTION 'probe succeeded' USING ERRCODE = 'ZX000';
  EXCEPTION
    WHEN SQLSTATE 'ZX000' THEN code := '00000'; message := NULL;
    WHEN OTHERS THEN code := SQLSTATE; message := SQLERRM;
  END;
END
$$;

-- refused_as(kind, sql, code, pattern, description): etl_test.refused for a statement run as the role of that kind.
CREATE OR REPLACE FUNCTION etl_test.refused_as(p_kind text, p_sql text, p_code text, p_pattern text,
                                               p_description text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v record := etl_test.probe_as(p_kind, p_sql);
  v_prefix text := CASE WHEN p_code LIKE 'EC%' THEN p_code || ': ' ELSE '' END;
BEGIN
  IF v.code = p_code AND starts_with(v.message, v_prefix) AND substr(v.message, length(v_prefix) + 1) LIKE p_pattern THEN
    RETURN ok(true, p_description);
  END IF;
  RETURN ok(false, p_description) || E'\n' || diag(
    '    caught: ' || CASE WHEN v.code = '00000' THEN 'no error' ELSE v.code || ': ' || v.message END || E'\n' ||
    '    wanted: ' || p_code || ': ' || v_prefix || p_pattern);
END
$$;

-- views(): the AUD_V_* views of the schema (none until a migration adds them), qualified.
CREATE OR REPLACE FUNCTION etl_test.views()
RETURNS SETOF text LANGUAGE sql STABLE AS $$
  SELECT 'etl_craft.' || c.relname FROM pg_class c
   WHERE c.relnamespace = 'etl_craft'::regnamespace AND c.relkind IN ('v', 'm') AND c.relname LIKE 'aud\_v\_%'
   ORDER BY 1
$$;
