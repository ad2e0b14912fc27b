-- 0016_project_timezone_optional: CFG_PROJECTS.TIMEZONE may be NULL and has no default. A project's time zone has
-- one source, in this order: the row's TIMEZONE when it sets one, else Orchestration: Timezone of
-- craft-connector.yml, else UTC (etlcraft.core.zones). With NOT NULL DEFAULT 'UTC' every row set one, so the
-- configuration could never apply. Until now nothing read the column (run dates came from the configuration
-- alone), so rows holding 'UTC' become NULL: every project keeps the time zone its runs used until now. Other
-- values are kept, and from now on they apply.
ALTER TABLE CFG_PROJECTS ALTER COLUMN TIMEZONE DROP NOT NULL, ALTER COLUMN TIMEZONE DROP DEFAULT;
UPDATE CFG_PROJECTS SET TIMEZONE = NULL WHERE TIMEZONE = 'UTC';
