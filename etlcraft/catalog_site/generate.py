"""generate-docs as one operation: read the Engine DB, the project's SQL files and the warehouse schema, build.

The warehouse schema is read once (every table with its columns, etlcraft.warehouse.catalog) through a connection
that cannot write; a warehouse that cannot be reached, or `offline`, leaves the schema empty, and then every
column whose table is not made by a task of the project shows as unresolved, with the warning saying why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from etlcraft.catalog_site.build import BuildResult, build_site
from etlcraft.catalog_site.model import read_site_data
from etlcraft.config.loader import ProjectConfig
from etlcraft.core.errors import EtlCraftError
from etlcraft.engine.db import EngineDB
from etlcraft.services.metadata import Metadata
from etlcraft.warehouse.catalog import Catalog, read_catalog
from etlcraft.warehouse.connection import Session, Warehouse, driver_errors, open_warehouse

SQL_DIR = "sql_files"


@dataclass(frozen=True)
class Generated:
    build: BuildResult
    warning: str | None  # why the warehouse schema was not read, when it was not


def generate_docs(db: EngineDB, config: ProjectConfig | None, folder: Path, runs: int, *, offline: bool = False,
                  title: str = "etl-craft catalog") -> Generated:
    """Build the catalog into `folder`; `runs` is the history shown per pipeline."""
    if runs < 1:
        raise EtlCraftError(f"--runs {runs} is not a number of runs; give 1 or more (the default is 50)")
    data = read_site_data(db, runs, config)
    catalog, warning = _warehouse_catalog(config, offline)
    sql = _sql_texts(data.metadata, config)
    return Generated(build_site(data, folder, sql, catalog, title), warning)


def _sql_texts(metadata: Metadata, config: ProjectConfig | None) -> dict[int, str | None]:
    """Each SQL task's SELECT as its file holds it; None when there is no project folder or the file is unreadable."""
    texts: dict[int, str | None] = {}
    for t in metadata.tasks:
        if t.handler != "SQL" or not t.sql_file or config is None:
            continue
        path = config.project_dir / SQL_DIR / t.sql_file
        try:
            texts[t.task_id] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            texts[t.task_id] = None
    return texts


def _warehouse_catalog(config: ProjectConfig | None, offline: bool) -> tuple[Catalog, str | None]:
    dialect = config.warehouse.dialect if config is not None else "duckdb"
    empty = Catalog(dialect if dialect in ("duckdb", "postgresql") else "duckdb", None)
    if config is None:
        return empty, ("no project folder (craft-connector.yml) was found, so no SQL file and no warehouse schema "
                       "was read; run generate-docs in the project's folder or pass --project")
    if offline:
        return empty, None
    try:
        warehouse = open_warehouse(config, checks=True)
    except EtlCraftError as exc:
        return empty, f"the warehouse schema was not read: {exc}; lineage shows unread tables as unresolved"
    failures: tuple[type[BaseException], ...] = (EtlCraftError, *driver_errors())
    try:
        return _read(warehouse), None
    except failures as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return empty, (f"the warehouse schema was not read ({reason}); lineage shows unread tables as unresolved; "
                       "check the Warehouse section of craft-connector.yml, or pass --offline")
    finally:
        warehouse.dispose()


def _read(warehouse: Warehouse) -> Catalog:
    """The schema through a connection that cannot write: DuckDB's file read-only; PostgreSQL rolled back."""
    engine, dialect = warehouse.engine, warehouse.dialect
    if dialect.name == "duckdb":
        path = engine.url.database or ":memory:"
        if path != ":memory:" and not Path(path).exists():
            return Catalog("duckdb", Path(path).stem)
        engine = sa.create_engine(engine.url, poolclass=sa.pool.NullPool, connect_args={"read_only": True})
    with engine.connect() as conn:
        transaction = conn.begin()
        try:
            return read_catalog(Session(conn, dialect))
        finally:
            transaction.rollback()
