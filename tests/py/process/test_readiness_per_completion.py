"""Readiness that costs what changed (issue 27): the real `etl-craft run` on a PostgreSQL Engine DB judges the whole
run (ready_tasks) on its first turn and once more before it finalizes the run, and after each completion only the
finished task's successors (ready_successors), so the whole-run judgement, which reads every edge of the pipeline,
is not repeated per task. The calls are counted by PostgreSQL itself (track_functions, pg_stat_user_functions);
what each task ended as is the outcome the whole-run rule gives, skips propagated down a failed branch included."""

from __future__ import annotations

import json
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
