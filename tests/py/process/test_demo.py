"""make demo (scripts/demo.sh): a new project's two pipelines run end to end, and the second ingest run loads only
the rows after the offsets the first one stored."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.py.support.cli import etl_craft

pytestmark = pytest.mark.process
ROOT = Path(__file__).resolve().parents[3]
KEYS = {"shop_ingest": ["demo-ingest-1", "demo-ingest-2"], "customer_orders": ["demo-transform-1", "demo-transform-2"]}
#: This checkout's etlcraft for every subprocess, whichever one the interpreter's site-packages point at.
CHECKOUT = {"PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
TASKS = {"shop_ingest": {"ingest_customers", "ingest_orders"},
         "customer_orders": {"load_customers", "load_orders", "customer_totals"}}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """scripts/demo.sh run once with TMPDIR in a new folder, with this interpreter; its output and its project."""
    tmp = tmp_path_factory.mktemp("demo")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ETL_CRAFT_", "ETLCRAFT_"))}
    env.update({"TMPDIR": str(tmp), "PYTHON": sys.executable, "ETL_CRAFT_ACTOR": "tester@demo", **CHECKOUT})
    done = subprocess.run(["bash", str(ROOT / "scripts" / "demo.sh")], cwd=tmp, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    projects = list(tmp.glob("etl-craft-demo.*/demo"))
    assert len(projects) == 1, (projects, done.stdout, done.stderr)
    return done, projects[0]


def _runs(project: Path, pipeline: str) -> dict[str, dict[str, object]]:
    done = etl_craft("history", "--pipeline-code", pipeline, "--format", "json", cwd=project, env=CHECKOUT)
    assert done.code == 0, done.err
    return {r["run_key"]: r for r in json.loads(done.out)["runs"]}


def _engine(project: Path, sql: str, *args: object) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(f"file:{project / '.etl-craft' / 'engine.db'}?mode=ro", uri=True)) as conn:
        return conn.execute(sql, args).fetchall()


def _task_runs(project: Path, task: str) -> list[int]:
    """The task runs of `task`, oldest first (one per pipeline run of the demo)."""
    return [int(r[0]) for r in _engine(project, "SELECT r.TASK_RUN_ID FROM AUD_TASK_RUN_LOG r JOIN CFG_TASKS t "
                                                "ON t.TASK_ID = r.TASK_ID WHERE t.TASK_CODE = ? "
                                                "ORDER BY r.TASK_RUN_ID", task)]


def test_demo__end_to_end(demo: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    """One test, so that the demo runs once (each pytest-xdist worker would build the module fixture again)."""
    _exits_0_and_prints_status_and_history(demo)
    for pipeline in sorted(KEYS):
        _every_run_of_the_pipeline_ended_success(demo, pipeline)
    _the_second_ingest_loads_only_the_customer_changes_after_the_stored_offset(demo)
    _the_second_ingest_loads_only_the_orders_placed_after_the_stored_offset(demo)


def _exits_0_and_prints_status_and_history(demo: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    done, project = demo
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    transform = _runs(project, "customer_orders")["demo-transform-2"]["pipeline_run_id"]
    assert f"run {transform} of customer_orders (demo-transform-2, MANUAL, " in done.stdout
    assert "== etl-craft history --pipeline-code shop_ingest" in done.stdout
    assert f"rm -rf {project.parent}" in done.stdout


def _every_run_of_the_pipeline_ended_success(demo: tuple[subprocess.CompletedProcess[str], Path],
                                             pipeline: str) -> None:
    _, project = demo
    runs = _runs(project, pipeline)
    assert sorted(runs) == KEYS[pipeline]
    for key, run in runs.items():
        assert run["status"] == "SUCCESS", (key, run)
        status = etl_craft("status", "--pipeline-code", pipeline, "--run-id", str(run["pipeline_run_id"]),
                           "--format", "json", cwd=project, env=CHECKOUT)
        tasks = {t["task_code"]: (t["status"], t["rows_written"]) for t in json.loads(status.out)["tasks"]}
        assert set(tasks) == TASKS[pipeline]
        assert all(state == "SUCCESS" and rows > 0 for state, rows in tasks.values()), (key, tasks)


def _the_second_ingest_loads_only_the_customer_changes_after_the_stored_offset(
        demo: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, project = demo
    first, second = _task_runs(project, "ingest_customers")
    with duckdb.connect(str(project / "warehouse.duckdb"), read_only=True) as db:
        loads = dict(db.execute("SELECT task_run_id, list(change_id ORDER BY change_id) FROM raw.customers "
                                "GROUP BY task_run_id").fetchall())
    assert set(loads) == {first, second}
    assert loads[first] == list(range(1, len(loads[first]) + 1)), "the first run starts at change 1"
    after = loads[first][-1]
    assert loads[second] == list(range(after + 1, after + 1 + len(loads[second]))), "then the next ones, once each"
    assert _engine(project, "SELECT o.OFFSET_VALUE, o.OFFSET_TYPE, o.TASK_RUN_ID FROM AUD_TASK_OFFSETS o JOIN "
                            "CFG_TASKS t ON t.TASK_ID = o.TASK_ID WHERE t.TASK_CODE = 'ingest_customers'") == [
        (str(loads[second][-1]), "INTEGER", second)]


def _the_second_ingest_loads_only_the_orders_placed_after_the_stored_offset(
        demo: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, project = demo
    first, second = _task_runs(project, "ingest_orders")
    with duckdb.connect(str(project / "warehouse.duckdb"), read_only=True) as db:
        db.execute("SET TimeZone = 'UTC'")
        loads = {run: (ids, stamps) for run, ids, stamps in db.execute(
            "SELECT task_run_id, list(order_id ORDER BY order_id), list(ordered_at ORDER BY order_id) FROM raw.orders "
            "GROUP BY task_run_id").fetchall()}
        main_orders = db.execute("SELECT COUNT(*), COUNT(DISTINCT order_id) FROM main.orders").fetchone()
    assert set(loads) == {first, second}
    (first_ids, first_times), (second_ids, second_times) = loads[first], loads[second]
    assert first_ids[0] == 1 and second_ids[0] == first_ids[-1] + 1
    assert not set(first_ids) & set(second_ids)
    assert min(second_times) > max(first_times), "only orders placed after the first run's offset"
    (value, kind), = _engine(project, "SELECT o.OFFSET_VALUE, o.OFFSET_TYPE FROM AUD_TASK_OFFSETS o JOIN CFG_TASKS t "
                                      "ON t.TASK_ID = o.TASK_ID WHERE t.TASK_CODE = 'ingest_orders'")
    assert (value, kind) == (max(second_times).isoformat(timespec="microseconds"), "TIMESTAMP")
    assert main_orders == (len(first_ids) + len(second_ids),) * 2, "the second transform merged every order once"
