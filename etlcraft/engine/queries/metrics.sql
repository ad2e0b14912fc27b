-- Reads of GET /metrics (etlcraft/api/metrics.py), run together in one read transaction at each scrape.
-- {TABLE} names are qualified for the Engine DB's dialect by etlcraft.engine.queries; binds are :name.
-- Every value a counter is made from only grows: attempts never change once ended, an ended gate wait keeps its
-- outcome, a run's QUEUED_AT and START_DATE and an attempt's times are written once, and a run that leaves an
-- ending (reopen, mark) leaves an AUD_RUN_INTERVENTIONS row, which is append-only (docs/reference/metrics.md).

-- name: metrics_runs :many
-- Runs per project, pipeline and current status.
SELECT pr.PROJECT_CODE, p.PIPELINE_CODE, r.STATUS, COUNT(*) AS RUNS
  FROM {AUD_PIPELINES_RUN_LOG} r
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID
  JOIN {CFG_PROJECTS} pr ON pr.PROJECT_ID = p.PROJECT_ID
 GROUP BY pr.PROJECT_CODE, p.PIPELINE_CODE, r.STATUS;

-- name: metrics_run_departures :many
-- How often runs left each ending again (reopened, or marked another ending), per project and pipeline: run-level
-- interventions (TASK_RUN_ID NULL) whose FROM_STATUS is an ending.
SELECT pr.PROJECT_CODE, p.PIPELINE_CODE, i.FROM_STATUS AS STATUS, COUNT(*) AS RUNS
  FROM {AUD_RUN_INTERVENTIONS} i
  JOIN {AUD_PIPELINES_RUN_LOG} r ON r.PIPELINE_RUN_ID = i.PIPELINE_RUN_ID
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID
  JOIN {CFG_PROJECTS} pr ON pr.PROJECT_ID = p.PROJECT_ID
 WHERE i.TASK_RUN_ID IS NULL AND i.FROM_STATUS IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED')
 GROUP BY pr.PROJECT_CODE, p.PIPELINE_CODE, i.FROM_STATUS;

-- name: metrics_attempts :many
-- Attempts per pool, slot kind and status.
SELECT POOL, SLOT_KIND, STATUS, COUNT(*) AS ATTEMPTS
  FROM {AUD_TASK_ATTEMPTS}
 GROUP BY POOL, SLOT_KIND, STATUS;

-- name: metrics_retries :many
-- Retries queued per pool and slot kind: attempts whose RETRY_NUMBER is one more than their task run's previous
-- attempt's (an attempt that replaces a stopped one keeps the number and is no retry).
SELECT a.POOL, a.SLOT_KIND, COUNT(*) AS RETRIES
  FROM {AUD_TASK_ATTEMPTS} a
  JOIN {AUD_TASK_ATTEMPTS} b ON b.TASK_RUN_ID = a.TASK_RUN_ID AND b.ATTEMPT_NUMBER = a.ATTEMPT_NUMBER - 1
 WHERE a.RETRY_NUMBER > 0 AND a.RETRY_NUMBER > b.RETRY_NUMBER
 GROUP BY a.POOL, a.SLOT_KIND;

-- name: metrics_pools :many
-- The pools attempts can be queued in: those of CFG_POOLS and the projects' default pools.
SELECT POOL_NAME AS POOL FROM {CFG_POOLS} WHERE ACTIVE_FLAG = 'Y'
UNION
SELECT DEFAULT_POOL AS POOL FROM {CFG_PROJECTS} WHERE ACTIVE_FLAG = 'Y';

-- name: metrics_queue :many
-- Attempts a claim could take now, per pool and slot kind, and since when the oldest of them has been claimable
-- (the later of QUEUED_AT and NOT_BEFORE: a retry waiting out its delay is not waiting for a slot).
SELECT POOL, SLOT_KIND, COUNT(*) AS DEPTH,
       MIN(CASE WHEN NOT_BEFORE > QUEUED_AT THEN NOT_BEFORE ELSE QUEUED_AT END) AS OLDEST
  FROM {AUD_TASK_ATTEMPTS}
 WHERE STATUS = 'QUEUED' AND (NOT_BEFORE IS NULL OR NOT_BEFORE <= :now)
 GROUP BY POOL, SLOT_KIND;

-- name: metrics_expired_leases :one
-- Leases that have expired and that reconcile_expired has not settled yet.
SELECT (SELECT COUNT(*) FROM {AUD_TASK_ATTEMPTS}
         WHERE STATUS IN ('CLAIMED', 'RUNNING') AND LEASE_EXPIRES_AT < :now) AS ATTEMPTS,
       (SELECT COUNT(*) FROM {AUD_PIPELINES_RUN_LOG}
         WHERE STATUS = 'IN-PROGRESS' AND LEASE_EXPIRES_AT < :now) AS RUNS;

-- name: metrics_gate_waits :many
-- Gate waits by outcome (NULL: still waiting).
SELECT OUTCOME, COUNT(*) AS WAITS
  FROM {AUD_GATE_WAITS}
 GROUP BY OUTCOME;

-- name: metrics_latencies_postgresql :many
-- Admission (a run's QUEUED_AT to START_DATE; a run created IN-PROGRESS, whose two times are equal, was never
-- admitted) and dispatch (an attempt claimable, the later of QUEUED_AT and
-- NOT_BEFORE, to STARTED_AT) in seconds, as cumulative histograms over every run and attempt that got that far:
-- the count, the sum and the count at or under each bound :le_1 ... :le_12. PostgreSQL: EXTRACT(EPOCH ...).
SELECT LATENCY, POOL, SLOT_KIND, COUNT(*) AS OBSERVED, SUM(SECONDS) AS TOTAL_SECONDS,
       SUM(CASE WHEN SECONDS <= :le_1 THEN 1 ELSE 0 END) AS LE_1,
       SUM(CASE WHEN SECONDS <= :le_2 THEN 1 ELSE 0 END) AS LE_2,
       SUM(CASE WHEN SECONDS <= :le_3 THEN 1 ELSE 0 END) AS LE_3,
       SUM(CASE WHEN SECONDS <= :le_4 THEN 1 ELSE 0 END) AS LE_4,
       SUM(CASE WHEN SECONDS <= :le_5 THEN 1 ELSE 0 END) AS LE_5,
       SUM(CASE WHEN SECONDS <= :le_6 THEN 1 ELSE 0 END) AS LE_6,
       SUM(CASE WHEN SECONDS <= :le_7 THEN 1 ELSE 0 END) AS LE_7,
       SUM(CASE WHEN SECONDS <= :le_8 THEN 1 ELSE 0 END) AS LE_8,
       SUM(CASE WHEN SECONDS <= :le_9 THEN 1 ELSE 0 END) AS LE_9,
       SUM(CASE WHEN SECONDS <= :le_10 THEN 1 ELSE 0 END) AS LE_10,
       SUM(CASE WHEN SECONDS <= :le_11 THEN 1 ELSE 0 END) AS LE_11,
       SUM(CASE WHEN SECONDS <= :le_12 THEN 1 ELSE 0 END) AS LE_12
  FROM (SELECT 'admission' AS LATENCY, CAST(NULL AS VARCHAR(128)) AS POOL, CAST(NULL AS VARCHAR(16)) AS SLOT_KIND,
               EXTRACT(EPOCH FROM (START_DATE - QUEUED_AT)) AS SECONDS
          FROM {AUD_PIPELINES_RUN_LOG} WHERE START_DATE <> QUEUED_AT
        UNION ALL
        SELECT 'dispatch', POOL, SLOT_KIND,
               EXTRACT(EPOCH FROM (STARTED_AT - GREATEST(QUEUED_AT, COALESCE(NOT_BEFORE, QUEUED_AT))))
          FROM {AUD_TASK_ATTEMPTS} WHERE STARTED_AT IS NOT NULL) x
 GROUP BY LATENCY, POOL, SLOT_KIND;

-- name: metrics_latencies_sqlite :many
-- The same as metrics_latencies_postgresql on SQLite, whose times are fixed-width UTC text: julianday() differences
-- (to the millisecond), and the scalar max() for the later of two times.
SELECT LATENCY, POOL, SLOT_KIND, COUNT(*) AS OBSERVED, SUM(SECONDS) AS TOTAL_SECONDS,
       SUM(CASE WHEN SECONDS <= :le_1 THEN 1 ELSE 0 END) AS LE_1,
       SUM(CASE WHEN SECONDS <= :le_2 THEN 1 ELSE 0 END) AS LE_2,
       SUM(CASE WHEN SECONDS <= :le_3 THEN 1 ELSE 0 END) AS LE_3,
       SUM(CASE WHEN SECONDS <= :le_4 THEN 1 ELSE 0 END) AS LE_4,
       SUM(CASE WHEN SECONDS <= :le_5 THEN 1 ELSE 0 END) AS LE_5,
       SUM(CASE WHEN SECONDS <= :le_6 THEN 1 ELSE 0 END) AS LE_6,
       SUM(CASE WHEN SECONDS <= :le_7 THEN 1 ELSE 0 END) AS LE_7,
       SUM(CASE WHEN SECONDS <= :le_8 THEN 1 ELSE 0 END) AS LE_8,
       SUM(CASE WHEN SECONDS <= :le_9 THEN 1 ELSE 0 END) AS LE_9,
       SUM(CASE WHEN SECONDS <= :le_10 THEN 1 ELSE 0 END) AS LE_10,
       SUM(CASE WHEN SECONDS <= :le_11 THEN 1 ELSE 0 END) AS LE_11,
       SUM(CASE WHEN SECONDS <= :le_12 THEN 1 ELSE 0 END) AS LE_12
  FROM (SELECT 'admission' AS LATENCY, NULL AS POOL, NULL AS SLOT_KIND,
               (julianday(START_DATE) - julianday(QUEUED_AT)) * 86400.0 AS SECONDS
          FROM {AUD_PIPELINES_RUN_LOG} WHERE START_DATE <> QUEUED_AT
        UNION ALL
        SELECT 'dispatch', POOL, SLOT_KIND,
               (julianday(STARTED_AT) - julianday(max(QUEUED_AT, COALESCE(NOT_BEFORE, QUEUED_AT)))) * 86400.0
          FROM {AUD_TASK_ATTEMPTS} WHERE STARTED_AT IS NOT NULL) x
 GROUP BY LATENCY, POOL, SLOT_KIND;
