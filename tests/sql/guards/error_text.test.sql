-- Proves refusals read well in psql at its default verbosity: the primary message starts with the etl-craft code
-- ("EC020: attempt ... is SUCCESS, expected ..."), and the context names the function and line only, never the SQL
-- statement that found the refusal (so no internal SQL is dumped as CONTEXT).
BEGIN;
SELECT etl_test.serialize();
SELECT plan(8);

SELECT etl_test.act();
SELECT etl_test.seed();

-- raised(sql): the SQLSTATE, message and context sql raised (nothing it did is kept).
CREATE FUNCTION pg_temp.raised(p_sql text, OUT code text, OUT message text, OUT context text)
LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    EXECUTE p_sql;
    RAISE EXCEPTION 'no error' USING ERRCODE = 'ZX000';
  EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT, context = PG_EXCEPTION_CONTEXT;
  END;
END
$$;

CREATE TEMP TABLE calls ON COMMIT DROP AS
SELECT c.what, c.stmt, r.*
  FROM (VALUES
    ('EC021', 'a run that does not exist', $$SELECT * FROM etl_craft.cancel_run(p_run_id => 999999, p_reason => 'r', p_actor => 'dba:alice')$$),
    ('EC020', 'an attempt that is not RUNNING', $$SELECT * FROM etl_craft.finish_attempt(
        p_attempt_id => (SELECT min(attempt_id) FROM etl_craft.aud_task_attempts), p_owner_id => 'nobody',
        p_status => 'SUCCESS', p_actor => 'dba:alice')$$),
    ('EC023', 'a refusal by arguments alone', $$SELECT * FROM etl_craft.claim_attempt(p_pool => 'default',
        p_slot_kinds => 'warehouse', p_owner_id => '', p_actor => 'dba:alice')$$),
    ('EC001', 'a call that names no actor', $$SELECT set_config('etl_craft.actor', '', true);
        SELECT * FROM etl_craft.renew_lease(p_owner_id => 'w', p_lease_seconds => 60)$$)
  ) AS c(expected, what, stmt)
  CROSS JOIN LATERAL pg_temp.raised(c.stmt) r;

-- 4: each refusal's primary message opens with its code, which is also its SQLSTATE.
SELECT ok(code = expected AND message LIKE expected || ': %', format('%s: the message opens with %s', what, expected))
  FROM calls JOIN (VALUES ('a run that does not exist', 'EC021'), ('an attempt that is not RUNNING', 'EC020'),
                          ('a refusal by arguments alone', 'EC023'), ('a call that names no actor', 'EC001')) AS e(what, expected)
       USING (what) ORDER BY what;

-- 4: its context is the function and line: it starts at the RAISE, and its one SQL statement is the suite's own call.
SELECT ok(context LIKE 'PL/pgSQL function % at RAISE%'
          AND (length(context) - length(replace(context, 'SQL statement', ''))) / length('SQL statement') = 1
          AND context LIKE '%SQL statement "' || left(stmt, 20) || '%',
          format('%s: the context names the function and line, not the SQL that found it (%s)', what,
                 replace(context, E'\n', ' | ')))
  FROM calls ORDER BY what;

SELECT * FROM finish();
ROLLBACK;
