-- 0015_overseers: the servers (`etl-craft server`) that have led this Engine DB. A server holds a session lock for
-- its whole life (an advisory lock on PostgreSQL, a file lock beside a SQLite Engine DB); while it leads, its row
-- here has STOPPED_AT NULL and a HEARTBEAT_AT it renews every heartbeat. A server killed with -9 leaves its row
-- open: its successor closes it (STOPPED_AT, STOP_REASON) when it takes the lock. `etl-craft server status` and
-- `etl-craft run` read the row of the leader; the lock, not the row, decides who leads.
CREATE TABLE AUD_OVERSEERS (
  OVERSEER_ID INTEGER PRIMARY KEY AUTOINCREMENT,
  OWNER_ID VARCHAR(256) NOT NULL,
  HOST VARCHAR(256) NOT NULL,
  PID INT NOT NULL,
  VERSION VARCHAR(64) NOT NULL,
  STARTED_AT TEXT NOT NULL,
  HEARTBEAT_AT TEXT NOT NULL,
  STOPPED_AT TEXT,
  STOP_REASON TEXT,
  STARTED_BY VARCHAR(128) NOT NULL,
  STARTED_BY_KIND VARCHAR(16) NOT NULL CONSTRAINT started_by_kind_is_valid CHECK (STARTED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM')),
  CONSTRAINT stopped_has_a_reason CHECK ((STOPPED_AT IS NULL) = (STOP_REASON IS NULL))
);
CREATE UNIQUE INDEX ux_overseers_owner ON AUD_OVERSEERS (OWNER_ID);
CREATE INDEX ix_overseers_open ON AUD_OVERSEERS (STARTED_AT) WHERE STOPPED_AT IS NULL;
