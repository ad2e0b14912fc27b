"""`etl-craft alerts list`: the alerts the Engine DB raised and the delivery attempts on each channel."""

from __future__ import annotations

from typing import Any

from etlcraft.engine.db import EngineDB
from etlcraft.engine.queries import fetch_all
from etlcraft.services.projects import resolve_project
from etlcraft.services.values import as_time, plain

#: The delivery statuses --status takes (AUD_ALERT_DELIVERIES.DELIVERY_STATUS).
DELIVERY_STATUSES = ("PENDING", "DELIVERED", "FAILED")
DEFAULT_LIMIT = 200


def list_alerts(db: EngineDB, pipeline_code: str | None = None, status: str | None = None,
                limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
    """The etl-craft/alerts/1 document: alerts newest first (at most `limit` rows of alert and channel), each with
    its deliveries; only those of `pipeline_code` (of the chosen project, etlcraft.services.projects), and only
    those with a delivery in `status`, when given."""
    with db.read() as conn:
        project_code = resolve_project(db, conn) if pipeline_code else None
        rows = fetch_all(db, conn, "alerts_list", pipeline_code=pipeline_code, project_code=project_code,
                         status=status, limit=limit)
    alerts: dict[int, dict[str, Any]] = {}
    for row in rows:
        alert = alerts.setdefault(int(row["alert_id"]), {
            "alert_id": int(row["alert_id"]), "kind": row["alert_kind"], "pipeline_code": row["pipeline_code"],
            "pipeline_run_id": int(row["pipeline_run_id"]), "run_key": row["run_key"], "task_code": row["task_code"],
            "attempt_id": plain(row["attempt_id"]), "status": row["status"], "error": row["error_message"],
            "raised_at": as_time(row["raised_at"]), "deliveries": []})
        if row["delivery_id"] is not None:
            alert["deliveries"].append({
                "delivery_id": int(row["delivery_id"]), "channel": row["channel"],
                "status": row["delivery_status"], "attempts": int(row["attempts"]),
                "next_attempt_at": as_time(row["next_attempt_at"]), "last_attempt_at": as_time(row["last_attempt_at"]),
                "last_detail": row["last_detail"], "warning": row["warning"],
                "delivered_at": as_time(row["delivered_at"])})
    return {"schema": "etl-craft/alerts/1", "pipeline_code": pipeline_code, "status": status,
            "alerts": list(alerts.values())}


def render(doc: dict[str, Any]) -> str:
    """The document as text: one line per alert, then one per channel."""
    if not doc["alerts"]:
        return "no alerts"
    lines = []
    for a in doc["alerts"]:
        task = f" task {a['task_code']}" if a["task_code"] else ""
        lines.append(f"alert {a['alert_id']} {a['kind']} {a['pipeline_code']} run {a['pipeline_run_id']} "
                     f"({a['run_key']}){task} {a['status'] or ''} raised {a['raised_at']}".rstrip())
        if a["error"]:
            lines.append(f"  error: {' '.join(str(a['error']).split())[:200]}")
        for d in a["deliveries"]:
            when = {"PENDING": f"next attempt {d['next_attempt_at']}", "DELIVERED": f"at {d['delivered_at']}",
                    "FAILED": f"last attempt {d['last_attempt_at']}"}[d["status"]]
            lines.append(f"  {d['channel']}: {d['status']} after {d['attempts']} attempt(s), {when}"
                         + (f"; {d['last_detail']}" if d["last_detail"] else "")
                         + (f"; warning: {d['warning']}" if d["warning"] else ""))
    return "\n".join(lines)
