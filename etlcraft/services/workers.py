"""`etl-craft worker` (serve a QUEUE pool) and `etl-craft workers list` (GET /api/v1/workers): who serves which
pool, the slots each uses, the queue of every pool and slot kind, and each worker's last heartbeat."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from etlcraft.config.loader import ProjectConfig
from etlcraft.core.actor import Actor
from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import ConfigurationError, MigrationError, UsageError
from etlcraft.core.process import host, owner_id
from etlcraft.engine.db import EngineDB, format_timestamp
from etlcraft.engine.migrations import engine_migrations
from etlcraft.engine.queries import fetch_all
from etlcraft.engine.settings import engine_id
from etlcraft.services.values import as_time, plain
from etlcraft.supervisor.child import ChildRequest
from etlcraft.worker.agent import KINDS, Worker, WorkerSettings

#: Workers that stopped are listed for this long after they stopped.
GONE_SHOWN_HOURS = 24
BAR_WIDTH = 20


@dataclass(frozen=True)
class WorkerOptions:
    pool: str
    ingestion_slots: int
    warehouse_slots: int
    drain_seconds: float = 300.0
    name: str | None = None
    heartbeat_seconds: int = 10
    lease_seconds: int | None = None  # default: 6 heartbeats

    @property
    def slots(self) -> int:
        return self.ingestion_slots + self.warehouse_slots


def pool_size(slots: int) -> int:
    """A worker's Engine DB connections (S5.H): 2, plus one per 8 task slots."""
    return 2 + slots // 8


def check_engine(db: EngineDB) -> None:
    """A worker serves a PostgreSQL Engine DB whose applied ENGINE migrations are exactly this package's."""
    if not db.is_postgres:
        raise ConfigurationError(
            f"etl-craft worker needs a PostgreSQL Engine DB, and {db.display_url} is SQLite; QUEUE pools and workers "
            "share one Engine DB across hosts, which SQLite cannot serve: set the project's Engine section (or "
            "--engine-url) to PostgreSQL, or run the pipelines with etl-craft run or etl-craft server")
    with db.read() as conn:
        applied = [str(r["version"]) for r in fetch_all(db, conn, "worker_engine_versions")]
    packaged = [m.version for m in engine_migrations(db.dialect, db.schema)]
    if applied != packaged:
        extra = sorted(set(applied) - set(packaged))
        missing = sorted(set(packaged) - set(applied))
        found = (f"migrations {', '.join(extra)} that this etl-craft does not have" if extra
                 else f"migrations up to {applied[-1] if applied else 'none'} (missing {', '.join(missing)})")
        remedy = ("upgrade etl-craft on this host to the Engine DB's version" if extra
                  else "run etl-craft migrate with this version, or start the worker with the version that applied "
                       "the Engine DB's migrations")
        raise MigrationError(
            f"the Engine DB {db.display_url} has ENGINE {found}; this etl-craft worker expects exactly "
            f"{packaged[0]}..{packaged[-1]}: a worker runs tasks only against the schema it was built for; {remedy}")


def worker_settings(db: EngineDB, config: ProjectConfig, options: WorkerOptions) -> WorkerSettings:
    if options.slots < 1:
        raise UsageError("etl-craft worker has --ingestion-slots 0 and --warehouse-slots 0: it could run nothing; "
                         "give at least one slot of a kind its pool's tasks need")
    name = options.name or f"{host()}-worker"
    me = owner_id()
    lease = options.lease_seconds or 6 * options.heartbeat_seconds
    if lease <= options.heartbeat_seconds:
        raise UsageError(f"--lease-seconds {lease} is not longer than --heartbeat-seconds "
                         f"{options.heartbeat_seconds}: every lease would expire before the heartbeat renews it; "
                         "give a lease of several heartbeats (the default is 6)")
    actor = Actor(f"worker {name}", ActorKind.WORKER)
    child = ChildRequest(
        attempt_id=0, owner_id=me, project_dir=str(config.project_dir),
        engine_url=db.url.render_as_string(hide_password=False), engine_schema=db.schema,
        engine_password=config.secret_value(config.engine), log_path="", actor_name=actor.name,
        actor_kind=str(actor.kind), lease_seconds=lease, engine_timeouts=db.timeouts, engine_secret=db.secret)
    return WorkerSettings(
        pool=options.pool, name=name, owner_id=me,
        slots={"ingestion": options.ingestion_slots, "warehouse": options.warehouse_slots},
        heartbeat_seconds=options.heartbeat_seconds, lease_seconds=lease, drain_seconds=options.drain_seconds,
        project_dir=config.project_dir, engine_identity=engine_id(db), child=child, actor=actor)


def run_worker(db: EngineDB, config: ProjectConfig, options: WorkerOptions, started_by: Actor,
               log: Callable[[str], None]) -> int:
    """Serve `options.pool` until drained; the exit code. Refused before anything is recorded on SQLite or when
    the Engine DB's migrations differ from this package's."""
    check_engine(db)
    settings = worker_settings(db, config, options)
    return Worker(db, settings, log).serve(started_by)


# -- workers list ------------------------------------------------------------------------------------------------


def list_workers(db: EngineDB) -> dict[str, Any]:
    """The etl-craft/workers/1 document: workers (those gone in the last day too), newest first, each with its slots
    in use per kind and seconds since its heartbeat; the queue depth of every pool and slot kind."""
    now = db.clock.now()
    def stamp(moment: datetime) -> Any:
        return moment if db.is_postgres else format_timestamp(moment)

    with db.read() as conn:
        rows = fetch_all(db, conn, "workers_list", gone_since=stamp(now - timedelta(hours=GONE_SHOWN_HOURS)))
        queue = fetch_all(db, conn, "workers_queue_depth")
    return {"schema": "etl-craft/workers/1", "workers": [_worker(r) for r in rows],
            "queue": [{"pool": q["pool"], "slot_kind": q["slot_kind"], "queued": int(q["queued"] or 0),
                       "due": int(q["due"] or 0)} for q in queue]}


def _worker(row: dict[str, Any]) -> dict[str, Any]:
    since = row["seconds_since_heartbeat"]
    return {
        "worker_id": int(row["worker_id"]), "name": row["worker_name"], "pool": row["pool"], "host": row["host"],
        "pid": plain(row["pid"]), "version": row["version"], "status": row["status"],
        "slots": {kind: {"total": int(row[f"{kind}_slots"] or 0), "in_use": int(row[f"{kind}_in_use"] or 0)}
                  for kind in KINDS},
        "heartbeat_seconds": plain(row["heartbeat_seconds"]), "started_at": as_time(row["started_at"]),
        "heartbeat_at": as_time(row["heartbeat_at"]),
        "seconds_since_heartbeat": None if since is None else round(float(since), 1),
        "draining_at": as_time(row["draining_at"]), "stopped_at": as_time(row["stopped_at"]),
        "stop_reason": row["stop_reason"], "started_by": row["started_by"]}


def bar(in_use: int, total: int, width: int = BAR_WIDTH) -> str:
    """A slot bar: one cell per slot (scaled to `width` cells past it), filled for those in use: [##--]."""
    if total <= 0:
        return "[]"
    cells = min(total, width)
    filled = round(cells * min(in_use, total) / total)
    return "[" + "#" * filled + "-" * (cells - filled) + "]"


def render(doc: dict[str, Any]) -> str:
    """The document as text: per worker a line and a slot bar per kind, then the queue per pool and kind."""
    lines = []
    if not doc["workers"]:
        lines.append("no worker registered (start one with etl-craft worker --pool P)")
    for w in doc["workers"]:
        since = w["seconds_since_heartbeat"]
        beat = f"heartbeat {since:g} s ago" if since is not None else "no heartbeat"
        lines.append(f"worker {w['worker_id']} {w['name']}  pool {w['pool']}  {w['status']}  {w['host']} pid "
                     f"{w['pid']}  etl-craft {w['version']}  {beat}")
        for kind in KINDS:
            slot = w["slots"][kind]
            if slot["total"]:
                lines.append(f"  {kind:<9} {bar(slot['in_use'], slot['total'])} {slot['in_use']}/{slot['total']}")
        if w["stop_reason"]:
            lines.append(f"  {w['status'].lower()}: {w['stop_reason']}")
    lines.append("queue:" if doc["queue"] else "queue: empty")
    for q in doc["queue"]:
        lines.append(f"  {q['pool']} {q['slot_kind']}: {q['queued']} queued, {q['due']} due")
    return "\n".join(lines)
