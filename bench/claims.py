"""Claim + finish throughput on PostgreSQL: the write-API functions against the same guarded statements sent raw.

For 1, 4 and 8 worker processes, each path drains the same number of queued attempts (every attempt claimed
with FOR UPDATE SKIP LOCKED, then finished with its task-run summary, both guarded and audited by the same
triggers). Prints attempts per second per path and the ratio function/raw, measured in this one run, then the
function path again with each claim_attempt taking up to 8 attempts (a worker with 8 free slots), and last the
machine's reference: a minimal PL/pgSQL claim (SKIP LOCKED) and guarded finish on a bare queue table (a primary
key and a partial queue index; no summary row, audit or triggers), with the function path's share of it.

The function and raw paths claim as `etl-craft run` does, committing the claim without waiting for its WAL flush
(claim_attempt's durable => false; the raw claim sets synchronous_commit off for its transaction); their finishes
wait for it. The minimal reference, as issue 3 defines it, waits for the flush of both.

    python bench/claims.py [--attempts 2000] [--processes 1,4,8] [--repeat 3] [--pgbench]

Each path is measured --repeat times per process count, the paths' order turning each time, and the medians are
printed, with the ratio function/raw as the median of each turn's ratio and its range over the turns: a single
measurement of a few seconds on a shared machine moves by a quarter.

After the throughput, the CPU each path spends per claim + finish, in the worker processes (client) and in
their server processes (server, read from /proc when PostgreSQL runs on this machine), with the throughput
their sum leaves room for on this machine's cores (its ceiling): CPU per attempt moves far less between runs
than attempts per second, and it shows where the time goes.

Then heartbeats: one worker holding 8 claimed attempts renews their leases (renew_lease) --attempts times; prints
the server CPU per heartbeat and the share of the row updates PostgreSQL made on the page (HOT: no index entry
written), the write a fleet of workers repeats for as long as its attempts run.

With --pgbench, also the server alone: pgbench (-M prepared) runs claim + finish through the functions and
through the minimal reference, each client draining `--attempts` attempts, with the same process counts; no
Python between the statements. Then the time spent inside the functions themselves, per call, as PostgreSQL
counts it (pg_stat_user_functions, with track_functions set for the pgbench session, which needs a superuser):
one client, so no lock waits; the protocol, parsing and commit around each call are left out. Of all the
figures it moves least between runs, so it is the one to compare two versions of the functions with.

Uses ETL_CRAFT_TEST_PG_URL (default postgresql://root@127.0.0.1:5432/test) to create and drop its database.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call_on, function_specs
from etlcraft.engine.migrations import migrate

ADMIN = os.environ.get("ETL_CRAFT_TEST_PG_URL", "postgresql://root@127.0.0.1:5432/test")
WORKER = Actor("bench-worker", ActorKind("WORKER"))
PATHS = ["raw", "functions", "batched", "minimal"]
BATCH = 8  # the last column: the function path claiming up to 8 attempts per claim_attempt (max_attempts)

RAW_CLAIM = """
UPDATE etl_craft.aud_task_attempts a
   SET status = 'CLAIMED', owner_id = %(owner)s, claimed_at = now(), heartbeat_at = now(),
       lease_expires_at = now() + make_interval(secs => 60)
 WHERE a.attempt_id = (SELECT q.attempt_id FROM etl_craft.aud_task_attempts q
                        WHERE q.status = 'QUEUED' AND q.pool = 'default' AND q.slot_kind = 'warehouse'
                          AND (q.not_before IS NULL OR q.not_before <= now())
                        ORDER BY q.priority DESC, q.queued_at, q.attempt_id
                        FOR UPDATE SKIP LOCKED LIMIT 1)
RETURNING a.attempt_id, a.task_run_id
"""
# The claim commits without waiting for its WAL flush, as claim_attempt(durable => false) does for etl-craft run.
RAW_NOT_DURABLE = "SELECT set_config('synchronous_commit', 'off', true)"
RAW_FINISH_ATTEMPT = """
UPDATE etl_craft.aud_task_attempts
   SET status = 'SUCCESS', ended_at = now(), owner_id = owner_id, lease_expires_at = NULL, rows_written = 1
 WHERE attempt_id = %(id)s AND status IN ('CLAIMED', 'RUNNING') AND owner_id = %(owner)s
"""
RAW_FINISH_SUMMARY = """
UPDATE etl_craft.aud_task_run_log SET status = 'SUCCESS', end_date = now(), rows_written = 1
 WHERE task_run_id = %(task_run)s
"""


# The reference: the least a claim + guarded finish costs on this machine, whatever the schema.
MINIMAL_SCHEMA = """
CREATE SCHEMA bench_minimal;
CREATE TABLE bench_minimal.queue (
  attempt_id bigint PRIMARY KEY, status text NOT NULL, owner_id text, claimed_at timestamptz, ended_at timestamptz);
CREATE INDEX ix_minimal_queue ON bench_minimal.queue (attempt_id) WHERE status = 'QUEUED';
CREATE FUNCTION bench_minimal.claim(p_owner text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v bigint;
BEGIN
  UPDATE bench_minimal.queue SET status = 'CLAIMED', owner_id = p_owner, claimed_at = now()
   WHERE attempt_id = (SELECT attempt_id FROM bench_minimal.queue WHERE status = 'QUEUED'
                        ORDER BY attempt_id FOR UPDATE SKIP LOCKED LIMIT 1)
  RETURNING attempt_id INTO v;
  RETURN v;
END $$;
CREATE FUNCTION bench_minimal.finish(p_id bigint, p_owner text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE bench_minimal.queue SET status = 'SUCCESS', ended_at = now()
   WHERE attempt_id = p_id AND status = 'CLAIMED' AND owner_id = p_owner;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'attempt % is not CLAIMED by %', p_id, p_owner;
  END IF;
END $$;
"""


class _Cpu:
    """CPU seconds a worker spent on its loop: its own (client) and its server process's (server), the latter read
    from /proc/<backend pid>/stat (utime + stime), so only when the server runs on this machine (else None)."""

    def __init__(self, backend_pid: int) -> None:
        self.stat = Path(f"/proc/{backend_pid}/stat")
        self.client, self.server = time.process_time(), self._server()

    def _server(self) -> float | None:
        try:
            fields = self.stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def spent(self) -> tuple[float, float | None]:
        server = self._server()
        return (time.process_time() - self.client,
                None if server is None or self.server is None else server - self.server)


def _dsn(name: str) -> str:
    return make_url(ADMIN).set(database=name).render_as_string(hide_password=False)


def _seed(dsn: str, attempts: int) -> None:
    """A new run of the bench pipeline with `attempts` tasks, each with one IN-PROGRESS task run and one QUEUED
    attempt (the previous run is ended first: a pipeline runs one run at a time)."""
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT set_config('etl_craft.actor', 'bench', true)")
        conn.execute("UPDATE etl_craft.aud_pipelines_run_log SET status = 'SUCCESS', end_date = now()"
                     " WHERE status = 'IN-PROGRESS'")
        conn.execute("""
            INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file)
            SELECT 1, 't' || g, 'SQL', 'APPEND_TABLE', 'noop.sql' FROM generate_series(1, %(n)s) g
            ON CONFLICT DO NOTHING""", {"n": attempts})
        run = conn.execute("""
            INSERT INTO etl_craft.aud_pipelines_run_log
              (pipeline_id, run_key, trigger_kind, run_date, status, queued_at, start_date, started_by, started_by_kind)
            VALUES (1, 'bench:' || gen_random_uuid(), 'MANUAL', current_date, 'IN-PROGRESS', now(), now(), 'bench',
                    'SYSTEM') RETURNING pipeline_run_id""").fetchone()
        conn.execute("""
            INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status, attempt_count, start_date)
            SELECT %(run)s, task_id, 'IN-PROGRESS', 1, now() FROM etl_craft.cfg_tasks
             ORDER BY task_id LIMIT %(n)s""", {"run": run[0], "n": attempts})
        conn.execute("""
            INSERT INTO etl_craft.aud_task_attempts
              (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
            SELECT task_run_id, 1, 'QUEUED', clock_timestamp(), 'bench', 'SYSTEM' FROM etl_craft.aud_task_run_log t
             WHERE pipeline_run_id = %(run)s""", {"run": run[0]})
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE etl_craft.aud_task_attempts")
        conn.execute("VACUUM ANALYZE etl_craft.aud_task_run_log")


def _seed_minimal(dsn: str, attempts: int) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute("TRUNCATE bench_minimal.queue")
        conn.execute("INSERT INTO bench_minimal.queue (attempt_id, status) SELECT g, 'QUEUED'"
                     " FROM generate_series(1, %(n)s) g", {"n": attempts})
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE bench_minimal.queue")


def _minimal_worker(dsn: str, owner: str, start: mp.Barrier, done: mp.Queue) -> None:  # type: ignore[type-arg]
    count = 0
    with psycopg.connect(dsn, autocommit=True) as conn:  # one statement per call, as etl-craft's caller sends them
        start.wait()
        cpu = _Cpu(conn.info.backend_pid)
        while True:
            claimed = conn.execute("SELECT bench_minimal.claim(%s)", (owner,), prepare=True).fetchone()
            if claimed is None or claimed[0] is None:
                break
            conn.execute("SELECT bench_minimal.finish(%s, %s)", (claimed[0], owner), prepare=True)
            count += 1
        done.put((count, *cpu.spent()))


def _raw_worker(dsn: str, owner: str, start: mp.Barrier, done: mp.Queue) -> None:  # type: ignore[type-arg]
    count = 0
    with psycopg.connect(dsn) as conn:
        # The raw path marks its session once: the cheapest way to pass the engine-only guard.
        conn.execute("SELECT set_config('etl_craft.actor', 'bench-worker', false)")
        conn.commit()
        start.wait()
        cpu = _Cpu(conn.info.backend_pid)
        while True:
            with conn.transaction():
                conn.execute(RAW_NOT_DURABLE, prepare=True)
                row = conn.execute(RAW_CLAIM, {"owner": owner}, prepare=True).fetchone()
            if row is None:
                break
            with conn.transaction():
                changed = conn.execute(RAW_FINISH_ATTEMPT, {"id": row[0], "owner": owner}, prepare=True).rowcount
                if changed != 1:
                    raise RuntimeError(f"attempt {row[0]} was not {owner}'s to finish")
                conn.execute(RAW_FINISH_SUMMARY, {"task_run": row[1]}, prepare=True)
            count += 1
        done.put((count, *cpu.spent()))


def _function_worker(dsn: str, owner: str, start: mp.Barrier, done: mp.Queue,  # type: ignore[type-arg]
                     batch: int = 1) -> None:
    count = 0
    db = EngineDB(dsn)
    function_specs(db.dialect)  # a worker's start-up (rendering the function templates) is not claim throughput
    with acting_as(WORKER), db.engine.connect() as conn:
        driver = conn.connection.driver_connection
        assert isinstance(driver, psycopg.Connection)
        start.wait()
        cpu = _Cpu(driver.info.backend_pid)
        while True:
            claimed = call_on(db, conn, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=owner,
                              max_attempts=batch, durable=False)
            if not claimed:
                break
            for attempt in claimed:
                call_on(db, conn, "finish_attempt", attempt_id=attempt.attempt_id, owner_id=owner, status="SUCCESS",
                        rows_written=1)
                count += 1
        done.put((count, *cpu.spent()))
    db.dispose()


def _batched_worker(dsn: str, owner: str, start: mp.Barrier, done: mp.Queue) -> None:  # type: ignore[type-arg]
    _function_worker(dsn, owner, start, done, batch=BATCH)


# pgbench scripts: one transaction = one claim + its finish, as the Python paths do.
PGBENCH_SCRIPTS = {
    "functions": """\\set cid :client_id
SELECT attempt_id AS aid FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => 'warehouse',
  p_owner_id => 'pgbench-' || :cid, p_max_attempts => 1, p_durable => false, p_actor => 'bench-worker',
  p_actor_kind => 'WORKER') \\gset
SELECT 1 FROM etl_craft.finish_attempt(p_attempt_id => :aid, p_owner_id => 'pgbench-' || :cid, p_status => 'SUCCESS',
  p_rows_written => 1, p_actor => 'bench-worker', p_actor_kind => 'WORKER');
""",
    "minimal": """\\set cid :client_id
SELECT bench_minimal.claim('pgbench-' || :cid) AS aid \\gset
SELECT bench_minimal.finish(:aid, 'pgbench-' || :cid);
""",
}


def _pgbench(path: str, dsn: str, clients: int, attempts: int) -> float:
    """Transactions (claim + finish) per second that pgbench reports for `path`'s script."""
    (_seed_minimal if path == "minimal" else _seed)(dsn, attempts * clients)
    with tempfile.NamedTemporaryFile("w", suffix=".sql") as script:
        script.write(PGBENCH_SCRIPTS[path])
        script.flush()
        done = subprocess.run(["pgbench", "-n", "-M", "prepared", "-f", script.name, "-c", str(clients), "-j",
                               str(clients), "-t", str(attempts), dsn], capture_output=True, text=True, check=True)
    processed = re.search(r"actually processed: (\d+)/(\d+)", done.stdout)
    found = re.search(r"^tps = ([0-9.]+)", done.stdout, flags=re.M)
    if found is None or processed is None or processed.group(1) != processed.group(2):
        raise RuntimeError(f"pgbench {path} did not finish every claim + finish: {done.stdout}{done.stderr}")
    return float(found.group(1))


# Time inside the functions: PostgreSQL's own count per call (pg_stat_user_functions, track_functions = 'pl'), for
# claim_attempt and finish_attempt and for the reference's claim and finish, one pgbench client each.
TIMED = {"functions": ("etl_craft", ("claim_attempt", "finish_attempt")),
         "minimal": ("bench_minimal", ("claim", "finish"))}


def _function_stats(dsn: str, path: str) -> dict[str, tuple[int, float]]:
    schema, names = TIMED[path]
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT funcname, calls, total_time FROM pg_stat_user_functions"
                            " WHERE schemaname = %s AND funcname = ANY(%s)", (schema, list(names))).fetchall()
    return {name: (calls, total) for name, calls, total in rows}


def _function_times(path: str, dsn: str, attempts: int) -> tuple[float, float]:
    """Microseconds spent inside each of path's two functions per call, measured by PostgreSQL over one pgbench
    client claiming and finishing `attempts` attempts (the protocol, parsing and commit around them excluded)."""
    (_seed_minimal if path == "minimal" else _seed)(dsn, attempts)
    before = _function_stats(dsn, path)
    with tempfile.NamedTemporaryFile("w", suffix=".sql") as script:
        script.write(PGBENCH_SCRIPTS[path])
        script.flush()
        subprocess.run(["pgbench", "-n", "-M", "prepared", "-f", script.name, "-c", "1", "-t", str(attempts), dsn],
                       capture_output=True, text=True, check=True,
                       env={**os.environ, "PGOPTIONS": "-c track_functions=pl"})
    names = TIMED[path][1]
    deadline = time.monotonic() + 10  # a backend reports its counts as it exits, after pgbench has returned
    while True:
        after = _function_stats(dsn, path)
        spent = [tuple(a - b for a, b in zip(after.get(f, (0, 0.0)), before.get(f, (0, 0.0)), strict=True))
                 for f in names]
        if all(calls >= attempts for calls, _ in spent) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if any(calls < attempts for calls, _ in spent):
        raise RuntimeError(f"pg_stat_user_functions counted {[c for c, _ in spent]} calls of {names}, expected"
                           f" {attempts} each")
    claim, finish = (milliseconds * 1000 / calls for calls, milliseconds in spent)
    return claim, finish


@dataclass(frozen=True)
class Measurement:
    per_second: float
    client_us: float  # CPU per claim + finish, in the worker processes
    server_us: float | None  # and in their server processes (None when the server is not on this machine)


def _measure(path: str, dsn: str, processes: int, attempts: int) -> Measurement:
    if path == "minimal":
        _seed_minimal(dsn, attempts)
    else:
        _seed(dsn, attempts)
    target = {"raw": _raw_worker, "functions": _function_worker, "batched": _batched_worker,
              "minimal": _minimal_worker}[path]
    start, done = mp.Barrier(processes + 1), mp.Queue()
    workers = [mp.Process(target=target, args=(dsn, f"{path}-{i}-{uuid.uuid4().hex[:6]}", start, done))
               for i in range(processes)]
    for worker in workers:
        worker.start()
    start.wait()
    began = time.perf_counter()
    reports = [done.get(timeout=600) for _ in workers]
    elapsed = time.perf_counter() - began
    finished = sum(count for count, _, _ in reports)
    for worker in workers:
        worker.join()
        if worker.exitcode != 0:
            raise RuntimeError(f"a {path} worker exited with {worker.exitcode}")
    if finished != attempts:
        raise RuntimeError(f"{path}: {finished} attempts finished, {attempts} were queued")
    servers = [server for _, _, server in reports]
    return Measurement(attempts / elapsed, sum(client for _, client, _ in reports) / attempts * 1e6,
                       None if None in servers else sum(servers) / attempts * 1e6)


def _print_cpu(measured: dict[int, dict[str, list[Measurement]]]) -> None:
    """CPU per claim + finish (medians), in the workers and in their server processes, and the throughput those
    costs allow at most on this machine's cores: a figure that waits, lock queues and other tenants do not move
    as much as they move attempts per second."""
    print(f"\nCPU per claim + finish, microseconds (medians): the workers (client), their server processes (server),"
          f" and the most claims + finishes per second that their sum leaves room for on {os.cpu_count()} cores")
    print(f"{'processes':>9}  {'path':<9}  {'client':>7}  {'server':>7}  {'sum':>7}  {'ceiling/s':>9}")
    for processes, runs in measured.items():
        for path in PATHS:
            client = statistics.median(m.client_us for m in runs[path])
            servers = [m.server_us for m in runs[path] if m.server_us is not None]
            if not servers:
                print(f"{processes:>9}  {path:<9}  {client:>7.0f}  {'-':>7}  {'-':>7}  {'-':>9}")
                continue
            server = statistics.median(servers)
            ceiling = (os.cpu_count() or 1) * 1e6 / (client + server)
            print(f"{processes:>9}  {path:<9}  {client:>7.0f}  {server:>7.0f}  {client + server:>7.0f}"
                  f"  {ceiling:>9.0f}", flush=True)


def _print_function_times(dsn: str, attempts: int, repeat: int) -> None:
    print(f"\ntime inside the functions, one pgbench client, {attempts} claim + finish (PostgreSQL's own count,"
          f" pg_stat_user_functions; microseconds per call, medians of {repeat})")
    times: dict[str, list[tuple[float, float]]] = {path: [] for path in TIMED}
    try:
        for _ in range(repeat):  # the paths in turns: the machine's speed drifts between measurements
            for path, measured in times.items():
                measured.append(_function_times(path, dsn, attempts))
    except subprocess.CalledProcessError as exc:  # track_functions is a superuser setting
        print(f"  not measured: pgbench could not set track_functions ({exc.stderr.strip()})")
        return
    print(f"{'path':>9}  {'claim':>7}  {'finish':>7}  {'claim + finish':>14}")
    sums = {}
    for path, measured in times.items():
        claim, finish = (statistics.median(m[i] for m in measured) for i in (0, 1))
        sums[path] = statistics.median(c + f for c, f in measured)
        print(f"{path:>9}  {claim:>7.0f}  {finish:>7.0f}  {sums[path]:>14.0f}")
    print(f"functions / minimal inside the functions: {sums['functions'] / sums['minimal']:.2f}")


def _heartbeats(dsn: str, renewals: int) -> None:
    """Server CPU per renew_lease of a worker's 8 live attempts, each its own transaction as a worker sends it, and
    the share of HOT row updates among them (the table's counters, flushed before each read)."""
    _seed(dsn, BATCH)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT * FROM etl_craft.claim_attempt(p_pool => 'default', p_slot_kinds => 'warehouse',"
                     " p_owner_id => 'heart', p_max_attempts => %s, p_actor => 'bench', p_actor_kind => 'WORKER')",
                     (BATCH,))
        statement = ("SELECT * FROM etl_craft.renew_lease(p_owner_id => 'heart', p_actor => 'bench',"
                     " p_actor_kind => 'WORKER')")

        def counters() -> tuple[int, int]:
            conn.execute("SELECT pg_stat_force_next_flush()")  # flushed as the statement ends
            row = conn.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
                               " WHERE relid = CAST('etl_craft.aud_task_attempts' AS regclass)").fetchone()
            assert row is not None
            return row[0], row[1]

        updated_before, hot_before = counters()
        cpu = _Cpu(conn.info.backend_pid)
        for _ in range(renewals):
            renewed = conn.execute(statement, prepare=True).fetchall()
        _, server = cpu.spent()
        updated_after, hot_after = counters()
    updated, hot = updated_after - updated_before, hot_after - hot_before
    if len(renewed) != BATCH or updated != BATCH * renewals:
        raise RuntimeError(f"heartbeats: {len(renewed)} attempts renewed and {updated} rows updated; expected "
                           f"{BATCH} and {BATCH * renewals}")
    per_heartbeat = "-" if server is None else f"{server / renewals * 1e6:.0f}"
    print(f"\nheartbeats: renew_lease of {BATCH} live attempts, {renewals} times: server CPU {per_heartbeat}"
          f" microseconds per heartbeat; {hot / updated:.0%} of the row updates HOT (on the page, no index entry)",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=2000)
    parser.add_argument("--processes", default="1,4,8")
    parser.add_argument("--repeat", type=int, default=3, help="measurements of each path per process count (3)")
    parser.add_argument("--pgbench", action="store_true", help="also measure the server alone with pgbench")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat is {args.repeat}; expected 1 or more")
    if args.pgbench and shutil.which("pgbench") is None:
        parser.error("--pgbench needs pgbench on PATH (Debian: postgresql-client)")
    name = f"etlcraft_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        dsn = _dsn(name)
        db = EngineDB(dsn)
        with acting_as(Actor("bench", ActorKind("SYSTEM"))):
            migrate(db)
        db.dispose()
        with psycopg.connect(dsn) as conn:
            conn.execute("SELECT set_config('etl_craft.actor', 'bench', true)")
            conn.execute("INSERT INTO etl_craft.cfg_projects (project_code) VALUES ('bench')")
            conn.execute("INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code) VALUES (1, 'bench')")
            conn.execute(MINIMAL_SCHEMA)
        print(f"claim + finish of {args.attempts} attempts per measurement, each path measured {args.repeat} times "
              f"(medians; the paths' order turns each time), PostgreSQL, this machine ({os.cpu_count()} cores)")
        print(f"{'processes':>9}  {'raw/s':>8}  {'functions/s':>11}  {'ratio':>6}  {'ratio range':>11}"
              f"  {f'claims of {BATCH}/s':>15}  {'minimal/s':>9}  {'functions/minimal':>17}")
        measured: dict[int, dict[str, list[Measurement]]] = {}
        for processes in (int(p) for p in args.processes.split(",")):
            runs: dict[str, list[Measurement]] = measured.setdefault(processes, {path: [] for path in PATHS})
            for turn in range(args.repeat):
                for path in PATHS[turn % len(PATHS):] + PATHS[:turn % len(PATHS)]:
                    runs[path].append(_measure(path, dsn, processes, args.attempts))
            ratios = [f.per_second / r.per_second for f, r in zip(runs["functions"], runs["raw"], strict=True)]
            raw, functions, batched, minimal = (statistics.median(m.per_second for m in runs[path]) for path in PATHS)
            print(f"{processes:>9}  {raw:>8.0f}  {functions:>11.0f}  {statistics.median(ratios):>6.2f}"
                  f"  {f'{min(ratios):.2f}-{max(ratios):.2f}':>11}  {batched:>15.0f}  {minimal:>9.0f}"
                  f"  {functions / minimal:>17.2f}", flush=True)
        _print_cpu(measured)
        _heartbeats(dsn, args.attempts)
        if args.pgbench:
            print(f"\nthe server alone: pgbench -M prepared, {args.attempts} claim + finish per client")
            print(f"{'clients':>9}  {'functions/s':>11}  {'minimal/s':>9}  {'functions/minimal':>17}")
            for clients in (int(p) for p in args.processes.split(",")):
                functions = _pgbench("functions", dsn, clients, args.attempts)
                minimal = _pgbench("minimal", dsn, clients, args.attempts)
                print(f"{clients:>9}  {functions:>11.0f}  {minimal:>9.0f}  {functions / minimal:>17.2f}", flush=True)
            _print_function_times(dsn, args.attempts, args.repeat)
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
