-- 0023_hot_table_statistics: good plans without waiting for the server's autovacuum defaults (issue 27). The
-- tables every attempt writes (attempts, task runs, runs, workers) grow and churn faster than the defaults notice
-- (a vacuum after a fifth of the table changed): dead entries pile up in the partial queue index and the planner's
-- statistics describe a table a fraction of its size. On PostgreSQL each carries its own autovacuum settings, so
-- a few thousand changes, not a fifth of the table, bring a vacuum and a fresh ANALYZE (etl-craft migrate and
-- init-db analyze the tables they change themselves; etlcraft/engine/migrations.py). Readiness after an attempt
-- ends reads the finished task's downstream edges by ix_task_dependency_upstream (migration 0001), which is kept.
ALTER TABLE AUD_TASK_ATTEMPTS SET (
  autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_insert_scale_factor = 0.0, autovacuum_vacuum_insert_threshold = 5000,
  autovacuum_analyze_scale_factor = 0.0, autovacuum_analyze_threshold = 2000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE AUD_TASK_RUN_LOG SET (
  autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_insert_scale_factor = 0.0, autovacuum_vacuum_insert_threshold = 5000,
  autovacuum_analyze_scale_factor = 0.0, autovacuum_analyze_threshold = 2000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE AUD_PIPELINES_RUN_LOG SET (
  autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 200,
  autovacuum_analyze_scale_factor = 0.0, autovacuum_analyze_threshold = 500, autovacuum_vacuum_cost_delay = 0);
-- Every heartbeat of a worker updates its row: a small table that is almost all dead rows without frequent vacuum.
ALTER TABLE AUD_WORKERS SET (
  autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 200, autovacuum_vacuum_cost_delay = 0);
