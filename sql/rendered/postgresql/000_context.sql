-- 000_context: who is acting, in which migration, and what time it is, read by every trigger and function.
-- clock_now(): the one clock of the Engine DB. Returns the transaction's time, or the time pinned for this
-- session with set_config('etl_craft.now', '<timestamptz>', false), so tests can move time without sleeping.
CREATE OR REPLACE FUNCTION etl_craft.clock_now() RETURNS timestamptz
LANGUAGE sql STABLE AS $$
  SELECT COALESCE(NULLIF(current_setting('etl_craft.now', true), '')::timestamptz, now())
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

-- _begin(actor, kind): the first step of every write function. Marks the transaction with the actor when one
-- is passed (DBAs calling a function by hand name themselves this way), refuses to go on without an actor,
-- and returns the clock. Errors: EC001 when no actor is named.
CREATE OR REPLACE FUNCTION etl_craft._begin(p_actor text, p_actor_kind text) RETURNS timestamptz
LANGUAGE plpgsql AS $$
DECLARE
  v_marked text;
BEGIN
  IF p_actor IS NOT NULL THEN
    IF btrim(p_actor) = '' OR length(p_actor) > 128 OR p_actor ~ '[[:cntrl:]]' THEN
      RAISE EXCEPTION 'the actor % is not a name: use 1 to 128 printable characters, such as dba:alice', quote_literal(p_actor)
        USING ERRCODE = 'EC001';
    END IF;
    -- An assignment, not PERFORM: PL/pgSQL evaluates it as a plain expression, without starting an executor.
    v_marked := set_config('etl_craft.actor', p_actor, true)
                || set_config('etl_craft.actor_kind', COALESCE(p_actor_kind, 'HUMAN'), true);
  ELSIF etl_craft._actor() IS NULL THEN
    RAISE EXCEPTION 'etl-craft functions record who acts: pass p_actor => ''you@host'' (or run them through etl-craft)'
      USING ERRCODE = 'EC001';
  END IF;
  RETURN etl_craft.clock_now();
END
$$;

-- _fail(code, message): raise one of etl-craft's error codes (sql/errors.yaml) with its message.
CREATE OR REPLACE FUNCTION etl_craft._fail(p_code text, p_message text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = p_code, MESSAGE = p_message;
END
$$;
