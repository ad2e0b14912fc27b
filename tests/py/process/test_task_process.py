"""The task process, through the real `etl-craft run` (SQLite, and PostgreSQL where the Engine DB's part differs):
a zombie that finishes after its attempt was lost changes nothing (B8); a stop signal on every run path (a task
running under a pipeline run, a task command or a rerun; between tasks; while a task process starts) leaves no
process behind and the attempt FAILED with the reason (B3); setup failures leave the attempt FAILED with the error,
never CLAIMED or RUNNING (B2); the process ends as soon as its outcome is recorded, whatever threads or atexit hooks
its script leaves (B53); what it prints reaches its log file, and the tail its TASK_LOG, even when it is killed or
timed out (B54); a nanosecond offset fails the attempt and stores nothing (B60); scripts are real modules in the
task process too (B19)."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from etlcraft.core.errors import EtlCraftError
from etlcraft.core.faults import VARIABLE
from etlcraft.engine.db import EngineDB
from etlcraft.supervisor import local
from etlcraft.supervisor.child import ChildRequest
from tests.py.support.attempts import OWNER, Attempts
from tests.py.support.cli import descendants, descendants_alive, etl_craft, start_etl_craft
from tests.py.support.engine_state import attempt, attempts, engine_db, inconsistencies, offsets, runs, snapshot
from tests.py.support.project import MARK, Task, run_logs, wait_for, write_project

LEASE_SECONDS = 5

ZOMBIE_SCRIPT = MARK + '''
import os
import signal
import time

from etlcraft.scripting import ScriptResult


def run(task):
    marks = task.project_dir / "marks"
    marks.mkdir(exist_ok=True)
    first = not any(marks.glob(f"{task.task_code}.*.start"))
    mark(marks / f"{task.task_code}.{task.attempt_id}.start", f"{time.time()} {os.getpid()}")
    if first:  # outlives its parent and the reconciliation that marks its attempt LOST, until the test lets it go
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while not (marks / "release").exists():
            time.sleep(0.05)
    mark(marks / f"{task.task_code}.{task.attempt_id}.end", str(time.time()))
    return ScriptResult(row_count=100 + task.attempt_id, offset=task.attempt_id)
'''

STOP_SCRIPT = MARK + '''
import os
import subprocess
import time

from etlcraft.scripting import ScriptResult


def run(task):
    marks = task.project_dir / "marks"
    marks.mkdir(exist_ok=True)
    earlier = any(marks.glob(f"{task.task_code}.*.start"))
    helper = subprocess.Popen(["sleep", "120"])  # in the task process's group: it must not outlive the attempt
    mark(marks / f"{task.task_code}.{task.attempt_id}.start", f"{time.time()} {os.getpid()} {helper.pid}")
    print(f"{task.task_code} working", flush=True)
    if task.input_params.get("fail_first") and not earlier:
        raise RuntimeError(f"{task.task_code} fails its first attempt")
    time.sleep(float(task.input_params.get("seconds", 0)))
    return ScriptResult(row_count=1)
'''

TALK_SCRIPT = MARK + '''
import logging
import os
import subprocess
import sys
import time

from etlcraft.scripting import ScriptResult


def run(task):
    params = task.input_params
    for n in range(1, int(params.get("lines", 0)) + 1):
        print(f"line {n} of {task.task_code}")
    print("to stderr", file=sys.stderr)
    logging.getLogger("talk").info("logged at INFO")
    subprocess.run(["echo", "from a subprocess"], check=True)
    os.write(1, b"written to fd 1\\n")
    for n in range(int(params.get("bulk", 0))):
        print(f"bulk {n:05d}")
    if params.get("partial"):
        print(params["partial"], end="")
    marks = task.project_dir / "marks"
    marks.mkdir(exist_ok=True)
    mark(marks / f"{task.task_code}.{task.attempt_id}.start", f"{time.time()} {os.getpid()}")
    time.sleep(float(params.get("seconds", 0)))
    return ScriptResult(row_count=1)
'''

LINGER_SCRIPT = MARK + '''
import atexit
import os
import threading
import time

from etlcraft.scripting import ScriptResult


def run(task):
    marks = task.project_dir / "marks"
    marks.mkdir(exist_ok=True)

    def upload():
        time.sleep(30)
        (marks / "thread.ended").write_text("the task process waited for its thread")

    threading.Thread(target=upload, name="slow-uploader").start()  # not a daemon: it would hold the process
    atexit.register(lambda: (marks / "atexit.ran").write_text("the task process ran its atexit hooks"))
    mark(marks / f"{task.task_code}.{task.attempt_id}.start", f"{time.time()} {os.getpid()}")
    return ScriptResult(row_count=1)
'''

NANO_SCRIPT = '''
from datetime import datetime, timezone

from etlcraft.scripting import ScriptResult


class Stamp(datetime):
    """A timestamp with nanoseconds, as pandas.Timestamp has."""

    @property
    def nanosecond(self):
        return 789


def run(task):
    return ScriptResult(row_count=1, offset=Stamp(2026, 1, 1, 0, 0, 0, 123456, tzinfo=timezone.utc))
'''

MODULE_SCRIPT = '''
from __future__ import annotations

import multiprocessing
import pickle
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, fields
from typing import ClassVar

from etlcraft.scripting import ScriptResult


@dataclass(frozen=True)
class Batch:
    kind: ClassVar[str] = "orders"
    size: int = 0


def double(batch: Batch) -> Batch:
    return Batch(batch.size * 2)


def run(task):
    assert sys.modules[__name__].__spec__.name == __name__
    assert [f.name for f in fields(Batch)] == ["size"]
    again = pickle.loads(pickle.dumps(Batch(3)))
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("fork")) as pool:
        doubled = list(pool.map(double, [again, Batch(4)]))
    return ScriptResult(row_count=sum(b.size for b in doubled))
'''


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine_url(request: pytest.FixtureRequest) -> str | None:
    return None if request.param == "sqlite" else request.getfixturevalue("empty_pg_url")


@pytest.fixture
def stray_pids() -> Iterator[list[int]]:
    """Processes a test may leave running when it fails: killed at the end, whatever happened."""
    pids: list[int] = []
    yield pids
    for pid in descendants_alive(pids):
        os.kill(pid, signal.SIGKILL)


def _project(tmp_path: Path, engine_url: str | None, tasks: list[Task],
             edges: Sequence[tuple[str, str, str]] = (), **kwargs: object) -> Path:
    scripts = {"zombie.py": ZOMBIE_SCRIPT, "stop.py": STOP_SCRIPT, "talk.py": TALK_SCRIPT,
               "linger.py": LINGER_SCRIPT, "nano.py": NANO_SCRIPT, "module.py": MODULE_SCRIPT}
    project = write_project(tmp_path / "p", engine_url, {"flow": tasks}, list(edges), scripts=scripts,
                            **kwargs)  # type: ignore[arg-type]
    done = etl_craft("migrate", cwd=project)
    assert done.code == 0, done.out + done.err
    return project


def _mark(project: Path, task: str, attempt_id: int) -> list[str]:
    """What the script wrote when attempt `attempt_id` of `task` started: time, pid[, helper pid]."""
    path = project / "marks" / f"{task}.{attempt_id}.start"
    wait_for(path.exists, what=f"attempt {attempt_id} of {task} to start")
    wait_for(lambda: len(path.read_text().split()) >= 2, what=f"the start mark of attempt {attempt_id}")
    return path.read_text().split()


def _log(project: Path, run_id: int, task: str, attempt_id: int) -> Path:
    return run_logs(project, "flow", run_id) / f"{task}.{attempt_id}.log"


# ---------------------------------------------------------------------------------------------------- B8


@pytest.mark.process
def test_b8_a_zombie_task_process_finishing_after_its_attempt_was_lost_changes_nothing(
        tmp_path: Path, engine_url: str | None, stray_pids: list[int]) -> None:
    project = _project(tmp_path, engine_url, [Task("load", script="zombie.py")], lease_seconds=LEASE_SECONDS)
    parent = start_etl_craft("run", "--pipeline-code", "flow", cwd=project, log=tmp_path / "first.log")
    zombie = int(_mark(project, "load", 1)[1])
    stray_pids.append(zombie)
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    time.sleep(LEASE_SECONDS + 0.5)  # nobody renews the dead parent's leases: they expire

    resumed = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert resumed.code == 0, resumed.out + resumed.err
    assert "load: attempt 1 was lost; queued again" in resumed.out
    assert descendants_alive([zombie]) == [zombie], "the zombie ignored the reconciliation's SIGTERM"
    with engine_db(project) as db:
        before = snapshot(db)
        (project / "marks" / "release").write_text("")
        wait_for(lambda: not descendants_alive([zombie]), what="the zombie to finish")
        assert (project / "marks" / "load.1.end").exists(), "the zombie ran its script to the end"
        assert snapshot(db) == before, "the zombie's finish changed nothing"
        lost, newer = attempt(db, 1), attempt(db, 2)
        assert (lost["status"], newer["status"]) == ("LOST", "SUCCESS")
        assert lost["error_message"].startswith("attempt 1 was lost: owner ")
        assert [(o["attempt_id"], o["offset_value"]) for o in offsets(db, "flow")] == [(2, "2")]
        assert newer["rows_written"] == 102, "the task run keeps the newer attempt's result"
        assert inconsistencies(db, "flow") == []
    log = _log(project, 1, "load", 1).read_text()
    assert "expected CLAIMED or RUNNING owned by" in log and "nothing was recorded" in log


# ---------------------------------------------------------------------------------------------------- B3


def _stopped_attempt(project: Path, signum: int) -> dict[str, object]:
    """The attempt the stop caught, checked interrupted (CANCELLED with the stop's reason, using no retry): the
    only attempt left live is the one the Engine DB queued in its place, which nobody owns."""
    with engine_db(project) as db:
        every = attempts(db, "flow")
    live = [a for a in every if a["status"] in ("QUEUED", "CLAIMED", "RUNNING")]
    assert [(a["status"], a["owner_id"]) for a in live] == [("QUEUED", None)]
    stopped = every[-2]
    assert (stopped["status"], stopped["error_message"]) == (
        "CANCELLED", f"interrupted: the etl-craft run supervising it received {signal.Signals(signum).name}")
    assert live[0]["attempt_number"] == stopped["attempt_number"] + 1
    return stopped


@pytest.mark.process
@pytest.mark.parametrize(("command", "signum"), [
    ("--task-code", signal.SIGTERM), ("--rerun", signal.SIGHUP), ("pipeline", signal.SIGHUP)])
def test_b3_a_stop_signal_to_a_run_command_stops_the_task_process_group_and_records_it_interrupted(
        tmp_path: Path, engine_url: str | None, command: str, signum: int, stray_pids: list[int]) -> None:
    project = _project(tmp_path, engine_url, [Task("work", {"seconds": 120, "fail_first": command == "--rerun"},
                                                   script="stop.py")])
    args = ["run", "--pipeline-code", "flow", "--run-key", "k"]
    if command == "--task-code":
        assert etl_craft(*args, "--init-only", cwd=project).code == 0
        args += ["--task-code", "work"]
    elif command == "--rerun":
        assert etl_craft(*args, cwd=project).code == 9, "work failed its first attempt"
        args += ["--rerun", "work"]
    expected = 2 if command == "--rerun" else 1
    parent = start_etl_craft(*args, cwd=project, log=tmp_path / "run.log")
    _, child, helper = _mark(project, "work", expected)
    stray_pids += [int(child), int(helper)]
    wait_for(lambda: "work working" in _log(project, 1, "work", expected).read_text(), what="the script to run")
    family = descendants(parent.pid)
    stray_pids += family
    parent.send_signal(signum)
    assert parent.wait(timeout=60) == 25, (tmp_path / "run.log").read_text()
    assert descendants_alive([int(child), int(helper)]) == [], "nothing of the task process group survives"
    wait_for(lambda: descendants_alive(family) == [], timeout=10, what="the fork server to end with its parent")
    assert _stopped_attempt(project, signum)["attempt_id"] == expected


@pytest.mark.process
def test_b3_a_stop_while_a_task_process_starts__it_is_stopped_and_its_attempt_interrupted_before_its_script(
        tmp_path: Path, engine_url: str | None, stray_pids: list[int]) -> None:
    """The task process is stopped before its handler: the attempt, which its supervisor recorded RUNNING in it as
    it handed the attempt over (a spare task process), is interrupted and queued again, and the script never ran."""
    project = _project(tmp_path, engine_url, [Task("work", script="stop.py")])
    parent = start_etl_craft("run", "--pipeline-code", "flow", cwd=project, log=tmp_path / "run.log",
                             env={VARIABLE: "child_entered:pause"})
    log = _log(project, 1, "work", 1)
    wait_for(lambda: log.exists() and "fault point child_entered fired" in log.read_text(),
             what="the task process to pause before it starts its attempt")
    child = int(log.read_text().split("fired in process ")[1].split()[0])
    family = descendants(parent.pid)
    stray_pids += family
    assert child in family
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(timeout=60) == 25, (tmp_path / "run.log").read_text()
    assert descendants_alive([child]) == []
    wait_for(lambda: descendants_alive(family) == [], timeout=10, what="the fork server to end with its parent")
    stopped = _stopped_attempt(project, signal.SIGTERM)
    assert stopped["pid"] == child, "the attempt was started in the task process the stop caught"
    assert not (project / "marks").exists(), "the script never ran"


@pytest.mark.process
def test_b3_a_stop_between_tasks_leaves_nothing_running_and_the_run_resumes_at_once(
        tmp_path: Path, engine_url: str | None, stray_pids: list[int]) -> None:
    project = _project(tmp_path, engine_url, [Task("first", script="stop.py"), Task("then", script="stop.py")],
                       [("then", "first", "SUCCESS")])
    parent = start_etl_craft("run", "--pipeline-code", "flow", cwd=project, log=tmp_path / "run.log",
                             env={VARIABLE: "child_reaped:pause"})
    wait_for(lambda: "fault point child_reaped fired" in (tmp_path / "run.log").read_text(),
             what="the parent to pause between its tasks")
    _, child, helper = _mark(project, "first", 1)
    family = descendants(parent.pid)
    stray_pids += [int(child), int(helper), *family]
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(timeout=60) == 25, (tmp_path / "run.log").read_text()
    assert descendants_alive([int(child), int(helper)]) == []
    wait_for(lambda: descendants_alive(family) == [], timeout=10, what="the fork server to end with its parent")
    with engine_db(project) as db:
        assert [(a["task_code"], a["status"]) for a in attempts(db, "flow")] == [("first", "SUCCESS")]
        assert [(r["status"], r["owner_id"]) for r in runs(db, "flow")] == [("IN-PROGRESS", None)]
    resumed = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert resumed.code == 0, resumed.out + resumed.err
    with engine_db(project) as db:
        assert [r["status"] for r in runs(db, "flow")] == ["SUCCESS"]
        assert inconsistencies(db, "flow") == []


# ---------------------------------------------------------------------------------------------------- B2


@pytest.mark.process
def test_b2_a_task_process_that_cannot_open_its_log_records_its_attempt_failed_with_the_error(
        tmp_path: Path, engine_url: str | None) -> None:
    project = _project(tmp_path, engine_url, [Task("work", script="stop.py")])
    _log(project, 1, "work", 1).mkdir(parents=True)  # a folder where the attempt's log file goes
    done = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert done.code == 9, done.out + done.err
    with engine_db(project) as db:
        row = attempt(db, 1)
        assert row["status"] == "FAILED" and row["started_at"] is None, "recorded FAILED from CLAIMED"
        assert row["error_message"] == (
            f"could not start the task process of attempt 1: its log file {_log(project, 1, 'work', 1)} cannot be "
            f"opened (IsADirectoryError: [Errno 21] Is a directory: '{_log(project, 1, 'work', 1)}'); expected a "
            "file etl-craft can write; make its folder writable, or move what is in the way, and run the task again")
        assert inconsistencies(db, "flow") == []
    assert not (project / "marks").exists(), "the script never ran"


@pytest.mark.process
def test_b2_a_log_folder_that_cannot_be_created_fails_the_run_before_any_attempt_is_claimed(tmp_path: Path) -> None:
    project = _project(tmp_path, None, [Task("work", script="stop.py")])
    folder = run_logs(project, "flow", 1)
    (project / ".etl-craft" / "logs").write_text("a file where the log folders go")
    done = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert done.code == 1
    assert done.err.startswith(f"error: the task log folder {folder} "
                               "cannot be created (NotADirectoryError: ")
    assert "no task was started" in done.err
    with engine_db(project) as db:
        assert attempts(db, "flow") == [], "no attempt was queued or claimed"


@pytest.mark.process
def test_b2_a_setup_error_after_the_attempt_started_leaves_it_failed_with_the_error(tmp_path: Path) -> None:
    project = _project(tmp_path, None, [Task("work", script="missing.py")])
    done = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert done.code == 9, done.out + done.err
    with engine_db(project) as db:
        row = attempt(db, 1)
        assert row["status"] == "FAILED" and row["started_at"] is not None
        assert row["error_message"].startswith(
            "ScriptError: task work: the script ingestion_scripts/missing.py does not exist (looked for ")
        assert row["retryable"] == "N"


class _Unstartable:
    """A fork server that cannot fork: Process(...).start() fails as os.fork() does without resources."""

    def Process(self, **_: object) -> _Unstartable:  # the name multiprocessing contexts use
        return self

    def start(self) -> None:
        raise OSError(11, "Resource temporarily unavailable")


def test_b2_a_task_process_that_cannot_be_started_leaves_its_claimed_attempt_failed_with_the_reason(
        engine_db: EngineDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claimed = Attempts(engine_db).claimed("ingest")
    monkeypatch.setattr(local, "ensure_fork_server", lambda db: None)
    monkeypatch.setattr(local, "CONTEXT", _Unstartable())
    monkeypatch.setattr(local, "UnawaitedProcess", _Unstartable().Process)  # the spares: none can start either
    base = ChildRequest(attempt_id=0, owner_id=OWNER, project_dir=str(tmp_path), engine_url="", engine_schema="",
                        engine_password=None, log_path="", actor_name="tester@pytest", actor_kind="HUMAN",
                        lease_seconds=60)
    supervisor = local.LocalSupervisor(engine_db, OWNER, base, slots=1, log_dir=tmp_path / "logs")
    reason = (f"could not start the task process of attempt {claimed.attempt_id} (ingest): BlockingIOError: [Errno 11] "
              "Resource temporarily unavailable")
    with pytest.raises(EtlCraftError) as refused:
        supervisor.start(claimed.attempt_id, "ingest", None)
    assert str(refused.value) == (f"{reason}; attempt {claimed.attempt_id} is recorded FAILED and did not run; fix "
                                  "the cause (process limits, memory, the fork server) and run again")
    row = Attempts(engine_db).attempt(claimed.attempt_id)
    assert (row["STATUS"], row["STARTED_AT"]) == ("FAILED", None)
    assert row["ERROR_MESSAGE"] == f"{reason}; the attempt did not run; run the task again once the cause is fixed"
    assert supervisor.children == {}


def test_b3_a_stop_signal_during_a_task_process_start_is_delivered_once_the_process_is_registered() -> None:
    seen: list[str] = []
    previous = signal.signal(signal.SIGTERM, lambda _signum, _frame: seen.append("stopped"))
    try:
        with local.holding_stops():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # the signal arrives meanwhile: held
            seen.append("registered")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert seen == ["registered", "stopped"]


# --------------------------------------------------------------------------------------------------- B53


@pytest.mark.process
def test_b53_the_task_process_ends_when_its_outcome_is_recorded__not_when_its_threads_and_atexit_hooks_are_done(
        tmp_path: Path, stray_pids: list[int]) -> None:
    project = _project(tmp_path, None, [Task("work", script="linger.py")])
    done = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert done.code == 0, done.out + done.err
    child = int(_mark(project, "work", 1)[1])
    stray_pids.append(child)
    assert descendants_alive([child]) == [], "the process ended though its non-daemon thread still sleeps"
    assert not (project / "marks" / "thread.ended").exists()
    assert not (project / "marks" / "atexit.ran").exists(), "os._exit: the script's atexit hook never ran"
    assert "etl-craft: ending the task process with threads still running: slow-uploader" in _log(
        project, 1, "work", 1).read_text()
    with engine_db(project) as db:
        assert attempt(db, 1)["status"] == "SUCCESS"


# --------------------------------------------------------------------------------------------------- B54


@pytest.mark.process
def test_b54_everything_the_task_process_writes_reaches_its_log_file__its_tail_the_task_log(tmp_path: Path) -> None:
    project = _project(tmp_path, None, [Task("work", {"lines": 3, "bulk": 2000}, script="talk.py")])
    done = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert done.code == 0, done.out + done.err
    text = _log(project, 1, "work", 1).read_text()
    for line in ("line 1 of work", "line 3 of work", "to stderr", "INFO talk: logged at INFO", "from a subprocess",
                 "written to fd 1", "bulk 00000", "bulk 01999", "ingestion_scripts/talk.py: 1 row(s) written"):
        assert line in text
    with engine_db(project) as db:
        row = attempt(db, 1)
        assert row["task_log"] == text[-4000:], "TASK_LOG keeps the log's last 4,000 characters"
        assert row["log_path"] == str(_log(project, 1, "work", 1))


@pytest.mark.process
def test_b54_a_task_process_killed_keeps_what_it_printed(tmp_path: Path, stray_pids: list[int]) -> None:
    project = _project(tmp_path, None, [Task("work", {"lines": 5, "seconds": 120}, script="talk.py")])
    parent = start_etl_craft("run", "--pipeline-code", "flow", cwd=project, log=tmp_path / "run.log")
    child = int(_mark(project, "work", 1)[1])
    stray_pids.append(child)
    os.kill(child, signal.SIGKILL)
    assert parent.wait(timeout=60) == 9
    with engine_db(project) as db:
        row = attempt(db, 1)
    assert row["error_message"].startswith("the task process was killed by signal 9 without recording an outcome")
    for n in range(1, 6):
        assert f"line {n} of work" in row["task_log"], "printed without a flush, kept: the output is line-buffered"


@pytest.mark.process
def test_b54_a_timed_out_task_keeps_what_it_printed__a_partial_line_too(tmp_path: Path) -> None:
    project = _project(tmp_path, None, [Task("work", {"lines": 5, "seconds": 120, "partial": "50% done"}, timeout=2,
                                             script="talk.py")])
    done = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert done.code == 9, done.out + done.err
    with engine_db(project) as db:
        row = attempt(db, 1)
    assert row["status"] == "TIMED_OUT"
    assert all(f"line {n} of work" in row["task_log"] for n in range(1, 6))
    text = _log(project, 1, "work", 1).read_text()
    assert "50% done" in text, "the stop flushed the line the script had not ended"


# --------------------------------------------------------------------------------------------------- B60


@pytest.mark.process
def test_b60_a_nanosecond_offset_fails_the_attempt_and_stores_no_offset(tmp_path: Path) -> None:
    project = _project(tmp_path, None, [Task("work", script="nano.py")])
    done = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert done.code == 9, done.out + done.err
    with engine_db(project) as db:
        row = attempt(db, 1)
        assert row["status"] == "FAILED" and row["retryable"] == "N"
        assert row["error_message"] == (
            "ScriptError: ingestion_scripts/nano.py: offset 2026-01-01 00:00:00.123456+00:00 has nanoseconds, which "
            "the offset store can't keep; round it to microseconds")
        assert offsets(db, "flow") == []


# --------------------------------------------------------------------------------------------------- B19


@pytest.mark.process
def test_b19_a_script_is_a_real_module_in_its_task_process__dataclasses_pickle_and_fork_pools_work(
        tmp_path: Path) -> None:
    project = _project(tmp_path, None, [Task("work", script="module.py")])
    done = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert done.code == 0, done.out + done.err
    status = json.loads(etl_craft("status", "--pipeline-code", "flow", "--run-id", "1", "--format", "json",
                                  cwd=project).out)
    assert status["tasks"][0]["status"] == "SUCCESS"
    with engine_db(project) as db:
        assert attempt(db, 1)["rows_written"] == 14
