"""What the catalog shows, read from the Engine DB in one snapshot and a fixed number of statements.

The metadata comes from services.metadata.load_metadata (one set query per CFG_ table); history from the set
queries of engine/queries/catalog_site.sql, bounded to the last `limit` runs of each pipeline. No statement is
issued per pipeline or per task, so the count does not grow with the Engine DB (tests/py/catalog).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from etlcraft.config.loader import ProjectConfig
from etlcraft.core.errors import ConfigurationError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.queries import fetch_all
from etlcraft.services.metadata import Metadata, load_metadata
from etlcraft.services.redaction import MIN_SECRET, Scrubber, is_sensitive
from etlcraft.services.values import as_time

#: The run classes the KPIs keep apart, in the order they are shown.
RUN_CLASSES = ("scheduled", "manual", "backfill", "repair")


@dataclass(frozen=True)
class RunRow:
    run_id: int
    pipeline_id: int
    run_key: str
    trigger_kind: str
    run_date: str
    status: str
    queued_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    output_revision: int
    repair_pending: bool
    sla_status: str | None
    started_by: str
    ended_by: str | None
    message: str | None

    @property
    def run_class(self) -> str:
        """scheduled, manual, backfill or repair, as catalog_run_kpis counts it."""
        if self.output_revision > 1 or self.repair_pending:
            return "repair"
        if self.trigger_kind == "BACKFILL":
            return "backfill"
        return "scheduled" if self.trigger_kind in ("SCHEDULE", "ORCHESTRATOR") else "manual"

    @property
    def seconds(self) -> float | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()


@dataclass(frozen=True)
class TaskRunRow:
    task_run_id: int
    run_id: int
    task_id: int
    status: str
    attempts: int
    started_at: datetime | None
    ended_at: datetime | None
    rows_written: int | None
    error: str | None


@dataclass(frozen=True)
class InterventionRow:
    intervention_id: int
    run_id: int
    pipeline_id: int
    task_id: int | None
    intervention: str
    from_status: str | None
    to_status: str | None
    reason: str | None
    requested_by: str
    requested_at: datetime | None


@dataclass
class SiteData:
    metadata: Metadata
    limit: int
    runs: dict[int, list[RunRow]] = field(default_factory=dict)  # by pipeline, newest first
    task_runs: dict[int, list[TaskRunRow]] = field(default_factory=dict)  # by task, newest first
    interventions: dict[int, list[InterventionRow]] = field(default_factory=dict)  # by pipeline, newest first
    kpis: dict[int, dict[tuple[str, str], int]] = field(default_factory=dict)  # by pipeline: (class, status) -> n
    owners: dict[int, str] = field(default_factory=dict)


def read_site_data(db: EngineDB, limit: int, config: ProjectConfig | None = None) -> SiteData:
    """Everything the catalog shows, in one read transaction; free text is scrubbed of known secrets."""
    with db.shared_read():
        metadata = load_metadata(db)
        with db.read() as conn:
            suffix = "postgresql" if db.is_postgres else "sqlite"
            raw = {name: fetch_all(db, conn, f"catalog_{name}_{suffix}", limit=limit)
                   for name in ("recent_runs", "recent_task_runs", "recent_interventions")}
            kpis = fetch_all(db, conn, "catalog_run_kpis")
            owners = fetch_all(db, conn, "catalog_pipeline_owners")
    scrub = _scrubber(metadata, config)
    data = SiteData(metadata, limit)
    for r in raw["recent_runs"]:
        data.runs.setdefault(r["pipeline_id"], []).append(_run(r, scrub))
    for r in raw["recent_task_runs"]:
        data.task_runs.setdefault(r["task_id"], []).append(TaskRunRow(
            r["task_run_id"], r["pipeline_run_id"], r["task_id"], r["status"], int(r["attempt_count"] or 0),
            as_time(r["start_date"]), as_time(r["end_date"]), r["rows_written"], _text(scrub, r["error_message"])))
    for r in raw["recent_interventions"]:
        data.interventions.setdefault(r["pipeline_id"], []).append(InterventionRow(
            r["intervention_id"], r["pipeline_run_id"], r["pipeline_id"], r["task_id"], r["intervention"],
            r["from_status"], r["to_status"], _text(scrub, r["reason"]), r["requested_by"],
            as_time(r["requested_at"])))
    for r in kpis:
        data.kpis.setdefault(r["pipeline_id"], {})[(r["run_class"], r["status"])] = int(r["runs"])
    data.owners = {r["pipeline_id"]: r["updated_by"] or r["created_by"] for r in owners}
    return data


def _run(r: dict[str, Any], scrub: Scrubber) -> RunRow:
    return RunRow(r["pipeline_run_id"], r["pipeline_id"], r["run_key"], r["trigger_kind"], str(r["run_date"]),
                  r["status"], as_time(r["queued_at"]), as_time(r["start_date"]), as_time(r["end_date"]),
                  int(r["output_revision"]), r["repair_pending"] == "Y", r["sla_status"], r["started_by"],
                  r["ended_by"], _text(scrub, r["message"]))


def _text(scrub: Scrubber, value: str | None) -> str | None:
    return None if value is None else scrub.text(value)


def _scrubber(metadata: Metadata, config: ProjectConfig | None) -> Scrubber:
    """Masks the values of sensitive parameters (already read with the metadata) and the configuration's secrets in
    free text (run messages, task errors, intervention reasons): the Scrubber of services.redaction without
    another read."""
    found = {p.value for t in metadata.tasks for p in t.parameters if p.value and is_sensitive(p.name)}
    holders: Iterable[Any] = (config.engine, config.warehouse, config.email) if config is not None else ()
    for holder in holders:
        if holder is not None and holder.secret is not None:
            with contextlib.suppress(ConfigurationError):
                found.add(config.secret_value(holder) or "")  # type: ignore[union-attr]
    return Scrubber(tuple(sorted((v for v in found if len(v) >= MIN_SECRET), key=len, reverse=True)))
