-- 0019_workers: beyond one machine (issue 25). AUD_WORKERS records every `etl-craft worker` process that serves a
-- QUEUE pool: the owner id it claims attempts with (a new one each start), its slots per kind, and its heartbeat;
-- a worker is ACTIVE, DRAINING (told to stop: it claims nothing more and finishes what it runs) or GONE (stopped,
-- or reaped when it missed three heartbeats, its live attempts then recorded LOST). CFG_POOLS.PROVIDER says who
-- runs a pool's attempts: LOCAL, the process that supervises the run, or QUEUE, the workers (PostgreSQL only: a
-- SQLite Engine DB refuses a QUEUE pool). CFG_PROJECTS.MAX_WAREHOUSE_QUERIES caps a project's warehouse attempts
-- claimed or running at once (its one warehouse connection).
CREATE TABLE AUD_WORKERS (
  WORKER_ID INTEGER PRIMARY KEY AUTOINCREMENT,
  OWNER_ID VARCHAR(256) NOT NULL,
  WORKER_NAME VARCHAR(128) NOT NULL,
  POOL VARCHAR(128) NOT NULL,
  HOST VARCHAR(256) NOT NULL,
  PID INT NOT NULL,
  VERSION VARCHAR(64) NOT NULL,
  INGESTION_SLOTS INT NOT NULL CONSTRAINT ingestion_slots_is_not_negative CHECK (INGESTION_SLOTS >= 0),
  WAREHOUSE_SLOTS INT NOT NULL CONSTRAINT warehouse_slots_is_not_negative CHECK (WAREHOUSE_SLOTS >= 0),
  HEARTBEAT_SECONDS INT NOT NULL CONSTRAINT heartbeat_seconds_is_positive CHECK (HEARTBEAT_SECONDS >= 1),
  STATUS VARCHAR(16) NOT NULL CONSTRAINT status_is_valid CHECK (STATUS IN ('ACTIVE', 'DRAINING', 'GONE')),
  STARTED_AT TEXT NOT NULL,
  HEARTBEAT_AT TEXT NOT NULL,
  DRAINING_AT TEXT,
  STOPPED_AT TEXT,
  STOP_REASON TEXT,
  STARTED_BY VARCHAR(128) NOT NULL,
  STARTED_BY_KIND VARCHAR(16) NOT NULL CONSTRAINT started_by_kind_is_valid CHECK (STARTED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM')),
  CONSTRAINT gone_has_a_stop CHECK ((STATUS = 'GONE') = (STOPPED_AT IS NOT NULL)),
  CONSTRAINT gone_has_a_reason CHECK (STATUS <> 'GONE' OR STOP_REASON IS NOT NULL),
  CONSTRAINT draining_has_a_time CHECK (STATUS <> 'DRAINING' OR DRAINING_AT IS NOT NULL)
);
CREATE UNIQUE INDEX ux_workers_owner ON AUD_WORKERS (OWNER_ID);
CREATE INDEX ix_workers_live ON AUD_WORKERS (POOL, HEARTBEAT_AT) WHERE STATUS <> 'GONE';

ALTER TABLE CFG_POOLS ADD COLUMN PROVIDER VARCHAR(16) NOT NULL DEFAULT 'LOCAL' CONSTRAINT provider_is_valid CHECK (PROVIDER IN ('LOCAL', 'QUEUE'));
-- QUEUE pools are served by etl-craft worker processes, which run against a PostgreSQL Engine DB only.
CREATE TRIGGER trg_cfg_pools_queue_needs_postgresql_insert BEFORE INSERT ON CFG_POOLS
  WHEN NEW.PROVIDER = 'QUEUE'
BEGIN
  SELECT etl_craft_fail('EC023', 'pool ' || NEW.POOL_NAME || ' has PROVIDER QUEUE, which this SQLite Engine DB '
    || 'cannot serve (expected LOCAL): QUEUE pools are run by etl-craft worker processes, which need a PostgreSQL '
    || 'Engine DB; set the pool''s provider to LOCAL or move the Engine DB to PostgreSQL');
END;
CREATE TRIGGER trg_cfg_pools_queue_needs_postgresql_update BEFORE UPDATE OF PROVIDER ON CFG_POOLS
  WHEN NEW.PROVIDER = 'QUEUE'
BEGIN
  SELECT etl_craft_fail('EC023', 'pool ' || NEW.POOL_NAME || ' has PROVIDER QUEUE, which this SQLite Engine DB '
    || 'cannot serve (expected LOCAL): QUEUE pools are run by etl-craft worker processes, which need a PostgreSQL '
    || 'Engine DB; set the pool''s provider to LOCAL or move the Engine DB to PostgreSQL');
END;

ALTER TABLE CFG_PROJECTS ADD COLUMN MAX_WAREHOUSE_QUERIES INT
  CONSTRAINT max_warehouse_queries_is_positive CHECK (MAX_WAREHOUSE_QUERIES >= 1);
