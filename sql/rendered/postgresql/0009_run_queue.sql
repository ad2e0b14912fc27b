-- 0009_run_queue: an attempt carries the run of its task run (PIPELINE_RUN_ID), so that one run's queue is an index
-- range. `etl-craft run` claims only its own run's attempts; before, its claim walked the whole pool's queue in
-- claim order and looked up each candidate's run, so with thousands of other runs' attempts queued ahead of its
-- own in the same pool, every claim read them all. The column is filled from the task run when the attempt is
-- inserted (a trigger of 090_guards, whoever inserts it). Attempts still live when this migration runs get it
-- here; attempts that had already ended keep NULL: their rows are final (EC002).
ALTER TABLE AUD_TASK_ATTEMPTS ADD COLUMN PIPELINE_RUN_ID BIGINT REFERENCES AUD_PIPELINES_RUN_LOG (PIPELINE_RUN_ID);
UPDATE AUD_TASK_ATTEMPTS
   SET PIPELINE_RUN_ID = (SELECT t.PIPELINE_RUN_ID FROM AUD_TASK_RUN_LOG t WHERE t.TASK_RUN_ID = AUD_TASK_ATTEMPTS.TASK_RUN_ID)
 WHERE STATUS IN ('QUEUED', 'CLAIMED', 'RUNNING');
CREATE INDEX ix_attempts_run_queue ON AUD_TASK_ATTEMPTS (PIPELINE_RUN_ID, POOL, SLOT_KIND, PRIORITY DESC, QUEUED_AT, ATTEMPT_ID)
  WHERE STATUS = 'QUEUED';
