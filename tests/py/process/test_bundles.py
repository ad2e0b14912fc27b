"""Pinned project bundles through the real CLI: a run runs the files its project had published when it was created,
whatever changes in the working folder meanwhile; a corrupted cached file is fetched again; a damaged store file is
refused on the attempt; doctor --worker lists script imports this interpreter cannot find; doctor prints the
connection budget on PostgreSQL."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from etlcraft.engine.bundles import build_manifest
from tests.py.cli.test_json_documents import check
from tests.py.support.cli import etl_craft, start_etl_craft
from tests.py.support.project import WORK_SCRIPT, release, run_logs, wait_for
from tests.py.support.s3 import Bucket, fake_credentials, moto_server, new_bucket, refused_endpoint

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


def _project(tmp_path: Path, engine_url: str | None = None, bucket: Bucket | None = None,
             endpoint: str | None = None) -> Path:
    """The project, its store a folder of tmp_path, or `bucket` (reached at `endpoint`, else the bucket's)."""
    root = tmp_path / "p"
    (root / "sql_files").mkdir(parents=True)
    (root / "ingestion_scripts").mkdir()
    (root / "migrations").mkdir()
    engine = (f"Engine:\n  dialect: postgresql\n  url: {engine_url}\n" if engine_url
              else "Engine:\n  dialect: sqlite\n  path: .etl-craft/engine.db\n")
    store = (f"  Store: {bucket.url()}\n  Endpoint_url: {endpoint or bucket.endpoint}\n" if bucket
             else f"  Store: file://{tmp_path / 'store'}\n")
    (root / "craft-connector.yml").write_text(
        engine + "Warehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n"
        f"Artifacts:\n{store}  Cache_dir: {tmp_path / 'cache'}\n")
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


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


@pytest.fixture
def bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Bucket:
    """A bucket on moto's S3 on loopback, and the fake credentials etl-craft's processes inherit."""
    fake_credentials(monkeypatch, tmp_path)
    return new_bucket(s3_endpoint)


@pytest.fixture(params=["file", "s3"])
def store(request: pytest.FixtureRequest) -> Bucket | None:
    """The artifact store: a folder (file://), or a bucket (s3://)."""
    return request.getfixturevalue("bucket") if request.param == "s3" else None


def test_a_sql_file_edited_mid_run__the_later_task_runs_the_published_text__a_new_publish_is_used_by_the_next_run(
        tmp_path: Path, engine_url: str | None, store: Bucket | None) -> None:
    project = _project(tmp_path, engine_url, store)
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


def test_s3_store__publish_uploads_each_file_once__runs_materialize_it__a_changed_object_fails_the_attempt(
        tmp_path: Path, bucket: Bucket) -> None:
    project = _project(tmp_path, bucket=bucket)
    release(project, "first")
    published = _publish(project)
    manifest = build_manifest(project)
    files = manifest.files
    assert published["bundle"]["manifest_sha256"] == manifest.sha256
    assert published["uploaded"] == len(files) == 3 and published["bundle"]["store_url"] == bucket.url()
    assert bucket.keys() == sorted(f"bundles/sha256/{d[:2]}/{d}" for d in files.values())
    again = _publish(project)
    assert (again["created"], again["uploaded"]) == (False, 0), "an unchanged project uploads nothing"
    assert _run(project) == 0 and _target(project) == "published first"
    cached = tmp_path / "cache" / "1"
    for relative, digest in files.items():
        assert (cached / relative).read_bytes() == bucket.read(f"bundles/sha256/{digest[:2]}/{digest}")
        assert (cached / relative).read_bytes() == (project / relative).read_bytes(), relative
    digest = files["sql_files/later.sql"]
    key = f"bundles/sha256/{digest[:2]}/{digest}"
    bucket.client.put_object(Bucket=bucket.name, Key=key, Body=b"SELECT 'changed in the bucket' AS version")
    shutil.rmtree(cached)
    assert _run(project) != 0
    explained = etl_craft("explain", "--pipeline-code", "pin", "--run-id", "2", "--task-code", "first", "--format",
                          "json", cwd=project)
    [attempt] = json.loads(explained.out)["attempts"]
    assert attempt["error"].startswith(
        "BundleIntegrityError: bundle 1, file sql_files/later.sql: the artifact store's copy has SHA-256 "), attempt
    assert f"expected {digest} (object s3://{bucket.name}/{key} at {bucket.endpoint})" in attempt["error"]
    assert attempt["retryable"] == "N" and _target(project) == "published first"


POOL_MIGRATION = """INSERT INTO CFG_POOLS (POOL_NAME, PROVIDER) VALUES ('remote', 'QUEUE');
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'POOL', 'remote'
  FROM CFG_TASKS;
"""


@pytest.mark.postgres
def test_s3_store__a_worker_whose_folder_has_no_project_files__runs_the_tasks_from_the_bucket(
        tmp_path: Path, bucket: Bucket, empty_pg_url: str) -> None:
    project = _project(tmp_path, empty_pg_url, bucket)
    (project / "migrations" / "0002_remote_pool.sql").write_text(POOL_MIGRATION)
    assert etl_craft("migrate", cwd=project).code == 0
    _publish(project)
    host = tmp_path / "worker-host"  # the worker's working folder: its craft-connector.yml and nothing else
    host.mkdir()
    (host / "craft-connector.yml").write_text(
        f"Engine:\n  dialect: postgresql\n  url: {empty_pg_url}\nWarehouse:\n  dialect: duckdb\n"
        f"  path: warehouse.duckdb\nArtifacts:\n  Store: {bucket.url()}\n  Endpoint_url: {bucket.endpoint}\n"
        f"  Cache_dir: {tmp_path / 'worker-cache'}\n")
    release(host, "first")
    log = tmp_path / "worker.log"
    worker = start_etl_craft("worker", "--pool", "remote", "--name", "s3-host", "--heartbeat-seconds", "1",
                             "--ingestion-slots", "1", "--warehouse-slots", "1", cwd=host, log=log)
    try:
        wait_for(lambda: "serves pool" in log.read_text() or worker.poll() is not None, what="the worker to register")
        assert worker.poll() is None, log.read_text()
        done = etl_craft("run", "--pipeline-code", "pin", cwd=project)
        assert done.code == 0, done.out + done.err + log.read_text()
    finally:
        worker.terminate()
        worker.wait(60)
    assert _target(host) == "published first", "the SQL task ran on the worker, from the bundle's sql_files"
    for relative in build_manifest(project).files:
        assert (tmp_path / "worker-cache" / "1" / relative).read_bytes() == (project / relative).read_bytes()
    assert not (tmp_path / "cache").exists(), "the run's own process ran no task"


def test_s3_store__a_refused_endpoint_or_no_boto3__publish_fails_with_the_remedy_and_records_nothing(
        tmp_path: Path, bucket: Bucket) -> None:
    wrong = refused_endpoint()
    project = _project(tmp_path, bucket=bucket, endpoint=wrong)
    done = etl_craft("bundle", "publish", cwd=project)
    assert done.code == 3, done.out + done.err
    assert f"in the artifact store {bucket.url()}: the service at {wrong} could not be reached" in done.err
    shadow = tmp_path / "no-boto3"
    (shadow / "boto3").mkdir(parents=True)
    (shadow / "boto3" / "__init__.py").write_text("raise ImportError('No module named boto3 (shadowed by the test)')\n")
    done = etl_craft("bundle", "publish", cwd=project, env={"PYTHONPATH": str(shadow)})
    assert done.code == 3, done.out + done.err
    assert "needs boto3, and this Python environment cannot import it" in done.err
    assert "pip install 'etl-craft[s3]'" in done.err
    assert _list(project)["bundles"] == [], "a failed publish records no bundle"


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
