"""doctor's checks for more than one machine: the Engine DB connection budget (PostgreSQL), and, for a worker
host (doctor --worker), the imports of the ingestion scripts that this interpreter cannot find."""

from __future__ import annotations

import math

import sqlalchemy as sa

from etlcraft.config.loader import ProjectConfig
from etlcraft.core.errors import EtlCraftError
from etlcraft.engine.bundles import Manifest, cache_root, materialize, missing_imports, open_store
from etlcraft.engine.catalog import table_exists
from etlcraft.engine.db import EngineDB
from etlcraft.engine.queries import fetch_one
from etlcraft.services.doctor import FAIL, OK, WARN, Check
from etlcraft.services.projects import resolve_project

#: The server's Engine DB pool when no project says (Orchestration.Db_pool_size's default).
DEFAULT_POOL = 10
#: The share of max_connections above which the connection budget warns.
BUDGET_WARN = 0.8
#: A worker's pool: this many connections, plus one per SLOTS_PER_CONNECTION slots (rounded up).
WORKER_BASE, SLOTS_PER_CONNECTION = 2, 8


def budget_check(db: EngineDB, server_pool: int) -> Check:
    """The connections etl-craft may hold at once: the server's pool, each ACTIVE worker's (2 + slots/8) and one per
    task attempt CLAIMED or RUNNING (its task process connects when its task reads or writes the Engine DB, or to
    record an outcome its supervisor could not; a spare task process holds none); against max_connections, warning
    above 80%."""
    with db.read() as conn:
        limit = int(conn.execute(sa.text("SHOW max_connections")).scalar() or 0)
        workers = _worker_pools(db, conn)
        tasks = int(conn.execute(sa.text(f"SELECT count(*) FROM {db.qualify('AUD_TASK_ATTEMPTS')}"
                                         " WHERE STATUS IN ('CLAIMED', 'RUNNING')")).scalar() or 0)
    return budget_verdict(server_pool, workers, tasks, limit)


def budget_verdict(server_pool: int, workers: list[int], tasks: int, limit: int) -> Check:
    """The budget check from its figures: each worker's pool, the attempts holding a connection, max_connections."""
    total = server_pool + sum(workers) + tasks
    detail = (f"{total} of max_connections {limit} ({100 * total / limit:.0f}%): server pool {server_pool} + "
              f"{len(workers)} active worker(s) {sum(workers)} (2 + slots/8 each) + {tasks} task attempt(s) "
              "claimed or running")
    if total > BUDGET_WARN * limit:
        return Check("connection budget", WARN, detail + f", above {BUDGET_WARN:.0%}",
                     "raise max_connections only with the memory for it; fewer worker slots or a smaller "
                     "Orchestration.Db_pool_size lower the budget, and PgBouncer in transaction mode can front "
                     "workers and task processes (never the server, whose leadership lock needs a session)")
    return Check("connection budget", OK, detail)


def _worker_pools(db: EngineDB, conn: sa.Connection) -> list[int]:
    if not table_exists(db, conn, "AUD_WORKERS"):
        return []
    rows = conn.execute(sa.text(f"SELECT INGESTION_SLOTS, WAREHOUSE_SLOTS FROM {db.qualify('AUD_WORKERS')}"
                                " WHERE STATUS = 'ACTIVE'")).all()
    return [worker_pool(a or 0, b or 0) for a, b in rows]


def worker_pool(ingestion_slots: int, warehouse_slots: int) -> int:
    """A worker's Engine DB connections: 2, plus one per 8 slots (rounded up)."""
    return WORKER_BASE + math.ceil((ingestion_slots + warehouse_slots) / SLOTS_PER_CONNECTION)


def worker_imports_check(db: EngineDB, config: ProjectConfig | None) -> Check:
    """The imports of the project's latest bundle's ingestion scripts (else the working folder's) that this
    interpreter cannot find: what the worker image must install."""
    if config is None:
        return Check("worker imports", FAIL, "no project: doctor --worker reads the ingestion scripts of a project",
                     "run it in a project folder, or pass --project DIR")
    where = f"the working folder {config.project_dir}"
    folder = config.project_dir
    try:
        with db.read() as conn:
            row = fetch_one(db, conn, "latest_bundle", project_code=resolve_project(db, conn))
        if row is not None:
            bundle_id = int(row["bundle_id"])
            store = open_store(row["store_url"], config)
            done = materialize(bundle_id, Manifest.parse(row["manifest"], bundle_id), store, cache_root(config))
            folder, where = done.path, f"bundle {bundle_id}"
    except EtlCraftError as exc:
        return Check("worker imports", FAIL, str(exc), "publish the project again with etl-craft bundle publish")
    missing = missing_imports(folder / "ingestion_scripts")
    if not missing:
        return Check("worker imports", OK, f"every import of the ingestion scripts of {where} is found")
    listed = "; ".join(f"{m.script} line {m.line}: {m.module}" for m in missing)
    modules = " ".join(sorted({m.module for m in missing}))
    return Check("worker imports", FAIL, f"{len(missing)} import(s) of the ingestion scripts of {where} cannot be "
                 f"found by this interpreter: {listed}", f"install what provides {modules} in this worker's "
                 "environment (the worker image), or remove the import")
