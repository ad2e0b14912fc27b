"""etl-craft audit through the real command line on a SQLite and a PostgreSQL Engine DB: requests and metadata
changes newest first, with actor and kind, filtered by pipeline and by day."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.py.conftest import PgServer
from tests.py.support.cli import etl_craft
from tests.py.support.project import Task, write_project

pytestmark = pytest.mark.process

FLOW = {"flow": [Task("load"), Task("report")], "other": [Task("solo")]}
EDGES = [("report", "load", "SUCCESS")]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A migrated project (pipelines flow and other) on which flow was paused and resumed, then other paused."""
    name = None
    if request.param == "postgresql":
        server: PgServer = request.getfixturevalue("pg_server")
        name = server.create()
    root = write_project(tmp_path / "project", server.url_for(name) if name else None, FLOW, EDGES)
    for args in (("migrate",), ("pause", "--pipeline-code", "flow", "--reason", "warehouse upgrade"),
                 ("resume", "--pipeline-code", "flow", "--reason", "upgrade done"),
                 ("pause", "--pipeline-code", "other", "--reason", "retired")):
        done = etl_craft(*args, cwd=root)
        assert done.code == 0, (args, done.err)
    yield root
    if name:
        server.drop(name)


def _audit(project: Path, *args: str) -> dict:
    done = etl_craft("audit", *args, "--format", "json", cwd=project)
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert doc["schema"] == "etl-craft/audit/1"
    return doc


def test_audit__all__requests_newest_first_with_actor_and_kind(project: Path) -> None:
    entries = _audit(project)["entries"]
    actions = [(e["what"], e["pipeline_code"], e["actor"], e["actor_kind"]) for e in entries if e["kind"] == "action"]
    assert actions == [("pause", "other", "tester@cli", "HUMAN"), ("resume", "flow", "tester@cli", "HUMAN"),
                       ("pause", "flow", "tester@cli", "HUMAN"), ("migrate", None, "tester@cli", "HUMAN")]
    assert [e["at"] for e in entries] == sorted((e["at"] for e in entries), reverse=True)
    changes = {e["what"] for e in entries if e["kind"] == "metadata"}
    assert {"INSERT CFG_PIPELINES PIPELINE_ID=1", "INSERT CFG_PIPELINES PIPELINE_ID=2", "INSERT CFG_TASKS TASK_ID=3",
            "INSERT CFG_TASK_DEPENDENCY TASK_DEPENDENCY_ID=1"} <= changes
    assert {e["detail"] for e in entries if e["kind"] == "metadata"} == {"migration 0001_pipelines.sql"}


def test_audit__pipeline__only_its_requests_and_its_metadata_rows(project: Path) -> None:
    entries = _audit(project, "--pipeline-code", "flow")["entries"]
    assert [(e["what"], e["detail"]) for e in entries if e["kind"] == "action"] == [
        ("resume", "pipeline_code=flow reason=upgrade done"), ("pause", "pipeline_code=flow reason=warehouse upgrade")]
    assert sorted(e["what"] for e in entries if e["kind"] == "metadata") == [
        "INSERT CFG_PIPELINES PIPELINE_ID=1", "INSERT CFG_TASKS TASK_ID=1", "INSERT CFG_TASKS TASK_ID=2",
        "INSERT CFG_TASK_DEPENDENCY TASK_DEPENDENCY_ID=1"]


def test_audit__since__tomorrow_lists_nothing_and_today_everything(project: Path) -> None:
    today = datetime.now(UTC).date()
    assert _audit(project, "--since", (today + timedelta(days=1)).isoformat())["entries"] == []
    assert len(_audit(project, "--since", today.isoformat())["entries"]) == len(_audit(project)["entries"])


def test_audit__text__one_line_per_entry(project: Path) -> None:
    done = etl_craft("audit", "--pipeline-code", "other", cwd=project)
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    assert lines[0] == "audit of pipeline other: 3 entries"
    assert lines[1].endswith("  action    tester@cli (HUMAN)  pause [other]  pipeline_code=other reason=retired")
    assert sorted(line.split("  ", 3)[3] for line in lines[2:]) == [
        "INSERT CFG_PIPELINES PIPELINE_ID=2 [other]  migration 0001_pipelines.sql",
        "INSERT CFG_TASKS TASK_ID=3 [other]  migration 0001_pipelines.sql"]


def test_audit__unknown_pipeline__refused(project: Path) -> None:
    done = etl_craft("audit", "--pipeline-code", "nope", cwd=project)
    assert done.code != 0 and "pipeline nope does not exist or is switched off" in done.err
