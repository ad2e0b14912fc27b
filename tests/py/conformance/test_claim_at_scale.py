"""The claim on PostgreSQL at scale: however the statistics of a grown attempt table fall, `claim_attempt` walks
the queue index in claim order and stops at its limit. A generic plan assumes a LIMIT parameter reads a tenth of
the rows; with 2,000 attempts just queued among 26,000 that made reading every queued attempt, checking each one's
run and sorting them the cheaper-looking plan: 17 ms per claim instead of well under one (found by
`bench/claims.py --repeat 3`: 313 claims + finishes per second with 4 processes instead of about 1,200)."""

from __future__ import annotations

import psycopg
import pytest

from tests.py.support.queue import seed_queue

pytestmark = pytest.mark.postgres
QUEUED, ROUNDS = 2000, 12


def _grow(dsn: str) -> None:
    """ROUNDS runs of QUEUED attempts, each claimed and finished before the next run queues the same tasks again,
    the tables vacuumed and analyzed after each round as autovacuum would (as bench/claims.py does)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for round_ in range(ROUNDS):
            with conn.transaction():
                conn.execute("SELECT set_config('etl_craft.actor', 'tester@pytest', true)")
                conn.execute("UPDATE etl_craft.aud_task_attempts SET status = 'CLAIMED', owner_id = 'w',"
                             " claimed_at = now(), lease_expires_at = now() WHERE status = 'QUEUED'")
                conn.execute("UPDATE etl_craft.aud_task_attempts SET status = 'SUCCESS', ended_at = now(),"
                             " lease_expires_at = NULL WHERE status = 'CLAIMED'")
                conn.execute("UPDATE etl_craft.aud_task_run_log SET status = 'SUCCESS', end_date = now()"
                             " WHERE status = 'IN-PROGRESS'")
                conn.execute("UPDATE etl_craft.aud_pipelines_run_log SET status = 'SUCCESS', end_date = now()"
                             " WHERE status = 'IN-PROGRESS'")
                run = conn.execute("""
                    INSERT INTO etl_craft.aud_pipelines_run_log
                      (pipeline_id, run_key, trigger_kind, run_date, status, queued_at, start_date, started_by,
                       started_by_kind)
                    VALUES (1, %s, 'MANUAL', DATE '2026-01-01', 'IN-PROGRESS', now(), now(), 't', 'HUMAN')
                    RETURNING pipeline_run_id""", (f"manual:round-{round_}",)).fetchone()
                assert run is not None
                conn.execute("""
                    INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status, attempt_count)
                    SELECT %s, task_id, 'IN-PROGRESS', 1 FROM etl_craft.cfg_tasks""", (run[0],))
                conn.execute("""
                    INSERT INTO etl_craft.aud_task_attempts
                      (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
                    SELECT task_run_id, 1, 'QUEUED', clock_timestamp(), 't', 'HUMAN' FROM etl_craft.aud_task_run_log
                     WHERE pipeline_run_id = %s""", (run[0],))
            conn.execute("VACUUM ANALYZE etl_craft.aud_task_attempts")
            conn.execute("VACUUM ANALYZE etl_craft.aud_task_run_log")


@pytest.mark.parametrize("max_attempts", [1, 8])
def test_claim_attempt__a_grown_table__reads_the_first_queued_attempts_only(pg_url: str, max_attempts: int) -> None:
    dsn = pg_url.replace("postgresql+psycopg", "postgresql")
    seed_queue(pg_url, QUEUED)
    _grow(dsn)
    with psycopg.connect(dsn) as conn:  # a new session: its plan of the claim is made now, from these statistics
        claimed = conn.execute(
            "SELECT attempt_id FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => 'warehouse',"
            " p_owner_id => 'w1', p_max_attempts => %s, p_actor => 'w1@pytest', p_actor_kind => 'WORKER')",
            (max_attempts,)).fetchall()
        fetched = conn.execute("SELECT idx_tup_fetch FROM pg_stat_xact_user_tables"
                               " WHERE schemaname = 'etl_craft' AND relname = 'aud_task_run_log'").fetchone()
        conn.rollback()
    assert len(claimed) == max_attempts
    assert fetched is not None
    # Each claimed attempt's run is read once to check it, and once more for the rows returned; reading every
    # queued attempt's run would be about 2,000.
    assert fetched[0] <= 4 * max_attempts, f"the claim read {fetched[0]} task runs for {max_attempts} attempt(s)"
