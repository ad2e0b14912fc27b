-- 0011_hot_heartbeats: the lease index of attempts (ix_attempts_lease) goes. A heartbeat (renew_lease) changes
-- only LEASE_EXPIRES_AT and HEARTBEAT_AT of each live attempt of its owner, and LEASE_EXPIRES_AT was the key of that
-- index, so on PostgreSQL every heartbeat wrote a new version of each row and an entry in each of the five indexes
-- that hold a live attempt (the table's busiest write while attempts run). Without it, a heartbeat changes no
-- indexed column and PostgreSQL keeps the new version on its page (a heap-only tuple) with no index entry.
-- reconcile_expired finds expired leases through ix_attempts_live_owner, which holds exactly the CLAIMED and
-- RUNNING attempts, as few as the slots that run them; claim_attempt and start_attempt write one index entry fewer.
DROP INDEX etl_craft.ix_attempts_lease;
