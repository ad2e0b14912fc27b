"""validate: every problem in the active metadata and the project's files, each naming the object, the value
found, what was expected and the remedy. Reads only: nothing is written to the Engine DB.

Checks: codes; handler, action and file columns; task parameters (names, scope, values, required ones); edge
types and run conditions; dependency cycles in a pipeline and across pipelines; schedules and time zones; one
TABLE_FORMAT per target (B43); SQL files (one read-only SELECT, $$ tokens, output names: B12, B44, B45, B57);
ingestion scripts; business rules (a BUSINESS_RULES task has rules, each RULE_SQL one condition: B57); alert rules
(each channel of an active CFG_ALERT_RULES row is a channel of the Alerts section). Given the
project's configuration, also the warehouse: the tables and columns each SELECT reads and each target
(services.validate_warehouse).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

from etlcraft.config.loader import ProjectConfig
from etlcraft.core import parameters as params
from etlcraft.core.cron import CronError, parse
from etlcraft.core.graph import TaskDependency, dependency_cycles
from etlcraft.core.selects import (
    ENGINE_MANAGED_COLUMNS,
    SelectError,
    SelectShape,
    engine_managed_columns,
    read_condition,
    read_select,
    same_table,
)
from etlcraft.core.sqltext import describe_tokens, find_tokens, known_text, substitute
from etlcraft.core.states import state_machine
from etlcraft.core.zones import EXPECTED as _ZONE_EXPECTED
from etlcraft.core.zones import zone_problem
from etlcraft.engine.db import EngineDB
from etlcraft.engine.queries import fetch_all
from etlcraft.handlers.email_alert import TOKENS as _ALERT_TOKENS
from etlcraft.handlers.email_alert import unknown_tokens
from etlcraft.services import validate_warehouse
from etlcraft.services.metadata import Metadata, TaskView, load_metadata
from etlcraft.services.projects import pick_project

SQL_DIR, SCRIPT_DIR = "sql_files", "ingestion_scripts"
_ENUMS = state_machine().enums
_PLACEHOLDERS: dict[str, object] = {"pipeline_id": 1, "pipeline_run_id": 1, "task_run_id": 1,
                                    "run_date": date(2000, 1, 1)}
_NEW_MIGRATION = "in a new project migration (migrations/NNNN_name.sql)"
_TARGET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")


@dataclass(frozen=True)
class Problem:
    check: str  # a stable name for the kind of problem, e.g. parameter-unknown
    object: str  # "pipeline P", "task P.T", "project X", "target main.t", "pipelines"
    finding: str  # what is wrong, naming the value
    value: str | None
    expected: str
    remedy: str
    pipelines: tuple[str, ...] = ()  # the pipelines involved; text output lists the problem under the first
    task: str | None = None

    @property
    def detail(self) -> str:
        """The message without the object, for a listing already grouped by it."""
        return f"{self.finding}; expected {self.expected}; {self.remedy}"

    @property
    def message(self) -> str:
        return f"{self.object}: {self.detail}"


@dataclass(frozen=True)
class ValidationReport:
    problems: tuple[Problem, ...]
    pipelines: tuple[str, ...]  # the pipelines checked
    tasks: int
    files: int  # SQL files and scripts read
    warnings: tuple[str, ...] = ()  # checks that could not run (an unreachable warehouse); never a problem
    notes: tuple[str, ...] = ()  # what the warehouse checks took on trust (tables made by a task's first run)
    warehouse: str = "offline"  # checked, offline (not asked to), or unreachable

    @property
    def ok(self) -> bool:
        return not self.problems


def validate(db: EngineDB, project_dir: Path, warehouse_dialect: str, pipeline_code: str | None = None,
             config: ProjectConfig | None = None, alert_channels: Collection[str] | None = None) -> ValidationReport:
    """Check the Engine DB's active metadata against the project's files and, with `config`, against its
    warehouse; with `alert_channels` (the names of craft-connector.yml's Alerts channels), every active alert rule
    names only those; `pipeline_code` narrows the report to the problems that involve that pipeline."""
    metadata = load_metadata(db)
    if metadata.projects:  # one Engine DB may serve several projects: check the chosen one (its files are here)
        metadata = metadata.of_project(pick_project([p.code for p in metadata.projects]))
    report = check_metadata(metadata, project_dir, warehouse_dialect, pipeline_code)
    if alert_channels is not None:
        rules = [p for p in alert_rule_problems(db, metadata, alert_channels)
                 if pipeline_code is None or pipeline_code in p.pipelines]
        report = replace(report, problems=tuple(_ordered([*report.problems, *rules], metadata)))
    if config is None:
        return report
    found = validate_warehouse.check_warehouse(metadata, config, pipeline_code)
    problems = [*report.problems, *(_task_problem(p.task, p.check, p.finding, p.value, p.expected, p.remedy)
                                    for p in found.problems), *_relay_problems(metadata, config, pipeline_code)]
    warnings = (found.warning,) if found.warning else ()
    return replace(report, problems=tuple(_ordered(problems, metadata)), warnings=warnings,
                   notes=tuple(dict.fromkeys(found.notes)), warehouse="unreachable" if warnings else "checked")


def _relay_problems(metadata: Metadata, config: ProjectConfig, pipeline_code: str | None) -> Iterator[Problem]:
    """EMAIL_ALERT tasks send through the relay of the Email section: without one, each of them would fail."""
    if config.email is not None:
        return
    for task in metadata.tasks:
        if task.handler == "EMAIL_ALERT" and pipeline_code in (None, task.pipeline_code):
            yield _task_problem(task, "email-not-configured", "it is an EMAIL_ALERT task, but craft-connector.yml "
                                "has no Email section", None, "the SMTP relay in the Email section (host, "
                                "from_address, to)", "add the Email section (docs/guides/alerts-email.md), or "
                                f"switch the task off {_NEW_MIGRATION}")


def alert_rule_problems(db: EngineDB, metadata: Metadata, channels: Collection[str]) -> Iterator[Problem]:
    """Each channel an active CFG_ALERT_RULES row lists that is not a channel of craft-connector.yml's Alerts
    section: its alerts would be recorded undeliverable."""
    with db.read() as conn:
        rules = fetch_all(db, conn, "alert_rules")
    configured = ", ".join(sorted(channels)) or "none: craft-connector.yml has no Alerts section"
    projects = {p.code for p in metadata.projects}
    for rule in rules:
        if rule["active_flag"] != "Y" or rule["project_code"] not in projects:
            continue
        pipeline = rule["pipeline_code"]
        where = (f"alert rule {rule['alert_rule_id']} ({rule['alert_kind']} of pipeline {pipeline})" if pipeline
                 else f"alert rule {rule['alert_rule_id']} ({rule['alert_kind']}, default of project "
                      f"{rule['project_code']})")
        involved = (pipeline,) if pipeline else tuple(
            p.code for p in metadata.pipelines if p.project_code == rule["project_code"])
        for name in (c.strip() for c in str(rule["channels"]).split(",")):
            if name not in channels:
                yield Problem("alert-channel-unknown", where, f"CHANNELS names the channel {name!r}, which is not "
                              f"among the Alerts channels of craft-connector.yml ({configured})", name,
                              "a channel name of Alerts: channels",
                              f"add the channel {name} under Alerts: channels in craft-connector.yml, or correct "
                              f"CFG_ALERT_RULES.CHANNELS {_NEW_MIGRATION}", involved)


def _ordered(found: list[Problem], metadata: Metadata) -> list[Problem]:
    """Problems by pipeline (in metadata order; those of no pipeline first), then by task."""
    order = {p.code: i for i, p in enumerate(metadata.pipelines)}
    return sorted(found, key=lambda p: (order.get(p.pipelines[0], len(order)) if p.pipelines else -1, p.task or ""))


def check_metadata(metadata: Metadata, project_dir: Path, warehouse_dialect: str,
                   pipeline_code: str | None = None) -> ValidationReport:
    """The checks over a metadata snapshot (rows an older Engine DB might still hold included)."""
    if pipeline_code is not None:
        metadata.pipeline(pipeline_code)
    files = _Files(project_dir, warehouse_dialect, metadata)
    found = [*_project_problems(metadata), *_pipeline_problems(metadata)]
    for task in metadata.tasks:
        if pipeline_code in (None, task.pipeline_code):
            found += [*_task_problems(task), *_parameter_problems(task), *files.problems(task),
                      *_rule_problems(task, metadata, warehouse_dialect)]
    found += [*_edge_problems(metadata), *_cycle_problems(metadata), *_format_problems(metadata)]
    if pipeline_code is not None:
        found = [p for p in found if pipeline_code in p.pipelines]
    found = _ordered(found, metadata)
    checked = [p for p in metadata.pipelines if pipeline_code in (None, p.code)]
    tasks = sum(p.task_count for p in checked)
    return ValidationReport(tuple(found), tuple(p.code for p in checked), tasks, files.read)


# -- projects and pipelines ----------------------------------------------------------------------------------

def _zone_problem(zone: str | None) -> str | None:
    """A set time zone that is not one (etlcraft.core.zones checks it, as run does); None: not set, or fine."""
    return None if zone is None else zone_problem(zone)


def _project_problems(metadata: Metadata) -> Iterator[Problem]:
    for project in metadata.projects:
        codes = tuple(p.code for p in metadata.pipelines if p.project_code == project.code)
        if _zone_problem(project.timezone):
            yield Problem("timezone-unknown", f"project {project.code}", f"TIMEZONE {project.timezone!r} is not an "
                          "IANA time zone", project.timezone, _ZONE_EXPECTED,
                          f"set CFG_PROJECTS.TIMEZONE {_NEW_MIGRATION}, or set it to NULL to use "
                          "Orchestration: Timezone of craft-connector.yml, else UTC", codes)
        if not params.CODE.match(project.default_pool):
            yield Problem("pool-not-identifier", f"project {project.code}", f"DEFAULT_POOL {project.default_pool!r} "
                          "is not a pool name", project.default_pool, params.BY_NAME["POOL"].expected,
                          f"set CFG_PROJECTS.DEFAULT_POOL {_NEW_MIGRATION}", codes)


def _pipeline_problems(metadata: Metadata) -> Iterator[Problem]:
    for pipeline in metadata.pipelines:
        where = f"pipeline {pipeline.code}"
        if not params.CODE.match(pipeline.code):
            yield _code_problem(where, "PIPELINE_CODE", pipeline.code, (pipeline.code,))
        if pipeline.schedule is not None:
            try:
                parse(pipeline.schedule)
            except CronError as exc:
                yield Problem("schedule-invalid", where, f"RUN_SCHEDULE {pipeline.schedule!r} is not a cron "
                              f"schedule: {exc}", pipeline.schedule,
                              "five cron fields (minute hour day-of-month month day-of-week) or a macro "
                              "(@hourly, @daily, @weekly, @monthly, @yearly)",
                              f"correct RUN_SCHEDULE {_NEW_MIGRATION}", (pipeline.code,))
        if _zone_problem(pipeline.timezone):
            yield Problem("timezone-unknown", where, f"SCHEDULE_TIMEZONE {pipeline.timezone!r} is not an IANA "
                          "time zone", pipeline.timezone, _ZONE_EXPECTED,
                          f"correct SCHEDULE_TIMEZONE {_NEW_MIGRATION}, or set it to NULL to use the project's "
                          "time zone", (pipeline.code,))


def _code_problem(where: str, column: str, code: str, pipelines: tuple[str, ...], task: str | None = None
                  ) -> Problem:
    return Problem("code-not-identifier", where, f"{column} {code!r} is not an identifier", code,
                   "a letter, then letters, digits or _, at most 128 characters",
                   f"rename it {_NEW_MIGRATION}: codes appear in commands, file names and generated YAML",
                   pipelines, task)


# -- tasks -----------------------------------------------------------------------------------------------------

def _task_problem(task: TaskView, check: str, finding: str, value: str | None, expected: str, remedy: str
                  ) -> Problem:
    return Problem(check, f"task {task.key}", finding, value, expected, remedy, (task.pipeline_code,), task.code)


def _task_problems(task: TaskView) -> Iterator[Problem]:
    if not params.CODE.match(task.code):
        yield _code_problem(f"task {task.key}", "TASK_CODE", task.code, (task.pipeline_code,), task.code)
    if task.handler not in _ENUMS["Handler"]:
        yield _task_problem(task, "handler-unknown", f"HANDLER {task.handler!r} is not a handler", task.handler,
                            f"one of {', '.join(_ENUMS['Handler'])}", f"correct HANDLER {_NEW_MIGRATION}")
        return
    if task.handler == "SQL" and task.action not in _ENUMS["SqlAction"]:
        found = "ACTION is not set" if task.action is None else f"ACTION {task.action!r} is not an SQL action"
        yield _task_problem(task, "action-invalid", found, task.action, f"one of {', '.join(_ENUMS['SqlAction'])}",
                            f"set ACTION {_NEW_MIGRATION}")
    if task.handler != "SQL" and task.action is not None:
        yield _task_problem(task, "action-not-applicable", f"ACTION {task.action!r} is set on a {task.handler} task",
                            task.action, "ACTION only on SQL tasks", f"set ACTION to NULL {_NEW_MIGRATION}")
    yield from _file_column_problems(task)
    if task.target is not None and not _TARGET_NAME.match(task.target.strip()):
        yield _task_problem(task, "target-invalid", f"TARGET_OBJECT {task.target!r} is not a table name",
                            task.target, "table, schema.table or catalog.schema.table, each part made of letters, "
                            "digits and _", f"correct TARGET_OBJECT {_NEW_MIGRATION}")
    if task.run_condition not in _ENUMS["RunCondition"]:
        yield _task_problem(task, "run-condition-unknown", f"RUN_CONDITION {task.run_condition!r} is not a run "
                            "condition", task.run_condition, f"one of {', '.join(_ENUMS['RunCondition'])}",
                            f"correct RUN_CONDITION {_NEW_MIGRATION}")


def _file_column_problems(task: TaskView) -> Iterator[Problem]:
    columns = (("SQL_FILE", task.sql_file, "SQL"), ("SCRIPT_FILE", task.script_file, "PYTHON"))
    for column, value, handler in columns:
        if task.handler == handler and not (value or "").strip():
            yield _task_problem(task, "file-missing", f"{column} is not set", value,
                                f"the file a {handler} task runs, relative to "
                                f"{SQL_DIR if handler == 'SQL' else SCRIPT_DIR}/", f"set {column} {_NEW_MIGRATION}")
        elif task.handler != handler and value is not None:
            yield _task_problem(task, "file-not-applicable", f"{column} {value!r} is set on a {task.handler} task",
                                value, f"{column} only on {handler} tasks", f"set {column} to NULL {_NEW_MIGRATION}")
    if task.handler in ("SQL", "BUSINESS_RULES") and not (task.target or "").strip():
        table = "the table the task writes" if task.handler == "SQL" else "the table the task's rules judge"
        yield _task_problem(task, "target-missing", "TARGET_OBJECT is not set", task.target,
                            f"{table} (schema.table)", f"set TARGET_OBJECT {_NEW_MIGRATION}")


def _rule_problems(task: TaskView, metadata: Metadata, dialect: str) -> Iterator[Problem]:
    rules = metadata.rules_of(task.task_id)
    if task.handler == "BUSINESS_RULES" and not rules:
        yield _task_problem(task, "rules-missing", "the task has no active rule", None,
                            "at least one active row of CFG_BUSINESS_RULES with its TASK_ID",
                            f"add its rules {_NEW_MIGRATION}, or switch the task off")
    for rule in rules:
        if task.handler != "BUSINESS_RULES":
            yield _task_problem(task, "rule-not-applicable", f"rule {rule.code} belongs to a {task.handler} task",
                                rule.code, "rules only on BUSINESS_RULES tasks",
                                f"switch the rule off or move it to a BUSINESS_RULES task {_NEW_MIGRATION}")
            continue
        try:
            read_condition(rule.rule_sql, dialect, source=f"rule {rule.code}")
        except SelectError as exc:
            yield _task_problem(task, "rule-sql-invalid", f"the RULE_SQL of rule {rule.code} {exc.found}",
                                rule.rule_sql, "one condition that every valid row meets, such as amount >= 0 (a "
                                "subquery may read, nothing may write)", f"correct RULE_SQL {_NEW_MIGRATION}")


def _parameter_problems(task: TaskView) -> Iterator[Problem]:
    given = {p.name for p in task.parameters}
    kind = f"{task.action} task" if task.handler == "SQL" else f"{task.handler} task"
    for value in task.parameters:
        spec = params.parameter(value.name)
        if spec is None:
            near = params.suggestions(value.name)
            hint = f" (did you mean {' or '.join(near)}?)" if near else ""
            takes = ", ".join(p.name for p in params.applicable(task.handler, task.action))
            yield _task_problem(task, "parameter-unknown", f"parameter {value.name} is not a task parameter{hint}",
                                value.name, f"one of the parameters {kind}s take ({takes}; see "
                                "docs/reference/task-parameters.md)", f"rename or remove it {_NEW_MIGRATION}")
        elif task.handler in _ENUMS["Handler"] and not spec.applies(task.handler, task.action):
            yield _task_problem(task, "parameter-not-applicable", f"parameter {spec.name} does not apply to "
                                f"{kind}s", value.value, f"{spec.name} only on {spec.scope}",
                                f"remove it {_NEW_MIGRATION}")
        elif (reason := spec.check(value.value)) is not None:
            yield _task_problem(task, "parameter-invalid", f"parameter {spec.name} {reason}", value.value,
                                spec.expected, f"correct its PARAMETER_VALUE {_NEW_MIGRATION}")
        elif spec.name in ("SUBJECT", "BODY") and (unknown := unknown_tokens(value.value or "")):
            yield _task_problem(task, "token-unknown", f"parameter {spec.name} uses {', '.join(unknown)}, which "
                                f"{'has' if len(unknown) == 1 else 'have'} no value", value.value,
                                f"tokens among {', '.join('$$' + t for t in _ALERT_TOKENS)}",
                                f"correct its PARAMETER_VALUE {_NEW_MIGRATION}")
    yield from _missing_keys_problems(task)
    for spec in params.PARAMETERS:
        if spec.name not in given and spec.required(task.handler, task.action or None):
            yield _task_problem(task, "parameter-required", f"parameter {spec.name} is missing", None,
                                f"{spec.name} on every {kind}: {spec.expected}",
                                f"add a CFG_TASK_PARAMETERS row {spec.name} for the task {_NEW_MIGRATION}")


def _missing_keys_problems(task: TaskView) -> Iterator[Problem]:
    """SCD2_MISSING_KEYS CLOSE or MARK_DELETED on a task not declared FULL_SNAPSHOT = Y: an incremental SELECT
    would close every key outside its extract. The handler refuses the same at run time."""
    if task.handler != "SQL" or task.action != "SCD2_MERGE":
        return
    missing_keys, full_snapshot = (params.BY_NAME["SCD2_MISSING_KEYS"], params.BY_NAME["FULL_SNAPSHOT"])
    try:
        mode = missing_keys.resolve(task.parameter(missing_keys.name))
        full = full_snapshot.resolve(task.parameter(full_snapshot.name))
    except ValueError:
        return  # an invalid value is reported as parameter-invalid
    if mode != "KEEP" and not full:
        yield _task_problem(task, "missing-keys-not-full-snapshot", f"parameter SCD2_MISSING_KEYS is {mode}, but "
                            "FULL_SNAPSHOT is not Y, so a key the SELECT does not return may only be outside an "
                            "incremental extract", mode, f"FULL_SNAPSHOT = Y with SCD2_MISSING_KEYS {mode}, or "
                            "SCD2_MISSING_KEYS KEEP", "set FULL_SNAPSHOT to Y if the SELECT returns the whole source "
                            f"on every run, else set SCD2_MISSING_KEYS to KEEP, {_NEW_MIGRATION}")


# -- dependencies ------------------------------------------------------------------------------------------------

def _edge_problems(metadata: Metadata) -> Iterator[Problem]:
    types = _ENUMS["DependencyType"]
    for edge in metadata.task_edges:
        upstream = f"{edge.upstream_pipeline_code}.{edge.upstream_task_code}"
        where = f"task {edge.pipeline_code}.{edge.task_code}"
        pipelines = (edge.pipeline_code,)
        if edge.type not in types:
            yield Problem("dependency-type-unknown", where, f"the dependency on {upstream} has DEPENDENCY_TYPE "
                          f"{edge.type!r}", edge.type, f"one of {', '.join(types)}",
                          f"correct the CFG_TASK_DEPENDENCY row {_NEW_MIGRATION}", pipelines, edge.task_code)
        if not edge.upstream_active:
            across = _across(edge.project_code, edge.upstream_project_code)
            yield Problem("dependency-inactive", where, f"it depends on {upstream}{across}, which is switched off "
                          "(ACTIVE_FLAG = 'N')", upstream,
                          "dependencies on active tasks only",
                          f"switch the dependency off too, or the task back on, {_NEW_MIGRATION}", pipelines,
                          edge.task_code)
    for pedge in metadata.pipeline_edges:
        where = f"pipeline {pedge.pipeline_code}"
        if pedge.type not in types:
            yield Problem("dependency-type-unknown", where, f"the dependency on pipeline {pedge.upstream_pipeline_code}"
                          f" has DEPENDENCY_TYPE {pedge.type!r}", pedge.type, f"one of {', '.join(types)}",
                          f"correct the CFG_PIPELINE_DEPENDENCY row {_NEW_MIGRATION}", (pedge.pipeline_code,))
        if not pedge.upstream_active:
            across = _across(pedge.project_code, pedge.upstream_project_code)
            yield Problem("dependency-inactive", where, f"it depends on pipeline {pedge.upstream_pipeline_code}"
                          f"{across}, which is switched off (ACTIVE_FLAG = 'N')",
                          pedge.upstream_pipeline_code,
                          "dependencies on active pipelines only",
                          f"switch the dependency off too, or the pipeline back on, {_NEW_MIGRATION}",
                          (pedge.pipeline_code,))


def _across(project: str, upstream_project: str) -> str:
    """For a dependency across projects, the words naming both (one Engine DB, several projects): else nothing."""
    if project == upstream_project or not upstream_project:
        return ""
    return f" of project {upstream_project} (a dependency of project {project} on another project)"


def _cycle_problems(metadata: Metadata) -> Iterator[Problem]:
    pipelines = [p.code for p in metadata.pipelines]
    tasks = [(t.pipeline_code, t.code) for t in metadata.tasks]
    # Within the project checked: a dependency on another project's pipeline leaves it (its code may be one of this
    # project's too); a cycle through several projects is refused by etl-craft migrate, which sees them all.
    task_edges = [TaskDependency(e.pipeline_code, e.task_code, e.upstream_pipeline_code, e.upstream_task_code)
                  for e in metadata.task_edges if e.upstream_active and not _across(e.project_code,
                                                                                     e.upstream_project_code)]
    pipeline_edges = [(e.pipeline_code, e.upstream_pipeline_code) for e in metadata.pipeline_edges
                      if e.upstream_active and not _across(e.project_code, e.upstream_project_code)]
    for cycle in dependency_cycles(pipelines, tasks, task_edges, pipeline_edges):
        if cycle.pipeline is not None:
            yield Problem("cycle-tasks", f"pipeline {cycle.pipeline}", f"its tasks wait for each other in a cycle: "
                          f"{cycle.text}", cycle.arrows, "task dependencies without a cycle (an arrow reads 'waits "
                          "for')", f"switch off (ACTIVE_FLAG = 'N') one CFG_TASK_DEPENDENCY row of the cycle "
                          f"{_NEW_MIGRATION}", (cycle.pipeline,))
        else:
            yield Problem("cycle-pipelines", f"pipelines {', '.join(sorted(cycle.members))}",
                          f"they wait for each other in a cycle: {cycle.text}", cycle.arrows,
                          "dependencies between pipelines without a cycle (an arrow reads 'waits for')",
                          "switch off one CFG_PIPELINE_DEPENDENCY or cross-pipeline CFG_TASK_DEPENDENCY "
                          f"row of the cycle {_NEW_MIGRATION}", tuple(dict.fromkeys(cycle.path)))


def _format_problems(metadata: Metadata) -> Iterator[Problem]:
    """B43: every task writing one TARGET_OBJECT resolves to the same TABLE_FORMAT."""
    spec = params.BY_NAME["TABLE_FORMAT"]
    by_target: dict[str, dict[str, list[TaskView]]] = {}
    for task in metadata.tasks:
        if not task.target or task.handler != "SQL" or not spec.applies(task.handler, task.action):
            continue
        raw = task.parameter("TABLE_FORMAT") or spec.default or ""
        if spec.check(raw) is None:
            by_format = by_target.setdefault(task.target.strip().lower(), {})
            by_format.setdefault(spec.parse(raw), []).append(task)
    for target, by_format in by_target.items():
        if len(by_format) > 1:
            listed = "; ".join(f"{fmt} ({', '.join(t.key for t in tasks)})" for fmt, tasks in sorted(by_format.items()))
            involved = tuple(dict.fromkeys(t.pipeline_code for tasks in by_format.values() for t in tasks))
            yield Problem("table-format-conflict", f"target {target}", f"the tasks writing it resolve to different "
                          f"table formats: {listed}", ", ".join(sorted(by_format)),
                          "one TABLE_FORMAT for every task writing the same TARGET_OBJECT",
                          f"set the same TABLE_FORMAT on all of them (without it a task writes {spec.default}) "
                          f"{_NEW_MIGRATION}", involved)


# -- files -----------------------------------------------------------------------------------------------------

class _Files:
    """The checks that read the project's files: SQL_FILE under sql_files/, SCRIPT_FILE under
    ingestion_scripts/."""

    def __init__(self, project_dir: Path, dialect: str, metadata: Metadata) -> None:
        self.project_dir, self.dialect, self.read = project_dir, dialect, 0
        self.targets = [(t.target.strip(), t) for t in metadata.tasks if t.handler == "SQL" and t.target]

    def problems(self, task: TaskView) -> Iterator[Problem]:
        if task.handler == "SQL" and task.sql_file:
            yield from self._sql_problems(task, task.sql_file)
        if task.handler == "PYTHON" and task.script_file:
            yield from self._script_problems(task, task.script_file)

    def _open(self, task: TaskView, column: str, folder: str, value: str) -> tuple[str | None, Problem | None]:
        base = (self.project_dir / folder).resolve()
        path = (base / value).resolve()
        if Path(value).is_absolute() or not path.is_relative_to(base):
            return None, _task_problem(task, "file-outside", f"{column} {value!r} is outside {folder}/", value,
                                       f"a path relative to {folder}/ that stays inside it",
                                       f"move the file into {folder}/ and correct {column} {_NEW_MIGRATION}")
        if not path.is_file():
            return None, _task_problem(task, "file-not-found", f"{column} {value!r} does not exist", value,
                                       f"the file {folder}/{value}", f"create {folder}/{value}, or correct {column} "
                                       f"{_NEW_MIGRATION}")
        self.read += 1
        try:
            return path.read_text(encoding="utf-8-sig"), None
        except UnicodeDecodeError as exc:
            return None, _task_problem(task, "file-not-utf8", f"{column} {value!r} is not UTF-8 text ({exc.reason} "
                                       f"at byte {exc.start})", value, "UTF-8 text", "save the file as UTF-8")

    def _script_problems(self, task: TaskView, value: str) -> Iterator[Problem]:
        text, problem = self._open(task, "SCRIPT_FILE", SCRIPT_DIR, value)
        if problem is not None or text is None:
            yield from [problem] if problem else []
            return
        try:
            ast.parse(text, filename=value)
        except SyntaxError as exc:
            yield _task_problem(task, "script-syntax", f"SCRIPT_FILE {value!r} is not valid Python: {exc.msg} at "
                                f"line {exc.lineno}", value, "a Python module that compiles", "fix the script")

    def _sql_problems(self, task: TaskView, value: str) -> Iterator[Problem]:
        text, problem = self._open(task, "SQL_FILE", SQL_DIR, value)
        if problem is not None or text is None:
            yield from [problem] if problem else []
            return
        values = {**_PLACEHOLDERS, **{p.name: p.value or "" for p in task.parameters}}
        try:
            uses = find_tokens(text, self.dialect, source=value)
        except ValueError:
            uses = []  # read_select reports the unreadable text
        unknown = [u for u in uses if u.name.lower() not in {k.lower() for k in values}]
        if unknown:
            tokens, verb = describe_tokens(unknown, list(values)), "has" if len(unknown) == 1 else "have"
            yield _task_problem(task, "token-unknown", f"SQL_FILE {value!r} uses {tokens}, which {verb} no value",
                                ", ".join(f"$${u.name}" for u in unknown), f"one of {known_text(list(values))}",
                                "correct the token, or keep $$ text inside a string literal or a comment")
            values.update({u.name: 0 for u in unknown})
        try:
            sql = substitute(text, values, self.dialect, source=value) if uses else text
            shape = read_select(sql, self.dialect, source=value)
        except SelectError as exc:
            yield _task_problem(task, "sql-not-one-select", f"SQL_FILE {value!r} {exc.found}", value,
                                "exactly one read-only SELECT (a trailing ; and comments are fine)", exc.remedy)
            return
        yield from self._column_problems(task, value, shape)

    def _column_problems(self, task: TaskView, value: str, shape: SelectShape) -> Iterator[Problem]:
        reserved = engine_managed_columns(task.action)
        named = [c for c in shape.columns if c.name is not None]
        engine = [c.name for c in named if c.name and c.name.upper() in reserved]
        if engine:
            yield _task_problem(task, "column-engine-managed", f"the SELECT of {value!r} returns "
                                f"{', '.join(engine)}, which etl-craft writes itself", ", ".join(engine),
                                f"no column named {', '.join(reserved)}", "alias those columns, or leave them out")
        for table in shape.star_tables:
            owners = [t for target, t in self.targets if same_table(table, target, self.dialect)]
            if owners:
                yield _task_problem(task, "column-engine-managed", f"the SELECT of {value!r} takes every column of "
                                    f"{table} with *, and {table} is written by task {owners[0].key}, so it returns "
                                    "the columns etl-craft writes itself", table,
                                    f"no column named {', '.join(ENGINE_MANAGED_COLUMNS)}",
                                    "list the columns you need instead of *")
        yield from _name_problems(task, value, shape)


def _name_problems(task: TaskView, value: str, shape: SelectShape) -> Iterator[Problem]:
    seen: dict[str, int] = {}
    for column in shape.columns:
        if column.name is None:
            expression = column.expression if len(column.expression) <= 60 else column.expression[:57] + "..."
            yield _task_problem(task, "column-unnamed", f"column {column.position} of the SELECT of {value!r} "
                                f"({expression}) has no name, so the warehouse names it", expression,
                                "a name for every computed column", f"give it one: {expression} AS <name>")
            continue
        plain = params.PLAIN_NAME.match(column.name) is not None
        if not plain or (column.quoted and column.name != column.name.lower()):
            yield _task_problem(task, "column-needs-quotes", f"the SELECT of {value!r} returns a column named "
                                f'"{column.name}", which needs quoting', column.name,
                                "names of lower-case letters, digits and _ (a quoted name keeps its case, so every "
                                "later statement would have to quote it)", f"alias it, for example AS "
                                f"{_snake(column.name)}")
        key = column.name.lower()
        if key in seen:
            yield _task_problem(task, "column-duplicate", f"the SELECT of {value!r} returns {column.name} twice "
                                f"(columns {seen[key]} and {column.position})", column.name,
                                "each output name once", "alias one of them")
        seen.setdefault(key, column.position)
    if shape.resolved:
        yield from _merge_column_problems(task, value, set(seen))


def _merge_column_problems(task: TaskView, value: str, returned: set[str]) -> Iterator[Problem]:
    for name in ("MERGE_KEY", "MERGE_COMPARE_COLUMNS"):
        spec, raw = params.BY_NAME[name], task.parameter(name)
        if raw is None or not spec.applies(task.handler, task.action) or spec.check(raw) is not None:
            continue
        missing = [c for c in spec.parse(raw) if c.lower() not in returned]
        if missing:
            yield _task_problem(task, "merge-column-missing", f"parameter {name} names {', '.join(missing)}, which "
                                f"the SELECT of {value!r} does not return", raw,
                                f"columns the SELECT returns ({', '.join(sorted(returned))})",
                                f"correct {name} {_NEW_MIGRATION}, or return the column")


def _snake(name: str) -> str:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    snake = re.sub(r"[^A-Za-z0-9]+", "_", spaced).strip("_").lower()
    return snake if snake and not snake[0].isdigit() else f"c_{snake}"

