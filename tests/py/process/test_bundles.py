"""Pinned project bundles through the real CLI: a run runs the files its project had published when it was created,
whatever changes in the working folder meanwhile; a corrupted cached file is fetched again; a damaged store file is
refused on the attempt; doctor --worker lists script imports this interpreter cannot find; doctor prints the
connection budget on PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.py.cli.test_json_documents import check
from tests.py.support.cli import etl_craft, start_etl_craft
from tests.py.support.project import WORK_SCRIPT, release, run_logs, wait_for

pytestmark = pytest.mark.process

METADATA = """INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('default');
INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'pin' FROM CFG_PROJECTS;
INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE) SELECT PIPELINE_ID, 'first', 'PYTHON', 'work.py'
  FROM CFG_PIPELINES;
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
  SELECT TASK_ID, 'INPUT_PARAMS', '{"hold": "first"}' FROM CFG_TASKS WHERE TASK_CODE = 'first';
INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, TARGET_OBJECT)
  SELECT PIPELINE_ID, 'later', 'SQL', 'OVERWRITE_TABLE', 'later.sql', 'main.pinned' FROM CFG_PIPELINES;
INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
  SELECT t.TASK_ID, u.TASK_ID, 'SUCCESS' FROM CFG_TASKS t, CFG_TASKS u
   WHERE t.TASK_CODE = 'later' AND u.TASK_CODE = 'first';
"""


def _project(tmp_path: Path, engine_url: str | None = None) -> Path:
    root = tmp_path / "p"
    (root / "sql_files").mkdir(parents=True)
    (root / "ingestion_scripts").mkdir()
    (root / "migrations").mkdir()
    engine = (f"Engine:\n  dialect: postgresql\n  url: {engine_url}\n" if engine_url
              else "Engine:\n  dialect: sqlite\n  path: .etl-craft/engine.db\n")
    (root / "craft-connector.yml").write_text(
        engine + "Warehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n"
        f"Artifacts:\n  Store: file://{tmp_path / 'store'}\n  Cache_dir: {tmp_path / 'cache'}\n")
    (root / "ingestion_scripts" / "work.py").write_text(WORK_SCRIPT)
    (root / "sql_files" / "later.sql").write_text("SELECT 'published first' AS version")
    (root / "migrations" / "0001_pin.sql").write_text(METADATA)
    assert etl_craft("migrate", cwd=root).code == 0
    return root


def _publish(project: Path) -> dict[str, Any]:
    done = etl_craft("bundle", "publish", "--format", "json", cwd=project)
    assert done.code == 0, done.out + done.err
    doc: dict[str, Any] = json.loads(done.out)
    check("bundle publish", doc)  # the document docs/reference/json.md describes
    return doc


def _list(project: Path) -> dict[str, Any]:
    done = etl_craft("bundle", "list", "--format", "json", cwd=project)
    assert done.code == 0, done.out + done.err
    doc: dict[str, Any] = json.loads(done.out)
    check("bundle list", doc)
    return doc


def _target(project: Path) -> str:
    with duckdb.connect(str(project / "warehouse.duckdb"), read_only=True) as conn:
        [(version,)] = conn.sql("SELECT version FROM main.pinned").fetchall()
    return str(version)


def _run(project: Path) -> int:
    return etl_craft("run", "--pipeline-code", "pin", cwd=project).code


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine_url(request: pytest.FixtureRequest) -> str | None:
    return None if request.param == "sqlite" else request.getfixturevalue("empty_pg_url")


def test_a_sql_file_edited_mid_run__the_later_task_runs_the_published_text__a_new_publish_is_used_by_the_next_run(
        tmp_path: Path, engine_url: str | None) -> None:
    project = _project(tmp_path, engine_url)
    assert _publish(project)["created"] is True
    parent = start_etl_craft("run", "--pipeline-code", "pin", cwd=project, log=tmp_path / "run1.log")
    wait_for(lambda: any((project / "marks").glob("first.*.start")) if (project / "marks").is_dir() else False,
             what="the first task to start")
    (project / "sql_files" / "later.sql").write_text("SELECT 'edited mid-run' AS version")
    release(project, "first")
    assert parent.wait(120) == 0, (tmp_path / "run1.log").read_text()
    assert _target(project) == "published first"
    again = _publish(project)
    assert again["created"] is True and again["bundle"]["bundle_id"] == 2
    assert _run(project) == 0
    assert _target(project) == "edited mid-run"
    listed = _list(project)
    assert [(b["bundle_id"], b["run_count"]) for b in listed["bundles"]] == [(2, 1), (1, 1)]


def test_a_corrupted_cached_file__the_next_attempt_fetches_it_again__a_damaged_store_file_fails_the_attempt(
        tmp_path: Path) -> None:
    project = _project(tmp_path)
    release(project, "first")
    published = _publish(project)
    assert _publish(project)["created"] is False, "the same content twice records nothing"
    assert _run(project) == 0
    cached = tmp_path / "cache" / "1" / "sql_files" / "later.sql"
    cached.write_text("SELECT 'corrupted in the cache' AS version")
    assert _run(project) == 0
    assert _target(project) == "published first" and cached.read_text() == "SELECT 'published first' AS version"
    logs = "".join(p.read_text() for p in run_logs(project, "pin", 2).glob("first.*.log"))
    assert "bundle 1: fetched again from the artifact store and verified: sql_files/later.sql" in logs
    listed = _list(project)
    assert [b["manifest_sha256"] for b in listed["bundles"]] == [published["bundle"]["manifest_sha256"]]
    for stored in (tmp_path / "store" / "sha256").rglob("*"):
        if stored.is_file() and stored.read_text() == "SELECT 'published first' AS version":
            stored.write_text("SELECT 'changed in the store' AS version")
    cached.unlink()
    assert _run(project) != 0
    status = json.loads(etl_craft("status", "--pipeline-code", "pin", "--run-id", "3", "--format", "json",
                                  cwd=project).out)
    assert "the artifact store's copy" in json.dumps(status) and _target(project) == "published first"


def test_doctor_worker__lists_the_imports_a_worker_cannot_find(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "ingestion_scripts" / "needs.py").write_text("import json\nimport no_such_package_for_etl_craft\n")
    _publish(project)
    (project / "ingestion_scripts" / "needs.py").unlink()  # the bundle is checked, not the working folder
    done = etl_craft("doctor", "--worker", cwd=project)
    assert done.code != 0
    assert "bundle 1" in done.out and "needs.py line 2: no_such_package_for_etl_craft" in done.out


@pytest.mark.postgres
def test_doctor__prints_the_connection_budget_on_postgresql(tmp_path: Path, empty_pg_url: str) -> None:
    project = _project(tmp_path, empty_pg_url)
    done = etl_craft("doctor", "--format", "json", cwd=project)
    [budget] = [c for c in json.loads(done.out)["checks"] if c["name"] == "connection budget"]
    assert budget["status"] == "ok" and budget["detail"].startswith("10 of max_connections ")
    assert "server pool 10 + 0 active worker(s) 0" in budget["detail"]
