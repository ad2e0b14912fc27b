-- 0022_recent_runs_index: a pipeline's runs indexed newest first, (PIPELINE_ID, PIPELINE_RUN_ID DESC). The catalog
-- (etl-craft generate-docs) shows the last N runs of every pipeline: with this index PostgreSQL reads each
-- pipeline's N newest entries (LATERAL ... ORDER BY PIPELINE_RUN_ID DESC LIMIT N) instead of all its runs and a
-- sort, so the read stays the same size however long the history grows.
CREATE INDEX ix_runs_recent ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID, PIPELINE_RUN_ID DESC);
