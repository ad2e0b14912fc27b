"""Every fault point of an attempt's path (etlcraft.core.faults.POINTS) with ETL_CRAFT_FAULT=<point>:kill, through
the real `etl-craft run`: the process that reaches the point (the run's parent, or a task process) dies there, then
a new `etl-craft run` completes what is left, and the Engine DB is consistent: every run ended, no attempt left
QUEUED, CLAIMED or RUNNING, every task run ended and reading as its latest attempt, and an offset only from the
task's latest SUCCESS attempt (B6). SQLite for every point, PostgreSQL for a few.

The pipeline passes every point: `first` then `second` succeed, `crash` ends its task process without recording
anything on its first attempt (the parent records FAILED for it), and `hang` outlives its time limit on its first
attempt (the parent times it out). The first runs of all points start together (a few at a time), then their
leases expire once for all before the second runs: the file stays within about a minute."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from etlcraft.core.faults import OTHER_POINTS, POINTS
from tests.py.conftest import PgServer
from tests.py.support.cli import etl_craft, start_etl_craft
from tests.py.support.engine_state import attempt, attempts, engine_db, inconsistencies, runs, task_runs
from tests.py.support.project import MARK, Task, write_project

FAULT_SCRIPT = MARK + '''
import os
import time

from etlcraft.scripting import ScriptResult


def run(task):
    marks = task.project_dir / "marks"
    marks.mkdir(exist_ok=True)
    first = not any(marks.glob(f"{task.task_code}.*.start"))  # the first attempt that reaches the script
    mark(marks / f"{task.task_code}.{task.attempt_id}.start", f"{time.time()} {os.getpid()}")
    if first and task.input_params.get("first_attempt") == "crash":
        os._exit(70)  # ends without recording an outcome
    if first and task.input_params.get("first_attempt") == "hang":
        time.sleep(20)  # far past its TASK_TIMEOUT_SECONDS
    return ScriptResult(row_count=1, offset=task.attempt_id)
'''
PIPELINE = "faults"
TASKS = [Task("first", script="fault.py"), Task("second", script="fault.py"),
         Task("crash", {"first_attempt": "crash"}, script="fault.py"),
         Task("hang", {"first_attempt": "hang"}, timeout=1, script="fault.py")]
EDGES = [("second", "first", "SUCCESS")]
LEASE_SECONDS = 5  # the shortest the configuration allows: a killed parent's run is free again after it
PARALLEL = 4  # etl-craft commands at once
PG_POINTS = ("attempt_claimed", "handler_done", "failure_recorded")


@dataclass
class Case:
    point: str
    project: Path
    dialect: str = "sqlite"
    first_code: int | None = None
    first_output: str = ""
    ended_at: float = 0.0
    second_code: int | None = None
    second_output: str = ""


def _run_all(cases: list[Case], fault: bool) -> None:
    """`etl-craft run` in every case's project, PARALLEL at a time; with `fault`, under ETL_CRAFT_FAULT=<point>:kill."""
    waiting, running = list(cases), []
    while waiting or running:
        while waiting and len(running) < PARALLEL:
            case = waiting.pop(0)
            log = case.project / ("first.log" if fault else "second.log")
            env = {"ETL_CRAFT_FAULT": f"{case.point}:kill"} if fault else {}
            running.append((case, log, start_etl_craft("run", "--pipeline-code", PIPELINE, cwd=case.project,
                                                       log=log, env=env), time.monotonic()))
        time.sleep(0.05)
        for entry in [e for e in running if e[2].poll() is not None or time.monotonic() - e[3] > 120]:
            case, log, process, _ = entry
            running.remove(entry)
            if process.poll() is None:  # stuck: stop it, and let the case fail on its missing exit code
                process.kill()
                process.wait()
                continue
            if fault:
                case.first_code, case.first_output = process.returncode, log.read_text()
                case.ended_at = time.monotonic()
            else:
                case.second_code, case.second_output = process.returncode, log.read_text()


def _drive(cases: list[Case]) -> dict[str, Case]:
    """The first runs (killed at their point), one wait for the dead parents' leases, then the second runs."""
    _run_all(cases, fault=True)
    free_at = max(c.ended_at for c in cases) + LEASE_SECONDS + 0.5
    time.sleep(max(0.0, free_at - time.monotonic()))
    _run_all(cases, fault=False)
    return {c.point if c.dialect == "sqlite" else f"{c.dialect}:{c.point}": c for c in cases}


def _stop_leftovers(cases: list[Case]) -> None:
    """Task processes orphaned by a killed parent (a hung one outlives the test otherwise)."""
    for case in cases:
        for mark in (case.project / "marks").glob("*.start") if (case.project / "marks").is_dir() else []:
            pid = int(mark.read_text().split()[1])
            try:
                if b"multiprocessing" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)
            except (OSError, ProcessLookupError):
                continue


def _project(root: Path, engine_url: str | None) -> Path:
    return write_project(root, engine_url, {PIPELINE: TASKS}, EDGES, lease_seconds=LEASE_SECONDS, slots=4,
                         scripts={"fault.py": FAULT_SCRIPT})


def _template(root: Path, engine_url: str | None) -> Path:
    project = _project(root, engine_url)
    done = etl_craft("migrate", cwd=project)
    assert done.code == 0, done.out + done.err
    return project


def _drive_and_judge(request: pytest.FixtureRequest, root: Path) -> dict[str, str | None]:
    """Every case, driven together and judged while its Engine DB exists: key -> what is wrong, None when nothing.
    SQLite cases are keyed by point, PostgreSQL ones postgresql:<point> (driven only when a PostgreSQL test of this
    module was selected)."""
    selected = [item for item in request.session.items if item.module is request.module]
    template = _template(root / "sqlite", None)
    cases = [Case(point, root / point) for point in POINTS]
    for case in cases:
        shutil.copytree(template, case.project)
    if any(item.get_closest_marker("postgres") for item in selected):
        pg_server: PgServer = request.getfixturevalue("pg_server")
        template_db = pg_server.create()
        _template(root / "postgresql", pg_server.url_for(template_db))
        cases += [Case(point, _project(root / f"pg-{point}", pg_server.url_for(
            pg_server.create(template=template_db))), "postgresql") for point in PG_POINTS]
    try:
        return {key: _verdict(case) for key, case in _drive(cases).items()}
    finally:
        _stop_leftovers(cases)


@pytest.fixture(scope="module")
def verdicts(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | None]:
    """The verdict of every case, computed once per session: under pytest-xdist the first worker that needs them
    drives the cases while the others wait on a lock, then every worker reads the same verdicts."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = tmp_path_factory.getbasetemp().parent / "fault-points"  # this session's, shared by its workers
        root.mkdir(exist_ok=True)
    else:
        root = tmp_path_factory.mktemp("fault-points")
    with (root / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = root / "verdicts.json"
        if not done.exists():
            done.write_text(json.dumps(_drive_and_judge(request, root / "cases")))
        return dict(json.loads(done.read_text()))


def _fired_in_task_processes(case: Case) -> list[int]:
    """The attempts whose task process reached the point (the line fault_point writes to the attempt's log)."""
    fired = f"fault point {case.point} fired in process"
    logs = (case.project / ".etl-craft" / "logs").glob(f"*/{PIPELINE}/*/*.log")  # <Engine DB>/<pipeline>/<run>/
    return sorted(int(log.name.split(".")[-2]) for log in logs if fired in log.read_text(errors="replace"))


def _check(case: Case) -> None:
    in_parent = f"fault point {case.point} fired in process" in case.first_output
    in_children = _fired_in_task_processes(case)
    assert in_parent or in_children, f"the fault point {case.point} never fired:\n{case.first_output}"
    assert case.first_code == (137 if in_parent else 9), case.first_output
    assert case.second_code in (0, 9), f"the second run:\n{case.second_output}"
    with engine_db(case.project) as db:
        assert inconsistencies(db, PIPELINE) == []
        ended = runs(db, PIPELINE)
        assert f"run {ended[-1]['pipeline_run_id']} ended {ended[-1]['status']}" in case.second_output
        for run in ended:
            tasks = sorted(tr["task_code"] for tr in task_runs(db, PIPELINE)
                           if tr["pipeline_run_id"] == run["pipeline_run_id"])
            assert tasks == ["crash", "first", "hang", "second"], f"run {run['pipeline_run_id']} left tasks unrun"
        if in_parent:
            assert len(ended) == 1, "the next run resumed and completed the run the killed parent left"
        else:
            assert len(ended) == 2, "the run whose task process was killed ended by itself; the next is a new run"
        if case.point == "outcome_received":  # its parent went as `first` sent its outcome: `first` recorded it
            sent = next(a for a in attempts(db, PIPELINE) if a["task_code"] == "first")
            assert (sent["status"], sent["exit_code"]) == ("SUCCESS", 0), "the task process recorded its own outcome"
            assert "recording the outcome from the task process" in Path(sent["log_path"]).read_text()
        for attempt_id in in_children:
            row = attempt(db, attempt_id)
            if case.point == "outcome_recorded":
                assert (row["status"], row["exit_code"]) == ("SUCCESS", 0), "a recorded outcome stands"
            else:
                assert row["status"] == "FAILED"
                assert row["error_message"].startswith("the task process exited with code 137 without recording")


def _verdict(case: Case) -> str | None:
    """What _check finds wrong with the case (its assertion message), None when nothing."""
    try:
        _check(case)
    except AssertionError as wrong:
        return f"{case.dialect} {case.point}: {wrong}"
    return None


@pytest.mark.process
@pytest.mark.parametrize("point", POINTS)
def test_kill_at_each_fault_point__the_next_run_completes_and_the_engine_db_is_consistent(
        point: str, verdicts: dict[str, str | None]) -> None:
    assert verdicts[point] is None, verdicts[point]


@pytest.mark.process
@pytest.mark.postgres
@pytest.mark.parametrize("point", PG_POINTS)
def test_kill_at_a_fault_point__postgresql__the_next_run_completes_and_the_engine_db_is_consistent(
        point: str, verdicts: dict[str, str | None]) -> None:
    assert verdicts[f"postgresql:{point}"] is None, verdicts[f"postgresql:{point}"]


def test_every_fault_point_is_named_where_the_code_reaches_it() -> None:
    """POINTS lists exactly the points the code calls on an attempt's path, so the loop above misses none (and
    OTHER_POINTS the others, each tested where its feature is)."""
    root = Path(__file__).resolve().parents[3] / "etlcraft"
    called = {name for path in root.rglob("*.py")
              for name in re.findall(r'fault_point\("([a-z_]+)"\)', path.read_text(encoding="utf-8"))}
    assert called == set(POINTS) | set(OTHER_POINTS)
