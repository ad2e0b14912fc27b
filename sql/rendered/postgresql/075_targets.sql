-- 075_targets: which HASH_KEY formula each warehouse target's rows carry (AUD_TARGET_HASH_VERSION), recorded through
-- the write API like every other row of the Engine DB, so the process that records it needs EXECUTE only.

-- @function record_hash_version
-- @args target_object text, hash_version int
-- @returns target_object text, hash_version int, recomputed_at timestamptz
-- @purpose Record that every row of the warehouse target target_object (its lower-case qualified name) carries
--   HASH_KEY values of formula hash_version: after the warehouse commit of an attempt that created the target, or
--   merged into one whose rows had no hash yet, and after etl-craft rehash. The target's one row in
--   AUD_TARGET_HASH_VERSION is written or replaced, with the actor and the time.
-- @transition none (writes the target's AUD_TARGET_HASH_VERSION row)
-- @locks the target's AUD_TARGET_HASH_VERSION row
-- @errors EC023 target_object is empty, or hash_version is below 1
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'record_hash_version' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.record_hash_version(
  p_target_object text,
  p_hash_version integer,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (target_object text, hash_version integer, recomputed_at timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
BEGIN
  IF COALESCE(p_target_object, '') = '' OR p_hash_version IS NULL OR p_hash_version < 1 THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('record_hash_version needs a target (its lower-case qualified name) and a hash version of at least 1, not ' || COALESCE(CAST(p_target_object AS text), 'NULL') || ' and ' || COALESCE(CAST(p_hash_version AS text), 'NULL')), 'EC023');
  END IF;
  INSERT INTO etl_craft.AUD_TARGET_HASH_VERSION (TARGET_OBJECT, HASH_VERSION, RECOMPUTED_AT, RECOMPUTED_BY, RECOMPUTED_BY_KIND)
  VALUES (p_target_object, p_hash_version, v_now, etl_craft._actor(), etl_craft._actor_kind())
  ON CONFLICT (TARGET_OBJECT) DO UPDATE
     SET HASH_VERSION = excluded.HASH_VERSION, RECOMPUTED_AT = excluded.RECOMPUTED_AT,
         RECOMPUTED_BY = excluded.RECOMPUTED_BY, RECOMPUTED_BY_KIND = excluded.RECOMPUTED_BY_KIND;
  RETURN QUERY
  SELECT q.target_object::text, q.hash_version::integer, q.recomputed_at::timestamptz
    FROM (
      SELECT v.TARGET_OBJECT, v.HASH_VERSION, v.RECOMPUTED_AT FROM etl_craft.AUD_TARGET_HASH_VERSION v WHERE v.TARGET_OBJECT = p_target_object
    ) AS q(target_object, hash_version, recomputed_at);
END
$fn$;
-- @end record_hash_version
