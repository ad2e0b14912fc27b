"""`etl-craft test` on a project with many small hermetic tests, run as a user runs it: a new process each time.

A temporary project from `etl-craft init` (the example shop) gets N manifests, each testing the task load_orders
(SCD1_MERGE) with its own two-row fixture and two expected output rows. `etl-craft test .` then runs R times as a
subprocess; every run must pass all N tests.

Prints, measured in this run:
  - wall time of one `etl-craft test .` (process start to exit): p50, p95 and max over the R runs, against the
    target (p95 at most 2 s for 100 tests);
  - CPU time (user + system) of one run, p50: on a shared machine it moves less than wall time;
  - the milliseconds each test adds: the suite's own duration_ms (the JSON report) divided by N, p50;
  - peak RSS of the largest run (its own ru_maxrss);
  - the machine's load average before and after (the machine may be shared: times move with it).

etl-craft's own modules are byte-compiled first, as `pip install` compiles an installed package's.

    python bench/hermetic.py [--tests 100] [--runs 20] [--workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_P95_SECONDS = 2.0
MANIFEST = """kind: etl-craft.test.v1
name: bench_{n:03d}
pipeline: customer_orders
task: load_orders
relations:
  raw.orders:
    fixture: fixtures/bench_{n:03d}.orders.jsonl
    columns: {{amount: "DECIMAL(10,2)", ordered_at: TIMESTAMP}}
expect:
  rows: 2
  output: fixtures/bench_{n:03d}.expected.jsonl
"""


def _rows(n: int) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    source = [{"order_id": 2 * n + i, "customer_id": 10 + i, "product": f"item {n}", "quantity": 1 + i,
               "amount": f"{n}.{25 * (i + 1)}", "ordered_at": f"2026-01-0{1 + i} 10:00:00"} for i in range(2)]
    expected = [{"order_id": r["order_id"], "amount": r["amount"]} for r in source]
    return source, expected


def make_project(parent: Path, tests: int) -> Path:
    root = parent / "shop"
    subprocess.run([sys.executable, "-m", "etlcraft", "init", str(root)], check=True, capture_output=True)
    folder = root / "tests"
    for old in folder.glob("*.test.yaml"):
        old.unlink()
    for n in range(tests):
        source, expected = _rows(n)
        (folder / f"bench_{n:03d}.test.yaml").write_text(MANIFEST.format(n=n), encoding="utf-8")
        for name, rows in (("orders", source), ("expected", expected)):
            (folder / "fixtures" / f"bench_{n:03d}.{name}.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root


def run_once(root: Path, tests: int, workers: int | None = None) -> tuple[float, float, float, int]:
    """One `etl-craft test . --format json`: its wall time, CPU time (its forked workers' included: they are waited
    for), peak RSS (MiB) and the suite's duration_ms. `workers`: passed as --workers (None: etl-craft's default)."""
    command = [sys.executable, "-m", "etlcraft", "test", ".", "--format", "json"]
    if workers is not None:
        command += ["--workers", str(workers)]
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(command, cwd=root, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8")
    if process.returncode != 0:
        raise SystemExit(f"etl-craft test exited {process.returncode}:\n{text[-4000:]}")
    suite = json.loads(text)
    if suite["counts"]["passed"] != tests:
        raise SystemExit(f"expected {tests} passed tests, found {suite['counts']}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, int(suite["duration_ms"])


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def compile_bytecode() -> None:
    """Byte-compile the etl-craft that `python -m etlcraft` imports, as `pip install` does for an installed package:
    from a source checkout, and where PYTHONDONTWRITEBYTECODE is set, every run would otherwise compile each of
    etl-craft's modules again, a cost an installed etl-craft never pays."""
    code = "import compileall, os, etlcraft; compileall.compile_dir(os.path.dirname(etlcraft.__file__), quiet=1)"
    subprocess.run([sys.executable, "-c", code], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=100)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--workers", type=int, default=None,
                        help="pass --workers N to etl-craft test (default: its own choice, one per available CPU)")
    args = parser.parse_args()
    compile_bytecode()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="etlcraft-bench-hermetic-") as tmp:
        root = make_project(Path(tmp), args.tests)
        walls, cpus, rss, suites = [], [], [], []
        for _ in range(args.runs):
            wall, cpu, rss_mib, duration_ms = run_once(root, args.tests, args.workers)
            walls.append(wall)
            cpus.append(cpu)
            rss.append(rss_mib)
            suites.append(duration_ms)
    p95 = percentile(walls, 0.95)
    workers = "its default workers" if args.workers is None else f"--workers {args.workers}"
    print(f"etl-craft test . over {args.tests} two-row tests, {args.runs} runs (each a new process, {workers}, "
          f"{len(os.sched_getaffinity(0))} CPUs available)")
    print(f"  wall time      p50 {statistics.median(walls):.3f} s   p95 {p95:.3f} s   max {max(walls):.3f} s")
    print(f"  CPU time       p50 {statistics.median(cpus):.3f} s (user + system; moves less with the load)")
    print(f"  suite itself   p50 {statistics.median(suites) / 1000:.3f} s "
          f"({statistics.median(suites) / args.tests:.1f} ms per test, process start excluded)")
    print(f"  peak RSS       {max(rss):.0f} MiB (the largest run's)")
    print(f"  load average   {load_before:.1f} before, {os.getloadavg()[0]:.1f} after (1 min)")
    if args.tests == 100:
        verdict = "met" if p95 <= TARGET_P95_SECONDS else "NOT met"
        print(f"  target         p95 at most {TARGET_P95_SECONDS:g} s: {verdict}")


if __name__ == "__main__":
    main()
