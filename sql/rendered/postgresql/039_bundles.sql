-- 039_bundles: pinned project bundles. etl-craft bundle publish uploads a project's files to the artifact store,
-- content-addressed, and records the manifest here; create_run and create_scheduled_runs pin the project's latest
-- bundle on each new run (AUD_PIPELINES_RUN_LOG.BUNDLE_ID).


-- @function record_bundle
-- @args project_code text, manifest text, manifest_sha256 text, file_count int, total_bytes bigint, store_url text
-- @returns bundle_id bigint, created bool, created_at timestamptz
-- @purpose Record a published bundle of the project's files: the manifest (JSON text, relative path -> SHA-256),
--   its SHA-256, the number of files and bytes, and the artifact store (a URL) the files were uploaded to. The actor is
--   CREATED_BY. When the project's latest bundle has the same manifest SHA-256 nothing is recorded and that bundle is
--   returned with created = false (publishing the same content twice is a no-op); a manifest equal to an older bundle's
--   is recorded anew, since the latest bundle is the one new runs pin.
-- @transition BUNDLE (none) -> published
-- @locks none (rows are only ever inserted)
-- @errors EC021 no active project of this code; EC023 the manifest SHA-256 is not 64 hexadecimal digits, or a
--   count is negative
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'record_bundle' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.record_bundle(
  p_project_code text,
  p_manifest text,
  p_manifest_sha256 text,
  p_file_count integer,
  p_total_bytes bigint,
  p_store_url text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (bundle_id bigint, created boolean, created_at timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_project_id bigint;
  v_latest_id bigint;
  v_latest_sha text;
  v_bundle_id bigint;
BEGIN
  IF length(COALESCE(p_manifest_sha256, '')) <> 64 OR p_file_count < 0 OR p_total_bytes < 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('the manifest SHA-256 of the bundle of project ' || COALESCE(CAST(p_project_code AS text), 'NULL') || ' is ' || COALESCE(CAST(p_manifest_sha256 AS text), 'NULL') || ', expected 64 lower-case hexadecimal digits; publish with etl-craft bundle publish, which computes it'), 'EC023');
  END IF;
  SELECT PROJECT_ID INTO v_project_id FROM etl_craft.CFG_PROJECTS
   WHERE PROJECT_CODE = p_project_code AND ACTIVE_FLAG = 'Y';
  IF v_project_id IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE('EC021: ' || ('there is no active project ' || COALESCE(CAST(p_project_code AS text), 'NULL') || ' in this Engine DB; expected the code of Orchestration.Project (CFG_PROJECTS.PROJECT_CODE): run etl-craft migrate to create it, or pass --project'), 'EC021');
  END IF;
  SELECT b.BUNDLE_ID, b.MANIFEST_SHA256 INTO v_latest_id, v_latest_sha
    FROM etl_craft.AUD_PROJECT_BUNDLES b WHERE b.PROJECT_ID = v_project_id
   ORDER BY b.BUNDLE_ID DESC LIMIT 1;
  INSERT INTO etl_craft.AUD_PROJECT_BUNDLES
    (PROJECT_ID, MANIFEST, MANIFEST_SHA256, FILE_COUNT, TOTAL_BYTES, STORE_URL, CREATED_BY, CREATED_BY_KIND, CREATED_AT)
  SELECT v_project_id, p_manifest, p_manifest_sha256, p_file_count,
         p_total_bytes, p_store_url, etl_craft._actor(), etl_craft._actor_kind(), v_now
   WHERE v_latest_sha IS NULL OR v_latest_sha <> p_manifest_sha256
  RETURNING BUNDLE_ID INTO v_bundle_id;
  RETURN QUERY
  SELECT q.bundle_id::bigint, q.created::boolean, q.created_at::timestamptz
    FROM (
      SELECT b.BUNDLE_ID, v_bundle_id IS NOT NULL, b.CREATED_AT
        FROM etl_craft.AUD_PROJECT_BUNDLES b WHERE b.BUNDLE_ID = COALESCE(v_bundle_id, v_latest_id)
    ) AS q(bundle_id, created, created_at);
END
$fn$;
-- @end record_bundle
