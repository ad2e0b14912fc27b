-- 0002_run_cancellation: a run remembers that it was asked to stop while attempts were still running, so it
-- ends CANCELLED once their owners have stopped them (cancel_run, finalize_run).
ALTER TABLE AUD_PIPELINES_RUN_LOG ADD COLUMN CANCEL_REQUESTED_AT TIMESTAMPTZ;
