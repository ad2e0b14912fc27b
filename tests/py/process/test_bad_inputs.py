"""The bad-input corpus (tests/py/support/bad_inputs.py) through the real command line: every case exits with the
code docs/reference/exit-codes.md gives it, prints no traceback, and leaves the Engine DB, the warehouse and the
project's files exactly as they were."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.py.support.bad_inputs import Case, all_cases
from tests.py.support.cli import etl_craft

pytestmark = pytest.mark.process

CASES = all_cases()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example project, migrated, with one run of each pipeline (run 1 shop_ingest, run 2 customer_orders)."""
    root = tmp_path_factory.mktemp("corpus")
    assert etl_craft("init", "demo", cwd=root).code == 0
    project = root / "demo"
    for args in (("init-db",), ("migrate",), ("run", "--pipeline-code", "shop_ingest", "--run-key", "base-1"),
                 ("run", "--pipeline-code", "customer_orders", "--run-key", "base-2")):
        done = etl_craft(*args, cwd=project)
        assert done.code == 0, (args, done.out, done.err)
    return project


def _engine_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        schema = sorted(conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall(), key=repr)
        found = {name: sorted(conn.execute(f'SELECT * FROM "{name}"').fetchall(), key=repr) for name in tables}
    return {"(schema)": schema, **found}


def _warehouse_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with duckdb.connect(str(path), read_only=True) as conn:
        tables = conn.execute("SELECT table_schema, table_name FROM information_schema.tables "
                              "ORDER BY 1, 2").fetchall()
        return {f"{s}.{t}": sorted(conn.execute(f'SELECT * FROM "{s}"."{t}"').fetchall(), key=repr)
                for s, t in tables}


def _files(project: Path) -> list[str]:
    return sorted(str(p.relative_to(project)) for p in project.rglob("*") if "__pycache__" not in p.parts)


def snapshot(project: Path) -> dict[str, Any]:
    return {"engine": _engine_rows(project / ".etl-craft" / "engine.db"),
            "warehouse": _warehouse_rows(project / "warehouse.duckdb"), "files": _files(project)}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input__documented_exit_code__no_traceback__nothing_changed(case: Case, base: Path,
                                                                        tmp_path: Path) -> None:
    project = tmp_path / "demo"
    shutil.copytree(base, project)
    if case.edit is not None:
        case.edit(project)
    before = snapshot(project)
    done = etl_craft(*case.args, cwd=project)
    said = done.out + done.err
    assert "Traceback" not in said, said
    assert done.code == case.code, f"exit {done.code}, expected {case.code}:\n{said}"
    assert said.strip(), "a refusal says why"
    assert snapshot(project) == before


def test_the_corpus_has_at_least_150_cases_across_every_kind_of_input() -> None:
    kinds = {c.id.split("-")[0] for c in CASES}
    assert len(CASES) >= 150 and kinds == {"config", "migration", "sql", "script", "cli"}, (len(CASES), kinds)
