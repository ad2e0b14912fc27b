-- 0016_project_timezone_optional: CFG_PROJECTS.TIMEZONE may be NULL and has no default. A project's time zone has
-- one source, in this order: the row's TIMEZONE when it sets one, else Orchestration: Timezone of
-- craft-connector.yml, else UTC (etlcraft.core.zones). With NOT NULL DEFAULT 'UTC' every row set one, so the
-- configuration could never apply. Until now nothing read the column (run dates came from the configuration
-- alone), so rows holding 'UTC' become NULL: every project keeps the time zone its runs used until now. Other
-- values are kept, and from now on they apply.
-- SQLite cannot alter a column. Removing a NOT NULL constraint and a default does not change how rows are stored,
-- so the table's definition is edited in place, as SQLite's documentation of ALTER TABLE describes for these two
-- changes: writable_schema, then RESET to reload the definition on this connection, then a schema change to bump
-- the schema version so that every other connection reloads it too.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql, 'TIMEZONE VARCHAR(64) NOT NULL DEFAULT ''UTC''', 'TIMEZONE VARCHAR(64)')
 WHERE type = 'table' AND name = 'CFG_PROJECTS';
PRAGMA writable_schema = RESET;
CREATE TABLE MIGRATION_0016_SCHEMA_BUMP (X INT);
DROP TABLE MIGRATION_0016_SCHEMA_BUMP;
UPDATE CFG_PROJECTS SET TIMEZONE = NULL WHERE TIMEZONE = 'UTC';
