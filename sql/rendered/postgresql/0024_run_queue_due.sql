-- 0024_run_queue_due: when a run's earliest QUEUED attempt is due, read as the first entry of an index (issue 27).
-- Each turn of an overseer reads it (run_states: a retry's NOT_BEFORE, else when the attempt was queued); it was the
-- minimum over every QUEUED attempt of the run, so a fan-out that queued thousands of tasks at once read them all on
-- every turn until its queue drained. Now it is the first entry of this index among the attempts with a
-- NOT_BEFORE, and the first among those without: two index probes, whatever the length of the queue.
CREATE INDEX ix_attempts_run_due ON AUD_TASK_ATTEMPTS (PIPELINE_RUN_ID, NOT_BEFORE, QUEUED_AT)
  WHERE STATUS = 'QUEUED';
