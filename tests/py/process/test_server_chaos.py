"""Chaos: `kill -9` of the server at a random moment of a run, then a successor finishes it, on SQLite and on
PostgreSQL. Each task execution leaves a marker (marks/<task>.<attempt>.start, written by the task process itself):
after the successor has finished, the run ended SUCCESS, no attempt is left CLAIMED or RUNNING, every task run has
exactly one SUCCESS attempt, and each task ran once more than once only where an attempt of it was recorded LOST.

Markers are files rather than rows of a warehouse side table: task processes of a killed server and of its
successor may run at once, and DuckDB admits one writer process per file.

`make test` runs one iteration per dialect; `make soak` runs ETL_CRAFT_SOAK_ITERATIONS (20) of them."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa

from etlcraft.cli.context import CliContext
from tests.py.conftest import PgServer
from tests.py.support.cli import etl_craft, start_etl_craft
from tests.py.support.project import Task, wait_for, write_project

pytestmark = pytest.mark.process

ITERATIONS = int(os.environ.get("ETL_CRAFT_SOAK_ITERATIONS", "1"))
LEASE_SECONDS = 5
#: A diamond: a, then b and c at once, then d; each task takes a moment, so a kill lands mid-task as often as not.
PIPELINE = {"chaos": [Task(code, {"seconds": 0.4}) for code in ("a", "b", "c", "d")]}
EDGES = [("b", "a", "SUCCESS"), ("c", "a", "SUCCESS"), ("d", "b", "SUCCESS"), ("d", "c", "SUCCESS")]


def _server(root: Path, name: str) -> subprocess.Popen[bytes]:
    log = root / f"{name}.log"
    server = start_etl_craft("server", "--log-format", "json", cwd=root, log=log)
    wait_for(lambda: "leading as overseer" in log.read_text() or server.poll() is not None, timeout=60,
             what=f"{name} to lead")
    assert server.poll() is None, log.read_text()
    return server


def _attempts(root: Path, run_id: int) -> list[tuple[str, str]]:
    """(task code, status) of every attempt of the run."""
    db = CliContext.create(str(root), None, None).engine_db()
    try:
        with db.read() as conn:
            rows = conn.execute(sa.text(
                f"SELECT t.TASK_CODE, a.STATUS FROM {db.qualify('AUD_TASK_ATTEMPTS')} a "
                f"JOIN {db.qualify('AUD_TASK_RUN_LOG')} tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID "
                f"JOIN {db.qualify('CFG_TASKS')} t ON t.TASK_ID = tr.TASK_ID "
                "WHERE tr.PIPELINE_RUN_ID = :run"), {"run": run_id}).all()
    finally:
        db.dispose()
    return [(str(code), str(status)) for code, status in rows]


def _run_status(root: Path, run_id: int) -> str:
    done = etl_craft("status", "--pipeline-code", "chaos", "--run-id", str(run_id), "--format", "json", cwd=root)
    assert done.code == 0, done.err
    return str(json.loads(done.out)["run"]["status"])


@pytest.mark.parametrize("dialect", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_kill_9_at_a_random_moment__a_successor_finishes__every_execution_is_explained(
        dialect: str, iteration: int, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = None
    if dialect == "postgresql":
        pg: PgServer = request.getfixturevalue("pg_server")
        name = pg.create()
        request.addfinalizer(lambda: pg.drop(name))
        url = pg.url_for(name)
    root = write_project(tmp_path / "p", url, PIPELINE, EDGES, lease_seconds=LEASE_SECONDS)
    assert etl_craft("migrate", cwd=root).code == 0
    servers: list[subprocess.Popen[bytes]] = []
    request.addfinalizer(lambda: [s.kill() for s in servers if s.poll() is None])

    servers.append(_server(root, "first"))
    created = etl_craft("run", "--pipeline-code", "chaos", "--init-only", "--format", "json", cwd=root)
    run_id = json.loads(created.out)["pipeline_run_id"]
    time.sleep(random.Random(f"{dialect}:{iteration}").uniform(0.0, 2.0))
    os.kill(servers[0].pid, signal.SIGKILL)
    servers[0].wait(timeout=10)

    servers.append(_server(root, "successor"))
    wait_for(lambda: _run_status(root, run_id) not in ("QUEUED", "IN-PROGRESS"), timeout=120,
             what="the successor to finish the run")
    servers[1].send_signal(signal.SIGTERM)
    assert servers[1].wait(timeout=30) == 0

    assert _run_status(root, run_id) == "SUCCESS"
    attempts = _attempts(root, run_id)
    assert not [a for a in attempts if a[1] in ("QUEUED", "CLAIMED", "RUNNING")], attempts
    successes = Counter(code for code, status in attempts if status == "SUCCESS")
    assert successes == Counter({"a": 1, "b": 1, "c": 1, "d": 1}), attempts
    lost = Counter(code for code, status in attempts if status == "LOST")
    executions = Counter(path.name.split(".")[0] for path in (root / "marks").glob("*.start"))
    for task in "abcd":
        assert 1 <= executions[task] <= 1 + lost[task], (task, executions, attempts)
