-- Reads of pinned project bundles (AUD_PROJECT_BUNDLES; etlcraft.engine.bundles, etlcraft.services.bundles).

-- name: bundle_list :many
-- The bundles of a project, newest first.
SELECT b.BUNDLE_ID, b.MANIFEST_SHA256, b.FILE_COUNT, b.TOTAL_BYTES, b.STORE_URL, b.CREATED_BY, b.CREATED_BY_KIND,
       b.CREATED_AT,
       (SELECT count(*) FROM {AUD_PIPELINES_RUN_LOG} r WHERE r.BUNDLE_ID = b.BUNDLE_ID) AS RUN_COUNT
  FROM {AUD_PROJECT_BUNDLES} b JOIN {CFG_PROJECTS} p ON p.PROJECT_ID = b.PROJECT_ID
 WHERE p.PROJECT_CODE = :project_code AND p.ACTIVE_FLAG = 'Y'
 ORDER BY b.BUNDLE_ID DESC;

-- name: bundle_manifest :one
-- One bundle's manifest and store.
SELECT b.BUNDLE_ID, b.MANIFEST, b.MANIFEST_SHA256, b.STORE_URL FROM {AUD_PROJECT_BUNDLES} b
 WHERE b.BUNDLE_ID = :bundle_id;

-- name: latest_bundle :one
-- A project's latest bundle: the one new runs pin.
SELECT b.BUNDLE_ID, b.MANIFEST, b.MANIFEST_SHA256, b.STORE_URL
  FROM {AUD_PROJECT_BUNDLES} b JOIN {CFG_PROJECTS} p ON p.PROJECT_ID = b.PROJECT_ID
 WHERE p.PROJECT_CODE = :project_code AND p.ACTIVE_FLAG = 'Y'
 ORDER BY b.BUNDLE_ID DESC LIMIT 1;
