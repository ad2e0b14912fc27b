-- 0008_lighter_attempt_writes: fewer index entries written per attempt. An attempt's lease matters only while it
-- is CLAIMED or RUNNING, so the lease index holds those attempts only (reconcile_expired reads it): a finish no
-- longer adds an entry that is never read, and the index stays the size of the live attempts instead of growing
-- with the table's history. On PostgreSQL the task-run summary is stored with room on each page (fill factor 80),
-- so the updates start_attempt and finish_attempt make to it, which change no indexed column, stay on the page
-- (heap-only tuples) and write no index entry. The fill factor applies to pages written from now on.
DROP INDEX etl_craft.ix_attempts_lease;
CREATE INDEX ix_attempts_lease ON AUD_TASK_ATTEMPTS (LEASE_EXPIRES_AT) WHERE STATUS IN ('CLAIMED', 'RUNNING');
ALTER TABLE AUD_TASK_RUN_LOG SET (fillfactor = 80);
