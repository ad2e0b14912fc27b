"""mark, cancel, pause, resume and reopen through the real command line and through etlcraft.services.control, on a
SQLite and a PostgreSQL Engine DB: the same JSON either way, one AUD_ACTIONS row per request, explicit run
selection, and the B16 and B26 regressions with real task processes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from etlcraft.core.actor import Actor
from etlcraft.core.enums import ActorKind
from etlcraft.engine.db import EngineDB
from etlcraft.services import control
from etlcraft.services.control import OperationContext, RunRef
from tests.py.conftest import PgServer
from tests.py.support.cli import etl_craft, start_etl_craft
from tests.py.support.project import Task, wait_for, write_project

pytestmark = pytest.mark.process

CLI_ACTOR = Actor("tester@cli", ActorKind("HUMAN"))  # tests.py.support.cli runs etl-craft as ETL_CRAFT_ACTOR=tester@cli
FLOW = {"flow": [Task("load"), Task("report")], "other": [Task("solo")]}
EDGES = [("report", "load", "SUCCESS")]
TIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d+)?(\+00:00| UTC)")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine_urls(request: pytest.FixtureRequest) -> Iterator[Callable[[], str | None]]:
    """Engine DB URLs for projects: None (the project's own SQLite file), or a new empty PostgreSQL database."""
    if request.param == "sqlite":
        yield lambda: None
        return
    server: PgServer = request.getfixturevalue("pg_server")
    names: list[str] = []

    def new() -> str:
        names.append(server.create())
        return server.url_for(names[-1])

    yield new
    for name in names:
        server.drop(name)


def _project(root: Path, engine_url: str | None, **options: Any) -> Path:
    project = write_project(root, engine_url, FLOW, EDGES, **options)
    done = etl_craft("migrate", cwd=project)
    assert done.code == 0, done.err
    return project


def _engine_db(project: Path, engine_url: str | None) -> EngineDB:
    return EngineDB(engine_url or f"sqlite:///{project / '.etl-craft' / 'engine.db'}")


def _init_run(project: Path, key: str, pipeline: str = "flow") -> int:
    done = etl_craft("run", "--pipeline-code", pipeline, "--init-only", "--run-key", key, "--run-date", "2026-03-14",
                     "--format", "json", cwd=project)
    assert done.code == 0, done.err
    return int(json.loads(done.out)["pipeline_run_id"])


def _cli(project: Path, *args: str) -> dict[str, Any]:
    done = etl_craft(*args, "--format", "json", cwd=project)
    assert done.code == 0, (args, done.out, done.err)
    return dict(json.loads(done.out))


def _steady(doc: dict[str, Any]) -> str:
    return TIME.sub("<time>", json.dumps(doc, sort_keys=True))


def _actions(db: EngineDB) -> list[tuple[Any, ...]]:
    with db.read() as conn:
        rows = conn.execute(sa.text(f"SELECT COMMAND, ACTOR, ACTOR_KIND, PIPELINE_RUN_ID, TASK_ID FROM "
                                    f"{db.qualify('AUD_ACTIONS')} WHERE COMMAND <> 'migrate' ORDER BY ACTION_ID"))
        return [tuple(r) for r in rows]


# Each operation once, in order: (CLI arguments, the same request for the service, what it must have done).
STEPS: list[tuple[tuple[str, ...], Callable[[OperationContext], control.OperationResult],
                  Callable[[dict[str, Any]], bool]]] = [
    (("pause", "--pipeline-code", "flow", "--reason", "warehouse upgrade"),
     lambda c: control.pause(c, control.PauseRequest("flow", "warehouse upgrade")),
     lambda d: d["pause"]["paused_by"] == "tester@cli" and d["pause"]["resumed_at"] is None),
    (("resume", "--pipeline-code", "flow", "--reason", "upgrade done"),
     lambda c: control.resume(c, control.ResumeRequest("flow", "upgrade done")),
     lambda d: d["pause"]["resume_reason"] == "upgrade done" and d["pause"]["resumed_at"] is not None),
    (("mark", "--pipeline-code", "flow", "--task-code", "load", "--status", "success", "--rows", "5", "--reason",
      "loaded by hand"),
     lambda c: control.mark(c, control.MarkRequest("flow", "SUCCESS", "loaded by hand", "load", 5)),
     lambda d: (d["task"]["status"], d["task"]["rows_written"], d["run"]["status"]) == ("SUCCESS", 5, "IN-PROGRESS")),
    (("mark", "--pipeline-code", "flow", "--status", "FAILED", "--reason", "report checked by hand"),
     lambda c: control.mark(c, control.MarkRequest("flow", "FAILED", "report checked by hand")),
     lambda d: d["run"]["status"] == "FAILED" and d["task"] is None and d["outcome"] == "SUCCESS"),
    (("reopen", "--pipeline-code", "flow", "--run-key", "nightly", "--reason", "repair"),
     lambda c: control.reopen(c, control.ReopenRequest("flow", "repair", RunRef(run_key="nightly"))),
     lambda d: (d["run"]["status"], d["run"]["repair_pending"]) == ("IN-PROGRESS", False)),
    (("cancel", "--pipeline-code", "flow", "--reason", "not today"),
     lambda c: control.cancel(c, control.CancelRequest("flow", "not today")),
     lambda d: d["run"]["status"] == "CANCELLED" and d["run"]["ended_by"] == "tester@cli"),
]


def test_each_operation__cli_and_service__give_the_same_json_and_one_action_each(
        tmp_path: Path, engine_urls: Callable[[], str | None]) -> None:
    """The same steps on two identical projects, one through the CLI and one through the service functions."""
    by_cli_url, by_service_url = engine_urls(), engine_urls()
    by_cli = _project(tmp_path / "cli", by_cli_url)
    by_service = _project(tmp_path / "service", by_service_url)
    assert _init_run(by_cli, "nightly") == _init_run(by_service, "nightly") == 1
    db = _engine_db(by_service, by_service_url)
    try:
        context = OperationContext(db, CLI_ACTOR, lease_seconds=60)
        for arguments, operation, did in STEPS:
            printed = _cli(by_cli, *arguments)
            returned = control.to_json(operation(context))
            assert printed["schema"] == "etl-craft/operation/1"
            assert did(printed), (arguments, printed)
            assert _steady(printed) == _steady(returned), arguments
        expected = [("run --init-only", "tester@cli", "HUMAN", 1, None),
                    ("pause", "tester@cli", "HUMAN", None, None), ("resume", "tester@cli", "HUMAN", None, None),
                    ("mark", "tester@cli", "HUMAN", 1, 1), ("mark", "tester@cli", "HUMAN", 1, None),
                    ("reopen", "tester@cli", "HUMAN", 1, None), ("cancel", "tester@cli", "HUMAN", 1, None)]
        assert _actions(db) == expected
        cli_db = _engine_db(by_cli, by_cli_url)
        assert [a[0] for a in _actions(cli_db)] == [a[0] for a in expected]
        refused = etl_craft("resume", "--pipeline-code", "flow", cwd=by_cli)
        assert refused.code == 24 and "pipeline flow is not paused" in refused.err
        assert len(_actions(cli_db)) == len(expected), "a refused request records no action"
        cli_db.dispose()
    finally:
        db.dispose()


def test_run_selection__refuses_to_guess_and_names_the_candidates(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", None)
    none_yet = etl_craft("cancel", "--pipeline-code", "flow", "--reason", "x", cwd=project)
    assert none_yet.code == 22 and "pipeline flow has no run that has not ended" in none_yet.err
    assert _init_run(project, "first") == 1
    second = etl_craft("run", "--pipeline-code", "flow", "--init-only", "--run-key", "second", cwd=project)
    assert second.code == 24, second.err  # it waits QUEUED behind run 1
    refused = etl_craft("mark", "--pipeline-code", "flow", "--status", "FAILED", "--reason", "x", cwd=project)
    assert refused.code == 23
    assert "pipeline flow has 2 runs that have not ended: run 1 (key first, MANUAL, run date 2026-03-14, " \
           "IN-PROGRESS); run 2 (key second, MANUAL" in refused.err
    assert _init_run(project, "elsewhere", pipeline="other") == 3
    foreign = etl_craft("mark", "--pipeline-code", "flow", "--run-id", "3", "--status", "FAILED", "--reason", "x",
                        cwd=project)
    assert foreign.code == 22 and "run 3 is a run of pipeline other, expected a run of pipeline flow" in foreign.err
    unnamed = etl_craft("reopen", "--pipeline-code", "flow", "--reason", "x", cwd=project)
    assert unnamed.code == 2 and "give --run-id N or --run-key K" in unnamed.err
    both = etl_craft("cancel", "--pipeline-code", "flow", "--run-id", "1", "--run-key", "first", "--reason", "x",
                     cwd=project)
    assert both.code == 2 and "--run-id and --run-key both name the run" in both.err
    cancelled = _cli(project, "cancel", "--pipeline-code", "flow", "--run-key", "second", "--reason", "not needed")
    assert cancelled["run"]["pipeline_run_id"] == 2 and cancelled["run"]["status"] == "CANCELLED"
    assert _actions(_engine_db(project, None)) == [
        ("run --init-only", "tester@cli", "HUMAN", 1, None), ("run --init-only", "tester@cli", "HUMAN", 3, None),
        ("cancel", "tester@cli", "HUMAN", 2, None)], "refused requests record nothing"


def _stop(process: subprocess.Popen[bytes], signum: int) -> None:
    """Send `signum`, and SIGKILL when the process has not ended a minute later; reap it either way."""
    process.send_signal(signum)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def _started(project: Path, task: str) -> int:
    """The pid of `task`'s running script, once it has started."""
    marks = project / "marks"
    wait_for(lambda: marks.is_dir() and any(marks.glob(f"{task}.*.start")), what=f"{task} to start")
    return int(next(marks.glob(f"{task}.*.start")).read_text().split()[1])


def test_b16_mark_of_a_run_or_task_is_refused_while_a_live_process_runs_it(
        tmp_path: Path, engine_urls: Callable[[], str | None]) -> None:
    project = write_project(tmp_path / "p", engine_urls(), {"slow": [Task("work", {"seconds": 30})]}, [])
    assert etl_craft("migrate", cwd=project).code == 0
    parent = start_etl_craft("run", "--pipeline-code", "slow", cwd=project, log=tmp_path / "run.log")
    try:
        _started(project, "work")
        task = etl_craft("mark", "--pipeline-code", "slow", "--task-code", "work", "--status", "SUCCESS",
                         "--reason", "done by hand", cwd=project)
        assert task.code == 24, task.err
        assert "attempt 1" in task.err and "work" in task.err
        run = etl_craft("mark", "--pipeline-code", "slow", "--status", "SUCCESS", "--reason", "done by hand",
                        cwd=project)
        assert run.code == 24, run.err
        status = json.loads(etl_craft("status", "--pipeline-code", "slow", "--format", "json", cwd=project).out)
        assert (status["run"]["status"], status["tasks"][0]["status"]) == ("IN-PROGRESS", "IN-PROGRESS")
        cancelled = _cli(project, "cancel", "--pipeline-code", "slow", "--reason", "stop it")
        assert cancelled["run"]["status"] == "IN-PROGRESS" and cancelled["run"]["cancel_requested_at"] is not None
        assert "cancel requested: 1 attempt(s) still run" in cancelled["message"]
        assert cancelled["attempts_changed"] == [], "a live attempt is left to its owner"
        assert parent.wait(timeout=60) == 9, "the supervisor stops the task and ends the run"
        status = json.loads(etl_craft("status", "--pipeline-code", "slow", "--run-id", "1", "--format", "json",
                                      cwd=project).out)
        assert (status["run"]["status"], status["tasks"][0]["status"]) == ("CANCELLED", "CANCELLED")
    finally:
        _stop(parent, signal.SIGTERM)


def test_b26_tasks_left_in_progress_by_dead_processes_do_not_block_mark_and_cancel(
        tmp_path: Path, engine_urls: Callable[[], str | None]) -> None:
    """Parent and task processes killed with -9: once their leases expire, mark marks the task's attempt LOST and
    sets the task's outcome, and cancel marks the other task's attempt LOST and ends the run CANCELLED."""
    project = write_project(tmp_path / "p", engine_urls(), {"pair": [Task("a", {"seconds": 60}),
                                                                      Task("b", {"seconds": 60})]}, [],
                            lease_seconds=5)
    assert etl_craft("migrate", cwd=project).code == 0
    parent = start_etl_craft("run", "--pipeline-code", "pair", cwd=project, log=tmp_path / "run.log")
    try:
        children = [_started(project, "a"), _started(project, "b")]
    finally:
        _stop(parent, signal.SIGKILL)
    for child in children:
        os.killpg(child, signal.SIGKILL)
    time.sleep(6)  # nobody renews the 5-second leases any more: they expire
    marked = _cli(project, "mark", "--pipeline-code", "pair", "--task-code", "a", "--status", "FAILED",
                  "--reason", "its process died")
    assert marked["task"]["status"] == "FAILED"
    [lost_a] = marked["attempts_changed"]
    assert (lost_a["task_code"], lost_a["to_status"]) == ("a", "LOST")
    cancelled = _cli(project, "cancel", "--pipeline-code", "pair", "--reason", "give up")
    assert cancelled["run"]["status"] == "CANCELLED"
    assert [(c["task_code"], c["to_status"]) for c in cancelled["attempts_changed"]] == [("b", "LOST")]
    assert "attempt" in cancelled["message"] and "LOST" in cancelled["message"]


# The service side of the run operations, in a process of its own (a run starts a fork server and task processes):
# it calls etlcraft.services.runs as the CLI does and prints the JSON document the service builds.
SERVICE = '''
import json, sys
from datetime import date
from pathlib import Path
from etlcraft.config.loader import load_config
from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.engine.db import DEFAULT_SCHEMA, EngineDB
from etlcraft.services import runs

config = load_config(Path.cwd())
db = EngineDB(config.engine.url, schema=config.engine.schema or DEFAULT_SCHEMA,
              password=config.secret_value(config.engine))
operation, task = sys.argv[1], sys.argv[2]
with acting_as(Actor("tester@cli", ActorKind("HUMAN"))):
    if operation == "skip":
        request = runs.RunRequest("flow", "nightly", None, None, "not needed today", None)
        print(json.dumps(runs.skip_json(runs.skip_task(db, config, request, task), task)))
    elif operation == "backfill":
        request = runs.RunRequest("flow", None, None, None, "reload", None)
        day = date.fromisoformat(task)
        print(json.dumps(runs.backfill_json(runs.backfill(db, config, request, day, day))))
    else:
        request = runs.RunRequest("flow", "nightly", None, None, None,
                                  runs.TaskRequest(task, rerun=True, with_downstream=operation == "rerun-down"))
        print(json.dumps(runs.outcome_json(runs.run_pipeline(db, config, request))))
'''


def _service(project: Path, operation: str, task: str) -> dict[str, Any]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ETL_CRAFT_", "ETLCRAFT_"))}
    done = subprocess.run(["python3", "-c", SERVICE, operation, task], cwd=project, env=environ, text=True,
                          capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_run_skip_rerun_and_backfill__cli_and_service__give_the_same_json(tmp_path: Path) -> None:
    flow = {"flow": [Task("load"), Task("report"), Task("audit")], "other": [Task("solo")]}
    projects = []
    for name in ("cli", "service"):
        project = write_project(tmp_path / name, None, flow, [("report", "load", "SUCCESS")])
        assert etl_craft("migrate", cwd=project).code == 0
        assert _init_run(project, "nightly") == 1
        _cli(project, "mark", "--pipeline-code", "flow", "--task-code", "load", "--status", "FAILED", "--reason",
             "bad file")
        projects.append(project)
    by_cli, by_service = projects
    for operation, arguments in [
            ("skip", ("run", "--pipeline-code", "flow", "--run-key", "nightly", "--skip", "audit", "--reason",
                      "not needed today")),
            ("rerun-down", ("run", "--pipeline-code", "flow", "--run-key", "nightly", "--rerun", "load",
                            "--with-downstream")),
            ("backfill", ("run", "--pipeline-code", "flow", "--backfill", "2026-11-01:2026-11-01", "--reason",
                          "reload"))]:
        printed = _cli(by_cli, *arguments)
        argument = {"skip": "audit", "rerun-down": "load", "backfill": "2026-11-01"}[operation]
        assert _steady(printed) == _steady(_service(by_service, operation, argument)), operation
        if operation == "rerun-down":
            assert printed["schema"] == "etl-craft/run-outcome/1" and printed["status"] == "SUCCESS"
            assert [(a["task_code"], a["status"]) for a in printed["attempts"]] == [
                ("load", "SUCCESS"), ("report", "SUCCESS")]
    assert printed["schema"] == "etl-craft/backfill-outcome/1" and printed["complete"] is True
