-- 0003_claim_and_run_indexes: the claim queue index gains ATTEMPT_ID, the claim order's last key, so a claim
-- reads one index entry instead of sorting a batch; live attempts are found by owner for heartbeats; an attempt's
-- gate decisions are found from the attempt when it finishes; and a pipeline has at most one IN-PROGRESS run,
-- enforced by the database.
DROP INDEX etl_craft.ix_attempts_queue;
CREATE INDEX ix_attempts_queue ON AUD_TASK_ATTEMPTS (POOL, SLOT_KIND, PRIORITY DESC, QUEUED_AT, ATTEMPT_ID)
  WHERE STATUS = 'QUEUED';
CREATE INDEX ix_attempts_live_owner ON AUD_TASK_ATTEMPTS (OWNER_ID) WHERE STATUS IN ('CLAIMED', 'RUNNING');
CREATE INDEX ix_gate_decisions_attempt ON AUD_GATE_DECISIONS (ATTEMPT_ID) WHERE ATTEMPT_ID IS NOT NULL;
CREATE UNIQUE INDEX ux_one_running_run ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID) WHERE STATUS = 'IN-PROGRESS';
