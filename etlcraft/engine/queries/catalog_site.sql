-- Reads of run history for the catalog site (etl-craft generate-docs). {TABLE} names are qualified for the Engine
-- DB's dialect by etlcraft.engine.queries; binds are :name. Each query reads every pipeline at once, so a build
-- issues the same statements whatever the number of pipelines and tasks; history is bounded to the last :limit runs
-- of each pipeline. PostgreSQL reads them through LATERAL ... LIMIT over the pipeline's runs in key order; SQLite
-- (single-user development) numbers them with a window function.

-- name: catalog_recent_runs_postgresql :many
SELECT r.PIPELINE_RUN_ID, r.PIPELINE_ID, r.RUN_KEY, r.TRIGGER_KIND, r.RUN_DATE, r.STATUS, r.QUEUED_AT, r.START_DATE,
       r.END_DATE, r.OUTPUT_REVISION, r.REPAIR_PENDING, r.SLA_STATUS, r.STARTED_BY, r.ENDED_BY, r.MESSAGE
  FROM {CFG_PIPELINES} p
 CROSS JOIN LATERAL (
       SELECT * FROM {AUD_PIPELINES_RUN_LOG} x
        WHERE x.PIPELINE_ID = p.PIPELINE_ID
        ORDER BY x.PIPELINE_RUN_ID DESC
        LIMIT :limit) r
 WHERE p.ACTIVE_FLAG = 'Y'
 ORDER BY r.PIPELINE_ID, r.PIPELINE_RUN_ID DESC;

-- name: catalog_recent_runs_sqlite :many
SELECT PIPELINE_RUN_ID, PIPELINE_ID, RUN_KEY, TRIGGER_KIND, RUN_DATE, STATUS, QUEUED_AT, START_DATE, END_DATE,
       OUTPUT_REVISION, REPAIR_PENDING, SLA_STATUS, STARTED_BY, ENDED_BY, MESSAGE
  FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r.PIPELINE_ID ORDER BY r.PIPELINE_RUN_ID DESC) AS RECENCY
          FROM {AUD_PIPELINES_RUN_LOG} r
          JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID AND p.ACTIVE_FLAG = 'Y') ranked
 WHERE RECENCY <= :limit
 ORDER BY PIPELINE_ID, PIPELINE_RUN_ID DESC;

-- name: catalog_recent_task_runs_postgresql :many
-- The task runs of the shown runs (the last :limit runs of each active pipeline), each run's read through
-- ux_task_run_per_run. OFFSET 0 keeps each LATERAL a lookup per run: without it the planner may flatten it into a
-- hash join that scans every task run once per pipeline when the statistics are stale (a table just loaded).
SELECT tr.TASK_RUN_ID, tr.PIPELINE_RUN_ID, tr.TASK_ID, tr.STATUS, tr.ATTEMPT_COUNT, tr.START_DATE, tr.END_DATE,
       tr.ROWS_WRITTEN, tr.ERROR_MESSAGE
  FROM {CFG_PIPELINES} p
 CROSS JOIN LATERAL (
       SELECT x.PIPELINE_RUN_ID FROM {AUD_PIPELINES_RUN_LOG} x
        WHERE x.PIPELINE_ID = p.PIPELINE_ID
        ORDER BY x.PIPELINE_RUN_ID DESC
        LIMIT :limit) r
 CROSS JOIN LATERAL (
       SELECT * FROM {AUD_TASK_RUN_LOG} y WHERE y.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID OFFSET 0) tr
 WHERE p.ACTIVE_FLAG = 'Y'
 ORDER BY tr.TASK_ID, tr.PIPELINE_RUN_ID DESC;

-- name: catalog_recent_task_runs_sqlite :many
SELECT tr.TASK_RUN_ID, tr.PIPELINE_RUN_ID, tr.TASK_ID, tr.STATUS, tr.ATTEMPT_COUNT, tr.START_DATE, tr.END_DATE,
       tr.ROWS_WRITTEN, tr.ERROR_MESSAGE
  FROM (SELECT r.PIPELINE_RUN_ID,
               ROW_NUMBER() OVER (PARTITION BY r.PIPELINE_ID ORDER BY r.PIPELINE_RUN_ID DESC) AS RECENCY
          FROM {AUD_PIPELINES_RUN_LOG} r
          JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID AND p.ACTIVE_FLAG = 'Y') ranked
  JOIN {AUD_TASK_RUN_LOG} tr ON tr.PIPELINE_RUN_ID = ranked.PIPELINE_RUN_ID
 WHERE ranked.RECENCY <= :limit
 ORDER BY tr.TASK_ID, tr.PIPELINE_RUN_ID DESC;

-- name: catalog_recent_interventions_postgresql :many
-- The interventions on the shown runs (through ix_interventions_run), with the task they concern (if one).
SELECT i.INTERVENTION_ID, i.PIPELINE_RUN_ID, r.PIPELINE_ID, tr.TASK_ID, i.INTERVENTION, i.FROM_STATUS, i.TO_STATUS,
       i.REASON, i.REQUESTED_BY, i.REQUESTED_AT
  FROM {CFG_PIPELINES} p
 CROSS JOIN LATERAL (
       SELECT x.PIPELINE_RUN_ID, x.PIPELINE_ID FROM {AUD_PIPELINES_RUN_LOG} x
        WHERE x.PIPELINE_ID = p.PIPELINE_ID
        ORDER BY x.PIPELINE_RUN_ID DESC
        LIMIT :limit) r
 CROSS JOIN LATERAL (
       SELECT * FROM {AUD_RUN_INTERVENTIONS} y WHERE y.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID OFFSET 0) i
  LEFT JOIN {AUD_TASK_RUN_LOG} tr ON tr.TASK_RUN_ID = i.TASK_RUN_ID
 WHERE p.ACTIVE_FLAG = 'Y'
 ORDER BY r.PIPELINE_ID, i.INTERVENTION_ID DESC;

-- name: catalog_recent_interventions_sqlite :many
SELECT i.INTERVENTION_ID, i.PIPELINE_RUN_ID, ranked.PIPELINE_ID, tr.TASK_ID, i.INTERVENTION, i.FROM_STATUS,
       i.TO_STATUS, i.REASON, i.REQUESTED_BY, i.REQUESTED_AT
  FROM (SELECT r.PIPELINE_RUN_ID, r.PIPELINE_ID,
               ROW_NUMBER() OVER (PARTITION BY r.PIPELINE_ID ORDER BY r.PIPELINE_RUN_ID DESC) AS RECENCY
          FROM {AUD_PIPELINES_RUN_LOG} r
          JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID AND p.ACTIVE_FLAG = 'Y') ranked
  JOIN {AUD_RUN_INTERVENTIONS} i ON i.PIPELINE_RUN_ID = ranked.PIPELINE_RUN_ID
  LEFT JOIN {AUD_TASK_RUN_LOG} tr ON tr.TASK_RUN_ID = i.TASK_RUN_ID
 WHERE ranked.RECENCY <= :limit
 ORDER BY ranked.PIPELINE_ID, i.INTERVENTION_ID DESC;

-- name: catalog_run_kpis :many
-- Every run of every active pipeline counted by kind and status. A run is a repair once it was reopened (a later
-- output revision, or one pending); else a backfill, a scheduled run (the schedule or an external orchestrator) or
-- a manual one by its TRIGGER_KIND.
SELECT r.PIPELINE_ID,
       CASE WHEN r.OUTPUT_REVISION > 1 OR r.REPAIR_PENDING = 'Y' THEN 'repair'
            WHEN r.TRIGGER_KIND = 'BACKFILL' THEN 'backfill'
            WHEN r.TRIGGER_KIND IN ('SCHEDULE', 'ORCHESTRATOR') THEN 'scheduled'
            ELSE 'manual' END AS RUN_CLASS,
       r.STATUS, COUNT(*) AS RUNS
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID AND p.ACTIVE_FLAG = 'Y'
 GROUP BY r.PIPELINE_ID,
       CASE WHEN r.OUTPUT_REVISION > 1 OR r.REPAIR_PENDING = 'Y' THEN 'repair'
            WHEN r.TRIGGER_KIND = 'BACKFILL' THEN 'backfill'
            WHEN r.TRIGGER_KIND IN ('SCHEDULE', 'ORCHESTRATOR') THEN 'scheduled'
            ELSE 'manual' END,
       r.STATUS;

-- name: catalog_pipeline_owners :many
-- Who answers for each active pipeline: the actor of its row's latest change, and who created it.
SELECT p.PIPELINE_ID, p.CREATED_BY, p.UPDATED_BY, p.UPDATED_DATE
  FROM {CFG_PIPELINES} p
 WHERE p.ACTIVE_FLAG = 'Y';
