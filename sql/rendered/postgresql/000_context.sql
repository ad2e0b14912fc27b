-- 000_context: who is acting, in which migration, and what time it is, read by every trigger and function.
-- _pinned_now(): the time this session pinned with set_config('etl_craft.now', '<timestamptz>', ...), honoured only in
-- a database whose owner enabled test mode (ENG_SETTINGS TEST_MODE = Y). It reads ENG_SETTINGS as its owner, so a
-- caller needs no grant on it. Errors: EC023 outside test mode.
CREATE OR REPLACE FUNCTION etl_craft._pinned_now() RETURNS timestamptz
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp AS $$
DECLARE
  v_pinned text := current_setting('etl_craft.now', true);
BEGIN
  IF NOT EXISTS (SELECT 1 FROM etl_craft.ENG_SETTINGS WHERE SETTING = 'TEST_MODE' AND VALUE = 'Y') THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = 'EC023: this session pins the clock (etl_craft.now = '
      || quote_literal(v_pinned) || '), but database ' || current_database() || ' is not in test mode, so its '
      || 'clock is the server''s: RESET etl_craft.now; only a test database, whose schema owner enabled test mode, '
      || 'takes a pinned clock';
  END IF;
  RETURN v_pinned::timestamptz;
END
$$;

-- clock_now(): the one clock of the Engine DB: the transaction's time, or in a test database the time a session
-- pinned with set_config('etl_craft.now', '<timestamptz>', false), so tests can move time without sleeping. A
-- production database refuses a pinned clock (EC023, _pinned_now): nobody can push it ahead and have live attempts
-- reconciled LOST. Plain SQL, inlined where it is called: an unpinned clock costs one setting read.
CREATE OR REPLACE FUNCTION etl_craft.clock_now() RETURNS timestamptz
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN COALESCE(current_setting('etl_craft.now', true), '') = '' THEN now() ELSE etl_craft._pinned_now() END
$$;

-- _actor(): the actor etl-craft marked this transaction with (set_config('etl_craft.actor', ..., true)),
-- NULL when the transaction does not come through etl-craft.
CREATE OR REPLACE FUNCTION etl_craft._actor() RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT NULLIF(current_setting('etl_craft.actor', true), '')
$$;

-- _actor_kind(): HUMAN, SCHEDULE, ORCHESTRATOR, WORKER or SYSTEM; HUMAN when only the actor was set.
CREATE OR REPLACE FUNCTION etl_craft._actor_kind() RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT COALESCE(NULLIF(current_setting('etl_craft.actor_kind', true), ''), 'HUMAN')
$$;

-- _migration(): the project migration file being applied, NULL outside etl-craft migrate.
CREATE OR REPLACE FUNCTION etl_craft._migration() RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT NULLIF(current_setting('etl_craft.migration', true), '')
$$;

-- _marked_actor(): the actor this transaction is marked with, checked: the name the stamping triggers write into
-- actor columns. Errors: EC001 when the transaction has no marker, or a marker that is not a name (blank, over 128
-- characters, control characters) or a kind that is not an actor kind, rather than a column's own error.
CREATE OR REPLACE FUNCTION etl_craft._marked_actor() RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_actor text := etl_craft._actor();
  v_kind text := etl_craft._actor_kind();
BEGIN
  IF v_actor IS NULL THEN
    RAISE EXCEPTION 'EC001: etl-craft functions record who acts: pass p_actor => ''you@host'' (or run them through etl-craft)'
      USING ERRCODE = 'EC001';
  ELSIF btrim(v_actor) = '' OR length(v_actor) > 128 OR v_actor ~ '[[:cntrl:]]' THEN
    RAISE EXCEPTION 'EC001: the actor marker etl_craft.actor = % is not a name: use 1 to 128 printable characters, such as dba:alice',
      quote_literal(left(v_actor, 40)) || CASE WHEN length(v_actor) > 40 THEN '... (' || length(v_actor) || ' characters)' ELSE '' END
      USING ERRCODE = 'EC001';
  ELSIF NOT v_kind IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM') THEN
    RAISE EXCEPTION 'EC001: the actor kind etl_craft.actor_kind = % is not one of HUMAN, SCHEDULE, ORCHESTRATOR, WORKER, SYSTEM', quote_literal(left(v_kind, 40)) || CASE WHEN length(v_kind) > 40 THEN '... (' || length(v_kind) || ' characters)' ELSE '' END
      USING ERRCODE = 'EC001';
  END IF;
  RETURN v_actor;
END
$$;

-- _begin(actor, kind): the first step of every write function. Marks the transaction with the actor when one
-- is passed (DBAs calling a function by hand name themselves this way), refuses to go on without a well-formed
-- actor, and returns the clock. Errors: EC001 when no actor is named, or the actor or its kind is malformed; EC023
-- when the clock is pinned outside test mode.
CREATE OR REPLACE FUNCTION etl_craft._begin(p_actor text, p_actor_kind text) RETURNS timestamptz
LANGUAGE plpgsql AS $$
DECLARE
  v_marked text;
BEGIN
  IF p_actor IS NOT NULL THEN
    IF btrim(p_actor) = '' OR length(p_actor) > 128 OR p_actor ~ '[[:cntrl:]]' THEN
      RAISE EXCEPTION 'EC001: the actor % is not a name: use 1 to 128 printable characters, such as dba:alice',
        quote_literal(left(p_actor, 40)) || CASE WHEN length(p_actor) > 40 THEN '... (' || length(p_actor) || ' characters)' ELSE '' END
        USING ERRCODE = 'EC001';
    END IF;
    IF p_actor_kind IS NOT NULL AND NOT p_actor_kind IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM') THEN
      RAISE EXCEPTION 'EC001: the actor kind % is not one of HUMAN, SCHEDULE, ORCHESTRATOR, WORKER, SYSTEM', quote_literal(left(p_actor_kind, 40)) || CASE WHEN length(p_actor_kind) > 40 THEN '... (' || length(p_actor_kind) || ' characters)' ELSE '' END
        USING ERRCODE = 'EC001';
    END IF;
    -- An assignment, not PERFORM: PL/pgSQL evaluates it as a plain expression, without starting an executor.
    v_marked := set_config('etl_craft.actor', p_actor, true)
                || set_config('etl_craft.actor_kind', COALESCE(p_actor_kind, 'HUMAN'), true);
  ELSE
    v_marked := etl_craft._marked_actor();
  END IF;
  RETURN etl_craft.clock_now();
END
$$;

-- Refusals are raised by each function's own body (sql/functions/_functions.sql.j2); this helper is gone.
DROP FUNCTION IF EXISTS etl_craft._fail(text, text);
