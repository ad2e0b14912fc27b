-- 0010_constant_value_checks: on PostgreSQL, the value-set checks of the tables every claim and finish writes (runs,
-- task runs, attempts) compare against one constant array. Written as IN lists (0001), each was stored as an array
-- of one cast per value, which PostgreSQL reads back from its stored text and folds to constants again in every
-- statement that inserts or updates a row: about a tenth of the server's time in a claim + finish. The values and
-- constraint names are unchanged. SQLite is left as it is: it checks a value list without that cost.
ALTER TABLE AUD_PIPELINES_RUN_LOG DROP CONSTRAINT trigger_kind_is_valid,
  ADD CONSTRAINT trigger_kind_is_valid CHECK (TRIGGER_KIND::text = ANY ('{SCHEDULE,MANUAL,BACKFILL,ORCHESTRATOR,STAND_IN}'::text[]));
ALTER TABLE AUD_PIPELINES_RUN_LOG DROP CONSTRAINT status_is_valid,
  ADD CONSTRAINT status_is_valid CHECK (STATUS::text = ANY ('{QUEUED,IN-PROGRESS,SUCCESS,FAILED,SKIPPED,CANCELLED}'::text[]));
ALTER TABLE AUD_PIPELINES_RUN_LOG DROP CONSTRAINT repair_pending_is_y_or_n,
  ADD CONSTRAINT repair_pending_is_y_or_n CHECK (REPAIR_PENDING::text = ANY ('{Y,N}'::text[]));
ALTER TABLE AUD_PIPELINES_RUN_LOG DROP CONSTRAINT sla_status_is_valid,
  ADD CONSTRAINT sla_status_is_valid CHECK (SLA_STATUS::text = ANY ('{MET,BREACHED}'::text[]));
ALTER TABLE AUD_PIPELINES_RUN_LOG DROP CONSTRAINT started_by_kind_is_valid,
  ADD CONSTRAINT started_by_kind_is_valid CHECK (STARTED_BY_KIND::text = ANY ('{HUMAN,SCHEDULE,ORCHESTRATOR,WORKER,SYSTEM}'::text[]));
ALTER TABLE AUD_PIPELINES_RUN_LOG DROP CONSTRAINT ended_by_kind_is_valid,
  ADD CONSTRAINT ended_by_kind_is_valid CHECK (ENDED_BY_KIND::text = ANY ('{HUMAN,SCHEDULE,ORCHESTRATOR,WORKER,SYSTEM}'::text[]));
ALTER TABLE AUD_TASK_RUN_LOG DROP CONSTRAINT status_is_valid,
  ADD CONSTRAINT status_is_valid CHECK (STATUS::text = ANY ('{IN-PROGRESS,SUCCESS,FAILED,SKIPPED,CANCELLED}'::text[]));
ALTER TABLE AUD_TASK_ATTEMPTS DROP CONSTRAINT status_is_valid,
  ADD CONSTRAINT status_is_valid CHECK (STATUS::text = ANY ('{QUEUED,CLAIMED,RUNNING,SUCCESS,FAILED,TIMED_OUT,CANCELLED,LOST}'::text[]));
ALTER TABLE AUD_TASK_ATTEMPTS DROP CONSTRAINT slot_kind_is_valid,
  ADD CONSTRAINT slot_kind_is_valid CHECK (SLOT_KIND::text = ANY ('{ingestion,warehouse}'::text[]));
ALTER TABLE AUD_TASK_ATTEMPTS DROP CONSTRAINT retryable_is_y_or_n,
  ADD CONSTRAINT retryable_is_y_or_n CHECK (RETRYABLE::text = ANY ('{Y,N}'::text[]));
ALTER TABLE AUD_TASK_ATTEMPTS DROP CONSTRAINT requested_by_kind_is_valid,
  ADD CONSTRAINT requested_by_kind_is_valid CHECK (REQUESTED_BY_KIND::text = ANY ('{HUMAN,SCHEDULE,ORCHESTRATOR,WORKER,SYSTEM}'::text[]));
