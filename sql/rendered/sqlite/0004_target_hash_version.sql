-- 0004_target_hash_version: which HASH_KEY formula the rows of each warehouse target were written with, so a merge
-- never compares hashes of two formulas (S3.G.1, B22, B35). etl-craft records version 2 when a task creates a target
-- and when etl-craft rehash recomputes one; a merge into a target with older hashes is refused until it is rehashed.
CREATE TABLE AUD_TARGET_HASH_VERSION (
  TARGET_OBJECT VARCHAR(256) NOT NULL CONSTRAINT pk_target_hash_version PRIMARY KEY,
  HASH_VERSION INT NOT NULL,
  RECOMPUTED_AT TEXT NOT NULL,
  RECOMPUTED_BY VARCHAR(128) NOT NULL,
  RECOMPUTED_BY_KIND VARCHAR(16) NOT NULL CONSTRAINT recomputed_by_kind_is_valid CHECK (RECOMPUTED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM'))
);
