"""ROW_ID without duplicates under concurrent writers (S3.G.5, B38): the target lock through the Engine DB (a
PostgreSQL advisory lock, or a file lock beside a SQLite Engine DB) is held from the MAX(ROW_ID) read to the
warehouse commit. The B38 tests hold a first writer inside that lock and see the second wait on the lock itself:
on DuckDB the warehouse file's own lock would also order them, so rows alone cannot prove the target lock."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from etlcraft.core import faults
from etlcraft.engine import locks
from etlcraft.engine.db import EngineDB
from etlcraft.handlers.sql.task import FAULT_BEFORE_COMMIT
from tests.py.warehouse.conftest import Wh

ROOT = Path(__file__).resolve().parents[3]
ROWS = 40
#: How long the first writer stays inside the locked region (at the fault point before its warehouse commit): long
#: enough for the second writer's process to start and reach the lock on a loaded 2-core machine (at 3 s it
#: sometimes arrived after the first had committed, and never waited).
PAUSE = 8.0

WORKER = textwrap.dedent("""
    import logging, os, sys
    from datetime import date
    from pathlib import Path
    from etlcraft.config.loader import load_config
    from etlcraft.core import faults
    from etlcraft.engine.db import EngineDB
    from etlcraft.handlers.context import TaskContext
    from etlcraft.handlers.sql import run_sql_task

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    project, engine_url, target, task_run, pause = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), \
        float(sys.argv[5])
    if pause:
        os.environ[faults.VARIABLE] = "sql_before_commit:pause"
        faults.PAUSE_SECONDS = pause
    db = EngineDB(engine_url)
    ctx = TaskContext(project, load_config(project), 1, "pipe", 1, date(2026, 3, 1), 1, "task", task_run, task_run,
                      "SQL", "APPEND_TABLE", "task.sql", None, target, {})
    run_sql_task(ctx, engine_db=db)
    db.dispose()
""")


def _worker(wh: Wh, script: Path, engine_url: str, task_run: int, pause: float) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(faults.VARIABLE, None)
    return subprocess.Popen([sys.executable, str(script), str(wh.project), engine_url, wh.t("target"), str(task_run),
                             str(pause)], env=env, stderr=subprocess.PIPE, text=True)


def _wait_for_line(process: subprocess.Popen[str], text: str, seen: list[str]) -> None:
    """Read the process's stderr until a line holds `text` (the lines read are kept in `seen`)."""
    assert process.stderr is not None
    for line in process.stderr:
        seen.append(line)
        if text in line:
            return
    raise AssertionError(f"the first writer ended without reaching {text!r}: {''.join(seen)}")


def _second_writer_waits_for_the_first(wh: Wh, engine_url: str, tmp_path: Path) -> None:
    """The first writer pauses inside the target lock, after its INSERT and before its warehouse commit; the second
    must wait on that lock (it logs the wait), then read MAX(ROW_ID) after the first committed."""
    wh.execute("CREATE TABLE {s}.src (id INTEGER)", *(f"INSERT INTO {{s}}.src VALUES ({i})" for i in range(ROWS)))
    wh.run("APPEND_TABLE", f"SELECT id FROM {wh.schema}.src")  # the target exists: ROW_ID 1..ROWS, task run 101
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")
    first = _worker(wh, script, engine_url, 1000, PAUSE)
    first_err: list[str] = []
    _wait_for_line(first, f"fault point {FAULT_BEFORE_COMMIT} fired", first_err)
    second = _worker(wh, script, engine_url, 2000, 0)
    rest, second_err = first.communicate(timeout=120)[1], second.communicate(timeout=120)[1]
    assert first.returncode == 0, "".join(first_err) + rest
    assert second.returncode == 0, second_err
    lock = f"for the lock etl-craft:target:{wh.t('target')}"
    assert re.search(rf"waited \d+\.\d s {re.escape(lock)}", second_err), \
        f"the second writer never waited on the target lock the first held:\n{second_err}"
    rows = wh.query("SELECT row_id, task_run_id FROM {s}.target")
    by_run = {run: sorted(r for r, t in rows if t == run) for run in (101, 1000, 2000)}
    assert by_run == {101: list(range(1, ROWS + 1)), 1000: list(range(ROWS + 1, 2 * ROWS + 1)),
                      2000: list(range(2 * ROWS + 1, 3 * ROWS + 1))}, "the second numbers its rows after the first's"


def test_b38_second_writer_waits_for_the_target_lock_held_by_the_first__no_duplicate_row_id(
        wh: Wh, tmp_path: Path) -> None:
    """The SQLite Engine DB's lock file orders the two processes."""
    _second_writer_waits_for_the_first(wh, wh.config.engine.url, tmp_path)


@pytest.mark.postgres
def test_b38_second_writer_waits_for_the_postgresql_engine_db_advisory_lock__no_duplicate_row_id(
        wh: Wh, tmp_path: Path, pg_url: str) -> None:
    _second_writer_waits_for_the_first(wh, pg_url, tmp_path)


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
