-- 0019_workers: beyond one machine (issue 25). AUD_WORKERS records every `etl-craft worker` process that serves a
-- QUEUE pool: the owner id it claims attempts with (a new one each start), its slots per kind, and its heartbeat;
-- a worker is ACTIVE, DRAINING (told to stop: it claims nothing more and finishes what it runs) or GONE (stopped,
-- or reaped when it missed three heartbeats, its live attempts then recorded LOST). CFG_POOLS.PROVIDER says who
-- runs a pool's attempts: LOCAL, the process that supervises the run, or QUEUE, the workers (PostgreSQL only: a
-- SQLite Engine DB refuses a QUEUE pool). CFG_PROJECTS.MAX_WAREHOUSE_QUERIES caps a project's warehouse attempts
-- claimed or running at once (its one warehouse connection).
CREATE TABLE AUD_WORKERS (
  WORKER_ID BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
  STARTED_AT TIMESTAMPTZ NOT NULL,
  HEARTBEAT_AT TIMESTAMPTZ NOT NULL,
  DRAINING_AT TIMESTAMPTZ,
  STOPPED_AT TIMESTAMPTZ,
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

ALTER TABLE CFG_PROJECTS ADD COLUMN MAX_WAREHOUSE_QUERIES INT
  CONSTRAINT max_warehouse_queries_is_positive CHECK (MAX_WAREHOUSE_QUERIES >= 1);
