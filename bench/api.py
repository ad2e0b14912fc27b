"""The HTTP API under read load, on PostgreSQL, beside a bare FastAPI endpoint that runs the same SELECTs.

An Engine DB with one pipeline of 10 no-op tasks that has run R times; `etl-craft api` is started as a subprocess on
a free loopback port, and C concurrent loopback connections of wrk (a load generator written in C; `make bench`
installs it) read run detail and task lists (GET /api/v1/runs/{id} and /runs/{id}/tasks, with a viewer token, over
the R runs) for S seconds. Then a bare
FastAPI app, served by uvicorn with the same settings in a subprocess of its own, answers GET /bare/runs/{id} with
the two SELECTs run detail runs (run_header, run_task_rows) and nothing else (no token, no service), and wrk
reads it the same way for S seconds. Any failed request (a non-2xx answer, a socket error) stops the benchmark.
Prints requests/s and p50/p99 latency of both, and the ratio of throughputs.

Targets: the API's throughput at least half the bare endpoint's, and its p99 under 100 ms.

    python bench/api.py [--seconds 30] [--clients 20] [--runs 5]

Uses ETL_CRAFT_TEST_PG_URL (default postgresql://root@127.0.0.1:5432/test) to create and drop its database.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

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


#: wrk's script: each request takes the next path of the list, so the connections read every run in turn.
WRK_SCRIPT = """\
paths = {%s}
counter = 0
request = function()
  counter = counter + 1
  return wrk.format("GET", paths[(counter %% #paths) + 1])
end
"""
_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def _millis(text: str) -> float:
    found = re.fullmatch(r"([0-9.]+)(us|ms|s|m)", text)
    if found is None:
        raise SystemExit(f"wrk printed a latency {text!r}, expected a number and a unit (us, ms, s)")
    return float(found.group(1)) * _UNITS[found.group(2)]


def _load(paths: list[str], headers: dict[str, str], clients: int, seconds: float,
          folder: Path) -> tuple[float, float, float, int]:
    """`clients` connections of wrk reading `paths` in turn for `seconds`: requests per second, p50 and p99 latency
    (ms) and the number of requests. wrk, a C load generator, leaves the cores to the server: a Python client of 20
    connections on this 2-core machine took enough of them to add its own waits to every figure."""
    script = folder / "paths.lua"
    script.write_text(WRK_SCRIPT % ", ".join(json.dumps(urlsplit(p).path) for p in paths))
    command = ["wrk", "--threads", "1", "--connections", str(clients), "--duration", f"{seconds:g}s", "--latency",
               "--timeout", "30s", "--script", str(script)]
    for name, value in headers.items():
        command += ["--header", f"{name}: {value}"]
    done = subprocess.run([*command, paths[0]], capture_output=True, text=True, check=False)
    out = done.stdout
    if done.returncode or "Requests/sec:" not in out:
        raise SystemExit(f"wrk exited {done.returncode}: {done.stderr or out}")
    for refusal in ("Non-2xx or 3xx responses", "Socket errors"):
        if refusal in out:
            raise SystemExit(f"wrk saw failed requests ({refusal}):\n{out}")
    rate = float(_find(r"Requests/sec:\s+([0-9.]+)", out))
    return rate, _millis(_find(r"\s50%\s+(\S+)", out)), _millis(_find(r"\s99%\s+(\S+)", out)), int(
        _find(r"(\d+) requests in", out))


def _find(pattern: str, out: str) -> str:
    found = re.search(pattern, out)
    if found is None:
        raise SystemExit(f"wrk's report has no match for {pattern!r}:\n{out}")
    return found.group(1)


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
        _load(paths, headers, options.clients, 2.0, cwd)  # warm up: connections, pools, caches
        rate, p50, p99, count = _load(paths, headers, options.clients, options.seconds, cwd)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    print(f"{name:<28} {rate:8.0f} req/s   p50 {p50:6.1f} ms   p99 {p99:6.1f} ms   ({count} requests; load "
          f"average {os.getloadavg()[0]:.1f})")
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
