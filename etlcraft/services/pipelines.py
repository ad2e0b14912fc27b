"""The pipelines as `etl-craft list` and `etl-craft show` print them with --format json, and the HTTP API returns
them: the one serializer of etl-craft/pipelines/1 and etl-craft/pipeline/1.

The pipeline document carries its schedule (next ticks and last run, as `etl-craft schedule list` shows them) and
its tasks' parameters with the sensitive ones masked (etlcraft.services.redaction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from etlcraft.core.zones import ProjectZone
from etlcraft.engine.db import EngineDB
from etlcraft.engine.queries import fetch_one
from etlcraft.services.metadata import PipelineDetail, PipelineView, TaskEdge, TaskView, list_pipelines, show_pipeline
from etlcraft.services.projects import ProjectChoice, resolve_project
from etlcraft.services.redaction import masked_parameters
from etlcraft.services.server import ScheduleView, run_json, schedule_item, schedules

#: Ticks shown per pipeline in its document.
TICKS = 3


def list_document(db: EngineDB, configured_zone: str | None,
                  project_code: str | None = None) -> tuple[tuple[PipelineView, ...], dict[str, Any]]:
    """The active pipelines and their document, given `Orchestration: Timezone` (None when not set): every
    project's, or with `project_code` (--project-code, ?project=) that active project's only (NotFoundError, naming
    the active projects, for a code that is not one)."""
    pipelines = list_pipelines(db)
    if project_code:
        with db.read() as conn:
            chosen = resolve_project(db, conn, ProjectChoice(project_code))
        pipelines = tuple(p for p in pipelines if p.project_code == chosen)
    return pipelines, {"schema": "etl-craft/pipelines/1",
                       "pipelines": [pipeline_item(p, configured_zone) for p in pipelines]}


def pipeline_item(p: PipelineView, configured_zone: str | None) -> dict[str, Any]:
    zone = p.project_zone(configured_zone)
    return {"project": p.project_code, "code": p.code, "name": p.name, "schedule": p.schedule,
            "timezone": p.timezone, "project_timezone": zone.name, "project_timezone_source": zone.source,
            "tasks": p.task_count, "state": p.state, "paused": p.paused}


@dataclass(frozen=True)
class PipelinePage:
    """One pipeline as `show` prints it: its metadata and graph, its project's zone, its schedule's next ticks
    (None without a schedule) and its newest run."""

    detail: PipelineDetail
    zone: ProjectZone
    schedule: ScheduleView | None
    last_run: dict[str, Any] | None


def pipeline_page(db: EngineDB, code: str, configured_zone: str | None) -> PipelinePage:
    detail = show_pipeline(db, code)
    found = schedules(db, configured_zone, TICKS, pipeline_code=code)
    with db.read() as conn:
        last = fetch_one(db, conn, "pipeline_last_run", pipeline_id=detail.pipeline.pipeline_id)
    return PipelinePage(detail, detail.pipeline.project_zone(configured_zone), found[0] if found else None, last)


def _edge_json(e: TaskEdge) -> dict[str, Any]:
    return {"task": e.task_code, "pipeline": e.pipeline_code, "upstream_task": e.upstream_task_code,
            "upstream_pipeline": e.upstream_pipeline_code, "type": e.type, "consume_repairs": e.consume_repairs,
            "cross_pipeline": e.cross_pipeline, "upstream_active": e.upstream_active}


def _task_json(t: TaskView, detail: PipelineDetail) -> dict[str, Any]:
    return {"code": t.code, "name": t.name, "handler": t.handler, "action": t.action, "target": t.target,
            "sql_file": t.sql_file, "script_file": t.script_file, "run_condition": t.run_condition,
            "parameters": masked_parameters({p.name: p.value for p in t.parameters}),
            "rules": [{"code": r.code, "type": r.rule_type, "key_column": r.key_column, "rule_sql": r.rule_sql}
                      for r in detail.rules if r.task_id == t.task_id],
            "depends_on": [_edge_json(e) for e in detail.edges if e.task_id == t.task_id]}


def pipeline_document(page: PipelinePage) -> dict[str, Any]:
    """`etl-craft show --format json` and GET /api/v1/pipelines/{code}: etl-craft/pipeline/1."""
    d, zone, p = page.detail, page.zone, page.detail.pipeline
    schedule = schedule_item(page.schedule) if page.schedule else None
    return {"schema": "etl-craft/pipeline/1",
            "pipeline": {"project": p.project_code, "code": p.code, "name": p.name, "description": p.description,
                         "schedule": p.schedule, "timezone": p.timezone, "project_timezone": zone.name,
                         "project_timezone_source": zone.source, "state": p.state, "paused": p.paused,
                         "priority": p.priority, "max_parallel_tasks": p.max_parallel_tasks, "tasks": p.task_count,
                         "next_ticks": schedule["next_ticks"] if schedule else [],
                         "last_run": run_json(page.last_run)},
            "tasks": [_task_json(t, d) for t in d.tasks],
            "upstream_pipelines": [{"pipeline": e.upstream_pipeline_code, "type": e.type}
                                   for e in d.upstream_pipelines],
            "downstream_pipelines": [{"pipeline": e.pipeline_code, "type": e.type} for e in d.downstream_pipelines],
            "downstream_tasks": [_edge_json(e) for e in d.downstream_edges],
            "levels": [list(level) for level in d.levels],
            "unleveled": list(d.unleveled)}
