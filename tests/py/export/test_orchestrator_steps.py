"""The steps of an orchestrator's DAG run through the real CLI, as the generated YAML gives them: __finalize__
(run --finalize-only) after the last task command has ended the run, and after a failed task whose downstream an
orchestrator does not start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.py.support.cli import etl_craft
from tests.py.support.project import Task, write_project

pytestmark = pytest.mark.process

KEY = ("--run-key", "orchestrator:scheduled__2026-12-01T06:00:00+00:00", "--run-date", "2026-12-01")
EDGES = [("report", "load", "SUCCESS")]


def _step(project: Path, *args: str) -> tuple[int, str]:
    done = etl_craft("run", "--pipeline-code", "flow", *KEY, *args, cwd=project)
    return done.code, done.out + done.err


def _status(project: Path) -> tuple[str, dict[str, str]]:
    doc = json.loads(etl_craft("status", "--pipeline-code", "flow", *KEY[:2], "--format", "json", cwd=project).out)
    return doc["run"]["status"], {t["task_code"]: t["status"] for t in doc["tasks"]}


def test_finalize__after_the_last_task_ended_the_run__leaves_it_and_exits_0(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, {"flow": [Task("load"), Task("report")]}, EDGES)
    assert etl_craft("migrate", cwd=project).code == 0
    assert _step(project, "--init-only")[0] == 0
    for task in ("load", "report"):
        assert _step(project, "--task-code", task)[0] == 0
    code, said = _step(project, "--finalize-only")
    assert code == 0, said
    assert "had already ended SUCCESS; nothing to finalize" in said
    assert _status(project) == ("SUCCESS", {"load": "SUCCESS", "report": "SUCCESS"})


def test_finalize__a_failed_upstream__skips_what_can_never_run__ends_failed_and_exits_9(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, {"flow": [Task("load", {"fail": True}), Task("report"),
                                                            Task("audit")]}, EDGES)
    assert etl_craft("migrate", cwd=project).code == 0
    assert _step(project, "--init-only")[0] == 0
    assert _step(project, "--task-code", "load")[0] == 9
    assert _step(project, "--task-code", "audit")[0] == 0
    assert _status(project)[0] == "IN-PROGRESS", "report has not settled: the orchestrator does not start it"
    code, said = _step(project, "--finalize-only")
    assert code == 9, said
    assert _status(project) == ("FAILED", {"load": "FAILED", "report": "SKIPPED", "audit": "SUCCESS"})
    code, said = _step(project, "--finalize-only")
    assert code == 9 and "had already ended FAILED" in said
