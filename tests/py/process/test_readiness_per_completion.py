"""Readiness that costs what changed (issue 27): the real `etl-craft run` on a PostgreSQL Engine DB judges the whole
run (ready_tasks) on its first turn and once more before it finalizes the run, and after each completion only the
finished task's successors (ready_successors), so the whole-run judgement, which reads every edge of the pipeline,
is not repeated per task. The calls are counted by PostgreSQL itself (track_functions, pg_stat_user_functions);
what each task ended as is the outcome the whole-run rule gives, skips propagated down a failed branch included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.py.support.cli import etl_craft
from tests.py.support.project import Task, write_project

pytestmark = [pytest.mark.process, pytest.mark.postgres]

CHAIN = 8


def _calls(url: str) -> dict[str, int]:
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT funcname, calls FROM pg_stat_user_functions"
                            " WHERE funcname IN ('ready_tasks', 'ready_successors')").fetchall()
    return {str(name): int(calls) for name, calls in rows}


def _track_functions(url: str) -> None:
    """Count PL/pgSQL calls in this database from the next session on."""
    parsed = make_url(url)
    admin = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{parsed.database}" SET track_functions = \'pl\'')


def test_a_chain__each_completion_judges_its_successors__the_whole_run_only_first_and_last(
        tmp_path: Path, empty_pg_url: str) -> None:
    root = tmp_path
    tasks = [Task(f"t{n}") for n in range(CHAIN)] + [Task("bad", {"fail": True}), Task("after_bad"),
                                                     Task("after_after"), Task("on_failure")]
    edges = [(f"t{n}", f"t{n - 1}", "SUCCESS") for n in range(1, CHAIN)]
    edges += [("bad", f"t{CHAIN - 1}", "SUCCESS"), ("after_bad", "bad", "SUCCESS"),
              ("after_after", "after_bad", "SUCCESS"), ("on_failure", "bad", "FAILURE")]
    project = write_project(root / "p", empty_pg_url, {"flow": tasks}, edges)
    assert etl_craft("migrate", cwd=project).code == 0
    _track_functions(empty_pg_url)

    done = etl_craft("run", "--pipeline-code", "flow", cwd=project)

    assert done.code == 9, done.out + done.err  # a task failed
    status = etl_craft("status", "--pipeline-code", "flow", "--run-id", "1", "--format", "json", cwd=project)
    ended = {t["task_code"]: t["status"] for t in json.loads(status.out)["tasks"]}
    assert ended == {**{f"t{n}": "SUCCESS" for n in range(CHAIN)}, "bad": "FAILED", "after_bad": "SKIPPED",
                     "after_after": "SKIPPED", "on_failure": "SUCCESS"}
    calls = _calls(empty_pg_url)
    # The first turn and the confirmation before finalize_run; without readiness per completion, one per turn.
    assert calls.get("ready_tasks") == 2, calls
    # One per task that ended or was skipped and has a successor in the pipeline: t0..t7, bad and after_bad; none for
    # on_failure and after_after, on which nothing depends.
    assert calls.get("ready_successors") == CHAIN + 2, calls


BRANCHES = 11
COUNTED_RUN = '''
import collections, sys
import etlcraft.overseer.driver as driver
reads = collections.Counter()
original = driver.fetch_all
def counted(db, conn, name, **params):
    reads[name] += 1
    return original(db, conn, name, **params)
driver.fetch_all = counted
sys.argv = ["etl-craft", "run", "--pipeline-code", "fan"]
from etlcraft.cli import main
try:
    main()
finally:
    print("READS", reads["run_queued_pools"], file=sys.stderr)
'''


def test_a_fan_out__its_branches_are_queued_in_one_call__its_queued_pools_read_when_they_change(
        tmp_path: Path, empty_pg_url: str) -> None:
    """A root and BRANCHES branches, two slots: the branches the root's end made ready are queued together
    (queue_attempts, one call; queue_attempt judges task gates only, and there are none), and the pools the run's
    attempts wait in are read when the driver queues into a new one (one branch is in pool side), not per claim."""
    tasks = [Task("root")] + [Task(f"b{n:02d}") for n in range(BRANCHES)]
    project = write_project(tmp_path / "p", empty_pg_url, {"fan": tasks},
                            [(f"b{n:02d}", "root", "SUCCESS") for n in range(BRANCHES)], slots=2)
    with (project / "migrations" / "0001_pipelines.sql").open("a") as sql:
        sql.write("INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)"
                  " SELECT TASK_ID, 'POOL', 'side' FROM CFG_TASKS WHERE TASK_CODE = 'b05';\n")
    assert etl_craft("migrate", cwd=project).code == 0
    _track_functions(empty_pg_url)

    environ = {k: v for k, v in os.environ.items() if not k.startswith("ETL_CRAFT_")}
    done = subprocess.run([sys.executable, "-c", COUNTED_RUN], cwd=project, env=environ, text=True,
                          capture_output=True, timeout=300, check=False)

    assert done.returncode == 0, done.stdout + done.stderr
    status = etl_craft("status", "--pipeline-code", "fan", "--run-id", "1", "--format", "json", cwd=project)
    assert {t["status"] for t in json.loads(status.out)["tasks"]} == {"SUCCESS"}
    pools = {r[0] for r in _rows(empty_pg_url, "SELECT POOL FROM etl_craft.AUD_TASK_ATTEMPTS")}
    assert pools == {"default", "side"}
    dsn = make_url(empty_pg_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn) as conn:
        calls = dict(conn.execute("SELECT funcname, calls FROM pg_stat_user_functions"
                                  " WHERE funcname IN ('queue_attempts', 'queue_attempt')").fetchall())
    assert calls == {"queue_attempts": 2}, calls  # the root, then every branch at once
    # The root's claim, then once more for the new pool; per claim it would be one read per turn (six or more).
    reads = int(done.stderr.rsplit("READS", 1)[1].split()[0])
    assert reads == 2, done.stderr


def _rows(url: str, sql: str) -> list[tuple[object, ...]]:
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn) as conn:
        return list(conn.execute(sql).fetchall())
