"""Read views of the active metadata (CFG_ tables): what `list`, `show` and `validate` look at.

One consistent snapshot per call (one read transaction); every view is a frozen dataclass. The graph helpers
(dependency levels, cycles) work on plain codes so validate and show derive the same graph.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from etlcraft.core.errors import EngineDbError, NotFoundError
from etlcraft.core.zones import ProjectZone, project_zone
from etlcraft.engine.catalog import table_exists
from etlcraft.engine.db import EngineDB
from etlcraft.engine.queries import fetch_all
from etlcraft.services.projects import pick_project

N = TypeVar("N", bound=Hashable)


@dataclass(frozen=True)
class ProjectView:
    project_id: int
    code: str
    name: str | None
    timezone: str | None  # None: the row sets none (etlcraft.core.zones)
    default_pool: str


@dataclass(frozen=True)
class PipelineView:
    pipeline_id: int
    project_code: str
    code: str
    name: str | None
    description: str | None
    schedule: str | None
    timezone: str | None
    catchup: bool
    overlap_policy: str
    priority: int
    max_parallel_tasks: int | None
    task_count: int
    paused: bool
    #: The project row's TIMEZONE, None when it sets none: see project_zone.
    project_timezone: str | None = None

    @property
    def state(self) -> str:
        return "paused" if self.paused else "active"

    def project_zone(self, configured: str | None) -> ProjectZone:
        """The time zone of the pipeline's project, given `Orchestration: Timezone` (None when not set)."""
        return project_zone(self.project_code, self.project_timezone, configured)


@dataclass(frozen=True)
class ParameterValue:
    name: str
    value: str | None


@dataclass(frozen=True)
class TaskView:
    task_id: int
    pipeline_id: int
    pipeline_code: str
    code: str
    name: str | None
    handler: str
    action: str | None
    sql_file: str | None
    script_file: str | None
    target: str | None
    run_condition: str
    parameters: tuple[ParameterValue, ...]

    @property
    def key(self) -> str:
        return f"{self.pipeline_code}.{self.code}"

    def parameter(self, name: str) -> str | None:
        return next((p.value for p in self.parameters if p.name == name), None)


@dataclass(frozen=True)
class RuleView:
    """An active business rule (CFG_BUSINESS_RULES) of TASK_ID, a BUSINESS_RULES task."""

    rule_id: int
    task_id: int
    code: str
    rule_type: str
    key_column: str
    rule_sql: str


@dataclass(frozen=True)
class TaskEdge:
    """TASK waits for UPSTREAM (CFG_TASK_DEPENDENCY), in its own pipeline or across pipelines."""

    dependency_id: int
    task_id: int
    task_code: str
    pipeline_code: str
    upstream_task_id: int
    upstream_task_code: str
    upstream_pipeline_code: str
    upstream_pipeline_id: int
    pipeline_id: int
    type: str
    consume_repairs: bool
    upstream_active: bool
    project_code: str = ""  # the task's project
    upstream_project_code: str = ""  # the upstream task's project: another one for a cross-project dependency

    @property
    def cross_pipeline(self) -> bool:
        return self.pipeline_id != self.upstream_pipeline_id


@dataclass(frozen=True)
class PipelineEdge:
    """PIPELINE waits for UPSTREAM (CFG_PIPELINE_DEPENDENCY)."""

    dependency_id: int
    pipeline_id: int
    pipeline_code: str
    upstream_pipeline_id: int
    upstream_pipeline_code: str
    type: str
    consume_repairs: bool
    upstream_active: bool
    project_code: str = ""  # the pipeline's project
    upstream_project_code: str = ""  # the upstream pipeline's project


@dataclass(frozen=True)
class Metadata:
    projects: tuple[ProjectView, ...]
    pipelines: tuple[PipelineView, ...]
    tasks: tuple[TaskView, ...]
    task_edges: tuple[TaskEdge, ...]
    pipeline_edges: tuple[PipelineEdge, ...]
    rules: tuple[RuleView, ...] = ()

    def of_project(self, code: str) -> Metadata:
        """The part of the snapshot project `code` owns: its pipelines, their tasks and rules, and the dependencies of
        its tasks and pipelines (whose upstream may be in another project). Pipeline codes are unique within it."""
        pipelines = tuple(p for p in self.pipelines if p.project_code == code)
        ids = {p.pipeline_id for p in pipelines}
        tasks = tuple(t for t in self.tasks if t.pipeline_id in ids)
        task_ids = {t.task_id for t in tasks}
        return Metadata(tuple(p for p in self.projects if p.code == code), pipelines, tasks,
                        tuple(e for e in self.task_edges if e.pipeline_id in ids),
                        tuple(e for e in self.pipeline_edges if e.pipeline_id in ids),
                        tuple(r for r in self.rules if r.task_id in task_ids))

    def rules_of(self, task_id: int) -> tuple[RuleView, ...]:
        return tuple(r for r in self.rules if r.task_id == task_id)

    def tasks_of(self, pipeline_id: int) -> tuple[TaskView, ...]:
        return tuple(t for t in self.tasks if t.pipeline_id == pipeline_id)

    def pipeline(self, code: str, project: str | None = None) -> PipelineView:
        """The active pipeline `code` of `project`, else of the project the caller chose (etlcraft.services.projects);
        NotFoundError when that project has none."""
        project = project or pick_project([p.code for p in self.projects])
        found = [p for p in self.pipelines if p.code == code and p.project_code == project]
        if not found:
            known = ", ".join(p.code for p in self.pipelines if p.project_code == project) or "none"
            raise NotFoundError(
                f"pipeline {code!r} is not an active pipeline of project {project} in this Engine DB (active: "
                f"{known}); check the code with etl-craft --project-code {project} list"
            )
        return found[0]


def _flag(value: Any) -> bool:
    return str(value) == "Y"


def load_metadata(db: EngineDB) -> Metadata:
    """Every active project, pipeline, task, parameter and dependency, read in one transaction."""
    with db.read() as conn:
        if not table_exists(db, conn, "CFG_TASK_PARAMETERS"):
            raise EngineDbError(f"the Engine DB at {db.display_url} has no etl-craft schema yet; run etl-craft "
                                "migrate")
        raw = {name: fetch_all(db, conn, name) for name in
               ("projects", "pipelines", "tasks", "task_parameters", "task_dependencies", "pipeline_dependencies")}
        raw["business_rules"] = (fetch_all(db, conn, "business_rules")
                                 if table_exists(db, conn, "CFG_BUSINESS_RULES") else [])
    projects = tuple(ProjectView(r["project_id"], r["project_code"], r["project_name"], r["timezone"],
                                 r["default_pool"]) for r in raw["projects"])
    pipelines = tuple(
        PipelineView(r["pipeline_id"], r["project_code"], r["pipeline_code"], r["pipeline_name"], r["description"],
                     r["run_schedule"], r["schedule_timezone"], _flag(r["catchup"]), r["overlap_policy"],
                     int(r["priority"]), r["max_parallel_tasks"], int(r["task_count"]), _flag(r["paused"]),
                     r["project_timezone"])
        for r in raw["pipelines"])
    codes = {p.pipeline_id: p.code for p in pipelines}
    parameters: dict[int, list[ParameterValue]] = {}
    for r in raw["task_parameters"]:
        parameters.setdefault(r["task_id"], []).append(ParameterValue(r["parameter_name"], r["parameter_value"]))
    tasks = tuple(
        TaskView(r["task_id"], r["pipeline_id"], codes[r["pipeline_id"]], r["task_code"], r["task_name"],
                 r["handler"], r["action"], r["sql_file"], r["script_file"], r["target_object"],
                 r["run_condition"], tuple(parameters.get(r["task_id"], ())))
        for r in raw["tasks"] if r["pipeline_id"] in codes)
    by_id = {t.task_id: t for t in tasks}
    task_edges = tuple(
        TaskEdge(r["task_dependency_id"], r["task_id"], by_id[r["task_id"]].code, by_id[r["task_id"]].pipeline_code,
                 r["depends_on_task_id"], r["upstream_task_code"], r["upstream_pipeline_code"],
                 r["upstream_pipeline_id"], by_id[r["task_id"]].pipeline_id, r["dependency_type"],
                 _flag(r["consume_repairs"]), _flag(r["upstream_active"]), r["project_code"],
                 r["upstream_project_code"])
        for r in raw["task_dependencies"] if r["task_id"] in by_id)
    pipeline_edges = tuple(
        PipelineEdge(r["pipeline_dependency_id"], r["pipeline_id"], codes[r["pipeline_id"]],
                     r["depends_on_pipeline_id"], r["upstream_pipeline_code"], r["dependency_type"],
                     _flag(r["consume_repairs"]), _flag(r["upstream_active"]), r["project_code"],
                     r["upstream_project_code"])
        for r in raw["pipeline_dependencies"] if r["pipeline_id"] in codes)
    rules = tuple(RuleView(int(r["business_rule_id"]), int(r["task_id"]), r["rule_code"], r["rule_type"],
                           r["key_column"], r["rule_sql"]) for r in raw["business_rules"] if r["task_id"] in by_id)
    return Metadata(projects, pipelines, tasks, task_edges, pipeline_edges, rules)


# -- list and show -------------------------------------------------------------------------------------------

def list_pipelines(db: EngineDB) -> tuple[PipelineView, ...]:
    """The active pipelines, by project and code."""
    return load_metadata(db).pipelines


@dataclass(frozen=True)
class PipelineDetail:
    pipeline: PipelineView
    tasks: tuple[TaskView, ...]
    edges: tuple[TaskEdge, ...]  # edges into this pipeline's tasks (their upstream anywhere)
    downstream_edges: tuple[TaskEdge, ...]  # tasks of other pipelines waiting for this pipeline's tasks
    upstream_pipelines: tuple[PipelineEdge, ...]
    downstream_pipelines: tuple[PipelineEdge, ...]
    levels: tuple[tuple[str, ...], ...]  # task codes by dependency level (level 1 first)
    unleveled: tuple[str, ...]  # tasks on or after a dependency cycle (validate reports it)
    rules: tuple[RuleView, ...] = ()  # the active business rules of its tasks


def show_pipeline(db: EngineDB, code: str) -> PipelineDetail:
    """One active pipeline: its tasks, parameters, dependencies in and across pipelines, and its graph."""
    metadata = load_metadata(db)
    pipeline = metadata.pipeline(code)
    tasks = metadata.tasks_of(pipeline.pipeline_id)
    edges = tuple(e for e in metadata.task_edges if e.pipeline_id == pipeline.pipeline_id)
    inner = [(e.task_code, e.upstream_task_code) for e in edges if not e.cross_pipeline and e.upstream_active]
    levels, unleveled = dependency_levels([t.code for t in tasks], inner)
    return PipelineDetail(
        pipeline, tasks, edges,
        tuple(e for e in metadata.task_edges if e.upstream_pipeline_id == pipeline.pipeline_id and e.cross_pipeline),
        tuple(e for e in metadata.pipeline_edges if e.pipeline_id == pipeline.pipeline_id),
        tuple(e for e in metadata.pipeline_edges if e.upstream_pipeline_id == pipeline.pipeline_id),
        levels, unleveled, tuple(r for t in tasks for r in metadata.rules_of(t.task_id)),
    )


# -- graphs ----------------------------------------------------------------------------------------------------

def dependency_levels(nodes: Sequence[N], edges: Iterable[tuple[N, N]]) -> tuple[tuple[tuple[N, ...], ...],
                                                                                  tuple[N, ...]]:
    """Nodes by level: level 1 waits for nothing, level n for something on level n-1. `edges` are
    (node, upstream). Nodes on or downstream of a cycle get no level and come back second."""
    upstream: dict[N, set[N]] = {n: set() for n in nodes}
    for node, up in edges:
        if node in upstream and up in upstream:
            upstream[node].add(up)
    placed: dict[N, int] = {}
    levels: list[tuple[N, ...]] = []
    while True:
        ready = tuple(n for n in nodes if n not in placed and upstream[n] <= placed.keys())
        if not ready:
            break
        for n in ready:
            placed[n] = len(levels)
        levels.append(ready)
    return tuple(levels), tuple(n for n in nodes if n not in placed)
