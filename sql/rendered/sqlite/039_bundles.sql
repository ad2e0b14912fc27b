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
-- @end record_bundle
