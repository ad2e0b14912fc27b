"""Throwaway etl-craft projects for process tests: a config on SQLite or PostgreSQL, PYTHON tasks running one
test script, dependencies, and helpers to read what the script left behind (marks of when each task ran)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from etlcraft.config.loader import load_config
from etlcraft.engine.db import EngineDB
from etlcraft.engine.settings import engine_id
from etlcraft.paths import task_log_dir

#: The top of every test task script: mark(path, text) writes a mark whole (beside marks/, then renamed into it), so a
#: test that sees marks/<task>.<attempt>.start can read the pid it holds.
MARK = '''
import os as _os


def mark(path, text):
    partial = path.parent.parent / f".{path.name}.{_os.getpid()}.partial"
    partial.write_text(text)
    _os.replace(partial, path)
'''

WORK_SCRIPT = MARK + '''
import os
import time

from etlcraft.scripting import ScriptResult, ScriptTask


def run(task: ScriptTask) -> ScriptResult:
    params = task.input_params
    marks = task.project_dir / "marks"
    marks.mkdir(exist_ok=True)
    again = any(marks.glob(f"{task.task_code}.*.start"))  # with "once", only the first attempt takes its time
    mark(marks / f"{task.task_code}.{task.attempt_id}.start", f"{time.time()} {os.getpid()}")
    print(f"{task.task_code} working (attempt {task.attempt_id}, last offset {task.last_offset})", flush=True)
    if params.get("hold"):  # wait until the test releases it: no race with how fast the machine is today
        deadline = time.time() + 120
        while not (task.project_dir / "holds" / params["hold"]).exists() and time.time() < deadline:
            time.sleep(0.05)
    time.sleep(0 if again and params.get("once") else float(params.get("seconds", 0)))
    mark(marks / f"{task.task_code}.{task.attempt_id}.end", str(time.time()))
    if params.get("fail"):
        raise RuntimeError(f"{task.task_code} was told to fail")
    if len(list(marks.glob(f"{task.task_code}.*.start"))) <= int(params.get("fail_times", 0)):
        raise RuntimeError(f"{task.task_code} fails its first {params['fail_times']} attempt(s)")
    return ScriptResult(row_count=int(params.get("rows", 1)), offset=params.get("offset"))
'''


@dataclass
class Task:
    code: str
    params: dict[str, Any] = field(default_factory=dict)
    timeout: int | None = None
    script: str = "work.py"  # under ingestion_scripts/: the work script, or one given to write_project


def write_project(root: Path, engine_url: str | None, pipelines: dict[str, list[Task]],
                  edges: list[tuple[str, str, str]], *, lease_seconds: int = 60, slots: int = 4,
                  scripts: dict[str, str] | None = None) -> Path:
    """A project in `root`: `pipelines` of PYTHON tasks running the work script (or the one their Task names, from
    `scripts`: file name to source), `edges` (task, depends on, type)."""
    root.mkdir(parents=True, exist_ok=True)
    engine = (f"Engine:\n  dialect: postgresql\n  url: {engine_url}\n" if engine_url
              else "Engine:\n  dialect: sqlite\n  path: .etl-craft/engine.db\n")
    (root / "craft-connector.yml").write_text(
        engine + "Warehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n"
        f"Orchestration:\n  Max_parallel_tasks: {slots}\n  Lease_seconds: {lease_seconds}\n"
        f"  Heartbeat_seconds: {max(1, lease_seconds // 5)}\n")
    (root / "ingestion_scripts").mkdir(exist_ok=True)
    (root / "ingestion_scripts" / "work.py").write_text(WORK_SCRIPT)
    for name, source in (scripts or {}).items():
        (root / "ingestion_scripts" / name).write_text(source)
    (root / "migrations").mkdir(exist_ok=True)
    (root / "migrations" / "0001_pipelines.sql").write_text(_metadata(pipelines, edges))
    return root


def _metadata(pipelines: dict[str, list[Task]], edges: list[tuple[str, str, str]]) -> str:
    sql = ["INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('proc');"]
    for pipeline, tasks in pipelines.items():
        sql.append(f"INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, '{pipeline}'"
                   " FROM CFG_PROJECTS;")
        for task in tasks:
            sql.append(f"INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE) SELECT PIPELINE_ID,"
                       f" '{task.code}', 'PYTHON', '{task.script}' FROM CFG_PIPELINES"
                       f" WHERE PIPELINE_CODE = '{pipeline}';")
            parameters = {"INPUT_PARAMS": json.dumps(task.params)} if task.params else {}
            if task.timeout is not None:
                parameters["TASK_TIMEOUT_SECONDS"] = str(task.timeout)
            for name, value in parameters.items():
                sql.append(f"INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT"
                           f" TASK_ID, '{name}', '{value}' FROM CFG_TASKS WHERE TASK_CODE = '{task.code}';")
    for task, upstream, kind in edges:
        sql.append("INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) SELECT t.TASK_ID,"
                   f" u.TASK_ID, '{kind}' FROM CFG_TASKS t, CFG_TASKS u WHERE t.TASK_CODE = '{task}'"
                   f" AND u.TASK_CODE = '{upstream}';")
    return "\n".join(sql) + "\n"


def release(project: Path, hold: str) -> None:
    """Let the tasks whose INPUT_PARAMS say {"hold": hold} finish."""
    (project / "holds").mkdir(exist_ok=True)
    (project / "holds" / hold).write_text("")


def marks(project: Path) -> dict[str, float]:
    """When each task's script started and ended: {'a.start': t, 'a.end': t} (the latest attempt wins)."""
    found: dict[str, float] = {}
    for path in sorted((project / "marks").glob("*"), key=lambda p: int(p.name.split(".")[1])):
        task, _, event = path.name.split(".")
        found[f"{task}.{event}"] = float(path.read_text().split()[0])
    return found


def wait_for(condition: Any, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def run_logs(project: Path, pipeline: str, run_id: int) -> Path:
    """The folder of the task logs of run `run_id` of `pipeline`: under the identity of the project's Engine DB
    (.etl-craft/logs/<identity>/<pipeline>/<run>/)."""
    engine = load_config(project).engine
    db = EngineDB(engine.url, schema=engine.schema or "etl_craft")
    try:
        return task_log_dir(project, engine_id(db), pipeline, run_id)
    finally:
        db.dispose()
