"""Who did what: the recorded requests (AUD_ACTIONS) and metadata changes (AUD_METADATA_CHANGES), newest first.

Reads only. A pipeline filter keeps the requests that named the pipeline and the changes to its own CFG_ rows: the
pipeline row, its pipeline dependencies (either side), its tasks, and their parameters and dependencies.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any

from etlcraft.engine.db import EngineDB, format_timestamp
from etlcraft.engine.queries import fetch_all
from etlcraft.services.runs import find_pipeline
from etlcraft.services.values import required_time

SCHEMA = "etl-craft/audit/1"


@dataclass(frozen=True)
class AuditRequest:
    pipeline_code: str | None = None
    since: date | None = None


@dataclass(frozen=True)
class AuditEntry:
    """One request (kind "action": what is the command) or one CFG_ row change (kind "metadata": what is the
    operation, the table and the row's key)."""

    at: datetime
    kind: str
    entry_id: int
    actor: str
    actor_kind: str
    what: str
    pipeline_code: str | None
    run_id: int | None
    detail: str


@dataclass(frozen=True)
class AuditLog:
    pipeline_code: str | None
    since: date | None
    entries: tuple[AuditEntry, ...]


def audit(db: EngineDB, request: AuditRequest) -> AuditLog:
    """The requests and metadata changes since `request.since` (00:00 UTC; all when None), newest first."""
    pipeline = find_pipeline(db, request.pipeline_code) if request.pipeline_code else None
    start = datetime.combine(request.since or date(1970, 1, 1), time(0), tzinfo=UTC)
    since: Any = start if db.is_postgres else format_timestamp(start)
    with db.read() as conn:
        actions = fetch_all(db, conn, "audit_actions", since=since)
        changes = fetch_all(db, conn, "audit_metadata_changes", since=since)
        tasks = ({str(r["task_id"]) for r in fetch_all(db, conn, "audit_pipeline_task_ids",
                                                          pipeline_id=pipeline.pipeline_id)} if pipeline else set())
    entries = [_action(a) for a in actions if pipeline is None or a["pipeline_id"] == pipeline.pipeline_id]
    entries += [_change(c, pipeline.code if pipeline else None) for c in changes
                if pipeline is None or _concerns(c, str(pipeline.pipeline_id), tasks)]
    entries.sort(key=lambda e: (e.at, e.kind == "action", e.entry_id), reverse=True)
    return AuditLog(request.pipeline_code, request.since, tuple(entries))


def _action(row: dict[str, Any]) -> AuditEntry:
    arguments = _json(row["arguments"]) or {}
    detail = " ".join(f"{k}={v}" for k, v in sorted(arguments.items()) if v not in (None, "", [], {}))
    if row["task_code"]:
        detail = f"task {row['task_code']}" + (f"; {detail}" if detail else "")
    return AuditEntry(required_time(row["started_at"]), "action", int(row["action_id"]), row["actor"],
                      row["actor_kind"], row["command"], row["pipeline_code"], None if row["pipeline_run_id"] is None
                      else int(row["pipeline_run_id"]), detail)


def _change(row: dict[str, Any], pipeline_code: str | None) -> AuditEntry:
    what = f"{row['operation']} {row['table_name']} {row['row_key']}"
    detail = f"migration {row['migration']}" if row["migration"] else "outside etl-craft migrate"
    return AuditEntry(required_time(row["changed_at"]), "metadata", int(row["change_id"]), row["actor"],
                      row["actor_kind"], what, pipeline_code, None, detail)


def _concerns(row: dict[str, Any], pipeline_id: str, task_ids: set[str]) -> bool:
    if row["table_name"] == "CFG_PIPELINES":
        return bool(row["row_key"] == f"PIPELINE_ID={pipeline_id}")
    for image in (_json(row["before_json"]), _json(row["after_json"])):
        if not image:
            continue
        if pipeline_id in (str(image.get("PIPELINE_ID")), str(image.get("DEPENDS_ON_PIPELINE_ID"))):
            return True
        if task_ids & {str(image.get("TASK_ID")), str(image.get("DEPENDS_ON_TASK_ID"))}:
            return True
    return False


def _json(value: Any) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    parsed = json.loads(value)
    return parsed if isinstance(parsed, dict) else None


def to_json(log: AuditLog) -> dict[str, Any]:
    """The audit's JSON document: {"schema": "etl-craft/audit/1", ...}; times ISO 8601 in UTC."""
    body = dataclasses.asdict(log)
    body["since"] = log.since.isoformat() if log.since else None
    body["entries"] = [{**e, "at": e["at"].astimezone(UTC).isoformat()} for e in body["entries"]]
    return {"schema": SCHEMA, **body}


def render(doc: dict[str, Any]) -> str:
    """etl-craft/audit/1 as text, one line per entry: time, kind, actor (and kind), what, pipeline and run, detail."""
    entries = doc["entries"]
    scope = f"pipeline {doc['pipeline_code']}" if doc["pipeline_code"] else "all pipelines"
    since = f" since {doc['since']}" if doc["since"] else ""
    lines = [f"audit of {scope}{since}: {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"]
    for e in entries:
        where = (f" [{e['pipeline_code']}" + (f" run {e['run_id']}" if e["run_id"] else "") + "]") \
            if e["pipeline_code"] else ""
        lines.append(f"{required_time(e['at']):%Y-%m-%d %H:%M:%S} UTC  {e['kind']:<8}  {e['actor']} "
                     f"({e['actor_kind']})  {e['what']}{where}" + (f"  {e['detail']}" if e["detail"] else ""))
    return "\n".join(lines)
