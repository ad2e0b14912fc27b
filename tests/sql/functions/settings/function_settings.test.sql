-- Every write-API function (the set-returning PL/pgSQL functions of the schema) runs with jit = off: a generic
-- plan over a large queue is estimated above jit_above_cost (the claim's, past about 35,000 queued attempts) and
-- JIT compilation then took some 60 ms on every call. The hot functions of an attempt's path (and of every chain link:
-- the successors' readiness and their queuing) plan once per session.
-- The claim plans without sorts, so that it always walks the queue index to its limit
-- (tests/py/conformance/test_claim_at_scale.py shows why).
BEGIN;
SELECT plan(4);

CREATE TEMP TABLE api ON COMMIT DROP AS
SELECT p.proname::text AS name, COALESCE(p.proconfig, '{}') AS config
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.pronamespace = 'etl_craft'::regnamespace AND l.lanname = 'plpgsql' AND p.proretset;

SELECT cmp_ok((SELECT count(*)::int FROM api), '>=', 20, 'the write API is found: at least 20 functions');

SELECT is_empty($$SELECT name FROM api WHERE NOT 'jit=off' = ANY (config)$$,
  'every write-API function runs with jit = off');

SELECT set_eq($$SELECT name FROM api WHERE 'plan_cache_mode=force_generic_plan' = ANY (config)$$,
  ARRAY['claim_attempt', 'start_attempt', 'finish_attempt', 'renew_lease', 'renew_overseer', 'heartbeat_worker',
        'ready_successors', 'queue_attempts'],
  'the functions on every attempt''s path keep one generic plan per session');

SELECT set_eq($$SELECT name FROM api WHERE 'enable_sort=off' = ANY (config)$$, ARRAY['claim_attempt'],
  'the claim walks the queue index in claim order and never sorts the queue');

SELECT * FROM finish();
ROLLBACK;
