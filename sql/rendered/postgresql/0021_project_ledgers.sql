-- 0021_project_ledgers: one ledger of metadata migrations per project. Several projects can share one Engine DB
-- (seed S5.G), each applying its own migrations/ folder; with the ledger keyed by (STREAM, VERSION) alone, the
-- second project's 0001_*.sql was taken for the first one's (refused as changed, or skipped as applied).
-- SCHEMA_MIGRATIONS gains PROJECT_CODE (the project whose folder the PROJECT row came from; '' for ENGINE rows) and
-- its key becomes (STREAM, PROJECT_CODE, VERSION). The PROJECT rows already applied belong to the Engine DB's only
-- active project when there is exactly one; otherwise they keep '' (etl-craft migrate names the ledger of a folder
-- after Orchestration: Project or --project-code, else after the one project the ledger holds).
-- SQLite cannot change a primary key in place: it makes the table again (the old one renamed, the new one created,
-- the rows copied, the old one dropped); migrate then creates its triggers again.
ALTER TABLE SCHEMA_MIGRATIONS ADD COLUMN PROJECT_CODE VARCHAR(128) NOT NULL DEFAULT '',
  DROP CONSTRAINT pk_schema_migrations,
  ADD CONSTRAINT pk_schema_migrations PRIMARY KEY (STREAM, PROJECT_CODE, VERSION),
  ADD CONSTRAINT engine_rows_have_no_project CHECK (STREAM = 'PROJECT' OR PROJECT_CODE = '');
UPDATE SCHEMA_MIGRATIONS
   SET PROJECT_CODE = (SELECT MIN(PROJECT_CODE) FROM CFG_PROJECTS WHERE ACTIVE_FLAG = 'Y')
 WHERE STREAM = 'PROJECT' AND (SELECT COUNT(*) FROM CFG_PROJECTS WHERE ACTIVE_FLAG = 'Y') = 1;
