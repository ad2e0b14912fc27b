-- 0020_bundles: pinned project bundles (etl-craft bundle publish). AUD_PROJECT_BUNDLES holds one row per published
-- version of a project's files: its manifest (JSON text: relative path -> SHA-256 of sql_files/, ingestion_scripts/
-- and craft-connector.yml as written), the SHA-256 of that manifest, how many files and bytes, and the artifact
-- store the files were uploaded to, content-addressed. Rows are written only by record_bundle
-- (sql/functions/039_bundles.sql.j2) and never change. AUD_PIPELINES_RUN_LOG.BUNDLE_ID is the bundle a run pinned
-- when it was created (its project's latest; NULL when the project has none): every attempt of the run runs it.
CREATE TABLE AUD_PROJECT_BUNDLES (
  BUNDLE_ID INTEGER PRIMARY KEY AUTOINCREMENT,
  PROJECT_ID BIGINT REFERENCES CFG_PROJECTS (PROJECT_ID) NOT NULL,
  MANIFEST TEXT NOT NULL,
  MANIFEST_SHA256 VARCHAR(64) NOT NULL CONSTRAINT manifest_sha256_is_hex CHECK (length(MANIFEST_SHA256) = 64 AND MANIFEST_SHA256 NOT GLOB '*[^0-9a-f]*'),
  FILE_COUNT INT NOT NULL CONSTRAINT file_count_is_not_negative CHECK (FILE_COUNT >= 0),
  TOTAL_BYTES BIGINT NOT NULL CONSTRAINT total_bytes_is_not_negative CHECK (TOTAL_BYTES >= 0),
  STORE_URL VARCHAR(1024) NOT NULL,
  CREATED_BY VARCHAR(128) NOT NULL,
  CREATED_BY_KIND VARCHAR(16) NOT NULL CONSTRAINT created_by_kind_is_valid CHECK (CREATED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM')),
  CREATED_AT TEXT NOT NULL
);
CREATE INDEX ix_project_bundles_latest ON AUD_PROJECT_BUNDLES (PROJECT_ID, BUNDLE_ID);

ALTER TABLE AUD_PIPELINES_RUN_LOG ADD COLUMN BUNDLE_ID BIGINT REFERENCES AUD_PROJECT_BUNDLES (BUNDLE_ID);
