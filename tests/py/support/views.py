"""A small history written through the write API on either dialect, and the AUD_V_ views read back in one form.

The history (the clock pinned at each step; T0 = 2026-03-01 12:00 UTC):
- pipeline orders (task load, SLA_MINUTES 1) and pipeline reports (task build), which depends on orders through a
  pipeline dependency and on orders.load through a task dependency, both SUCCESS;
- manual:old (orders), 40 days before T0: load fails at once (no retries yet); the run ends FAILED;
- then load gets RETRIES 1, RETRY_DELAY_SECONDS 0;
- manual:ok (orders) at T0: load runs from T0+2s to T0+12.3456s and succeeds (5 rows); finalized at T0+15s,
  SUCCESS;
- manual:retry (orders) at T0+60s: load fails (T0+62s to T0+70s), its retry is queued at once, fails again (T0+72s
  to T0+80s); finalized at T0+200s, FAILED, its SLA BREACHED (140 s > 1 minute);
- manual:cancel (orders) at T0+300s: load queued, the run cancelled at T0+310s (CANCEL intervention);
- manual:rep (reports) created QUEUED at T0+400s and admitted (a SATISFIED pipeline decision selecting
  manual:ok); build queued at T0+410s (a SATISFIED task decision selecting manual:ok's load);
- orders paused at T0+500s and resumed at T0+560s; reports paused at T0+600s and left paused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.views import views_spec
from tests.py.support.scenario import Project

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
OWNER = "host-a:100:1700000000:0a0a0a0a"
_SQLITE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}\+00:00$")
#: Each view's rows in a fixed order.
ORDER = {
    "AUD_V_RUNS": "PIPELINE_RUN_ID",
    "AUD_V_TASK_RUNS": "TASK_RUN_ID",
    "AUD_V_ATTEMPTS": "ATTEMPT_ID",
    "AUD_V_GATE_DECISIONS": "DECISION_ID",
    "AUD_V_ALERTS": "ALERT_ID, CHANNEL",
    "AUD_V_OPERATOR_ACTIONS": "ACTED_AT, SOURCE_TABLE, SOURCE_ID",
    "AUD_V_PIPELINE_HEALTH": "PIPELINE_ID",
    "AUD_V_WORKERS": "WORKER_ID",
    "AUD_V_QUEUE_DEPTH": "POOL, SLOT_KIND",
}


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@dataclass
class History:
    project: Project
    runs: dict[str, int]

    @property
    def db(self) -> EngineDB:
        return self.project.db


def _attempt(db: EngineDB, start: float, end: float, status: str, **outcome: Any) -> int:
    """Claim the one queued attempt at start - 1 s, start its process at start, end it at end."""
    db.clock.pin(at(start - 1))
    [claimed] = call(db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=OWNER)
    db.clock.pin(at(start))
    call(db, "start_attempt", attempt_id=claimed.attempt_id, owner_id=OWNER, host="host-a", pid=4242,
         process_start="1700000000.25", log_path=f"logs/{claimed.attempt_id}.log")
    db.clock.pin(at(end))
    call(db, "finish_attempt", attempt_id=claimed.attempt_id, owner_id=OWNER, status=status, **outcome)
    return int(claimed.attempt_id)


def _run(history: History, pipeline: str, key: str, seconds: float, **arguments: Any) -> int:
    history.db.clock.pin(at(seconds))
    history.runs[key] = history.project.run(pipeline, key=key, **arguments)
    return history.runs[key]


def _queue(history: History, key: str, task: str, seconds: float) -> None:
    history.db.clock.pin(at(seconds))
    call(history.db, "queue_attempt", run_id=history.runs[key], task_id=history.project.tasks[task])


def _finalize(history: History, key: str, seconds: float) -> None:
    history.db.clock.pin(at(seconds))
    call(history.db, "finalize_run", run_id=history.runs[key])


def write_history(db: EngineDB) -> History:
    """The history of this module's docstring; the clock is left at T0 + 1 hour."""
    project = Project(db)
    db.clock.pin(at(0))
    project.pipeline("orders", SLA_MINUTES=1)
    project.pipeline("reports")
    project.task("orders", "load")
    project.task("reports", "build")
    project.pipeline_depends("reports", "orders")
    project.depends("build", "load")
    with db.write() as conn:
        for kind in ("RUN_FAILED", "RUN_RECOVERED"):
            conn.execute(sa.text(f"INSERT INTO {db.qualify('CFG_ALERT_RULES')} (PROJECT_ID, ALERT_KIND, CHANNELS)"
                                 " VALUES (:p, :k, 'ops, chat')"), {"p": project.project_id, "k": kind})
    history = History(project, {})
    old = -40 * 86400
    _run(history, "orders", "manual:old", old)
    _queue(history, "manual:old", "load", old)
    _attempt(db, old + 2, old + 5, "FAILED", exit_code=1, error_message="old failure")
    _finalize(history, "manual:old", old + 6)
    with db.write() as conn:
        for name, value in (("RETRIES", "1"), ("RETRY_DELAY_SECONDS", "0")):
            conn.execute(sa.text(f"INSERT INTO {db.qualify('CFG_TASK_PARAMETERS')} (TASK_ID, PARAMETER_NAME,"
                                 " PARAMETER_VALUE) VALUES (:t, :n, :v)"),
                         {"t": project.tasks["load"], "n": name, "v": value})
    _run(history, "orders", "manual:ok", 0)
    _queue(history, "manual:ok", "load", 0)
    _attempt(db, 2, 12.3456, "SUCCESS", exit_code=0, source_count=7, insert_count=5, update_count=0, delete_count=0,
             duplicate_count=2, rows_written=5, target_count=5)
    _finalize(history, "manual:ok", 15)
    _run(history, "orders", "manual:retry", 60)
    _queue(history, "manual:retry", "load", 60)
    _attempt(db, 62, 70, "FAILED", exit_code=1, error_message="boom")
    _attempt(db, 72, 80, "FAILED", exit_code=1, error_message="boom again")
    _finalize(history, "manual:retry", 200)
    _run(history, "orders", "manual:cancel", 300)
    _queue(history, "manual:cancel", "load", 300)
    db.clock.pin(at(310))
    call(db, "cancel_run", run_id=history.runs["manual:cancel"], reason="not needed")
    _run(history, "reports", "manual:rep", 400, status="QUEUED")
    call(db, "admit_run", run_id=history.runs["manual:rep"])
    _queue(history, "manual:rep", "build", 410)
    for seconds, how, pipeline, reason in ((500, "pause", "orders", "maintenance"), (560, "resume", "orders", "done"),
                                           (600, "pause", "reports", "holiday")):
        db.clock.pin(at(seconds))
        call(db, f"{how}_pipeline", pipeline_id=project.pipelines[pipeline], reason=reason)
    db.clock.pin(at(3600))
    return history


def normal(value: Any) -> Any:
    """A value read from a view in one form for both dialects: times as aware UTC datetimes, dates as ISO text,
    decimals as floats."""
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    if isinstance(value, str) and _SQLITE_TIME.match(value):
        return datetime.fromisoformat(value).astimezone(UTC)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value


def read_view(db: EngineDB, name: str, where: str = "") -> list[dict[str, Any]]:
    """The rows of view `name` (in ORDER), keys upper case, values normal(), as of the engine's clock (PostgreSQL:
    the pinned time is set for the read, as etl-craft's write transactions set it)."""
    with db.read() as conn:
        if db.is_postgres and db.clock.pinned is not None:
            conn.execute(sa.text("SELECT set_config('etl_craft.now', :now, true)"),
                         {"now": db.clock.pinned.isoformat()})
        rows = conn.execute(sa.text(f"SELECT * FROM {db.qualify(name)} {where} ORDER BY {ORDER[name]}"))
        return [{key.upper(): normal(value) for key, value in row.items()} for row in rows.mappings()]


def read_all(db: EngineDB) -> dict[str, list[dict[str, Any]]]:
    return {view.name: read_view(db, view.name) for view in views_spec().views}
