"""`etl-craft server` and what an operator reads of it: `server status` and `schedule list`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from etlcraft import __version__
from etlcraft.alerts.outbox import alert_sender
from etlcraft.config.loader import ProjectConfig
from etlcraft.core.process import owner_id
from etlcraft.engine.db import EngineDB
from etlcraft.engine.locks import try_hold
from etlcraft.engine.queries import fetch_all, fetch_one
from etlcraft.engine.settings import engine_id
from etlcraft.overseer.driver import RunSettings, as_utc
from etlcraft.overseer.schedules import read_schedules, run_date_of, tick_key
from etlcraft.overseer.server import LEADER_LOCK, SERVER_ACTOR, Server, ServerLog, ServerSettings
from etlcraft.services.runs import create_run_settings, reconcile, run_settings, task_policies

#: Task processes a server runs at once over every pipeline, unless --slots says otherwise.
DEFAULT_SLOTS = 8


def serve(db: EngineDB, config: ProjectConfig, slots: int, log_as_json: bool, write: Callable[[str], None],
          alongside: Callable[[], AbstractContextManager[object]] | None = None) -> int:
    """Lead the Engine DB and run every pipeline on its schedule until stopped; the exit code. `alongside` is
    what the server also serves while it runs (the HTTP API, which the caller brings: services do not import
    etlcraft.api); it starts before the server leads and stops when the server has stopped."""
    server = build_server(db, config, slots, ServerLog(write, log_as_json))
    with alongside() if alongside is not None else contextlib.nullcontext():
        return server.serve()


def build_server(db: EngineDB, config: ProjectConfig, slots: int, log: ServerLog) -> Server:
    """The server of this project's Engine DB, not leading yet (Server.serve, or Server.leading and turn)."""
    orchestration = config.orchestration
    me = owner_id()
    identity = engine_id(db)  # task logs go under the Engine DB's identity; refused before anything is written
    template = run_settings(db, config, "", 0, None, me, identity)

    def settings_for(pipeline_code: str, run_id: int, pipeline_slots: int | None) -> RunSettings:
        return run_settings(db, config, pipeline_code, run_id, pipeline_slots, me, identity)

    settings = ServerSettings(
        owner_id=me, slots=slots, lease_seconds=orchestration.lease_seconds,
        heartbeat_seconds=orchestration.heartbeat_seconds,
        shutdown_grace_seconds=orchestration.shutdown_grace_seconds,
        gate_wait_seconds=orchestration.gate_wait_minutes * 60, timezone=orchestration.timezone,
        run_settings=create_run_settings(config), child=template.child)
    alerts = alert_sender(db, config, me, SERVER_ACTOR, sweep=False)
    return Server(db, settings, settings_for, lambda run_id: task_policies(db, run_id),
                  lambda: reconcile(db, orchestration.lease_seconds), log, alerts)


def health_json(db: EngineDB) -> dict[str, Any]:
    """GET /api/v1/health: etl-craft/health/1, the version and the Engine DB's schema version (read, so an Engine
    DB that cannot be reached fails the check with ENGINE_DB)."""
    with db.read() as conn:
        row = fetch_one(db, conn, "engine_schema_version")
    version = row["version"] if row else None
    return {"schema": "etl-craft/health/1", "status": "ok", "version": __version__, "engine_dialect": db.dialect,
            "schema_version": version}


def active_server(db: EngineDB) -> dict[str, Any] | None:
    """The server leading this Engine DB (its AUD_OVERSEERS row), or None when none holds the leader lock."""
    lock = try_hold(db, LEADER_LOCK)
    if lock is not None:
        lock.release()
        return None
    with db.read() as conn:
        row = fetch_one(db, conn, "overseer_open")
    return row or {"overseer_id": None, "host": "an unknown host", "pid": None}


@dataclass(frozen=True)
class ScheduleView:
    pipeline_code: str
    schedule: str
    timezone: str
    paused: bool
    next_ticks: list[datetime]  # UTC
    run_dates: list[str]
    last_run: dict[str, Any] | None


def schedule_list(db: EngineDB, config: ProjectConfig, count: int = 3) -> list[ScheduleView]:
    """Each scheduled pipeline's cron, zone, next `count` ticks and its newest run."""
    return schedules(db, config.orchestration.timezone, count)


def schedules(db: EngineDB, configured_zone: str | None, count: int = 3,
              pipeline_code: str | None = None) -> list[ScheduleView]:
    """Each scheduled pipeline's (or only `pipeline_code`'s) cron, zone, next `count` ticks and its newest run,
    given `Orchestration: Timezone` (None when not set)."""
    now = db.clock.now()
    problems: list[str] = []
    views = []
    for schedule in read_schedules(db, configured_zone, problems.append):
        if pipeline_code is not None and schedule.pipeline_code != pipeline_code:
            continue
        ticks = schedule.next_ticks(now, count)
        with db.read() as conn:
            last = fetch_one(db, conn, "pipeline_last_run", pipeline_id=schedule.pipeline_id)
        views.append(ScheduleView(schedule.pipeline_code, schedule.cron.expression, schedule.zone.key,
                                  schedule.paused, ticks, [str(run_date_of(t, schedule.zone)) for t in ticks], last))
    return views


def schedule_json(views: list[ScheduleView]) -> dict[str, Any]:
    return {"schema": "etl-craft/schedules/1", "schedules": [schedule_item(v) for v in views]}


def schedule_item(v: ScheduleView) -> dict[str, Any]:
    """One pipeline's schedule as JSON: in `schedule list` and in the pipeline document."""
    return {"pipeline_code": v.pipeline_code, "schedule": v.schedule, "timezone": v.timezone, "paused": v.paused,
            "next_ticks": [{"utc": t.isoformat(), "local": t.astimezone(_zone(v)).isoformat(), "run_key": tick_key(t),
                            "run_date": d} for t, d in zip(v.next_ticks, v.run_dates, strict=True)],
            "last_run": run_json(v.last_run)}


def schedule_text(views: list[ScheduleView]) -> str:
    if not views:
        return "no active pipeline has a schedule (CFG_PIPELINES.RUN_SCHEDULE)"
    lines = []
    for v in views:
        paused = "  PAUSED: its ticks create no run" if v.paused else ""
        lines.append(f"{v.pipeline_code}  {v.schedule}  ({v.timezone}){paused}")
        for tick in v.next_ticks:
            local = tick.astimezone(_zone(v))
            lines.append(f"  next {local:%Y-%m-%d %H:%M %Z} = {tick:%Y-%m-%d %H:%M} UTC")
        last = v.last_run
        lines.append("  last run: " + (f"{last['pipeline_run_id']} ({last['run_key']}) {last['status']}"
                                        if last else "none"))
    return "\n".join(lines)


def _zone(view: ScheduleView) -> ZoneInfo:
    return ZoneInfo(view.timezone)


def run_json(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {"pipeline_run_id": row["pipeline_run_id"], "run_key": row["run_key"], "status": row["status"],
            "trigger_kind": row["trigger_kind"], "run_date": str(row["run_date"])}


@dataclass(frozen=True)
class ServerStatus:
    leader: dict[str, Any] | None
    active_runs: int
    queued_runs: int
    queued_attempts: int
    next_ticks: list[tuple[str, datetime]]
    recent: list[dict[str, Any]]


def server_status(db: EngineDB, config: ProjectConfig) -> ServerStatus:
    leader = active_server(db)
    with db.read() as conn:
        depth = fetch_one(db, conn, "server_queue_depth") or {}
        recent = fetch_all(db, conn, "overseers")
    ticks = sorted(((v.pipeline_code, v.next_ticks[0]) for v in schedule_list(db, config, 1) if not v.paused),
                   key=lambda pair: pair[1])[:5]
    return ServerStatus(leader, int(depth.get("active_runs") or 0), int(depth.get("queued_runs") or 0),
                        int(depth.get("queued_attempts") or 0), ticks, recent[:5])


def status_json(status: ServerStatus, now: datetime) -> dict[str, Any]:
    leader = status.leader
    return {"schema": "etl-craft/server-status/1",
            "leader": None if leader is None else {
                "overseer_id": leader.get("overseer_id"), "host": leader.get("host"), "pid": leader.get("pid"),
                "version": leader.get("version"), "started_at": _iso(leader.get("started_at")),
                "heartbeat_at": _iso(leader.get("heartbeat_at")), "uptime_seconds": _uptime(leader, now)},
            "active_runs": status.active_runs, "queued_runs": status.queued_runs,
            "queued_attempts": status.queued_attempts,
            "next_ticks": [{"pipeline_code": code, "utc": tick.isoformat()} for code, tick in status.next_ticks],
            "recent_servers": [{"overseer_id": r["overseer_id"], "host": r["host"], "pid": r["pid"],
                                "started_at": _iso(r["started_at"]), "stopped_at": _iso(r["stopped_at"]),
                                "stop_reason": r["stop_reason"]} for r in status.recent]}


def status_text(status: ServerStatus, now: datetime) -> str:
    leader = status.leader
    if leader is None:
        lines = ["no server is running for this Engine DB; start one with etl-craft server"]
    else:
        uptime = _uptime(leader, now)
        lines = [f"leader: overseer {leader.get('overseer_id')} on {leader.get('host')} pid {leader.get('pid')} "
                 f"(etl-craft {leader.get('version')}), up {_duration(uptime)}, last heartbeat "
                 f"{_iso(leader.get('heartbeat_at'))}"]
    lines.append(f"runs: {status.active_runs} in progress, {status.queued_runs} queued; attempts waiting for a slot: "
                 f"{status.queued_attempts}")
    for code, tick in status.next_ticks:
        lines.append(f"next tick: {code} at {tick:%Y-%m-%d %H:%M} UTC")
    return "\n".join(lines)


def _iso(value: Any) -> str | None:
    return None if value is None else as_utc(value).isoformat()


def _uptime(leader: dict[str, Any], now: datetime) -> float | None:
    started = leader.get("started_at")
    return None if started is None else round((now - as_utc(started)).total_seconds(), 1)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"

