"""Operator controls at every point of a live run, through real `etl-craft` processes: mark (a task SUCCESS, and
FAILED where that differs), cancel, pause/resume and `run --rerun T` before any task started (the run created and
admitted by --init-only), while a supervisor's task runs (held), between two tasks (the first run by --task-code),
and after the run ended. Each case checks the command's documented answer, the run and its tasks
in `etl-craft status --format json` once the supervisor has carried on (or been run again), one `etl-craft audit`
entry per accepted request (none for a refused one) with its actor, and that no task process is left alive.

Then backfills and manual runs interleaved (B7): a plain run while a backfill's task is held is refused, and a
manual run that is active before the backfill's next date stops it with the exact command that resumes it, which
then finishes the remaining dates.

The pipeline: `a` (held until the test releases it) then `b` (SUCCESS edge). For `--rerun`, `b` fails its first
attempt, so the run that ended has a task to rerun. Everything runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from tests.py.conftest import PgServer
from tests.py.support.cli import Result, descendants, descendants_alive, etl_craft, start_etl_craft
from tests.py.support.project import Task, release, wait_for, write_project

pytestmark = pytest.mark.process

EDGES = [("b", "a", "SUCCESS")]
LEASE_SECONDS = 20  # heartbeats every 4 s: a cancel is noticed within 4 s, a busy machine keeps its leases
CONTROL_COMMANDS = ("mark", "cancel", "pause", "resume", "reopen", "run --rerun")
NOT_RUN = ("NOT RUN", 0)


def _flow(b_fails_once: bool) -> dict[str, list[Task]]:
    return {"flow": [Task("a", {"hold": "a"}), Task("b", {"fail_times": 1} if b_fails_once else {})]}


def _ok(result: Result, code: int = 0) -> Result:
    assert result.code == code, (result.code, result.out, result.err)
    return result


def _status(project: Path, run_id: int) -> dict[str, Any]:
    done = _ok(etl_craft("status", "--pipeline-code", "flow", "--run-id", str(run_id), "--format", "json",
                         cwd=project))
    return dict(json.loads(done.out))


def _tasks(doc: dict[str, Any]) -> dict[str, tuple[str, int]]:
    return {t["task_code"]: (t["status"], t["attempts"]) for t in doc["tasks"]}


def _actions(project: Path) -> list[tuple[str, int | None, str]]:
    """The control requests etl-craft audit lists for flow, oldest first: (command, run, actor)."""
    done = _ok(etl_craft("audit", "--pipeline-code", "flow", "--format", "json", cwd=project))
    entries = json.loads(done.out)["entries"]
    return [(e["what"], e["run_id"], e["actor"]) for e in reversed(entries)
            if e["kind"] == "action" and e["what"] in CONTROL_COMMANDS]


def _history(project: Path) -> list[tuple[str, str]]:
    done = _ok(etl_craft("history", "--pipeline-code", "flow", "--format", "json", cwd=project))
    return [(r["run_key"], r["status"]) for r in sorted(json.loads(done.out)["runs"],
                                                        key=lambda r: r["pipeline_run_id"])]


def _started(project: Path, task: str) -> None:
    marks = project / "marks"
    wait_for(lambda: marks.is_dir() and any(marks.glob(f"{task}.*.start")), what=f"{task} to start")


def _script_pids(project: Path) -> list[int]:
    """The pid of every task process that reached the work script (marks/<task>.<attempt>.start)."""
    marks = project / "marks"
    return [int(p.read_text().split()[1]) for p in marks.glob("*.start")] if marks.is_dir() else []


def _survivors(project: Path) -> list[int]:
    """Live processes working in the project's folder (etl-craft, its fork server, task processes); zombies aside."""
    here = os.path.realpath(project)
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == here or cwd.startswith(here + os.sep):
            found.append(int(entry.name))
    return descendants_alive(found)


def _all_ended(pids: list[int], what: str) -> None:
    """Every process of `pids` ends (a supervisor's helpers exit as soon as it has: give them a moment)."""
    wait_for(lambda: not descendants_alive(pids), timeout=15, what=f"{what} {descendants_alive(pids)} to end")


def _no_survivors(project: Path) -> None:
    wait_for(lambda: not _survivors(project), timeout=15, what="the processes working in the project to end")


class Projects:
    """Migrated projects of flow, copied from one migrated per worker, dialect and shape (a migrate is a good part
    of a case's time): on SQLite a copy of the template's Engine DB file, on PostgreSQL a database created from the
    template's database (CREATE DATABASE ... TEMPLATE)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.templates: dict[tuple[str, bool], tuple[Path, str | None]] = {}

    def _template(self, pg: PgServer | None, b_fails_once: bool) -> tuple[Path, str | None]:
        """The migrated template project of this dialect and shape, and its PostgreSQL database (None on SQLite)."""
        dialect = "sqlite" if pg is None else "postgresql"
        if (dialect, b_fails_once) not in self.templates:
            database = pg.create() if pg is not None else None
            url = pg.url_for(database) if pg is not None and database is not None else None
            template = write_project(self.root / f"template-{dialect}-{b_fails_once}", url, _flow(b_fails_once),
                                     EDGES, lease_seconds=LEASE_SECONDS)
            _ok(etl_craft("migrate", cwd=template))
            self.templates[dialect, b_fails_once] = template, database
        return self.templates[dialect, b_fails_once]

    def new(self, root: Path, dialect: str, b_fails_once: bool, request: pytest.FixtureRequest) -> Path:
        pg = cast(PgServer, request.getfixturevalue("pg_server")) if dialect == "postgresql" else None
        template, database = self._template(pg, b_fails_once)
        if pg is None or database is None:  # SQLite: the project's own Engine DB file
            project = write_project(root, None, _flow(b_fails_once), EDGES, lease_seconds=LEASE_SECONDS)
            shutil.copytree(template / ".etl-craft", project / ".etl-craft")
            return project
        copy = pg.create(template=database)
        request.addfinalizer(lambda: pg.drop(copy))
        return write_project(root, pg.url_for(copy), _flow(b_fails_once), EDGES, lease_seconds=LEASE_SECONDS)


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> Projects:
    return Projects(tmp_path_factory.mktemp("templates"))


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Reap a supervisor a failed assertion left behind: SIGTERM, then SIGKILL."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@dataclass(frozen=True)
class Expected:
    """What one operation at one point leads to: the operation's exit code, the exit code of the supervisor that
    carries on (or of the `etl-craft run --run-id 1` that resumes the run), the run's final status and its tasks'
    (status, attempts), and the control requests recorded."""

    op_code: int
    carry_on: int
    status: str
    tasks: dict[str, tuple[str, int]]
    actions: tuple[str, ...]


DONE = {"a": ("SUCCESS", 1), "b": ("SUCCESS", 1)}
B_BY_HAND = {"a": ("SUCCESS", 1), "b": ("SUCCESS", 0)}
B_FAILED = {"a": ("SUCCESS", 1), "b": ("FAILED", 1)}
B_MARKED_FAILED = {"a": ("SUCCESS", 1), "b": ("FAILED", 0)}

# operation -> point -> what it leads to. Points: "before" (the run was created and admitted, no task started),
# "running" (a live supervisor's task a is held), "between" (a ended by `run --task-code a`, b has not run),
# "after" (the run ended: SUCCESS, or FAILED for --rerun, whose b fails its first attempt).
MATRIX: dict[str, dict[str, Expected]] = {
    # mark b SUCCESS: b never runs and the run ends SUCCESS; after the end, the mark reopens the run as a repair.
    "mark_success": {
        "before": Expected(0, 0, "SUCCESS", B_BY_HAND, ("mark",)),
        "running": Expected(0, 0, "SUCCESS", B_BY_HAND, ("mark",)),
        "between": Expected(0, 0, "SUCCESS", B_BY_HAND, ("mark",)),
        "after": Expected(0, 0, "SUCCESS", DONE, ("mark",)),
    },
    # mark b FAILED: b never runs, a still does, and the run ends FAILED from its task runs (exit 9); after the end,
    # the mark reopens the run and it ends FAILED.
    "mark_failed": {
        "before": Expected(0, 9, "FAILED", B_MARKED_FAILED, ("mark",)),
        "running": Expected(0, 9, "FAILED", B_MARKED_FAILED, ("mark",)),
        "between": Expected(0, 9, "FAILED", B_MARKED_FAILED, ("mark",)),
        "after": Expected(0, 9, "FAILED", {"a": ("SUCCESS", 1), "b": ("FAILED", 1)}, ("mark",)),
    },
    # cancel --run-id 1: without a live attempt the run is CANCELLED at once and nothing more runs in it (24); with
    # one, the supervisor stops it, ends it CANCELLED and exits 9; an ended run is refused (20), recording nothing.
    "cancel": {
        "before": Expected(0, 24, "CANCELLED", {"a": NOT_RUN, "b": NOT_RUN}, ("cancel",)),
        "running": Expected(0, 9, "CANCELLED", {"a": ("CANCELLED", 1), "b": NOT_RUN}, ("cancel",)),
        "between": Expected(0, 24, "CANCELLED", {"a": ("SUCCESS", 1), "b": NOT_RUN}, ("cancel",)),
        "after": Expected(20, 24, "SUCCESS", DONE, ()),
    },
    # pause, then resume: while paused the run admits no task (etl-craft run releases it IN-PROGRESS, exit 25; a new
    # run is refused, 24); after resume, etl-craft run carries on to SUCCESS.
    "pause": {
        "before": Expected(0, 25, "SUCCESS", DONE, ("pause", "resume")),
        "running": Expected(0, 25, "SUCCESS", DONE, ("pause", "resume")),
        "between": Expected(0, 25, "SUCCESS", DONE, ("pause", "resume")),
        "after": Expected(0, 24, "SUCCESS", DONE, ("pause", "resume")),
    },
    # run --rerun b: refused (24, recording nothing) until b has FAILED; the run then ends FAILED as b fails once.
    # After that end, --rerun b reopens the run, b succeeds and the run ends SUCCESS.
    "rerun": {
        "before": Expected(24, 9, "FAILED", B_FAILED, ()),
        "running": Expected(24, 9, "FAILED", B_FAILED, ()),
        "between": Expected(24, 9, "FAILED", B_FAILED, ()),
        "after": Expected(0, 24, "SUCCESS", {"a": ("SUCCESS", 1), "b": ("SUCCESS", 2)}, ("run --rerun",)),
    },
}
CASES = [pytest.param(dialect, op, point, id=f"{dialect}-{op}-{point}",
                      marks=[pytest.mark.postgres] if dialect == "postgresql" else [])
         for dialect in ("sqlite", "postgresql") for op in MATRIX for point in MATRIX[op]]


class LiveRun:
    """The run of flow at one point, and how it carries on."""

    def __init__(self, project: Path, point: str, log: Path, b_fails_once: bool) -> None:
        self.project, self.point, self.log, self.b_fails_once = project, point, log, b_fails_once
        self.supervisor: subprocess.Popen[bytes] | None = None
        self.tree: list[int] = []

    def reach(self) -> None:
        run = ("run", "--pipeline-code", "flow", "--run-key", "k")
        if self.point == "running":
            self.supervisor = start_etl_craft(*run, cwd=self.project, log=self.log)
            _started(self.project, "a")
            self.tree = descendants(self.supervisor.pid)
            assert self.tree, "the supervisor runs a's task process"
            return
        release(self.project, "a")
        if self.point == "before":
            _ok(etl_craft(*run, "--init-only", cwd=self.project))
        elif self.point == "between":
            done = _ok(etl_craft(*run, "--task-code", "a", cwd=self.project))
            assert "run 1 stays IN-PROGRESS: 1 task(s) have not run yet (b)" in done.out
        else:
            _ok(etl_craft(*run, cwd=self.project), 9 if self.b_fails_once else 0)

    def carry_on(self) -> int:
        """Let the supervisor go on and wait for it; with none, resume the run with etl-craft run --run-id 1 (its
        output then goes to the log, for the assertion's message)."""
        if self.supervisor is not None and self.supervisor.returncode is None:
            release(self.project, "a")
            return self.supervisor.wait(timeout=90)
        done = etl_craft("run", "--pipeline-code", "flow", "--run-id", "1", cwd=self.project)
        self.log.write_text(done.out + done.err)
        return done.code


@pytest.mark.parametrize(("dialect", "op", "point"), CASES)
def test_operator_control_at_each_point_of_a_live_run(
        request: pytest.FixtureRequest, tmp_path: Path, projects: Projects, dialect: str, op: str, point: str) -> None:
    expected = MATRIX[op][point]
    project = projects.new(tmp_path / "p", dialect, op == "rerun", request)
    live = LiveRun(project, point, tmp_path / "run.log", b_fails_once=op == "rerun")
    try:
        live.reach()
        carried = _operate(live, op, expected)
        if carried is None:
            carried = live.carry_on()
        assert carried == expected.carry_on, (tmp_path / "run.log").read_text()
        if live.supervisor is not None:
            _all_ended(live.tree, "the supervisor's fork server and task processes")
    finally:
        if live.supervisor is not None:
            release(project, "a")
            _stop(live.supervisor)

    final = _status(project, 1)
    assert (final["run"]["status"], _tasks(final)) == (expected.status, expected.tasks)
    assert final["run"]["owner_id"] is None, "nobody owns the run any more"
    assert _actions(project) == [(command, None if command in ("pause", "resume") else 1, "tester@cli")
                                 for command in expected.actions]
    _all_ended(_script_pids(project), "task processes")
    _no_survivors(project)
    _check_details(project, op, point, final)


def _operate(live: LiveRun, op: str, expected: Expected) -> int | None:
    """Apply `op` at the point reached and check its answer; returns the exit code of the carry-on when the
    operation itself had to carry the run on (pause), else None."""
    project, point = live.project, live.point
    if op in ("mark_success", "mark_failed"):
        status = "SUCCESS" if op == "mark_success" else "FAILED"
        done = _ok(etl_craft("mark", "--pipeline-code", "flow", "--run-id", "1", "--task-code", "b", "--status",
                             status, "--rows", "3", "--reason", "judged by hand", "--format", "json", cwd=project),
                   expected.op_code)
        doc = json.loads(done.out)
        assert (doc["task"]["status"], doc["task"]["rows_written"], doc["task"]["message"]) == (
            status, 3, f"marked {status}: judged by hand")
        assert doc["run"]["status"] == "IN-PROGRESS", "a mark of a task leaves (or reopens) the run IN-PROGRESS"
        assert doc["run"]["repair_pending"] is (point == "after"), "reopening a SUCCESS run is a repair"
        return None
    if op == "cancel":
        done = etl_craft("cancel", "--pipeline-code", "flow", "--run-id", "1", "--reason", "not today", "--format",
                         "json", cwd=project)
        _ok(done, expected.op_code)
        if point == "after":
            assert "run 1 already ended SUCCESS; there is nothing to cancel" in done.err
            return None
        doc = json.loads(done.out)
        if point == "running":
            assert doc["run"]["status"] == "IN-PROGRESS" and doc["run"]["cancel_requested_at"] is not None
            assert "cancel requested: 1 attempt(s) still run" in doc["message"]
            assert live.supervisor is not None
            return live.supervisor.wait(timeout=90)  # not released: the supervisor must stop the held task itself
        assert (doc["run"]["status"], doc["run"]["ended_by"]) == ("CANCELLED", "tester@cli")
        return None
    if op == "pause":
        _ok(etl_craft("pause", "--pipeline-code", "flow", "--reason", "warehouse upgrade", cwd=project))
        if point == "after":
            paused = etl_craft("run", "--pipeline-code", "flow", cwd=project)
            paused_code = paused.code
            assert "pipeline flow is paused since" in paused.err and "by tester@cli" in paused.err, paused.err
        else:
            if live.supervisor is not None:
                release(project, "a")
                paused_code = live.supervisor.wait(timeout=90)
                said = live.log.read_text()
            else:
                paused = etl_craft("run", "--pipeline-code", "flow", "--run-id", "1", cwd=project)
                paused_code, said = paused.code, paused.out
            assert "pipeline flow is paused (by tester@cli: warehouse upgrade), so run 1 admits no more tasks" in said
            assert not any((project / "marks").glob("b.*.start")), "no task starts in a paused pipeline"
            assert (project / "marks" / "a.1.start").exists() == (point != "before"), "only a task already going ran"
        _ok(etl_craft("resume", "--pipeline-code", "flow", "--reason", "upgrade done", cwd=project))
        _ok(etl_craft("run", "--pipeline-code", "flow", *(("--run-id", "1") if point != "after" else ()), cwd=project))
        return paused_code
    assert op == "rerun"
    done = etl_craft("run", "--pipeline-code", "flow", "--run-id", "1", "--rerun", "b", "--reason", "source fixed",
                     cwd=project)
    _ok(done, expected.op_code)
    if point != "after":
        assert "task b in run 1 of flow is not run: --rerun runs again a task that FAILED or was CANCELLED" in done.err
        assert not (project / "marks" / "b.2.start").exists() and not any((project / "marks").glob("b.*.start")), (
            "the refused rerun ran nothing")
    return None


def _check_details(project: Path, op: str, point: str, final: dict[str, Any]) -> None:
    """What each case leaves beyond the statuses: who ended the run, what the marked task kept, and what ran."""
    run = final["run"]
    ran = {p.name.split(".")[0] for p in (project / "marks").glob("*.start")} if (project / "marks").is_dir() else set()
    if op.startswith("mark"):
        b = next(t for t in final["tasks"] if t["task_code"] == "b")
        assert (b["rows_written"], b["note"]) == (3, f"marked {'SUCCESS' if op == 'mark_success' else 'FAILED'}: "
                                                     "judged by hand")
        assert ran == ({"a", "b"} if point == "after" else {"a"}), "a task marked before it ran never runs"
        assert run["output_revision"] == (2 if point == "after" and op == "mark_success" else 1), (
            "a repaired SUCCESS run that ends SUCCESS again publishes its next revision")
    if op == "cancel" and point != "after":
        assert "b" not in ran, "nothing starts in a cancelled run"
    if op == "pause" and point == "after":
        history = _history(project)
        assert [status for _, status in history] == ["SUCCESS", "SUCCESS"] and history[0][0] == "k", (
            "the run refused while paused was not created; the one after resume ran")


# --- backfills and manual runs interleaved (B7) ------------------------------------------------------------------

DIALECTS = pytest.mark.parametrize("dialect", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])


def _resume_command(said: str) -> list[str]:
    """The arguments of the resume command a stopped backfill printed (after 'resume with: etl-craft')."""
    line = next(line for line in said.splitlines() if "resume with: etl-craft " in line)
    return shlex.split(line.split("resume with: etl-craft ", 1)[1])


@DIALECTS
def test_a_held_backfill_refuses_a_plain_run__a_manual_run_queued_meanwhile_stops_it__its_resume_command_finishes(
        request: pytest.FixtureRequest, tmp_path: Path, projects: Projects, dialect: str) -> None:
    project = projects.new(tmp_path / "p", dialect, False, request)
    backfill = start_etl_craft("run", "--pipeline-code", "flow", "--backfill", "2026-11-01:2026-11-03", "--reason",
                               "orders source repaired", cwd=project, log=tmp_path / "backfill.log")
    try:
        _started(project, "a")
        tree = descendants(backfill.pid)
        plain = _ok(etl_craft("run", "--pipeline-code", "flow", cwd=project), 24)
        assert "pipeline flow is running backfill run 1 (backfill:2026-11-01) as of 2026-11-01" in plain.err
        assert "a plain run waits until it ends, or cancel it" in plain.err
        queued = etl_craft("run", "--pipeline-code", "flow", "--run-key", "manual-1", "--init-only", cwd=project)
        assert queued.code == 24, "the manual run is created but not admitted while the backfill's run is going"
        assert _tasks(_status(project, 1)) == {"a": ("IN-PROGRESS", 1), "b": NOT_RUN}, "the backfill run goes on"
        release(project, "a")
        assert backfill.wait(timeout=90) == 25
        _all_ended(tree, "the backfill's fork server and task processes")
    finally:
        release(project, "a")
        _stop(backfill)
    said = (tmp_path / "backfill.log").read_text()
    assert ("backfill of flow stopped before 2026-11-02 (1 of 3 dates done): run 2 (manual-1, MANUAL, QUEUED) is "
            "active; once it has ended, resume with: etl-craft run --pipeline-code flow --backfill "
            "2026-11-02:2026-11-03 --reason 'orders source repaired'") in said, said
    assert _history(project) == [("backfill:2026-11-01", "SUCCESS"), ("manual-1", "QUEUED")]

    refused = _ok(etl_craft(*_resume_command(said), cwd=project), 25)
    assert "stopped before 2026-11-02 (0 of 2 dates done)" in refused.out, "still stopped while run 2 is active"
    _ok(etl_craft("run", "--pipeline-code", "flow", "--run-key", "manual-1", cwd=project))
    resumed = _ok(etl_craft(*_resume_command(said), cwd=project))
    assert "backfill of flow: 2 date(s) from 2026-11-02 to 2026-11-03 done" in resumed.out
    assert _history(project) == [("backfill:2026-11-01", "SUCCESS"), ("manual-1", "SUCCESS"),
                                 ("backfill:2026-11-02", "SUCCESS"), ("backfill:2026-11-03", "SUCCESS")]
    done = _ok(etl_craft("audit", "--pipeline-code", "flow", "--format", "json", cwd=project))
    requests = [(e["what"], e["actor"]) for e in reversed(json.loads(done.out)["entries"]) if e["kind"] == "action"]
    assert [r for r in requests if r[0] == "run --backfill"] == [("run --backfill", "tester@cli")] * 3
    _all_ended(_script_pids(project), "task processes")
    _no_survivors(project)


@DIALECTS
def test_a_manual_run_going_when_a_backfill_starts__the_backfill_stops_before_its_first_date__then_resumes(
        request: pytest.FixtureRequest, tmp_path: Path, projects: Projects, dialect: str) -> None:
    project = projects.new(tmp_path / "p", dialect, False, request)
    manual = start_etl_craft("run", "--pipeline-code", "flow", "--run-key", "manual-1", cwd=project,
                             log=tmp_path / "manual.log")
    try:
        _started(project, "a")
        stopped = _ok(etl_craft("run", "--pipeline-code", "flow", "--backfill", "2026-11-01:2026-11-02", "--reason",
                                "reload", cwd=project), 25)
        assert ("backfill of flow stopped before 2026-11-01 (0 of 2 dates done): run 1 (manual-1, MANUAL, "
                "IN-PROGRESS) is active; once it has ended, resume with: etl-craft run --pipeline-code flow "
                "--backfill 2026-11-01:2026-11-02 --reason reload") in stopped.out, stopped.out
        assert _tasks(_status(project, 1)) == {"a": ("IN-PROGRESS", 1), "b": NOT_RUN}, "the manual run goes on"
        release(project, "a")
        assert manual.wait(timeout=90) == 0
    finally:
        release(project, "a")
        _stop(manual)
    _ok(etl_craft(*_resume_command(stopped.out), cwd=project))
    assert _history(project) == [("manual-1", "SUCCESS"), ("backfill:2026-11-01", "SUCCESS"),
                                 ("backfill:2026-11-02", "SUCCESS")]
    _all_ended(_script_pids(project), "task processes")
    _no_survivors(project)
