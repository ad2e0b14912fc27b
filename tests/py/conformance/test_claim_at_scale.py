"""The claim on PostgreSQL at scale: however the statistics of a grown attempt table fall, `claim_attempt` walks
the queue index in claim order and stops at its limit. A generic plan assumes a LIMIT parameter reads a tenth of
the rows; with 2,000 attempts just queued among 26,000 that made reading every queued attempt, checking each one's
run and sorting them the cheaper-looking plan: 17 ms per claim instead of well under one (found by
`bench/claims.py --repeat 3`: 313 claims + finishes per second with 4 processes instead of about 1,200)."""

from __future__ import annotations

import psycopg
import pytest

from tests.py.support.queue import queue_run, seed_queue

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
                queue_run(conn, 1, f"manual:round-{round_}")
            _analyze(conn)


def _analyze(conn: psycopg.Connection) -> None:
    """What autovacuum would have done by now to the tables a claim reads (on a connection in autocommit)."""
    conn.execute("VACUUM ANALYZE etl_craft.aud_task_attempts")
    conn.execute("VACUUM ANALYZE etl_craft.aud_task_run_log")


def _claim_reads(dsn: str, max_attempts: int, slot_kinds: str, run_id: int | None = None) -> tuple[list[int], int]:
    """The attempts a claim takes in a new session (its plan is made from the current statistics), and the rows of
    runs and task runs it read, by index or by scan, in a transaction rolled back after."""
    with psycopg.connect(dsn) as conn:
        claimed = [r[0] for r in conn.execute(
            "SELECT attempt_id FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => %s,"
            " p_owner_id => 'w1', p_max_attempts => %s, p_run_id => %s, p_actor => 'w1@pytest',"
            " p_actor_kind => 'WORKER')", (slot_kinds, max_attempts, run_id)).fetchall()]
        fetched = conn.execute("SELECT sum(idx_tup_fetch + seq_tup_read) FROM pg_stat_xact_user_tables"
                               " WHERE schemaname = 'etl_craft'"
                               " AND relname IN ('aud_task_run_log', 'aud_pipelines_run_log')").fetchone()
        conn.rollback()
    assert fetched is not None
    return claimed, int(fetched[0])


@pytest.mark.parametrize("max_attempts", [1, 8])
def test_claim_attempt__a_grown_table__reads_the_first_queued_attempts_only(pg_url: str, max_attempts: int) -> None:
    dsn = pg_url.replace("postgresql+psycopg", "postgresql")
    seed_queue(pg_url, QUEUED)
    _grow(dsn)
    claimed, fetched = _claim_reads(dsn, max_attempts, "warehouse")
    assert len(claimed) == max_attempts
    # Each claimed attempt's run is read once to check it, and its task run once for the rows returned; reading
    # every queued attempt's run would be about 2,000.
    assert fetched <= 4 * max_attempts, f"the claim read {fetched} runs and task runs for {max_attempts} attempt(s)"


def test_claim_attempt__for_a_run_of_2000_queued_attempts__reads_a_few_task_runs(pg_url: str) -> None:
    """`etl-craft run` claims with run_id: a run of many tasks does not make each claim read all its task runs."""
    seed_queue(pg_url, QUEUED)
    claimed, fetched = _claim_reads(pg_url.replace("postgresql+psycopg", "postgresql"), 2, "ingestion,warehouse", 1)
    assert claimed == [1, 2]
    assert fetched <= 10, f"the claim read {fetched} runs and task runs to claim 2 attempts"


def test_claim_attempt__for_one_run__reads_that_runs_attempts_not_the_pool_queue_ahead_of_them(pg_url: str) -> None:
    """With 2,000 attempts of another run queued ahead of its own in the same pool, a claim for one run reads its
    own run's queue (ix_attempts_run_queue, migration 0009), not the run of each of those 2,000: it used to take 12
    to 16 ms per claim."""
    dsn = pg_url.replace("postgresql+psycopg", "postgresql")
    seed_queue(pg_url, QUEUED)
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT set_config('etl_craft.actor', 'tester@pytest', true)")
        conn.execute("INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code) VALUES (1, 'mine')")
        conn.execute("""
            INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file)
            SELECT 2, 'm' || g, 'SQL', 'APPEND_TABLE', 't.sql' FROM generate_series(1, 5) g""")
        run, mine = queue_run(conn, 2, "manual:mine")
    with psycopg.connect(dsn, autocommit=True) as conn:
        _analyze(conn)
    claimed, fetched = _claim_reads(dsn, 2, "ingestion,warehouse", run)
    assert claimed == sorted(mine)[:2], "the run's two oldest attempts, in claim order"
    assert fetched <= 10, f"the claim read {fetched} runs and task runs to claim 2 of its run's 5 attempts"
