"""ROW_ID without duplicates under concurrent writers (S3.G.5, B38): the target lock through the Engine DB (a
PostgreSQL advisory lock, or a file lock beside a SQLite Engine DB) is held from the MAX(ROW_ID) read to the
warehouse commit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from etlcraft.engine import locks
from etlcraft.engine.db import EngineDB
from tests.py.warehouse.conftest import Wh

ROOT = Path(__file__).resolve().parents[3]
ATTEMPTS, ROWS = 12, 40

WORKER = textwrap.dedent("""
    import sys, time
    from datetime import date
    from pathlib import Path
    from etlcraft.config.loader import load_config
    from etlcraft.engine.db import EngineDB
    from etlcraft.handlers.context import TaskContext
    from etlcraft.handlers.sql import run_sql_task

    project, engine_url, target, first, go = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    config = load_config(project)
    db = EngineDB(engine_url)
    while not Path(go).exists():
        time.sleep(0.01)
    for n in range(first, first + {attempts}):
        ctx = TaskContext(project, config, 1, "pipe", 1, date(2026, 3, 1), 1, "task", n, n, "SQL", "APPEND_TABLE",
                          "task.sql", None, target, {{}})
        run_sql_task(ctx, engine_db=db)
    db.dispose()
""").format(attempts=ATTEMPTS)


def _append_from_two_processes(wh: Wh, engine_url: str, tmp_path: Path) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER)", *(f"INSERT INTO {{s}}.src VALUES ({i})" for i in range(ROWS)))
    (wh.project / "sql_files" / "task.sql").write_text(f"SELECT id FROM {wh.schema}.src", encoding="utf-8")
    script, go = tmp_path / "worker.py", tmp_path / "go"
    script.write_text(WORKER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [subprocess.Popen([sys.executable, str(script), str(wh.project), engine_url, wh.t("target"), str(first),
                                 str(go)], env=env, stderr=subprocess.PIPE, text=True) for first in (1000, 2000)]
    time.sleep(0.5)
    go.touch()
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
    rows = wh.query("SELECT row_id, task_run_id FROM {s}.target")
    assert len(rows) == 2 * ATTEMPTS * ROWS
    assert len({r[0] for r in rows}) == len(rows), "no ROW_ID is handed out twice"
    assert sorted(r[0] for r in rows) == list(range(1, len(rows) + 1))


def test_b38_two_processes_appending_to_one_target__no_duplicate_row_id(wh: Wh, tmp_path: Path) -> None:
    """The SQLite Engine DB's file lock orders the two processes."""
    _append_from_two_processes(wh, wh.config.engine.url, tmp_path)


@pytest.mark.postgres
def test_b38_two_processes__postgresql_engine_db_advisory_lock__no_duplicate_row_id(
        wh: Wh, tmp_path: Path, pg_url: str) -> None:
    _append_from_two_processes(wh, pg_url, tmp_path)


def test_target_lock__a_second_holder_waits_until_the_first_releases(engine_db: EngineDB) -> None:
    events: list[tuple[str, float]] = []
    held = threading.Event()

    def first() -> None:
        with locks.target(engine_db, "Analytics.Customers"):
            events.append(("first in", time.monotonic()))
            held.set()
            time.sleep(0.3)
            events.append(("first out", time.monotonic()))

    def second() -> None:
        held.wait()
        with locks.target(engine_db, "analytics.customers"):
            events.append(("second in", time.monotonic()))

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert [name for name, _ in events] == ["first in", "first out", "second in"], "names are locked case-blind"
    with locks.target(engine_db, "analytics.other"), locks.target(engine_db, "analytics.customers"):
        pass  # different targets do not block each other, and the lock is free again


def test_target_lock__released_when_the_block_raises(engine_db: EngineDB) -> None:
    with pytest.raises(RuntimeError), locks.target(engine_db, "s.t"):
        raise RuntimeError("boom")
    done = threading.Event()

    def take() -> None:
        with locks.target(engine_db, "s.t"):
            done.set()

    thread = threading.Thread(target=take)
    thread.start()
    thread.join(5)
    assert done.is_set()


@pytest.mark.postgres
def test_two_tasks_creating_one_new_schema_at_once__the_second_waits_then_finds_it(empty_pg_url: str) -> None:
    import psycopg

    from etlcraft.warehouse.dialects import PostgresDialect
    from etlcraft.warehouse.names import TableName

    sql = PostgresDialect().create_schema(TableName("fresh", "t"))
    first, second = psycopg.connect(empty_pg_url), psycopg.connect(empty_pg_url)
    errors: list[BaseException] = []

    def create_in_second() -> None:
        try:
            second.execute(sql)
            second.commit()
        except BaseException as exc:  # reported below
            errors.append(exc)

    try:
        first.execute(sql)
        racer = threading.Thread(target=create_in_second)
        racer.start()
        time.sleep(0.5)  # the second session is now waiting on the first's transaction
        first.commit()
        racer.join(timeout=30)
        assert errors == [], f"the second CREATE SCHEMA failed: {errors}"
        assert second.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 'fresh'").fetchone() == (1,)
    finally:
        first.close()
        second.close()
