-- 0012_retries_in_the_engine: the Engine DB decides retries. An attempt knows which retry of its task run it is
-- (RETRY_NUMBER: 0 for an attempt queued by queue_attempt, one more than the attempt it retries, and the same as
-- the attempt it replaces after a stop, which uses no retry). A run keeps the project's retry defaults it was
-- created with (the Orchestration settings Retries, Retry_delay_seconds and Retry_backoff), which apply to each of
-- its tasks that has no RETRIES, RETRY_DELAY_SECONDS or RETRY_BACKOFF parameter of its own; NULL: etl-craft's
-- built-in defaults (0 retries, 60 seconds, backoff 2).
ALTER TABLE AUD_TASK_ATTEMPTS ADD COLUMN RETRY_NUMBER INT NOT NULL DEFAULT 0
  CONSTRAINT retry_number_is_not_negative CHECK (RETRY_NUMBER >= 0);
ALTER TABLE AUD_PIPELINES_RUN_LOG ADD COLUMN DEFAULT_RETRIES INT
  CONSTRAINT default_retries_is_not_negative CHECK (DEFAULT_RETRIES >= 0);
ALTER TABLE AUD_PIPELINES_RUN_LOG ADD COLUMN DEFAULT_RETRY_DELAY_SECONDS INT
  CONSTRAINT default_retry_delay_is_not_negative CHECK (DEFAULT_RETRY_DELAY_SECONDS >= 0);
ALTER TABLE AUD_PIPELINES_RUN_LOG ADD COLUMN DEFAULT_RETRY_BACKOFF DOUBLE PRECISION  CONSTRAINT default_retry_backoff_is_at_least_1 CHECK (DEFAULT_RETRY_BACKOFF >= 1);
