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
