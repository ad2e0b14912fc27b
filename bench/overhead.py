"""Orchestration overhead per task of `etl-craft run`, beside the cost of starting a Python process.

For each Engine DB dialect (SQLite and PostgreSQL), times `etl-craft run` of a pipeline of 1 no-op PYTHON task
(T1) and of 100 no-op PYTHON tasks (T100), as a chain (each task depends on the one before) and as a fan-out (one
task, then 99 that depend on it, Max_parallel_tasks at a time). Every attempt runs in its own task process and is
recorded in the Engine DB; after each run the bench reads the run back and checks that every task succeeded, each
in a process of its own. Orchestration overhead per task is (T100 - T1) / 100, in seconds. In the same run it times
`python3 -c pass` spawns (100 before the runs and 100 after, averaged: the machine's load moves) and 100
`python3 -c 'import sqlalchemy, yaml'` spawns, and prints the overhead per task as a multiple of one bare spawn
(target: at most 3 on PostgreSQL, chain and fan-out).

    python bench/overhead.py [--tasks 100] [--repeat 1] [--slots 4] [--dialects sqlite,postgresql]

Uses ETL_CRAFT_TEST_PG_URL (default postgresql://root@127.0.0.1:5432/test) to create and drop its database.
T1 and T100 are the median of --repeat runs (T1 of at least three).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
ADMIN = os.environ.get("ETL_CRAFT_TEST_PG_URL", "postgresql://root@127.0.0.1:5432/test")
TARGET_RATIO = 3.0
NOOP_SCRIPT = '''from etlcraft.scripting import ScriptResult


def run(task):
    return ScriptResult(row_count=0)
'''


@dataclass(frozen=True)
class Figure:
    dialect: str
    shape: str
    t1: float
    t100: float
    tasks: int

    @property
    def per_task(self) -> float:
        return (self.t100 - self.t1) / self.tasks


def spawn_seconds(code: str, count: int) -> float:
    """Seconds per spawn of `python3 -c code`, over `count` spawns one after the other."""
    started = time.perf_counter()
    for _ in range(count):
        subprocess.run([sys.executable, "-c", code], check=True)
    return (time.perf_counter() - started) / count


def metadata(tasks: int) -> str:
    """Three pipelines of no-op PYTHON tasks: one1 (one task), chain (t1 <- t2 <- ...), fanout (t1 <- every other)."""
    sql = ["INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('bench');"]
    shapes = {"one1": (1, None), "chain": (tasks, "chain"), "fanout": (tasks, "fanout")}
    for pipeline, (count, shape) in shapes.items():
        sql.append(f"INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, '{pipeline}' "
                   "FROM CFG_PROJECTS;")
        for n in range(1, count + 1):
            sql.append(f"INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE) SELECT PIPELINE_ID, "
                       f"'{pipeline}_t{n:03d}', 'PYTHON', 'noop.py' FROM CFG_PIPELINES WHERE PIPELINE_CODE = "
                       f"'{pipeline}';")
            upstream = n - 1 if shape == "chain" else 1 if shape == "fanout" else 0
            if n > 1 and upstream:
                sql.append("INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) SELECT "
                           f"t.TASK_ID, u.TASK_ID, 'SUCCESS' FROM CFG_TASKS t, CFG_TASKS u WHERE t.TASK_CODE = "
                           f"'{pipeline}_t{n:03d}' AND u.TASK_CODE = '{pipeline}_t{upstream:03d}';")
    return "\n".join(sql) + "\n"


def write_project(root: Path, engine_url: str | None, tasks: int, slots: int) -> Path:
    root.mkdir(parents=True)
    engine = (f"Engine:\n  dialect: postgresql\n  url: {engine_url}\n" if engine_url
              else "Engine:\n  dialect: sqlite\n  path: .etl-craft/engine.db\n")
    (root / "craft-connector.yml").write_text(
        engine + "Warehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n"
        f"Orchestration:\n  Max_parallel_tasks: {slots}\n")
    (root / "ingestion_scripts").mkdir()
    (root / "ingestion_scripts" / "noop.py").write_text(NOOP_SCRIPT)
    (root / "migrations").mkdir()
    (root / "migrations" / "0001_bench.sql").write_text(metadata(tasks))
    return root


def etl_craft(project: Path, *args: str) -> float:
    """Run etl-craft in `project`; the wall-clock seconds it took. Fails loudly when the command fails."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ETL_CRAFT_", "ETL_CRAFT_"))}
    environ["ETL_CRAFT_ACTOR"] = "bench@overhead"
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environ.get("PYTHONPATH")]))  # this checkout
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "etlcraft", *args], cwd=project, env=environ,
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"etl-craft {' '.join(args)} in {project} exited {done.returncode}; expected 0:\n"
                         f"{done.stdout}{done.stderr}")
    return seconds


def check_run(engine: sa.Engine, schema: str, pipeline: str, tasks: int) -> None:
    """The pipeline's latest run ended SUCCESS with one SUCCESS attempt per task, each in a process of its own."""
    q = f"{schema}." if schema else ""
    with engine.connect() as conn:
        run_id, status = conn.execute(sa.text(
            f"SELECT r.PIPELINE_RUN_ID, r.STATUS FROM {q}AUD_PIPELINES_RUN_LOG r JOIN {q}CFG_PIPELINES p "
            "ON p.PIPELINE_ID = r.PIPELINE_ID WHERE p.PIPELINE_CODE = :code ORDER BY r.PIPELINE_RUN_ID DESC"),
            {"code": pipeline}).first()  # type: ignore[misc]
        attempts, pids = conn.execute(sa.text(
            f"SELECT COUNT(*), COUNT(DISTINCT a.PID) FROM {q}AUD_TASK_ATTEMPTS a JOIN {q}AUD_TASK_RUN_LOG t "
            "ON t.TASK_RUN_ID = a.TASK_RUN_ID WHERE t.PIPELINE_RUN_ID = :run AND a.STATUS = 'SUCCESS'"),
            {"run": run_id}).one()
    if (status, attempts, pids) != ("SUCCESS", tasks, tasks):
        raise SystemExit(f"run {run_id} of {pipeline} ended {status} with {attempts} SUCCESS attempt(s) in {pids} "
                         f"process(es); expected SUCCESS with {tasks} attempts in {tasks} processes")


def measure(dialect: str, workdir: Path, tasks: int, repeat: int, slots: int) -> list[Figure]:
    database = f"etlcraft_bench_{uuid.uuid4().hex[:8]}" if dialect == "postgresql" else None
    engine_url = make_url(ADMIN).set(database=database).render_as_string(hide_password=False) if database else None
    if database:
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"')
    try:
        project = write_project(workdir / dialect, engine_url, tasks, slots)
        etl_craft(project, "migrate")
        engine = sa.create_engine(engine_url or f"sqlite:///{project / '.etl-craft' / 'engine.db'}")
        schema = "etl_craft" if database else ""

        def timed(pipeline: str, count: int, times: int) -> float:
            seconds = []
            for _ in range(times):
                seconds.append(etl_craft(project, "run", "--pipeline-code", pipeline))
                check_run(engine, schema, pipeline, count)
            return statistics.median(seconds)

        t1 = timed("one1", 1, max(3, repeat))
        figures = [Figure(dialect, shape, t1, timed(shape, tasks, repeat), tasks) for shape in ("chain", "fanout")]
        engine.dispose()
        return figures
    finally:
        if database:
            with psycopg.connect(ADMIN, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--slots", type=int, default=4, help="Max_parallel_tasks (the fan-out's parallelism)")
    parser.add_argument("--dialects", default="sqlite,postgresql")
    args = parser.parse_args()
    bare_before = spawn_seconds("pass", 100)
    heavy = spawn_seconds("import sqlalchemy, yaml", 100)
    with tempfile.TemporaryDirectory(prefix="etlcraft-bench-") as tmp:
        figures = [f for d in args.dialects.split(",") for f in measure(d, Path(tmp), args.tasks, args.repeat,
                                                                        args.slots)]
    bare_after = spawn_seconds("pass", 100)
    bare = (bare_before + bare_after) / 2
    print(f"python3 -c pass: {bare:.4f} s per spawn (100 spawns before the runs: {bare_before:.4f} s, 100 after: "
          f"{bare_after:.4f} s)")
    print(f"python3 -c 'import sqlalchemy, yaml': {heavy:.4f} s per spawn (100 spawns)")
    print(f"\n{'dialect':<11} {'shape':<7} {'T1 s':>6} {'T' + str(args.tasks) + ' s':>7} {'overhead/task s':>16} "
          f"{'x bare spawn':>13}  target (<= {TARGET_RATIO:g}x)")
    for f in figures:
        ratio = f.per_task / bare
        print(f"{f.dialect:<11} {f.shape:<7} {f.t1:>6.2f} {f.t100:>7.2f} {f.per_task:>16.4f} {ratio:>13.2f}  "
              f"{'met' if ratio <= TARGET_RATIO else 'missed'}")


if __name__ == "__main__":
    main()
