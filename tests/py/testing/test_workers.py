"""A large suite spread over forked workers (etlcraft/testing/workers.py): reports in manifest order, the same as
from one process, a dead worker's tests run by the parent, and no fork where it is unsafe or does not pay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from etlcraft.testing import sandbox, workers
from etlcraft.testing.suite import without_durations
from tests.py.testing.test_hermetic import manifest, src

ITEMS = [f"tests/t{n:02d}.test.yaml" for n in range(20)]


def test_run_spread__two_workers__every_report_in_item_order_and_two_processes() -> None:
    parent = os.getpid()
    reports = workers.run_spread(ITEMS, lambda item: {"item": item, "pid": os.getpid()}, 2, lambda: None)
    assert [r["item"] for r in reports] == ITEMS
    pids = {r["pid"] for r in reports}
    assert parent in pids and len(pids) == 2
    assert [r["pid"] == parent for r in reports] == [n % 2 == 0 for n in range(20)]  # every second item


def test_run_spread__a_worker_dies__the_parent_runs_its_share() -> None:
    parent = os.getpid()

    def run(item: str) -> dict[str, Any]:
        if os.getpid() != parent:
            os._exit(3)  # a worker ends without sending anything
        return {"item": item, "pid": os.getpid()}

    reports = workers.run_spread(ITEMS, run, 3, lambda: None)
    assert [r["item"] for r in reports] == ITEMS and {r["pid"] for r in reports} == {parent}


def test_run_spread__worker__does_not_use_the_parents_duckdb() -> None:
    inherited = sandbox._shared_warehouse()
    reports = workers.run_spread(ITEMS, lambda item: {"same": sandbox._shared_warehouse() is inherited}, 2,
                                 sandbox.forget_inherited)
    assert [r["same"] for r in reports] == [n % 2 == 0 for n in range(20)]


def test_worker_count__small_suite_or_threads_or_one_asked__one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "available_cpus", lambda: 4)
    monkeypatch.setattr(workers, "_threads", lambda: 1)
    assert workers.worker_count(100, None) == 4
    assert workers.worker_count(100, 1) == 1
    assert workers.worker_count(2 * workers.MIN_TESTS_PER_WORKER, None) == 2
    assert workers.worker_count(workers.MIN_TESTS_PER_WORKER * 2 - 1, 8) == 1
    monkeypatch.setattr(workers, "_threads", lambda: 2)  # a thread could hold a lock across the fork
    assert workers.worker_count(100, None) == 1


def test_worker_count__threads_duckdb_started__one_process() -> None:
    """DuckDB's threads are not Python's: once its default connection is open, the process has them and must not
    fork; a fresh process with only the suite's warm-up done (sandbox.load_driver) still may."""
    script = ("import sys, duckdb\n"
              "from etlcraft.testing import sandbox, workers\n"
              "workers.available_cpus = lambda: 2\n"
              "sandbox.load_driver()\n"
              "before = workers.worker_count(100, None)\n"
              "duckdb.cursor().execute('SELECT 1').fetchall()\n"
              "print(before, workers.worker_count(100, None))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["2", "1"], done.stderr


def test_cli__forked_workers__same_report_as_one_process(project: Path) -> None:
    """`etl-craft test .` in a new process (one thread: it may fork): 2 workers give the report 1 gives, failures
    and blocked tests included, in manifest order."""
    for n in range(2 * workers.MIN_TESTS_PER_WORKER):
        expect: dict[str, Any] = {"rows": 2 if n % 5 else 3}  # every fifth fails its row count
        manifest(project, f"t{n:02d}", {"relations": src(project), "task": "scd1" if n % 7 else "nope",
                                        "expect": expect})
    reports = {}
    for count in ("1", "2"):
        done = subprocess.run([sys.executable, "-m", "etlcraft", "--project", str(project), "test", ".", "--format",
                               "json", "--workers", count], capture_output=True, text=True, timeout=600)
        reports[count] = json.loads(done.stdout)
        assert done.returncode == 2, done.stderr[-2000:]
    one, two = reports["1"], reports["2"]
    assert [t["manifest"] for t in two["tests"]] == sorted(t["manifest"] for t in two["tests"])
    assert two["counts"] == {"total": 16, "passed": 10, "failed": 3, "blocked": 3}
    assert without_durations(one) == without_durations(two)


SENTINELS = """
import os, socket, ssl, subprocess, sys
import etlcraft.config.loader as loader
import etlcraft.testing.suite
from etlcraft.cli import cli

def forbidden(*args, **kwargs):
    raise AssertionError("a hermetic test touched a forbidden capability")

for module, name in ((socket, "socket"), (socket, "create_connection"), (subprocess, "Popen"), (os, "system"),
                     (loader, "resolve_variable"), (loader, "load_config"), (loader, "read_env_file")):
    setattr(module, name, forbidden)
real_fork = os.fork

def fork():
    pid = real_fork()
    if pid:
        sys.stderr.write("forked a worker\\n")
    return pid

os.fork = fork
cli(sys.argv[1:])
"""


def test_cli__forked_workers__sentinels_still_hold(project: Path) -> None:
    """The workers are copies of the process, sentinels included: with sockets, subprocesses, secrets and the
    project's configuration forbidden before the CLI starts, a suite spread over two processes passes."""
    for n in range(2 * workers.MIN_TESTS_PER_WORKER):
        manifest(project, f"t{n:02d}", {"relations": src(project), "steps": [
            {"task": "scd1", "expect": {"rows": 2}}, {"task": "check", "expect": {"rule_flags": {"name_set": 0}}}]})
    (project / ".env").write_text("ETL_CRAFT_ENGINE_PASSWORD=x\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", SENTINELS, "--project", str(project), "test", ".", "--format",
                           "json", "--workers", "2"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    assert json.loads(done.stdout)["counts"]["passed"] == 16
    assert done.stderr.count("forked a worker") == 1, done.stderr
