"""The HTTP API under read load, on PostgreSQL, beside a bare FastAPI endpoint that runs the same SELECTs.

An Engine DB with one pipeline of 10 no-op tasks that has run R times; `etl-craft api` is started as a subprocess on
a free loopback port, and C concurrent loopback clients (httpx, asyncio) read run detail and task lists
(GET /api/v1/runs/{id} and /runs/{id}/tasks, with a viewer token, over the R runs) for S seconds. Then a bare
FastAPI app, served by uvicorn with the same settings in a subprocess of its own, answers GET /bare/runs/{id} with
the two SELECTs run detail runs (run_header, run_task_rows) and nothing else (no token, no service), and the same
clients read it for S seconds. Prints requests/s and p50/p99 latency of both, and the ratio of throughputs.

Targets: the API's throughput at least half the bare endpoint's, and its p99 under 100 ms.

    python bench/api.py [--seconds 30] [--clients 20] [--runs 5]

Uses ETL_CRAFT_TEST_PG_URL (default postgresql://root@127.0.0.1:5432/test) to create and drop its database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import psycopg
from sqlalchemy.engine import make_url

NOOP = "from etlcraft.scripting import ScriptResult, ScriptTask\n\n\ndef run(task: ScriptTask) -> ScriptResult:\n" \
       "    return ScriptResult(row_count=0)\n"
TASKS = [f"t{n}" for n in range(10)]
#: The bare endpoint: the SELECTs of run detail on the Engine DB, through etl-craft's named queries, nothing else.
BARE = """\
import sys

import uvicorn
from fastapi import FastAPI

from etlcraft.engine.db import EngineDB
from etlcraft.engine.queries import fetch_all, fetch_one

db = EngineDB(sys.argv[1], schema="etl_craft")
app = FastAPI()


@app.get("/bare/runs/{run_id}")
def run(run_id: int) -> dict:
    with db.read() as conn:
        header = fetch_one(db, conn, "run_header", run_id=run_id)
        rows = fetch_all(db, conn, "run_task_rows", run_id=run_id)
    return {"run": header, "tasks": rows}


uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", access_log=False)
"""


def _metadata() -> str:
    sql = ["INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('bench');",
           "INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'flow' FROM CFG_PROJECTS;"]
    sql += [f"INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE) SELECT PIPELINE_ID, '{t}', "
            "'PYTHON', 'noop.py' FROM CFG_PIPELINES;" for t in TASKS]
    return "\n".join(sql) + "\n"


def _cli(project: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "etlcraft", *args], cwd=project, capture_output=True, text=True,
                          check=False, env={**os.environ, "ETL_CRAFT_ACTOR": "bench@api"})
    if done.returncode:
        raise SystemExit(f"etl-craft {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def _load(paths: list[str], headers: dict[str, str], clients: int, seconds: float,
                failures: list[str]) -> tuple[float, list[float]]:
    """C clients reading `paths` in turn for `seconds`: requests per second and each request's latency (s); a
    request that failed in transport (a connection the server closed) is added to `failures`."""
    latencies: list[float] = []
    end = time.monotonic() + seconds

    async def client(number: int, http: httpx.AsyncClient) -> None:
        turn = number
        while time.monotonic() < end:
            began = time.perf_counter()
            try:
                answer = await http.get(paths[turn % len(paths)], headers=headers)
            except httpx.TransportError as exc:  # counted and shown, not fatal: the figures say how many failed
                failures.append(f"{type(exc).__name__}: {exc}")
                turn += 1
                continue
            latencies.append(time.perf_counter() - began)
            if answer.status_code != 200:
                raise SystemExit(f"GET {paths[turn % len(paths)]} answered {answer.status_code}: {answer.text}")
            turn += 1

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=30) as http:
        started = time.monotonic()
        await asyncio.gather(*(client(n, http) for n in range(clients)))
        return len(latencies) / (time.monotonic() - started), latencies


def _wait(url: str, process: subprocess.Popen[bytes]) -> None:
    for _ in range(300):
        if process.poll() is not None:
            raise SystemExit(f"{url}: the server ended with {process.returncode} before it answered")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not answer within 30 s")


def _measure(name: str, command: list[str], cwd: Path, probe: str, paths: list[str], headers: dict[str, str],
             options: argparse.Namespace) -> tuple[float, float, float]:
    process = subprocess.Popen(command, cwd=cwd, env={**os.environ, "ETL_CRAFT_ACTOR": "bench@api"})
    try:
        _wait(probe, process)
        asyncio.run(_load(paths, headers, options.clients, 2.0, []))  # warm up: connections, pools, caches
        failures: list[str] = []
        rate, latencies = asyncio.run(_load(paths, headers, options.clients, options.seconds, failures))
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    p50, p99 = _pct(latencies, 0.50) * 1000, _pct(latencies, 0.99) * 1000
    failed = f", {len(failures)} failed in transport (first: {failures[0]})" if failures else ""
    print(f"{name:<28} {rate:8.0f} req/s   p50 {p50:6.1f} ms   p99 {p99:6.1f} ms   ({len(latencies)} requests"
          f"{failed}; load average {os.getloadavg()[0]:.1f})")
    return rate, p50, p99


def _bench(project: Path, url: str, options: argparse.Namespace) -> int:
    (project / "craft-connector.yml").write_text(
        f"Engine:\n  dialect: postgresql\n  url: {url}\nWarehouse:\n  dialect: duckdb\n  path: w.duckdb\n"
        "Orchestration:\n  Max_parallel_tasks: 10\n")
    (project / "ingestion_scripts").mkdir()
    (project / "ingestion_scripts" / "noop.py").write_text(NOOP)
    (project / "migrations").mkdir()
    (project / "migrations" / "0001_bench.sql").write_text(_metadata())
    _cli(project, "migrate")
    for n in range(options.runs):
        _cli(project, "run", "--pipeline-code", "flow", "--run-key", f"k{n}")
    token = json.loads(_cli(project, "token", "create", "--name", "bench", "--role", "viewer", "--format",
                            "json"))["token"]
    print(f"Engine DB: {options.runs} runs of 10 tasks; {options.clients} clients for {options.seconds:.0f} s each")
    runs = range(1, options.runs + 1)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    api = _measure("etl-craft api (runs, tasks)", [sys.executable, "-m", "etlcraft", "api", "--address",
                                                   f"127.0.0.1:{port}"], project, f"{base}/api/v1/health",
                   [f"{base}/api/v1/runs/{r}{tail}" for r in runs for tail in ("", "/tasks")],
                   {"Authorization": f"Bearer {token}"}, options)
    (project / "bare.py").write_text(BARE)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    bare = _measure("bare FastAPI (same SELECTs)", [sys.executable, "bare.py", url, str(port)], project,
                    f"{base}/bare/runs/1", [f"{base}/bare/runs/{r}" for r in runs], {}, options)
    ratio = api[0] / bare[0]
    print(f"throughput ratio api/bare: {ratio:.2f} (target >= 0.50: {'met' if ratio >= 0.5 else 'NOT met'}); "
          f"api p99 {api[2]:.1f} ms (target < 100 ms: {'met' if api[2] < 100 else 'NOT met'})")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    admin = os.environ.get("ETL_CRAFT_TEST_PG_URL", "postgresql://root@127.0.0.1:5432/test")
    name = f"etlcraft_bench_api_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(admin).set(database=name).render_as_string(hide_password=False)
    try:
        with tempfile.TemporaryDirectory() as folder:
            return _bench(Path(folder), url, options)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    sys.exit(main())
