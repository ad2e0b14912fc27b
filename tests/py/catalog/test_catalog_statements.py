"""The catalog reads the Engine DB in a fixed number of statements (S6.C, W9): building it for 1,000 tasks issues
exactly the statements building it for 100 does, on both dialects."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from etlcraft.catalog_site.build import build_site
from etlcraft.catalog_site.model import read_site_data
from etlcraft.engine.db import EngineDB
from etlcraft.warehouse.catalog import Catalog
from tests.py.catalog.history import Shape, build


@contextmanager
def counted(db: EngineDB) -> Iterator[list[str]]:
    """Every statement sent to the Engine DB inside the block."""
    seen: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    sa.event.listen(db.engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        sa.event.remove(db.engine, "before_cursor_execute", note)


def _statements_for(db: EngineDB, folder: Path, pipelines: int, project: str) -> tuple[int, int]:
    build(db, Shape(pipelines, 10, 3), project=project)
    with counted(db) as seen:
        data = read_site_data(db, 50)
        result = build_site(data, folder, {}, Catalog("duckdb", None))
    return len(seen), result.pages


def test_catalog_build__100_and_1000_tasks__same_number_of_statements(engine_db: EngineDB, tmp_path: Path) -> None:
    small, small_pages = _statements_for(engine_db, tmp_path / "small", 10, "small")
    large, large_pages = _statements_for(engine_db, tmp_path / "large", 90, "large")  # 100 pipelines in all
    assert large_pages > 9 * small_pages  # the second build really shows ten times the tasks
    assert small == large, f"the catalog issued {small} statements for 100 tasks and {large} for 1,000"
