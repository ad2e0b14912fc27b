"""generate-docs: what the pages show (schedule, owner, last status, sparkline, the DAG coloured by the latest run,
KPIs by run class, interventions, masked parameters, scrubbed errors, lineage) and the incremental rebuild."""

from __future__ import annotations

import json
import re
from pathlib import Path

import sqlalchemy as sa

from etlcraft.catalog_site.build import MANIFEST, BuildResult, build_site
from etlcraft.catalog_site.model import read_site_data
from etlcraft.engine.db import EngineDB
from etlcraft.services.metadata import TaskView
from etlcraft.warehouse.catalog import Catalog
from tests.py.catalog.history import Shape, build, next_round
from tests.py.support.cli import etl_craft

WAREHOUSE = {"main.orders": ("id", "amount")}


def _sql(data_tasks: list[TaskView]) -> dict[int, str]:
    """t00 reads the warehouse; each later task reads the table the task before it makes, and a column it lacks."""
    def select(t: TaskView) -> str:
        if t.code == "t00":
            return "SELECT id, amount FROM orders"
        return f"SELECT id, amount * 2 AS amount, bogus FROM {t.pipeline_code}_t{int(t.code[1:]) - 1:02d}"
    return {t.task_id: select(t) for t in data_tasks}


def _build(db: EngineDB, folder: Path) -> BuildResult:
    data = read_site_data(db, 50)
    return build_site(data, folder, _sql(list(data.metadata.tasks)), Catalog("duckdb", None, dict(WAREHOUSE)))


def test_generate__pages_show_metadata_history_and_lineage(engine_db: EngineDB, tmp_path: Path) -> None:
    build(engine_db, Shape(2, 3, 8))
    result = _build(engine_db, tmp_path)
    index = (tmp_path / "index.html").read_text()
    assert "p0000" in index and "1 6 * * *" in index and "tester@pytest" in index
    assert index.count('class="spark"') == 2 and "SUCCESS" in index
    pipeline = (tmp_path / "pipelines" / "shop.p0001.html").read_text()
    assert pipeline.count('class="task" data-status="SUCCESS"') == 3  # the latest run succeeded everywhere
    assert re.search(r"<td>scheduled</td><td>6</td>", pipeline) and re.search(r"<td>backfill</td><td>1</td>",
                                                                              pipeline)
    assert re.search(r"<td>repair</td><td>1</td>", pipeline) and "late orders reloaded" in pipeline
    task = (tmp_path / "tasks" / "shop.p0001.t01.html").read_text()
    assert "API_TOKEN" in task and "tok-secret-value" not in task and "***" in task
    assert "warehouse refused the login ***" in task
    assert 'href="../tables/main.p0001_t00.html">main.p0001_t00</a>.<code>amount</code>' in task
    assert "unresolved: table main.p0001_t00 has no column bogus" in task
    table = (tmp_path / "tables" / "main.p0001_t01.html").read_text()
    assert "Made by a task" in table and "<code>bogus</code>" in table
    # t01 reads bogus from t00, which lacks it; t02 reads it from t01, which returns it
    assert result.unresolved_columns == 2


def test_generate__rebuild__only_pages_whose_input_changed_are_rendered(engine_db: EngineDB, tmp_path: Path) -> None:
    build(engine_db, Shape(3, 2, 2))
    first = _build(engine_db, tmp_path)
    assert first.rendered == first.pages
    again = _build(engine_db, tmp_path)
    assert (again.rendered, again.written) == (0, 0)
    next_round(engine_db, 2, pipeline_code="p0001")
    third = _build(engine_db, tmp_path)
    # the index, p0001's page and its two task pages; nothing of p0000 or p0002
    assert third.rendered == 4, json.loads((tmp_path / MANIFEST).read_text())
    (tmp_path / "tasks" / "shop.p0000.t00.html").write_text("tampered")
    assert _build(engine_db, tmp_path).rendered == 1


def test_generate__task_switched_off__its_page_is_removed(engine_db: EngineDB, tmp_path: Path) -> None:
    build(engine_db, Shape(1, 2, 1))
    _build(engine_db, tmp_path)
    with engine_db.write() as conn:
        conn.execute(sa.text(f"UPDATE {engine_db.qualify('CFG_TASKS')} SET ACTIVE_FLAG = 'N' "
                             "WHERE TASK_CODE = 't01'"))
    result = _build(engine_db, tmp_path)
    assert result.removed >= 1 and not (tmp_path / "tasks" / "shop.p0000.t01.html").exists()


def test_generate_docs_command__json_document_and_site(sqlite_url: str, tmp_path: Path) -> None:
    db = EngineDB(sqlite_url)
    from etlcraft.core.actor import Actor, acting_as
    from etlcraft.core.enums import ActorKind

    with acting_as(Actor("tester@pytest", ActorKind.HUMAN)):
        build(db, Shape(2, 2, 2))
    db.dispose()
    done = etl_craft("--engine-url", sqlite_url, "generate-docs", "--out", str(tmp_path / "site"), "--format", "json",
                     cwd=tmp_path)
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert doc["schema"] == "etl-craft/catalog-build/1" and doc["pages"] == doc["rendered"] > 0
    assert "no project folder" in doc["warning"]
    assert (tmp_path / "site" / "index.html").is_file() and (tmp_path / "site" / "static" / "catalog.css").is_file()
