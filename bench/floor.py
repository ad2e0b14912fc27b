"""The floor for bench/overhead.py: the least a supervisor that keeps a process per task can cost per task.

A minimal supervisor with no etl-craft code: tasks are rows of one PostgreSQL table; the supervisor claims ready
tasks with plain SQL (FOR UPDATE SKIP LOCKED), forks one child per task, and each child opens its own connection
and records its task's finish; when a child ends, the supervisor queues the task's successors. A chain (each task
after the one before) and a fan-out (one task, then all the others at `--slots` at a time) are timed; per-task
cost is (T_N - T_1) / N, as bench/overhead.py computes it for etl-craft.

    python bench/floor.py --dsn postgresql://root@127.0.0.1:5432/test [--tasks 100] [--slots 4]

It creates a table of its own (floor_tasks_<random>) in the database of --dsn and drops it afterwards.
"""

from __future__ import annotations

import argparse
import os
import time
import uuid

import psycopg


def _setup(conn: psycopg.Connection, table: str, shape: str, tasks: int) -> None:
    conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, upstream int, status text NOT NULL,"
                 " claimed_at timestamptz, ended_at timestamptz, pid int)")
    conn.execute(f"CREATE INDEX ON {table} (upstream)")
    conn.execute(f"CREATE INDEX ON {table} (id) WHERE status = 'QUEUED'")
    upstream = "g - 1" if shape == "chain" else "1"
    conn.execute(f"INSERT INTO {table} (id, upstream, status) SELECT g, CASE WHEN g > 1 THEN {upstream} END,"
                 " CASE WHEN g = 1 THEN 'QUEUED' ELSE 'WAITING' END FROM generate_series(1, %s) g", (tasks,))


def _child(dsn: str, table: str, task: int) -> None:
    """The task process: its own connection, its finish recorded by a compare-and-set."""
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"UPDATE {table} SET status = 'SUCCESS', ended_at = now(), pid = %s"
                         " WHERE id = %s AND status = 'RUNNING'", (os.getpid(), task))
        os._exit(0)
    except BaseException:
        os._exit(1)


def supervise(dsn: str, shape: str, tasks: int, slots: int) -> float:
    """Seconds to run `tasks` tasks of `shape`, each in a forked child; checks every task succeeded."""
    table = f"floor_tasks_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        _setup(conn, table, shape, tasks)
        try:
            started = time.perf_counter()
            running: dict[int, int] = {}
            while True:
                free = slots - len(running)
                claimed = conn.execute(
                    f"UPDATE {table} SET status = 'RUNNING', claimed_at = now() WHERE id IN (SELECT id FROM {table}"
                    " WHERE status = 'QUEUED' ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING id",
                    (free,)).fetchall() if free else []
                for (task,) in claimed:
                    pid = os.fork()
                    if pid == 0:
                        _child(dsn, table, task)
                    running[pid] = task
                if not running:
                    break
                pid, status = os.wait()
                task = running.pop(pid)
                if status != 0:
                    raise SystemExit(f"the child of task {task} exited with status {status}; expected 0")
                conn.execute(f"UPDATE {table} SET status = 'QUEUED' WHERE upstream = %s AND status = 'WAITING'"
                             f" AND EXISTS (SELECT 1 FROM {table} u WHERE u.id = %s AND u.status = 'SUCCESS')",
                             (task, task))
            seconds = time.perf_counter() - started
            done = conn.execute(f"SELECT count(*), count(DISTINCT pid) FROM {table}"
                                " WHERE status = 'SUCCESS'").fetchone()
            if done is None or tuple(done) != (tasks, tasks):
                raise SystemExit(f"{done} (tasks succeeded, processes) of {tasks} tasks; expected all, each "
                                 "in its own")
            return seconds
        finally:
            conn.execute(f"DROP TABLE IF EXISTS {table}")


def per_task(dsn: str, shape: str, tasks: int, slots: int, repeat: int = 3) -> float:
    """(T_N - T_1) / N, each the median of `repeat` runs (T_1 of at least three)."""
    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]
    t1 = median([supervise(dsn, shape, 1, slots) for _ in range(max(3, repeat))])
    tn = median([supervise(dsn, shape, tasks, slots) for _ in range(repeat)])
    return (tn - t1) / tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=os.environ.get("ETL_CRAFT_TEST_PG_URL",
                                                        "postgresql://root@127.0.0.1:5432/test"))
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--slots", type=int, default=4)
    args = parser.parse_args()
    for shape in ("chain", "fanout"):
        print(f"{shape:<7} {per_task(args.dsn, shape, args.tasks, args.slots):.4f} s per task")


if __name__ == "__main__":
    main()
