-- 0006_live_owner_index: an owner's live attempts are indexed by (OWNER_ID, ATTEMPT_ID). With OWNER_ID alone, a
-- statement naming both the attempt and its owner (start, finish, renew, time out, lose) was planned on this index
-- and read every entry the owner had left in it since the last vacuum: one more per attempt it had claimed, so a
-- long-lived worker slowed down with each attempt. With ATTEMPT_ID in the key, the lookup goes to its one entry.
DROP INDEX etl_craft.ix_attempts_live_owner;
CREATE INDEX ix_attempts_live_owner ON AUD_TASK_ATTEMPTS (OWNER_ID, ATTEMPT_ID) WHERE STATUS IN ('CLAIMED', 'RUNNING');
