"""Orchestration overhead per task of `etl-craft run`, beside the cost of starting a Python process.

For each Engine DB dialect (SQLite and PostgreSQL), times `etl-craft run` of a pipeline of 1 no-op PYTHON task
(T1) and of N no-op PYTHON tasks (T_N), as a chain (each task depends on the one before) and as a fan-out (one
task, then N - 1 that depend on it, Max_parallel_tasks at a time). Every attempt runs in its own task process and is
recorded in the Engine DB; after each run the bench reads the run back and checks that every task succeeded, each
in a process of its own. Orchestration overhead per task is (T_N - T1) / N, in seconds. In the same run it times
`python3 -c pass` spawns (100 before the runs and 100 after, averaged: the machine's load moves) and 100
`python3 -c 'import sqlalchemy, yaml'` spawns, and prints the overhead per task as a multiple of one bare spawn
(issue 6 set at most 3 on PostgreSQL; issue 27 measures against the floor below instead).

    python bench/overhead.py [--tasks 10,100] [--repeat 1] [--slots 4] [--dialects sqlite,postgresql] [--no-floor]

--tasks takes one size or several (for issue 27: 10,100,1000,10000; the default stays quick): each size N gets a
chain and a fan-out of N tasks, and per-task overhead (T_N - T1) / N is printed for each. For each size above 1,000
the ratio to 100 tasks is printed too (linear: near 1): each large run against T1 and T_100 measured right before
and right after it (three and five runs), the median over --repeat large runs; a 10,000-task run takes minutes, and
this machine's speed drifts by more than the target's margin between figures taken apart. Each large run also prints
the median time between two attempts' starts in each fifth of it: a link's cost early and late in one run. In the
same run, on PostgreSQL, bench/floor.py (a minimal supervisor of no etl-craft code that forks one child per task and
records claim and finish with plain SQL) gives the floor per task for each size and shape, measured right after etl-
craft's run of that size and shape, and each etl-craft figure is printed as a multiple of it (issue 27: at most 2).

Uses ETL_CRAFT_TEST_PG_URL (default postgresql://root@127.0.0.1:5432/test) to create and drop its database.
T1 and T_N are the median of --repeat runs (T1, and T_N up to 1,000 tasks, of at least three: a run of a few
seconds moves most with the machine's load). The Engine DB is never analyzed by hand.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent))
import floor  # bench/floor.py: no etl-craft code

ROOT = Path(__file__).resolve().parent.parent
ADMIN = os.environ.get("ETL_CRAFT_TEST_PG_URL", "postgresql://root@127.0.0.1:5432/test")
NOOP_SCRIPT = '''from etlcraft.scripting import ScriptResult


def run(task):
    return ScriptResult(row_count=0)
'''


@dataclass(frozen=True)
class Figure:
    dialect: str
    shape: str
    t1: float
    tn: float  # T_N: the run of `tasks` tasks
    tasks: int

    @property
    def per_task(self) -> float:
        return (self.tn - self.t1) / self.tasks


def spawn_seconds(code: str, count: int) -> float:
    """Seconds per spawn of `python3 -c code`, over `count` spawns one after the other."""
    started = time.perf_counter()
    for _ in range(count):
        subprocess.run([sys.executable, "-c", code], check=True)
    return (time.perf_counter() - started) / count


def metadata(sizes: list[int]) -> str:
    """Pipelines of no-op PYTHON tasks: one1 (one task), and for each size N chainN (t1 <- t2 <- ...) and fanoutN
    (t1 <- every other), set-based (one INSERT of tasks and one of edges per pipeline; task ids follow the order)."""
    sql = ["INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('bench');"]
    shapes = [("one1", 1, None)] + [(f"{shape}{n}", n, shape) for n in sizes for shape in ("chain", "fanout")]
    for pipeline, count, shape in shapes:
        sql.append(f"INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, '{pipeline}' "
                   "FROM CFG_PROJECTS;")
        pid = f"(SELECT PIPELINE_ID FROM CFG_PIPELINES WHERE PIPELINE_CODE = '{pipeline}')"
        values = ",\n".join(f"({pid}, '{pipeline}_t{n:05d}', 'PYTHON', 'noop.py')" for n in range(1, count + 1))
        sql.append(f"INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE) VALUES\n{values};")
        if shape is not None and count > 1:
            upstream = ("u.TASK_ID = t.TASK_ID - 1" if shape == "chain"
                        else f"u.TASK_CODE = '{pipeline}_t00001' AND t.TASK_ID <> u.TASK_ID")
            sql.append("INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) SELECT "
                       "t.TASK_ID, u.TASK_ID, 'SUCCESS' FROM CFG_TASKS t JOIN CFG_TASKS u ON u.PIPELINE_ID = "
                       f"t.PIPELINE_ID AND {upstream} WHERE t.PIPELINE_ID = {pid};")
    return "\n".join(sql) + "\n"


def write_project(root: Path, engine_url: str | None, sizes: list[int], slots: int) -> Path:
    root.mkdir(parents=True)
    engine = (f"Engine:\n  dialect: postgresql\n  url: {engine_url}\n" if engine_url
              else "Engine:\n  dialect: sqlite\n  path: .etl-craft/engine.db\n")
    (root / "craft-connector.yml").write_text(
        engine + "Warehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n"
        f"Orchestration:\n  Max_parallel_tasks: {slots}\n")
    (root / "ingestion_scripts").mkdir()
    (root / "ingestion_scripts" / "noop.py").write_text(NOOP_SCRIPT)
    (root / "migrations").mkdir()
    (root / "migrations" / "0001_bench.sql").write_text(metadata(sizes))
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


BASE = 100  # the size the largest sizes' per-task overhead is compared with (issue 27: at most 1.2 times)
LARGE = 1000  # sizes above it are measured with BASE around them


@dataclass(frozen=True)
class Linearity:
    """Per-task overhead at a large size against BASE tasks measured around it: each run of the large size is
    compared with the BASE-task figures measured right before and right after it, so that the machine's drift
    over a run of several minutes moves both alike."""
    system: str
    shape: str
    large: Figure  # T_N: the median of the large runs; T1: the median of the runs around them
    base: Figure  # T1 and T_BASE: the medians of the runs around the large ones
    ratios: tuple[float, ...]  # each large run's per-task overhead / the mean of the BASE figures either side of it

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)


AROUND_ONES, AROUND_BASES = 3, 5  # runs of 1 and of BASE tasks before each large run and after the last


def sized(system: str, shape: str, once: Callable[[int], float], n: int, times: int, t1: float,
          linear: list[Linearity]) -> Figure:
    """`system`'s figure for `n` tasks of `shape` (`once(count)` times one run of `count` tasks). Above LARGE tasks,
    T1 and T_BASE are measured again before each of the `times` runs of `n` tasks and after the last, and each
    large run's ratio to the BASE figures either side of it goes to `linear`."""
    if n <= LARGE:
        return Figure(system, shape, t1, statistics.median(once(n) for _ in range(times)), n)
    groups: list[tuple[float, float]] = []  # (T1, T_BASE) medians of each group of runs around the large ones
    larges: list[float] = []

    def around() -> None:
        ones = statistics.median(once(1) for _ in range(AROUND_ONES))
        groups.append((ones, statistics.median(once(BASE) for _ in range(AROUND_BASES))))

    around()
    for _ in range(times):
        larges.append(once(n))
        around()
    ratios = []
    for i, seconds in enumerate(larges):
        (one_before, base_before), (one_after, base_after) = groups[i], groups[i + 1]
        per_task = (seconds - (one_before + one_after) / 2) / n
        base_per_task = ((base_before - one_before) + (base_after - one_after)) / 2 / BASE
        ratios.append(per_task / base_per_task)
    t1_around = statistics.median(g[0] for g in groups)
    large = Figure(system, shape, t1_around, statistics.median(larges), n)
    base = Figure(system, shape, t1_around, statistics.median(g[1] for g in groups), BASE)
    linear.append(Linearity(system, shape, large, base, tuple(ratios)))
    return large


def start_gaps(engine: sa.Engine, schema: str, pipeline: str, parts: int = 5) -> list[float]:
    """The median time between one attempt's start and the next's, in ms, in each of `parts` equal parts of the
    pipeline's latest run (in order of start): the cost of a link early and late in one run, taken minutes apart at
    most, where the machine's drift between runs does not enter."""
    q = f"{schema}." if schema else ""
    with engine.connect() as conn:
        starts = [row[0] for row in conn.execute(sa.text(
            f"SELECT a.STARTED_AT FROM {q}AUD_TASK_ATTEMPTS a JOIN {q}AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = "
            f"a.TASK_RUN_ID WHERE t.PIPELINE_RUN_ID = (SELECT MAX(r.PIPELINE_RUN_ID) FROM {q}AUD_PIPELINES_RUN_LOG r "
            f"JOIN {q}CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID WHERE p.PIPELINE_CODE = :code) "
            "ORDER BY a.STARTED_AT"), {"code": pipeline})]
    moments = [s if isinstance(s, datetime) else datetime.fromisoformat(s) for s in starts]
    gaps = [(b - a).total_seconds() * 1000 for a, b in itertools.pairwise(moments)]
    size = max(len(gaps) // parts, 1)
    return [statistics.median(gaps[i:i + size]) for i in range(0, size * parts, size) if gaps[i:i + size]]


def measure(dialect: str, workdir: Path, sizes: list[int], repeat: int, slots: int,
            with_floor: bool) -> tuple[list[Figure], list[Figure], list[Linearity]]:
    """etl-craft's figures for each size and shape on `dialect`; on PostgreSQL with `with_floor`, the floor's too,
    each right after etl-craft's of the same size and shape (in the same database); and for each size above 1,000
    the ratio to BASE tasks measured around it."""
    database = f"etlcraft_bench_{uuid.uuid4().hex[:8]}" if dialect == "postgresql" else None
    engine_url = make_url(ADMIN).set(database=database).render_as_string(hide_password=False) if database else None
    if database:
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"')
    try:
        project = write_project(workdir / dialect, engine_url, sorted({*sizes, BASE}), slots)
        etl_craft(project, "migrate")
        engine = sa.create_engine(engine_url or f"sqlite:///{project / '.etl-craft' / 'engine.db'}")
        schema = "etl_craft" if database else ""
        dsn = (make_url(engine_url).set(drivername="postgresql").render_as_string(hide_password=False)
               if engine_url else "")
        def run(count: int, shape: str) -> float:
            pipeline = "one1" if count == 1 else f"{shape}{count}"
            seconds = etl_craft(project, "run", "--pipeline-code", pipeline)
            check_run(engine, schema, pipeline, count)
            if count > LARGE:
                print(f"  {dialect} {pipeline} in {seconds:.1f} s; median ms between starts in each fifth of the run: "
                      f"{' '.join(f'{g:.2f}' for g in start_gaps(engine, schema, pipeline))}", flush=True)
            return seconds

        t1 = statistics.median(run(1, "one") for _ in range(max(3, repeat)))
        figures: list[Figure] = []
        floors: list[Figure] = []
        linear: list[Linearity] = []
        floor_t1: dict[str, float] = {}
        for n in sizes:
            for shape in ("chain", "fanout"):
                times = repeat if n > LARGE else max(3, repeat)  # a short run's time moves most with the machine
                figures.append(sized(dialect, shape, functools.partial(run, shape=shape), n, times, t1, linear))
                print(f"measured {dialect} {shape} {n}: {figures[-1].per_task:.4f} s per task", flush=True)
                if not (database and with_floor):
                    continue
                # The floor of the same size and shape right after: this machine's speed drifts by 15 % or more
                # over a run of the bench, and a ratio is only fair between figures measured together.
                floor_run = functools.partial(floor.supervise, dsn, shape, slots=slots)
                if shape not in floor_t1:
                    floor_t1[shape] = statistics.median(floor_run(1) for _ in range(max(3, repeat)))
                floors.append(sized("floor", shape, floor_run, n, times, floor_t1[shape], linear))
                print(f"measured floor {shape} {n}: {floors[-1].per_task:.4f} s per task", flush=True)
        engine.dispose()
        return figures, floors, linear
    finally:
        if database:
            with psycopg.connect(ADMIN, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def report(figures: list[Figure], floors: list[Figure], linear: list[Linearity], bare: float) -> None:
    """Per size and shape: overhead per task, x bare spawn, x the floor (PostgreSQL); each large size's ratio to
    BASE tasks measured around it."""
    by_floor = {(f.shape, f.tasks): f.per_task for f in floors}
    print(f"\n{'dialect':<11} {'shape':<7} {'tasks':>6} {'T1 s':>6} {'TN s':>8} {'overhead/task s':>16} "
          f"{'x bare spawn':>13} {'x floor':>8}")
    for f in figures + floors:
        base = by_floor.get((f.shape, f.tasks)) if f.dialect == "postgresql" else None
        versus = f"{f.per_task / base:>8.2f}" if base else f"{'':>8}"
        print(f"{f.dialect:<11} {f.shape:<7} {f.tasks:>6} {f.t1:>6.2f} {f.tn:>8.2f} {f.per_task:>16.4f} "
              f"{f.per_task / bare:>13.2f} {versus}")
    if linear:
        print(f"\nper-task overhead at N tasks / at {BASE} tasks measured around it (issue 27: at most 1.2)")
        print(f"{'dialect':<11} {'shape':<7} {'tasks':>6} {'T1 s':>6} {f'T{BASE} s':>8} {f'{BASE}: /task s':>14} "
              f"{'N: /task s':>11} {'ratio':>6}  each large run's ratio to the {BASE}-task runs either side")
        for lin in linear:
            print(f"{lin.system:<11} {lin.shape:<7} {lin.large.tasks:>6} {lin.base.t1:>6.2f} {lin.base.tn:>8.2f} "
                  f"{lin.base.per_task:>14.4f} {lin.large.per_task:>11.4f} {lin.ratio:>6.2f}  "
                  f"{' '.join(f'{r:.2f}' for r in lin.ratios)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="10,100", help="sizes, comma-separated (e.g. 10,100,1000,10000)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--slots", type=int, default=4, help="Max_parallel_tasks (the fan-out's parallelism)")
    parser.add_argument("--dialects", default="sqlite,postgresql")
    parser.add_argument("--no-floor", action="store_true", help="skip the minimal supervisor's floor")
    args = parser.parse_args()
    sizes = sorted({int(n) for n in args.tasks.split(",")})
    bare_before = spawn_seconds("pass", 100)
    heavy = spawn_seconds("import sqlalchemy, yaml", 100)
    figures: list[Figure] = []
    floors: list[Figure] = []
    linear: list[Linearity] = []
    with tempfile.TemporaryDirectory(prefix="etlcraft-bench-") as tmp:
        for dialect in args.dialects.split(","):
            found, floor_found, linear_found = measure(dialect, Path(tmp), sizes, args.repeat, args.slots,
                                                       not args.no_floor)
            figures += found
            floors += floor_found
            linear += linear_found
    bare_after = spawn_seconds("pass", 100)
    bare = (bare_before + bare_after) / 2
    print(f"python3 -c pass: {bare:.4f} s per spawn (100 spawns before the runs: {bare_before:.4f} s, 100 after: "
          f"{bare_after:.4f} s)")
    print(f"python3 -c 'import sqlalchemy, yaml': {heavy:.4f} s per spawn (100 spawns)")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    report(figures, floors, linear, bare)


if __name__ == "__main__":
    main()
