"""The catalog's pages as plain data: one dict per page, the whole input of its template.

Every page's dict is JSON-serializable, so its hash says whether the page must be rendered again (etlcraft.
catalog_site.build keeps the hashes in the site's manifest). Parameter values are masked here, through
services.redaction, before any template sees them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from statistics import median
from typing import Any

from etlcraft.catalog_site.lineage import TaskLineage
from etlcraft.catalog_site.model import RUN_CLASSES, RunRow, SiteData
from etlcraft.catalog_site.svg import dag_svg, sparkline_svg
from etlcraft.services.metadata import PipelineView, TaskEdge, TaskView
from etlcraft.services.redaction import masked_parameters
from etlcraft.warehouse.catalog import Catalog

SPARK_RUNS = 20
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class Page:
    path: str  # relative to the site's root, with / separators
    template: str
    context: dict[str, Any]


def pipeline_path(p: PipelineView) -> str:
    return f"pipelines/{p.project_code}.{p.code}.html"


def task_path(t: TaskView, project: str) -> str:
    return f"tasks/{project}.{t.pipeline_code}.{t.code}.html"


def table_path(key: str) -> str:
    """A file name for a table: its key when that is a safe name, else the key made safe."""
    return f"tables/{_UNSAFE.sub('_', key)}.html"


def _time(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else ""


def _run_json(r: RunRow) -> dict[str, Any]:
    return {"id": r.run_id, "key": r.run_key, "trigger": r.trigger_kind, "class": r.run_class, "date": r.run_date,
            "status": r.status, "started": _time(r.started_at), "ended": _time(r.ended_at),
            "seconds": None if r.seconds is None else round(r.seconds, 1), "revision": r.output_revision,
            "sla": r.sla_status, "started_by": r.started_by, "ended_by": r.ended_by, "message": r.message}


class PageMaker:
    """Builds each page's data from one SiteData and the lineage of the SQL tasks."""

    def __init__(self, data: SiteData, lineage: dict[int, TaskLineage], sql: dict[int, str | None],
                 catalog: Catalog, title: str) -> None:
        self.data, self.lineage, self.sql, self.catalog, self.title = data, lineage, sql, catalog, title
        self.project_of = {p.pipeline_id: p.project_code for p in data.metadata.pipelines}
        self.by_id = {t.task_id: t for t in data.metadata.tasks}
        self.tasks_of: dict[int, list[TaskView]] = {}
        for t in data.metadata.tasks:
            self.tasks_of.setdefault(t.pipeline_id, []).append(t)
        self.edges_in: dict[int, list[TaskEdge]] = {}
        self.edges_out: dict[int, list[TaskEdge]] = {}
        self.edges_of: dict[int, list[TaskEdge]] = {}
        for e in data.metadata.task_edges:
            self.edges_in.setdefault(e.task_id, []).append(e)
            self.edges_out.setdefault(e.upstream_task_id, []).append(e)
            self.edges_of.setdefault(e.pipeline_id, []).append(e)
        self.writers: dict[str, list[TaskView]] = {}
        self.readers: dict[str, list[TaskView]] = {}
        for t in data.metadata.tasks:
            if t.target and t.handler == "SQL":
                self.writers.setdefault(self.target_key(t), []).append(t)
            for key in lineage.get(t.task_id, TaskLineage()).reads:
                self.readers.setdefault(key, []).append(t)

    def target_key(self, t: TaskView) -> str:
        """The catalog's key of the task's target (its missing catalog and schema parts take the defaults)."""
        return self.catalog.key((t.target or "").split("."))

    def pages(self) -> Iterator[Page]:
        yield self.index()
        for p in self.data.metadata.pipelines:
            yield self.pipeline(p)
        for t in self.data.metadata.tasks:
            yield self.task(t)
        for key in sorted(set(self.catalog.tables) | set(self.writers) | set(self.readers)):
            yield self.table(key)

    def index(self) -> Page:
        rows = []
        for p in self.data.metadata.pipelines:
            runs = self.data.runs.get(p.pipeline_id, [])
            rows.append({"project": p.project_code, "code": p.code, "name": p.name, "href": pipeline_path(p),
                         "schedule": p.schedule, "timezone": p.timezone or p.project_timezone,
                         "owner": self.data.owners.get(p.pipeline_id), "state": p.state, "tasks": p.task_count,
                         "last_status": runs[0].status if runs else None,
                         "last_run": _time(runs[0].started_at or runs[0].queued_at) if runs else "",
                         "spark": sparkline_svg([r.status for r in reversed(runs[:SPARK_RUNS])])})
        return Page("index.html", "index.html.j2", {"title": self.title, "root": "", "pipelines": rows})

    def pipeline(self, p: PipelineView) -> Page:
        tasks = self.tasks_of.get(p.pipeline_id, [])
        runs = self.data.runs.get(p.pipeline_id, [])
        latest = runs[0].run_id if runs else None
        statuses = {t.code: tr.status for t in tasks for tr in self.data.task_runs.get(t.task_id, [])
                    if tr.run_id == latest}
        edges = self.edges_of.get(p.pipeline_id, [])
        inner = [(e.task_code, e.upstream_task_code) for e in edges if not e.cross_pipeline and e.upstream_active]
        svg = dag_svg([t.code for t in tasks], inner, statuses,
                      {t.code: "../" + task_path(t, p.project_code) for t in tasks},
                      {(e.task_code, e.upstream_task_code): e.type for e in edges})
        ctx = {"title": self.title, "root": "../", "pipeline": self._pipeline_json(p), "dag": svg,
               "latest": _run_json(runs[0]) if runs else None, "runs": [_run_json(r) for r in runs],
               "kpis": self._kpis(p.pipeline_id, runs), "limit": self.data.limit,
               "cross": [{"task": e.task_code, "upstream": f"{e.upstream_pipeline_code}.{e.upstream_task_code}",
                          "type": e.type} for e in edges if e.cross_pipeline],
               "interventions": self._interventions(p.pipeline_id),
               "tasks": [{"code": t.code, "href": "../" + task_path(t, p.project_code), "handler": t.handler,
                          "status": statuses.get(t.code)} for t in tasks]}
        return Page(pipeline_path(p), "pipeline.html.j2", ctx)

    def _pipeline_json(self, p: PipelineView) -> dict[str, Any]:
        return {"project": p.project_code, "code": p.code, "name": p.name, "description": p.description,
                "schedule": p.schedule, "timezone": p.timezone or p.project_timezone, "state": p.state,
                "owner": self.data.owners.get(p.pipeline_id), "priority": p.priority,
                "max_parallel_tasks": p.max_parallel_tasks}

    def _kpis(self, pipeline_id: int, runs: list[RunRow]) -> list[dict[str, Any]]:
        counts = self.data.kpis.get(pipeline_id, {})
        found = []
        for kind in RUN_CLASSES:
            by_status = {s: n for (c, s), n in counts.items() if c == kind}
            total = sum(by_status.values())
            if not total:
                continue
            seconds = [r.seconds for r in runs if r.run_class == kind and r.seconds is not None]
            found.append({"class": kind, "runs": total, "success": by_status.get("SUCCESS", 0),
                          "failed": by_status.get("FAILED", 0),
                          "rate": round(100 * by_status.get("SUCCESS", 0) / total, 1),
                          "median_seconds": round(median(seconds), 1) if seconds else None})
        return found

    def _interventions(self, pipeline_id: int, task_id: int | None = None) -> list[dict[str, Any]]:
        by_id = self.by_id
        return [{"run": i.run_id, "task": by_id[i.task_id].code if i.task_id in by_id else None, "what": i.intervention,
                 "from": i.from_status, "to": i.to_status, "reason": i.reason, "by": i.requested_by,
                 "at": _time(i.requested_at)}
                for i in self.data.interventions.get(pipeline_id, []) if task_id is None or i.task_id == task_id]

    def task(self, t: TaskView) -> Page:
        project = self.project_of[t.pipeline_id]
        lineage = self.lineage.get(t.task_id)
        target = self.target_key(t) if t.target else None
        by_id = self.by_id
        ups = self.edges_in.get(t.task_id, [])
        downs = self.edges_out.get(t.task_id, [])
        ctx = {"title": self.title, "root": "../",
               "task": {"code": t.code, "name": t.name, "pipeline": t.pipeline_code, "handler": t.handler,
                        "action": t.action, "sql_file": t.sql_file, "script_file": t.script_file,
                        "run_condition": t.run_condition, "pipeline_href": f"../pipelines/{project}.{t.pipeline_code}"
                                                                          ".html"},
               "parameters": sorted(masked_parameters({p.name: p.value for p in t.parameters}).items()),
               "sql": self.sql.get(t.task_id), "target": self._table_link(target) if target else None,
               "reads": [self._table_link(k) for k in (lineage.reads if lineage else ())],
               "lineage": self._lineage_json(lineage), "upstream": [self._edge_link(by_id, e.upstream_task_id, e.type)
                                                                   for e in ups],
               "downstream": [self._edge_link(by_id, e.task_id, e.type) for e in downs],
               "runs": [{"run": r.run_id, "status": r.status, "attempts": r.attempts, "started": _time(r.started_at),
                         "ended": _time(r.ended_at), "rows": r.rows_written, "error": r.error}
                        for r in self.data.task_runs.get(t.task_id, [])],
               "interventions": self._interventions(t.pipeline_id, t.task_id)}
        return Page(task_path(t, project), "task.html.j2", ctx)

    def _edge_link(self, by_id: dict[int, TaskView], task_id: int, kind: str) -> dict[str, Any]:
        other = by_id.get(task_id)
        if other is None:
            return {"label": f"task {task_id} (inactive)", "href": None, "type": kind}
        return {"label": other.key, "href": "../" + task_path(other, self.project_of[other.pipeline_id]),
                "type": kind}

    def _table_link(self, key: str) -> dict[str, str]:
        return {"key": key, "href": "../" + table_path(key)}

    def _lineage_json(self, lineage: TaskLineage | None) -> dict[str, Any] | None:
        if lineage is None:
            return None
        return {"error": lineage.error,
                "columns": [{"column": c.column, "unresolved": list(c.unresolved),
                             "sources": [{"table": s.table, "column": s.column, "href": "../" + table_path(s.table)}
                                         for s in c.sources]} for c in lineage.columns]}

    def table(self, key: str) -> Page:
        writers = self.writers.get(key, [])
        lineage = [{"task": w.key, "href": "../" + task_path(w, self.project_of[w.pipeline_id]),
                    "lineage": self._lineage_json(self.lineage.get(w.task_id))} for w in writers]
        readers = [{"task": r.key, "href": "../" + task_path(r, self.project_of[r.pipeline_id])}
                   for r in self.readers.get(key, [])]
        columns = self.catalog.columns(key)
        ctx = {"title": self.title, "root": "../", "key": key, "columns": list(columns) if columns else None,
               "in_warehouse": key in self.catalog.tables, "writers": lineage, "readers": readers}
        return Page(table_path(key), "table.html.j2", ctx)
