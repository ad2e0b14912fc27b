"""`etl-craft server` under load, on PostgreSQL: many pipelines due at the same schedule tick.

N pipelines of 10 no-op PYTHON tasks each (half chains, half diamonds: a, then b..i at once, then j), plus D more
pipelines defined but not due (for the server's memory with many pipelines defined). Each task still runs in its
own process, forked from the server's fork server. Once the metadata is in, a second migration schedules the N
pipelines daily at the next minute boundary that leaves time to start, and the server starts a few seconds before
it with --slots S: at the tick every pipeline's run is created, admitted and driven, once.

Prints, measured in this run:
  - tick to run created, to run admitted, and to its first attempt started: p50, p99 (seconds), read from the
    Engine DB (the time each run's transaction started), and tick to the server's log line for each created run
    (written after its transaction committed);
  - dependency met (the last upstream task run ended) to successor attempt started: p50, p99, over the tick's
    runs (slots mostly full) and over the idle server's chain (slots free);
  - tasks per second, from the tick to the last task's end;
  - the server's peak RSS (VmHWM);
  - Engine DB transactions committed per task (pg_stat_database.xact_commit over the run, every client);
  - for reference, one `etl-craft run` of a 10-task chain: seconds per task; the same chain run by the server
    once it is idle again (start to end, per task) with its ratio to that, the target's measure of per-task
    overhead; and, over the tick's runs, wall time per task and slot-seconds per task (wall time x slots / tasks),
    each with its ratio to `etl-craft run`.

    python bench/server.py [--pipelines 1000] [--defined 10000] [--slots 8]

Uses ETL_CRAFT_TEST_PG_URL (default postgresql://root@127.0.0.1:5432/test) to create and drop its database.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

NOOP = "from etlcraft.scripting import ScriptResult, ScriptTask\n\n\ndef run(task: ScriptTask) -> ScriptResult:\n" \
       "    return ScriptResult(row_count=0)\n"
TASKS = [chr(ord("a") + n) for n in range(10)]


def _edges(shape: str) -> list[tuple[str, str]]:
    if shape == "chain":
        return list(zip(TASKS[1:], TASKS[:-1], strict=True))
    middle = TASKS[1:-1]
    return [(m, TASKS[0]) for m in middle] + [(TASKS[-1], m) for m in middle]


def _metadata(pipelines: int, defined: int) -> str:
    sql = ["INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('bench');"]

    def pipeline(code: str, schedule: str | None, tasks: list[str], edges: list[tuple[str, str]]) -> None:
        when = f"'{schedule}'" if schedule else "NULL"
        sql.append(f"INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE, RUN_SCHEDULE, MAX_PARALLEL_TASKS, "
                   f"OVERLAP_POLICY) SELECT PROJECT_ID, '{code}', {when}, 10, 'QUEUE' FROM CFG_PROJECTS;")
        sql.append("INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE) SELECT p.PIPELINE_ID, t.c, "
                   "'PYTHON', 'noop.py' FROM CFG_PIPELINES p, (VALUES "
                   + ", ".join(f"('{t}')" for t in tasks) + f") AS t(c) WHERE p.PIPELINE_CODE = '{code}';")
        if edges:
            sql.append("INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID) SELECT d.TASK_ID, u.TASK_ID "
                       "FROM CFG_PIPELINES p JOIN CFG_TASKS d ON d.PIPELINE_ID = p.PIPELINE_ID JOIN CFG_TASKS u ON "
                       "u.PIPELINE_ID = p.PIPELINE_ID JOIN (VALUES " + ", ".join(f"('{a}', '{b}')" for a, b in edges)
                       + f") AS e(down, up) ON d.TASK_CODE = e.down AND u.TASK_CODE = e.up WHERE p.PIPELINE_CODE = "
                       f"'{code}';")

    for n in range(pipelines):
        pipeline(f"due_{n:05d}", None, TASKS, _edges("chain" if n % 2 else "diamond"))
    for n in range(defined):
        pipeline(f"idle_{n:05d}", "0 0 1 1 *", ["a"], [])
    pipeline("ref_chain", None, TASKS, _edges("chain"))
    return "\n".join(sql) + "\n"


def _cli(project: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "etlcraft", *args], cwd=project, capture_output=True, text=True,
                          check=False, env={**os.environ, "ETL_CRAFT_ACTOR": "bench@server"})
    if check and done.returncode:
        raise SystemExit(f"etl-craft {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipelines", type=int, default=1000)
    parser.add_argument("--defined", type=int, default=10000)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=1800)
    options = parser.parse_args()
    admin = os.environ.get("ETL_CRAFT_TEST_PG_URL", "postgresql://root@127.0.0.1:5432/test")
    name = f"etlcraft_bench_server_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(admin).set(database=name).render_as_string(hide_password=False)
    try:
        with tempfile.TemporaryDirectory() as folder:
            return _bench(Path(folder), url, options)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _bench(project: Path, url: str, options: argparse.Namespace) -> int:
    (project / "craft-connector.yml").write_text(
        f"Engine:\n  dialect: postgresql\n  url: {url}\nWarehouse:\n  dialect: duckdb\n  path: w.duckdb\n"
        "Orchestration:\n  Max_parallel_tasks: 10\n")
    (project / "ingestion_scripts").mkdir()
    (project / "ingestion_scripts" / "noop.py").write_text(NOOP)
    (project / "migrations").mkdir()
    (project / "migrations" / "0001_bench.sql").write_text(_metadata(options.pipelines, options.defined))
    started = time.monotonic()
    _cli(project, "migrate")
    print(f"metadata: {options.pipelines} due pipelines of 10 tasks, {options.defined} more defined "
          f"(migrate {time.monotonic() - started:.1f} s)")

    began = time.monotonic()
    _cli(project, "run", "--pipeline-code", "ref_chain")
    reference = (time.monotonic() - began) / len(TASKS)
    print(f"reference: etl-craft run of a 10-task chain: {reference * 1000:.0f} ms per task")

    now = datetime.now(UTC)
    tick = (now + timedelta(minutes=1)).replace(second=0, microsecond=0)
    if (tick - now).total_seconds() < 20:
        tick += timedelta(minutes=1)
    (project / "migrations" / "0002_due.sql").write_text(
        f"UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '{tick.minute} {tick.hour} * * *' "
        "WHERE PIPELINE_CODE LIKE 'due!_%' ESCAPE '!';\n")
    _cli(project, "migrate")
    time.sleep(max(0.0, (tick - datetime.now(UTC)).total_seconds() - 5))
    with psycopg.connect(url, autocommit=True) as conn:
        xact_before = _xacts(conn)
        log = (project / "server.log").open("wb")
        server = subprocess.Popen([sys.executable, "-m", "etlcraft", "server", "--slots", str(options.slots),
                                   "--log-format", "json"], cwd=project, stdout=log, stderr=subprocess.STDOUT,
                                  env={**os.environ, "ETL_CRAFT_ACTOR": "bench@server"})
        key = f"schedule:{tick:%Y-%m-%dT%H:%M:%SZ}"
        peak = 0
        deadline = time.monotonic() + options.timeout
        done = 0
        while time.monotonic() < deadline:
            time.sleep(1)
            peak = max(peak, _rss(server.pid))
            row = conn.execute("SELECT count(*) FROM etl_craft.aud_pipelines_run_log WHERE run_key = %s AND "
                               "status NOT IN ('QUEUED', 'IN-PROGRESS')", (key,)).fetchone()
            done = int(row[0]) if row else 0
            if done >= options.pipelines:
                break
        peak = max(peak, _hwm(server.pid))
        xacts = _xacts(conn) - xact_before
        chain = _chain_under_server(project, conn)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=120)
        figures, wall = _figures(conn, key, tick)
        figures["tick to run created, logged after commit"] = _logged(project / "server.log", key, tick)
        free = _successors(conn, "bench:chain")
    tasks = options.pipelines * len(TASKS)
    if done < options.pipelines:
        print(f"only {done} of {options.pipelines} runs ended within {options.timeout:g} s")
        return 1
    per_slot_task = wall * options.slots / tasks
    print(f"tick {tick:%H:%M:%S} UTC, {options.pipelines} runs, {tasks} tasks, {options.slots} slots")
    for label, values in figures.items():
        print(f"  {label:<40} p50 {_pct(values, 0.5):7.3f} s   p99 {_pct(values, 0.99):7.3f} s   (n={len(values)})")
    print(f"  tasks per second                         {tasks / wall:7.1f}   (last task ended {wall:.1f} s after "
          "the tick)")
    defined = options.pipelines + options.defined
    print(f"  server peak RSS                          {peak / 1024:7.1f} MB (with {defined} pipelines defined)")
    print(f"  Engine DB transactions per task          {xacts / tasks:7.1f}")
    print(f"  dependency met to successor started, slots free (the idle server's chain): p50 {_pct(free, 0.5):.3f} s, "
          f"p99 {_pct(free, 0.99):.3f} s (n={len(free)})")
    print(f"  the same 10-task chain run by the idle server: {chain * 1000:.0f} ms per task, etl-craft run "
          f"{reference * 1000:.0f} ms, ratio {chain / reference:.2f}")
    print(f"  wall time per task over the tick's runs: server {wall / tasks * 1000:.0f} ms, ratio to etl-craft run "
          f"{wall / tasks / reference:.2f}; slot-seconds per task (wall x slots / tasks) "
          f"{per_slot_task * 1000:.0f} ms, ratio {per_slot_task / reference:.2f}")
    return 0


def _figures(conn: psycopg.Connection, key: str, tick: datetime) -> tuple[dict[str, list[float]], float]:
    runs = conn.execute("""
        SELECT extract(epoch FROM r.queued_at - %(tick)s), extract(epoch FROM min(a.started_at) - %(tick)s),
               extract(epoch FROM max(a.ended_at) - %(tick)s), extract(epoch FROM r.start_date - %(tick)s)
          FROM etl_craft.aud_pipelines_run_log r
          JOIN etl_craft.aud_task_run_log t ON t.pipeline_run_id = r.pipeline_run_id
          JOIN etl_craft.aud_task_attempts a ON a.task_run_id = t.task_run_id
         WHERE r.run_key = %(key)s GROUP BY r.pipeline_run_id, r.queued_at""", {"tick": tick, "key": key}).fetchall()
    return ({"tick to run created": [float(r[0]) for r in runs],
             "tick to run admitted": [float(r[3]) for r in runs],
             "tick to first attempt started": [float(r[1]) for r in runs],
             "dependency met to successor started": _successors(conn, key)},
            max(float(r[2]) for r in runs))


def _logged(log: Path, key: str, tick: datetime) -> list[float]:
    """Seconds from the tick to the server's log line for each run of the tick, written once the call that
    created it had committed: QUEUED_AT and START_DATE are the time its transaction started."""
    found = []
    for line in log.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if re.search(rf"created run \d+ \({re.escape(key)},", str(entry.get("message", ""))):
            found.append((datetime.fromisoformat(entry["at"]) - tick).total_seconds())
    return found


def _successors(conn: psycopg.Connection, key: str) -> list[float]:
    """Seconds from a task's last upstream ending to its attempt starting, over the runs whose key is `key`."""
    rows = conn.execute("""
        SELECT extract(epoch FROM a.started_at - max(ut.end_date))
          FROM etl_craft.aud_pipelines_run_log r
          JOIN etl_craft.aud_task_run_log t ON t.pipeline_run_id = r.pipeline_run_id
          JOIN etl_craft.aud_task_attempts a ON a.task_run_id = t.task_run_id
          JOIN etl_craft.cfg_task_dependency d ON d.task_id = t.task_id
          JOIN etl_craft.aud_task_run_log ut
            ON ut.pipeline_run_id = r.pipeline_run_id AND ut.task_id = d.depends_on_task_id
         WHERE r.run_key = %(key)s GROUP BY a.attempt_id, a.started_at""", {"key": key}).fetchall()
    return [float(r[0]) for r in rows]


def _chain_under_server(project: Path, conn: psycopg.Connection) -> float:
    """Seconds per task of one run of the 10-task chain that the server, idle now, runs: from the run's start to
    its end (run --init-only creates and admits it; the server takes it over)."""
    created = _cli(project, "run", "--pipeline-code", "ref_chain", "--init-only", "--run-key", "bench:chain")
    assert created.returncode == 0
    for _ in range(600):
        row = conn.execute("SELECT extract(epoch FROM end_date - start_date) FROM etl_craft.aud_pipelines_run_log "
                           "WHERE run_key = 'bench:chain' AND status = 'SUCCESS'").fetchone()
        if row is not None:
            return float(row[0]) / len(TASKS)
        time.sleep(0.2)
    raise SystemExit("the server did not finish the reference chain within 120 s")


def _xacts(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").fetchone()
    assert row is not None
    return int(row[0])


def _rss(pid: int) -> int:
    return _status_kb(pid, "VmRSS:")


def _hwm(pid: int) -> int:
    return _status_kb(pid, "VmHWM:")


def _status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
