"""The catalog at size (S6.C): generate-docs over 300 pipelines x 10 tasks x 50 runs must finish in under 60 s.

The Engine DB is filled by tests/py/catalog/history.py (set-based SQL, a few statements per round of runs; setup,
not measured): every pipeline a chain of 10 SQL tasks, each task's SELECT reading the previous task's target joined
to a warehouse table of its own pipeline (so lineage is traced through made tables against a 600-table warehouse
schema), 50 runs per pipeline with backfills, failures and a repair. Three builds are timed, each from the reads
to the last file written:

- full: into an empty folder (every page rendered, every task's lineage traced);
- unchanged: the same folder again (no page rendered: the manifest's hashes match);
- one new run: after one more run of one pipeline (its pages and the index rendered again).

Prints seconds, pages, statements sent to the Engine DB, and whether the full build met the 60 s budget.

    python bench/catalog.py [--pipelines 300] [--tasks 10] [--runs 50] [--engines sqlite,postgresql]

PostgreSQL: a database created and dropped through ETL_CRAFT_TEST_PG_URL (default
postgresql://root@127.0.0.1:5432/test).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from etlcraft.catalog_site.build import BuildResult, build_site
from etlcraft.catalog_site.model import read_site_data
from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.engine.db import EngineDB
from etlcraft.engine.migrations import migrate
from etlcraft.warehouse.catalog import Catalog
from tests.py.catalog.history import Shape, build, next_round

BUDGET_SECONDS = 60.0
ACTOR = Actor("bench@catalog", ActorKind.HUMAN)


def _select(pipeline: str, task: str) -> str:
    n = int(task[1:])
    source = f"raw_{pipeline}" if n == 0 else f"{pipeline}_t{n - 1:02d}"
    return (f"WITH src AS (SELECT s.id, s.amount, s.customer_id FROM main.{source} s WHERE s.amount > {n})\n"
            f"SELECT src.id, src.amount * 1.{n} AS amount, src.customer_id, c.name AS customer_name\n"
            f"  FROM src JOIN main.customers_{pipeline} c ON c.id = src.customer_id")


def _warehouse(shape: Shape) -> Catalog:
    tables: dict[str, tuple[str, ...]] = {}
    for i in range(shape.pipelines):
        tables[f"main.raw_p{i:04d}"] = ("id", "amount", "customer_id", "loaded_at")
        tables[f"main.customers_p{i:04d}"] = ("id", "name", "country")
    return Catalog("duckdb", None, tables)


@contextmanager
def counted(db: EngineDB) -> Iterator[list[int]]:
    seen = [0]

    def note(*_args: Any) -> None:
        seen[0] += 1

    sa.event.listen(db.engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        sa.event.remove(db.engine, "before_cursor_execute", note)


def timed_build(db: EngineDB, folder: Path, shape: Shape) -> tuple[float, float, int, BuildResult]:
    """Wall seconds, CPU seconds of this process, statements sent to the Engine DB, and the build's result."""
    started, cpu = time.perf_counter(), time.process_time()
    with counted(db) as seen:
        data = read_site_data(db, 50)
    sql = {t.task_id: _select(t.pipeline_code, t.code) for t in data.metadata.tasks}
    result = build_site(data, folder, sql, _warehouse(shape))
    return time.perf_counter() - started, time.process_time() - cpu, seen[0], result


def bench(db: EngineDB, shape: Shape, label: str) -> bool:
    started = time.perf_counter()
    with acting_as(ACTOR):
        migrate(db)
        build(db, shape)
    if db.is_postgres:  # as autovacuum would after a load this size; the plans should not need it
        with db.engine.connect() as conn:
            conn.execute(sa.text("ANALYZE"))
            conn.commit()
    print(f"{label}: Engine DB filled in {time.perf_counter() - started:.1f} s "
          f"({shape.pipelines} pipelines x {shape.tasks} tasks x {shape.runs} runs)")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "site"
        full = timed_build(db, folder, shape)
        unchanged = timed_build(db, folder, shape)
        with acting_as(ACTOR):
            next_round(db, shape.runs, pipeline_code="p0000")
        one_more = timed_build(db, folder, shape)
    for name, (seconds, cpu, statements, result) in (("full", full), ("unchanged", unchanged),
                                                     ("one new run", one_more)):
        print(f"  {name:12} {seconds:7.2f} s (CPU {cpu:6.2f} s)  {result.pages} pages, {result.rendered} rendered, "
              f"{result.written} written, {statements} statements, {result.unresolved_columns} unresolved columns")
    met = full[0] < BUDGET_SECONDS
    print(f"  full build {'within' if met else 'OVER'} the {BUDGET_SECONDS:.0f} s budget; load average "
          f"{os.getloadavg()[0]:.1f}")
    return met


@contextmanager
def engine(kind: str, scratch: Path) -> Iterator[EngineDB]:
    if kind == "sqlite":
        db = EngineDB(f"sqlite:///{scratch / 'engine.db'}")
        yield db
        db.dispose()
        return
    url = sa.engine.make_url(os.environ.get("ETL_CRAFT_TEST_PG_URL", "postgresql://root@127.0.0.1:5432/test"))
    name = f"etlcraft_bench_catalog_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(url.set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    db = EngineDB(url.set(database=name).render_as_string(hide_password=False))
    try:
        yield db
    finally:
        db.dispose()
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipelines", type=int, default=300)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--engines", default="sqlite,postgresql")
    args = parser.parse_args()
    shape = Shape(args.pipelines, args.tasks, args.runs)
    results = []
    for kind in args.engines.split(","):
        with tempfile.TemporaryDirectory() as scratch, engine(kind, Path(scratch)) as db:
            results.append(bench(db, shape, kind))
    raise SystemExit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
