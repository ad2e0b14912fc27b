"""A queue of attempts seeded straight into a PostgreSQL Engine DB, for the claim races and session tests."""

from __future__ import annotations

import psycopg


def seed_queue(url: str, attempts: int) -> None:
    """One run of `attempts` tasks, each with one QUEUED attempt (set-based inserts through the marker)."""
    dsn = url.replace("postgresql+psycopg", "postgresql")
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT set_config('etl_craft.actor', 'tester@pytest', true)")
        conn.execute("INSERT INTO etl_craft.cfg_projects (project_code) VALUES ('p')")
        conn.execute("INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code) VALUES (1, 'pl')")
        conn.execute("""
            INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file)
            SELECT 1, 't' || g, 'SQL', 'APPEND_TABLE', 't.sql' FROM generate_series(1, %(n)s) g""", {"n": attempts})
        if attempts:
            queue_run(conn, 1, "manual:queue")


def queue_run(conn: psycopg.Connection, pipeline_id: int, run_key: str) -> tuple[int, list[int]]:
    """A new IN-PROGRESS run of the pipeline, with an IN-PROGRESS task run and a QUEUED attempt for each of its
    tasks, in the caller's marked transaction: the run's id and its attempts' ids in task-run order."""
    run = conn.execute("""
        INSERT INTO etl_craft.aud_pipelines_run_log
          (pipeline_id, run_key, trigger_kind, run_date, status, queued_at, start_date, started_by, started_by_kind)
        VALUES (%s, %s, 'MANUAL', DATE '2026-01-01', 'IN-PROGRESS', now(), now(), 't', 'HUMAN')
        RETURNING pipeline_run_id""", (pipeline_id, run_key)).fetchone()
    assert run is not None
    conn.execute("""
        INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status, attempt_count)
        SELECT %s, task_id, 'IN-PROGRESS', 1 FROM etl_craft.cfg_tasks WHERE pipeline_id = %s ORDER BY task_id""",
                 (run[0], pipeline_id))
    attempts = conn.execute("""
        INSERT INTO etl_craft.aud_task_attempts
          (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
        SELECT task_run_id, 1, 'QUEUED', clock_timestamp(), 't', 'HUMAN' FROM etl_craft.aud_task_run_log
         WHERE pipeline_run_id = %s ORDER BY task_run_id RETURNING attempt_id""", (run[0],)).fetchall()
    return int(run[0]), sorted(int(a[0]) for a in attempts)
