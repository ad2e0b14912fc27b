"""QUEUE pools served by `etl-craft worker` processes on PostgreSQL, against the local provider measured in the same
run.

End to end: --workers worker processes (default 4) x --slots ingestion slots (default 4) drain --attempts QUEUED
no-op PYTHON attempts (default 10,000) of a QUEUE pool, each attempt in a task process of its own, recorded SUCCESS
by the task process; prints attempts per second and seconds per attempt, from the workers' start to the last
attempt's end (the workers' registration included).

Claim only: --workers processes call claim_attempt in a loop with batches of 1, 8 and 32 (max_attempts) until the
queue is empty, either claiming only or finishing each claimed attempt (finish_attempt SUCCESS) before the next
claim; attempts per second.

Baseline: the local provider's per-task overhead, as bench/overhead.py measures it: `etl-craft run` of a fan-out of
--local-tasks no-op tasks with the same parallelism (workers x slots) minus a one-task run, per task. pgqueuer is
measured in the same run only when it is importable (it is not an etl-craft dependency).

Targets: claim only with batches of 32 at least 6,500 attempts/s; end to end, seconds per attempt at most 1.5 x
the local provider's per-task overhead. The bench prints whether each holds; it asserts nothing.

    python bench/workers.py [--attempts 10000] [--workers 4] [--slots 4] [--local-tasks 200]

Uses ETL_CRAFT_TEST_PG_URL (default postgresql://root@127.0.0.1:5432/test) to create and drop its database.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from etlcraft.core.actor import Actor, acting_as  # noqa: E402
from etlcraft.core.enums import ActorKind  # noqa: E402
from etlcraft.engine.db import EngineDB  # noqa: E402
from etlcraft.engine.functions import call, function_specs  # noqa: E402

ADMIN = os.environ.get("ETL_CRAFT_TEST_PG_URL", "postgresql://root@127.0.0.1:5432/test")
POOL = "bench"
CLAIM_TARGET = 6500.0  # attempts/s, claim only, batches of 32
END_TO_END_RATIO = 1.5  # worker seconds per attempt / local per-task overhead
BATCHES = (1, 8, 32)
NOOP_SCRIPT = '''from etlcraft.scripting import ScriptResult


def run(task):
    return ScriptResult(row_count=0)
'''
METADATA = f"""INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('bench');
INSERT INTO CFG_POOLS (POOL_NAME, PROVIDER) VALUES ('{POOL}', 'QUEUE');
INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'queued' FROM CFG_PROJECTS;
INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'one1' FROM CFG_PROJECTS;
INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE) SELECT PIPELINE_ID, 'one1_t1', 'PYTHON',
  'noop.py' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'one1';
INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'fanout' FROM CFG_PROJECTS;
"""


def _environ() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ETL_CRAFT_", "ETLCRAFT_"))}
    environ["ETL_CRAFT_ACTOR"] = "bench@workers"
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environ.get("PYTHONPATH")]))
    return environ


def etl_craft(project: Path, *args: str) -> float:
    """Run etl-craft in `project` to its end; the wall-clock seconds it took. Fails loudly when it fails."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "etlcraft", *args], cwd=project, env=_environ(),
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"etl-craft {' '.join(args)} exited {done.returncode}; expected 0:\n"
                         f"{done.stdout}{done.stderr}")
    return time.perf_counter() - started


def write_project(root: Path, engine_url: str, fanout: int, slots: int) -> Path:
    root.mkdir(parents=True)
    (root / "craft-connector.yml").write_text(
        f"Engine:\n  dialect: postgresql\n  url: {engine_url}\nWarehouse:\n  dialect: duckdb\n"
        f"  path: warehouse.duckdb\nOrchestration:\n  Max_parallel_tasks: {slots}\n")
    (root / "ingestion_scripts").mkdir()
    (root / "ingestion_scripts" / "noop.py").write_text(NOOP_SCRIPT)
    (root / "migrations").mkdir()
    fan = [f"INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE) SELECT PIPELINE_ID, 'fan_t{n:04d}',"
           " 'PYTHON', 'noop.py' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'fanout';" for n in range(1, fanout + 1)]
    fan += ["INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) SELECT t.TASK_ID,"
            " u.TASK_ID, 'SUCCESS' FROM CFG_TASKS t, CFG_TASKS u WHERE t.TASK_CODE LIKE 'fan_t%'"
            " AND t.TASK_CODE <> 'fan_t0001' AND u.TASK_CODE = 'fan_t0001';"]
    (root / "migrations" / "0001_bench.sql").write_text(METADATA + "\n".join(fan) + "\n")
    return root


def seed(dsn: str, attempts: int) -> None:
    """A new IN-PROGRESS run of pipeline `queued` with `attempts` no-op PYTHON tasks, each with an IN-PROGRESS task
    run and one QUEUED ingestion attempt in the QUEUE pool (set-based inserts under the actor marker, as
    bench/claims.py seeds its queue); earlier runs of it are ended first."""
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT set_config('etl_craft.actor', 'bench', true)")
        conn.execute("UPDATE etl_craft.aud_pipelines_run_log SET status = 'SUCCESS', end_date = now()"
                     " WHERE status = 'IN-PROGRESS'")
        pipeline = conn.execute("SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'queued'"
                                ).fetchone()
        assert pipeline is not None
        conn.execute("""
            INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, script_file)
            SELECT %(p)s, 'q' || g, 'PYTHON', 'noop.py' FROM generate_series(1, %(n)s) g
            ON CONFLICT DO NOTHING""", {"p": pipeline[0], "n": attempts})
        run = conn.execute("""
            INSERT INTO etl_craft.aud_pipelines_run_log
              (pipeline_id, run_key, trigger_kind, run_date, status, queued_at, start_date, started_by, started_by_kind)
            VALUES (%(p)s, 'bench:' || gen_random_uuid(), 'MANUAL', current_date, 'IN-PROGRESS', now(), now(), 'bench',
                    'SYSTEM') RETURNING pipeline_run_id""", {"p": pipeline[0]}).fetchone()
        assert run is not None
        conn.execute("""
            INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status, attempt_count, start_date)
            SELECT %(run)s, task_id, 'IN-PROGRESS', 1, now() FROM etl_craft.cfg_tasks
             WHERE pipeline_id = %(p)s ORDER BY task_id LIMIT %(n)s""",
                     {"run": run[0], "p": pipeline[0], "n": attempts})
        conn.execute("""
            INSERT INTO etl_craft.aud_task_attempts (task_run_id, pipeline_run_id, attempt_number, status, pool,
              slot_kind, queued_at, requested_by, requested_by_kind)
            SELECT task_run_id, pipeline_run_id, 1, 'QUEUED', %(pool)s, 'ingestion', clock_timestamp(), 'bench',
                   'SYSTEM' FROM etl_craft.aud_task_run_log WHERE pipeline_run_id = %(run)s""",
                     {"run": run[0], "pool": POOL})
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE etl_craft.aud_task_attempts")
        conn.execute("VACUUM ANALYZE etl_craft.aud_task_run_log")


def live(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT COUNT(*) FROM etl_craft.aud_task_attempts WHERE pool = %s"
                           " AND status IN ('QUEUED', 'CLAIMED', 'RUNNING')", (POOL,)).fetchone()
    return int(row[0]) if row else 0


def end_to_end(project: Path, dsn: str, attempts: int, workers: int, slots: int) -> float:
    """Seconds from starting the workers to the last of `attempts` attempts ending; every one must end SUCCESS."""
    seed(dsn, attempts)
    started = time.perf_counter()
    processes = [subprocess.Popen([sys.executable, "-m", "etlcraft", "worker", "--pool", POOL, "--name", f"bench{n}",
                                   "--ingestion-slots", str(slots), "--warehouse-slots", "0",
                                   "--heartbeat-seconds", "5"],
                                  cwd=project, env=_environ(), stdout=subprocess.DEVNULL,
                                  stderr=(project / f"worker{n}.log").open("wb"))
                 for n in range(workers)]
    try:
        while live(dsn):
            if any(p.poll() is not None for p in processes):
                raise SystemExit(f"a worker ended early; see {project}/worker*.log")
            time.sleep(0.1)
        seconds = time.perf_counter() - started
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=60)
    with psycopg.connect(dsn) as conn:
        done = conn.execute("SELECT status, COUNT(*) FROM etl_craft.aud_task_attempts WHERE pool = %s"
                            " GROUP BY status", (POOL,)).fetchall()
    if dict(done).get("SUCCESS", 0) < attempts or set(dict(done)) != {"SUCCESS"}:
        raise SystemExit(f"the workers left the attempts {dict(done)}; expected every one SUCCESS")
    return seconds


def _claimer(url: str, batch: int, finish: bool, start: mp.Barrier, done: mp.Queue) -> None:  # type: ignore[type-arg]
    db = EngineDB(url, pool_size=1)
    owner = f"bench-claimer:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    count = 0
    db.engine.connect().close()  # the connection is made before the clock starts, as a running worker has it
    with acting_as(Actor("bench-worker", ActorKind.WORKER)):
        start.wait()
        while True:
            claimed = call(db, "claim_attempt", pool=POOL, slot_kinds="ingestion", owner_id=owner, lease_seconds=300,
                           max_attempts=batch)
            if not claimed:
                break
            count += len(claimed)
            if finish:
                for row in claimed:
                    call(db, "finish_attempt", attempt_id=row.attempt_id, owner_id=owner, status="SUCCESS")
    db.dispose()
    done.put(count)


def claims(url: str, dsn: str, attempts: int, workers: int, batch: int, finish: bool) -> float:
    """Attempts per second of `workers` processes claiming (and finishing) `attempts` attempts in batches."""
    seed(dsn, attempts)
    function_specs("postgresql")  # rendered once here, before the fork: not in every claimer's measured time
    context = mp.get_context("fork")
    start, done = context.Barrier(workers + 1), context.Queue()
    processes = [context.Process(target=_claimer, args=(url, batch, finish, start, done)) for _ in range(workers)]
    for process in processes:
        process.start()
    start.wait()
    started = time.perf_counter()
    total = sum(done.get(timeout=600) for _ in processes)
    seconds = time.perf_counter() - started
    for process in processes:
        process.join()
    if total != attempts:
        raise SystemExit(f"the claimers claimed {total} attempts; expected {attempts}")
    return total / seconds


def local_overhead(project: Path, tasks: int) -> float:
    """The local provider's per-task overhead: (T(fan-out of `tasks`) - T(one task)) / tasks, `etl-craft run`."""
    one = sorted(etl_craft(project, "run", "--pipeline-code", "one1") for _ in range(3))[1]
    return (etl_craft(project, "run", "--pipeline-code", "fanout") - one) / tasks


def pgqueuer_figure() -> str:
    try:
        import pgqueuer  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return "pgqueuer: not importable here, not measured (it is not an etl-craft dependency)"
    return ("pgqueuer: importable, but this bench has no driver for it yet; compare with its own benchmark "
            "(python -m pgqueuer bench) on this machine")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=10_000, help="queued attempts per measurement")
    parser.add_argument("--workers", type=int, default=4, help="worker (and claimer) processes")
    parser.add_argument("--slots", type=int, default=4, help="ingestion slots per worker")
    parser.add_argument("--local-tasks", type=int, default=200, help="tasks of the local provider's fan-out")
    args = parser.parse_args()
    database = f"etlcraft_bench_{uuid.uuid4().hex[:8]}"
    url = make_url(ADMIN).set(database=database).render_as_string(hide_password=False)
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    try:
        with tempfile.TemporaryDirectory(prefix="etlcraft-bench-") as tmp:
            project = write_project(Path(tmp) / "p", url, args.local_tasks, args.workers * args.slots)
            etl_craft(project, "migrate")
            local = local_overhead(project, args.local_tasks)
            seconds = end_to_end(project, url, args.attempts, args.workers, args.slots)
            rates = {(batch, finish): claims(url, url, args.attempts, args.workers, batch, finish)
                     for finish in (False, True) for batch in BATCHES}
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    report(args, local, seconds, rates)


def report(args: argparse.Namespace, local: float, seconds: float, rates: dict[tuple[int, bool], float]) -> None:
    per_attempt = seconds / args.attempts
    ratio = per_attempt / local if local > 0 else float("inf")
    print(f"local provider (etl-craft run, fan-out of {args.local_tasks}, {args.workers * args.slots} slots): "
          f"{local:.4f} s overhead per task (baseline)")
    print(f"end to end: {args.workers} workers x {args.slots} slots drained {args.attempts:,} no-op attempts in "
          f"{seconds:.1f} s: {args.attempts / seconds:,.0f} attempts/s, {per_attempt:.4f} s per attempt, "
          f"{ratio:.2f} x the local per-task overhead (target <= {END_TO_END_RATIO:g}x: "
          f"{'met' if ratio <= END_TO_END_RATIO else 'missed'})")
    print(f"\nclaim_attempt from {args.workers} processes, {args.attempts:,} attempts each measurement:")
    print(f"{'batch':>5} {'claim only /s':>14} {'claim + finish /s':>18}")
    for batch in BATCHES:
        print(f"{batch:>5} {rates[batch, False]:>14,.0f} {rates[batch, True]:>18,.0f}")
    best = rates[32, False]
    print(f"target: claim only, batches of 32 >= {CLAIM_TARGET:,.0f}/s: {best:,.0f}/s, "
          f"{'met' if best >= CLAIM_TARGET else 'missed'}")
    print(pgqueuer_figure())


if __name__ == "__main__":
    main()
