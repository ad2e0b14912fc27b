-- Helpers for the pgTAP suites, loaded once into the test database by tests/sql/run_pgtap.py.
-- Each suite runs in a transaction it rolls back, so nothing a suite writes outlives it.

CREATE SCHEMA IF NOT EXISTS etl_test;

-- act(actor, kind): mark the current transaction as etl-craft's, exactly as the engine does.
CREATE OR REPLACE FUNCTION etl_test.act(p_actor text DEFAULT 'pgtap@test', p_kind text DEFAULT 'HUMAN')
RETURNS void LANGUAGE sql AS $$
  SELECT set_config('etl_craft.actor', p_actor, true), set_config('etl_craft.actor_kind', p_kind, true);
  SELECT NULL::void;
$$;

-- as_migrate(): take etl-craft migrate's lock (the transaction-level advisory lock keyed by the first 8 bytes of
-- sha256('etl-craft:migrate')), as migrate does first: only such a transaction may write SCHEMA_MIGRATIONS and the
-- ENG_ reference tables.
CREATE OR REPLACE FUNCTION etl_test.as_migrate()
RETURNS void LANGUAGE sql AS $$
  SELECT pg_advisory_xact_lock(('x' || left(encode(sha256('etl-craft:migrate'::bytea), 'hex'), 16))::bit(64)::bigint);
$$;

-- unmark(): drop the marker again, so the transaction writes like any other tool would.
CREATE OR REPLACE FUNCTION etl_test.unmark()
RETURNS void LANGUAGE sql AS $$
  SELECT set_config('etl_craft.actor', '', true), set_config('etl_craft.actor_kind', '', true);
  SELECT NULL::void;
$$;

-- owned_tables(): every table etl-craft guards, upper case, as the docs name them.
CREATE OR REPLACE FUNCTION etl_test.owned_tables()
RETURNS SETOF text LANGUAGE sql STABLE AS $$
  SELECT upper(c.relname)::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = 'etl_craft' AND c.relkind = 'r'
     AND c.relname ~ '^(aud_|cfg_|eng_)|^schema_migrations$'
   ORDER BY 1
$$;

-- seed(): one row in every AUD_ and CFG_ table (call act() first). Codes: project tp, pool tpool, pipelines
-- up_pl and down_pl, tasks up_pl.extract and down_pl.load; runs manual:up1 and manual:down1 (IN-PROGRESS),
-- task run of extract in manual:up1 (IN-PROGRESS) with attempt 1 (QUEUED).
CREATE OR REPLACE FUNCTION etl_test.seed()
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_project bigint; v_up bigint; v_down bigint; v_extract bigint; v_load bigint;
  v_pdep bigint; v_tdep bigint; v_up_run bigint; v_down_run bigint; v_task_run bigint; v_attempt bigint;
  v_decision bigint;
  v_actor text := current_setting('etl_craft.actor', true);
  v_kind text := current_setting('etl_craft.actor_kind', true);
BEGIN
  INSERT INTO etl_craft.cfg_projects (project_code) VALUES ('tp') RETURNING project_id INTO v_project;
  INSERT INTO etl_craft.cfg_pools (pool_name) VALUES ('tpool');
  INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code) VALUES (v_project, 'up_pl')
    RETURNING pipeline_id INTO v_up;
  INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code) VALUES (v_project, 'down_pl')
    RETURNING pipeline_id INTO v_down;
  INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file, target_object)
    VALUES (v_up, 'extract', 'SQL', 'OVERWRITE_TABLE', 'extract.sql', 'main.extract') RETURNING task_id INTO v_extract;
  INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, script_file)
    VALUES (v_down, 'load', 'PYTHON', 'load.py') RETURNING task_id INTO v_load;
  INSERT INTO etl_craft.cfg_task_parameters (task_id, parameter_name, parameter_value)
    VALUES (v_extract, 'MERGE_KEY', 'id');
  INSERT INTO etl_craft.cfg_pipeline_dependency (pipeline_id, depends_on_pipeline_id)
    VALUES (v_down, v_up) RETURNING pipeline_dependency_id INTO v_pdep;
  INSERT INTO etl_craft.cfg_task_dependency (task_id, depends_on_task_id)
    VALUES (v_load, v_extract) RETURNING task_dependency_id INTO v_tdep;

  INSERT INTO etl_craft.aud_pipelines_run_log
    (pipeline_id, run_key, trigger_kind, run_date, status, queued_at, start_date, started_by, started_by_kind)
    VALUES (v_up, 'manual:up1', 'MANUAL', DATE '2026-01-01', 'IN-PROGRESS', now(), now(), 'pgtap@test', 'HUMAN')
    RETURNING pipeline_run_id INTO v_up_run;
  INSERT INTO etl_craft.aud_pipelines_run_log
    (pipeline_id, run_key, trigger_kind, run_date, status, queued_at, start_date, started_by, started_by_kind)
    VALUES (v_down, 'manual:down1', 'MANUAL', DATE '2026-01-01', 'IN-PROGRESS', now(), now(), 'pgtap@test', 'HUMAN')
    RETURNING pipeline_run_id INTO v_down_run;
  INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status, attempt_count, start_date)
    VALUES (v_up_run, v_extract, 'IN-PROGRESS', 1, now()) RETURNING task_run_id INTO v_task_run;
  INSERT INTO etl_craft.aud_task_attempts
    (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
    VALUES (v_task_run, 1, 'QUEUED', now(), 'pgtap@test', 'HUMAN') RETURNING attempt_id INTO v_attempt;
  -- the engine judged the gate: the decision carries its actor, as the transaction that wrote it was marked
  PERFORM etl_test.act('etl-craft', 'SYSTEM');
  INSERT INTO etl_craft.aud_gate_decisions
    (pipeline_run_id, pipeline_dependency_id, result, reason, decided_at, decided_by, decided_by_kind)
    VALUES (v_down_run, v_pdep, 'UNSATISFIED', 'up_pl has no finished run', now(), 'etl-craft', 'SYSTEM')
    RETURNING decision_id INTO v_decision;
  PERFORM etl_test.act(v_actor, v_kind);
  INSERT INTO etl_craft.aud_dependency_consumption
    (pipeline_run_id, pipeline_dependency_id, consumed_pipeline_run_id, consumed_revision, consumed_at)
    VALUES (v_down_run, v_pdep, v_up_run, 1, now());
  INSERT INTO etl_craft.aud_run_interventions
    (pipeline_run_id, intervention, from_status, to_status, reason, requested_by, requested_by_kind, requested_at)
    VALUES (v_up_run, 'MARK', 'FAILED', 'SUCCESS', 'pgtap seed', 'pgtap@test', 'HUMAN', now());
  INSERT INTO etl_craft.aud_pipeline_pauses (pipeline_id, paused_at, paused_by, paused_by_kind, pause_reason)
    VALUES (v_up, now(), 'pgtap@test', 'HUMAN', 'pgtap seed');
  INSERT INTO etl_craft.aud_actions (started_at, actor, actor_kind, command, arguments)
    VALUES (now(), 'pgtap@test', 'HUMAN', 'seed', '{}'::jsonb);
  INSERT INTO etl_craft.aud_task_offsets (task_id, offset_type, offset_value, task_run_id, attempt_id, stored_at)
    VALUES (v_extract, 'INTEGER', '42', v_task_run, v_attempt, now());
END
$$;

-- serialize(): call first in a suite that writes. pg_prove runs two files at once; their seeds would wait on
-- each other's unique codes (project tp) and a TRUNCATE could then deadlock. SHARE ROW EXCLUSIVE conflicts with
-- itself and with every row write, so writing suites run one at a time; reading the catalog is not blocked.
CREATE OR REPLACE FUNCTION etl_test.serialize()
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE etl_craft.cfg_projects IN SHARE ROW EXCLUSIVE MODE;
END
$$;

-- probe(sql): run sql (one or more statements) in a subtransaction that is always rolled back, and say how it
-- ended: code '00000' and message NULL when it succeeded, else the SQLSTATE and message it raised.
CREATE OR REPLACE FUNCTION etl_test.probe(p_sql text, OUT code text, OUT message text)
LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    EXECUTE p_sql;
    RAISE EXCEPTION 'probe succeeded' USING ERRCODE = 'ZX000';
  EXCEPTION
    WHEN SQLSTATE 'ZX000' THEN code := '00000'; message := NULL;
    WHEN OTHERS THEN code := SQLSTATE; message := SQLERRM;
  END;
END
$$;

-- refused(sql, code, pattern, description): a pgTAP assertion that sql raises SQLSTATE code with a message LIKE pattern
-- (throws_ok wants the whole message, throws_like ignores the code). An etl-craft code (ECnnn) must also open the
-- message ('EC020: ...', so psql shows it at its default verbosity); the pattern matches what follows it. Nothing
-- sql does is kept.
CREATE OR REPLACE FUNCTION etl_test.refused(p_sql text, p_code text, p_pattern text, p_description text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v record := etl_test.probe(p_sql);
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
