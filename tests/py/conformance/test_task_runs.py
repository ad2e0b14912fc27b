"""skip_task_run and mark_task_run (sql/functions/015_task_runs.sql.j2), the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import NotFoundError, RefusedByPolicyError, StaleTransitionError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.services.status import run_status
from tests.py.support import ready as rd
from tests.py.support.scenario import Project

NOW = datetime(2026, 1, 1, 6, 30, tzinfo=UTC)
LEASE = datetime(2026, 1, 1, 7, 0, tzinfo=UTC)
OPERATOR = Actor("ops@host", ActorKind.HUMAN)


@pytest.fixture
def project(engine_db: EngineDB) -> Project:
    project = Project(engine_db)
    project.pipeline("orders")
    project.task("orders", "load_orders")
    project.task("orders", "publish")
    project.depends("publish", "load_orders")
    engine_db.clock.pin(NOW)
    return project


def _when(value: object) -> datetime:
    """A stored time as an aware UTC datetime (SQLite keeps text)."""
    stamp = datetime.fromisoformat(value) if isinstance(value, str) else value
    assert isinstance(stamp, datetime)
    return stamp.astimezone(UTC)


def _task_run(project: Project, run: int, task: str) -> tuple:
    return project.rows("SELECT TASK_RUN_ID, STATUS, START_DATE, END_DATE, MESSAGE, ERROR_MESSAGE, ROWS_WRITTEN,"
                        " TARGET_COUNT FROM {AUD_TASK_RUN_LOG} WHERE PIPELINE_RUN_ID = :r AND TASK_ID = :t",
                        r=run, t=project.tasks[task])[0]


def _interventions(project: Project) -> list[tuple]:
    return project.rows("SELECT INTERVENTION, TASK_RUN_ID, FROM_STATUS, TO_STATUS, ROWS_WRITTEN, REASON, REQUESTED_BY,"
                        " REQUESTED_BY_KIND FROM {AUD_RUN_INTERVENTIONS} ORDER BY INTERVENTION_ID")


def _snapshot(project: Project) -> list:
    """Everything a refused call must leave unchanged."""
    return [project.rows(f"SELECT * FROM {{{table}}} ORDER BY 1") for table in
            ("AUD_PIPELINES_RUN_LOG", "AUD_TASK_RUN_LOG", "AUD_TASK_ATTEMPTS", "AUD_RUN_INTERVENTIONS")]


# -- skip_task_run ---------------------------------------------------------------------------------------------


def test_skip_task_run_creates_a_skipped_task_run_once(project: Project) -> None:
    run = project.run("orders")
    first = call(project.db, "skip_task_run", run_id=run, task_id=project.tasks["publish"], reason="load failed")[0]
    assert (first.status, first.created) == ("SKIPPED", True)
    task_run_id, status, start, end, message, *_ = _task_run(project, run, "publish")
    assert (task_run_id, status, message) == (first.task_run_id, "SKIPPED", "load failed")
    assert _when(start) == _when(end) == NOW
    again = call(project.db, "skip_task_run", run_id=run, task_id=project.tasks["publish"], reason="again")[0]
    assert (again.task_run_id, again.status, again.created) == (first.task_run_id, "SKIPPED", False)
    assert _task_run(project, run, "publish")[4] == "load failed", "an existing skip is left as it is"
    assert _interventions(project) == [], "the engine's skip is no intervention"


def test_b28_failed_task_run_is_never_overwritten_by_skipped(project: Project) -> None:
    run = project.run("orders")
    task_run_id = rd.task_run(project, run, "load_orders", "FAILED", ERROR_MESSAGE="division by zero")
    before = _snapshot(project)
    expected = (f"task run {task_run_id} \\(task load_orders in run {run}\\) is FAILED, expected no task run or"
                " SKIPPED; a skip never overwrites an outcome \\(its error stays\\)")
    with pytest.raises(StaleTransitionError, match=expected):
        call(project.db, "skip_task_run", run_id=run, task_id=project.tasks["load_orders"], reason="not retried")
    assert _snapshot(project) == before
    assert _task_run(project, run, "load_orders")[5] == "division by zero"


@pytest.mark.parametrize("status", ["IN-PROGRESS", "SUCCESS", "CANCELLED"])
def test_skip_task_run_refuses_every_other_status(project: Project, status: str) -> None:
    run = project.run("orders")
    task_run_id = rd.task_run(project, run, "load_orders", status)
    with pytest.raises(StaleTransitionError, match=f"task run {task_run_id} .* is {status}, expected no task run"):
        call(project.db, "skip_task_run", run_id=run, task_id=project.tasks["load_orders"], reason="x")
    assert _task_run(project, run, "load_orders")[1] == status


def test_skip_task_run_refuses_a_run_not_in_progress_an_unknown_run_and_a_foreign_task(project: Project) -> None:
    queued = project.run("orders", key="manual:q", status="QUEUED")
    with pytest.raises(StaleTransitionError, match=f"run {queued} is QUEUED, expected IN-PROGRESS"):
        call(project.db, "skip_task_run", run_id=queued, task_id=project.tasks["publish"], reason="x")
    with pytest.raises(NotFoundError, match="run 999 does not exist"):
        call(project.db, "skip_task_run", run_id=999, task_id=project.tasks["publish"], reason="x")
    project.pipeline("other")
    foreign = project.task("other", "elsewhere")
    run = project.run("orders")
    with pytest.raises(NotFoundError, match=f"task {foreign} is not a task of pipeline orders, which run {run} runs"):
        call(project.db, "skip_task_run", run_id=run, task_id=foreign, reason="x")
    assert project.scalar("SELECT COUNT(*) FROM {AUD_TASK_RUN_LOG}") == 0


def test_an_operator_skip_is_recorded_as_a_skip_intervention_with_its_actor(project: Project) -> None:
    run = project.run("orders")
    with acting_as(OPERATOR):
        skipped = call(project.db, "skip_task_run", run_id=run, task_id=project.tasks["publish"], reason="not today",
                       by_operator=True)[0]
    assert _interventions(project) == [
        ("SKIP", skipped.task_run_id, None, "SKIPPED", None, "not today", "ops@host", "HUMAN")]
    # An engine skip later turned into an operator's: recorded once, from SKIPPED; the row stays as it is.
    engine = call(project.db, "skip_task_run", run_id=run, task_id=project.tasks["load_orders"], reason="engine")[0]
    with acting_as(OPERATOR):
        for _ in range(2):
            again = call(project.db, "skip_task_run", run_id=run, task_id=project.tasks["load_orders"],
                         reason="keep it skipped", by_operator=True)[0]
            assert (again.task_run_id, again.created) == (engine.task_run_id, False)
    assert _interventions(project)[1:] == [
        ("SKIP", engine.task_run_id, "SKIPPED", "SKIPPED", None, "keep it skipped", "ops@host", "HUMAN")]


# -- mark_task_run ---------------------------------------------------------------------------------------------


def test_mark_task_run_creates_a_missing_task_run_and_records_the_mark(project: Project) -> None:
    run = project.run("orders")
    with acting_as(OPERATOR):
        marked = call(project.db, "mark_task_run", run_id=run, task_id=project.tasks["load_orders"], status="SUCCESS",
                      reason="loaded by hand", rows_written=42)[0]
    assert (marked.status, marked.run_status) == ("SUCCESS", "IN-PROGRESS")
    task_run_id, status, start, end, message, error, written, target = _task_run(project, run, "load_orders")
    assert (task_run_id, status, message, error, written, target) == (
        marked.task_run_id, "SUCCESS", "marked SUCCESS: loaded by hand", None, 42, None)
    assert _when(start) == _when(end) == NOW
    assert _interventions(project) == [
        ("MARK", task_run_id, None, "SUCCESS", 42, "loaded by hand", "ops@host", "HUMAN")]


def test_mark_task_run_changes_an_ended_task_run_and_keeps_what_it_is_not_given(project: Project) -> None:
    run = project.run("orders")
    started = datetime(2026, 1, 1, 5, 0, tzinfo=UTC)
    task_run_id = rd.task_run(project, run, "load_orders", "FAILED", rows_written=7, TARGET_COUNT=100,
                              ERROR_MESSAGE="boom", START_DATE=rd.rows.ts(project.db, started))
    marked = call(project.db, "mark_task_run", run_id=run, task_id=project.tasks["load_orders"], status="SUCCESS",
                  reason="data checked")[0]
    assert (marked.task_run_id, marked.status) == (task_run_id, "SUCCESS")
    _, status, start, end, message, error, written, target = _task_run(project, run, "load_orders")
    assert (status, message, error, written, target) == ("SUCCESS", "marked SUCCESS: data checked", "boom", 7, 100)
    assert (_when(start), _when(end)) == (started, NOW)
    call(project.db, "mark_task_run", run_id=run, task_id=project.tasks["load_orders"], status="FAILED",
         reason="wrong after all", rows_written=0)
    assert _task_run(project, run, "load_orders")[6:] == (0, 100), "ROWS_WRITTEN is set; TARGET_COUNT stays"
    assert [row[:4] for row in _interventions(project)] == [
        ("MARK", task_run_id, "FAILED", "SUCCESS"), ("MARK", task_run_id, "SUCCESS", "FAILED")]


def test_b16_mark_refused_while_a_live_process_runs_the_task(project: Project) -> None:
    run = project.run("orders")
    task_run_id = rd.task_run(project, run, "load_orders", "IN-PROGRESS")
    attempt = rd.attempt(project, task_run_id, "RUNNING", owner="host:1:a", lease_expires_at=LEASE)
    before = _snapshot(project)
    expected = (f"task load_orders in run {run} is being run: attempt {attempt} is RUNNING by owner host:1:a whose"
                " lease runs until 2026-01-01 07:00:00 UTC; wait for it to end")
    for moment in (NOW, LEASE):  # a lease is live up to and including its expiry time
        project.db.clock.pin(moment)
        with pytest.raises(RefusedByPolicyError, match=expected):
            call(project.db, "mark_task_run", run_id=run, task_id=project.tasks["load_orders"], status="FAILED",
                 reason="it hangs")
    assert _snapshot(project) == before


def test_mark_task_run_after_the_lease_expired_marks_the_attempt_lost_first(project: Project) -> None:
    run = project.run("orders")
    task_run_id = rd.task_run(project, run, "load_orders", "IN-PROGRESS")
    attempt = rd.attempt(project, task_run_id, "CLAIMED", owner="host:1:a", lease_expires_at=LEASE)
    later = LEASE + timedelta(seconds=1)
    project.db.clock.pin(later)
    marked = call(project.db, "mark_task_run", run_id=run, task_id=project.tasks["load_orders"], status="FAILED",
                  reason="its host died")[0]
    assert marked.status == "FAILED"
    lost = f"attempt {attempt} was lost: owner host:1:a stopped renewing its lease at 2026-01-01 07:00:00 UTC"
    [(status, ended, error)] = project.rows("SELECT STATUS, ENDED_AT, ERROR_MESSAGE FROM {AUD_TASK_ATTEMPTS}")
    assert (status, _when(ended), error) == ("LOST", later, lost)
    _, status, _, end, message, error, *_ = _task_run(project, run, "load_orders")
    assert (status, _when(end), message, error) == ("FAILED", later, "marked FAILED: its host died", lost)
    assert [row[:4] for row in _interventions(project)] == [("MARK", task_run_id, "IN-PROGRESS", "FAILED")]


def test_mark_task_run_cancels_a_queued_attempt(project: Project) -> None:
    run = project.run("orders")
    task_run_id = rd.task_run(project, run, "load_orders", "IN-PROGRESS")
    rd.attempt(project, task_run_id, "QUEUED")
    call(project.db, "mark_task_run", run_id=run, task_id=project.tasks["load_orders"], status="SKIPPED",
         reason="not needed")
    [(status, ended, error)] = project.rows("SELECT STATUS, ENDED_AT, ERROR_MESSAGE FROM {AUD_TASK_ATTEMPTS}")
    assert (status, _when(ended)) == ("CANCELLED", NOW)
    assert error == "cancelled before it started: the task was marked SKIPPED"
    assert _task_run(project, run, "load_orders")[1] == "SKIPPED"


@pytest.mark.parametrize("ended", ["SUCCESS", "FAILED"])
def test_mark_of_a_task_in_an_ended_run_reopens_it_and_records_reopen_then_mark(project: Project, ended: str) -> None:
    run = project.run("orders")
    rd.task_run(project, run, "load_orders", "FAILED")
    call(project.db, "mark_run", run_id=run, status=ended, reason="end")
    with acting_as(OPERATOR):
        marked = call(project.db, "mark_task_run", run_id=run, task_id=project.tasks["load_orders"],
                      status="SUCCESS", reason="fixed")[0]
    assert marked.run_status == "IN-PROGRESS"
    [(status, end_date, repair, message)] = project.rows(
        "SELECT STATUS, END_DATE, REPAIR_PENDING, MESSAGE FROM {AUD_PIPELINES_RUN_LOG}")
    assert (status, end_date, repair) == ("IN-PROGRESS", None, "Y" if ended == "SUCCESS" else "N")
    assert message == "reopened to mark task load_orders SUCCESS: fixed"
    assert [row[:4] + row[6:] for row in _interventions(project)][1:] == [
        ("REOPEN", None, ended, "IN-PROGRESS", "ops@host", "HUMAN"),
        ("MARK", marked.task_run_id, "FAILED", "SUCCESS", "ops@host", "HUMAN")]


def test_mark_of_a_task_in_an_ended_run_is_refused_while_another_run_is_active(project: Project) -> None:
    run = project.run("orders", key="manual:old")
    call(project.db, "mark_run", run_id=run, status="FAILED", reason="end")
    other = project.run("orders", key="manual:new")
    before = _snapshot(project)
    expected = (f"run {run} has ended FAILED and marking a task reopens it, which is refused while run {other}"
                " \\(manual:new\\) of the same pipeline is IN-PROGRESS")
    with pytest.raises(RefusedByPolicyError, match=expected):
        call(project.db, "mark_task_run", run_id=run, task_id=project.tasks["load_orders"], status="SUCCESS",
             reason="fixed")
    assert _snapshot(project) == before


def test_mark_task_run_refuses_bad_statuses_unknown_rows_and_queued_runs(project: Project) -> None:
    run = project.run("orders")
    task = project.tasks["load_orders"]
    with pytest.raises(RefusedByPolicyError, match="mark_task_run sets SUCCESS, FAILED or SKIPPED, not CANCELLED"):
        call(project.db, "mark_task_run", run_id=run, task_id=task, status="CANCELLED", reason="x")
    with pytest.raises(NotFoundError, match="run 999 does not exist"):
        call(project.db, "mark_task_run", run_id=999, task_id=task, status="SUCCESS", reason="x")
    with pytest.raises(NotFoundError, match=f"task 999 is not a task of pipeline orders, which run {run} runs"):
        call(project.db, "mark_task_run", run_id=run, task_id=999, status="SUCCESS", reason="x")
    queued = project.run("orders", key="manual:q", status="QUEUED")
    with pytest.raises(RefusedByPolicyError, match=f"run {queued} is QUEUED and has not started"):
        call(project.db, "mark_task_run", run_id=queued, task_id=task, status="SUCCESS", reason="x")
    assert project.scalar("SELECT COUNT(*) FROM {AUD_TASK_RUN_LOG}") == 0
    assert _interventions(project) == []


# -- a task run that runs again after it ended -------------------------------------------------------------------

RUNNER = "host-a:100:1700000000:0a0a0a0a"


def _claim_start_finish(project: Project, attempt_id: int, at: datetime) -> None:
    """The attempt claimed and started at `at`, then ended SUCCESS a minute later, through the write API."""
    project.db.clock.pin(at)
    claimed = call(project.db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=RUNNER)
    assert [c.attempt_id for c in claimed] == [attempt_id]
    call(project.db, "start_attempt", attempt_id=attempt_id, owner_id=RUNNER, host="host-a", pid=4242,
         process_start="1700000000.25")
    project.db.clock.pin(at + timedelta(minutes=1))
    call(project.db, "finish_attempt", attempt_id=attempt_id, owner_id=RUNNER, status="SUCCESS", rows_written=3)


def _ended_before(project: Project, run: int, how: str) -> str:
    """publish ended `how` (skipped by the engine, marked FAILED, or cancelled before it started); its note."""
    task = project.tasks["publish"]
    if how == "skipped":
        call(project.db, "skip_task_run", run_id=run, task_id=task,
             reason="load_orders ended FAILED; its SUCCESS dependency can never be met")
        return "load_orders ended FAILED; its SUCCESS dependency can never be met"
    if how == "marked FAILED":
        call(project.db, "mark_task_run", run_id=run, task_id=task, status="FAILED", reason="bad file")
        return "marked FAILED: bad file"
    queued = call(project.db, "queue_attempt", run_id=run, task_id=task)[0]
    call(project.db, "cancel_attempt", attempt_id=queued.attempt_id, reason="wrong day")
    return "cancelled: wrong day"


@pytest.mark.parametrize("how", ["skipped", "marked FAILED", "cancelled"])
def test_a_task_run_queued_again_drops_the_note_of_its_earlier_outcome_and_succeeds_without_it(
        project: Project, how: str) -> None:
    """A task skipped (or marked, or cancelled) and later run again shows no stale reason beside its new status:
    queue_attempt clears the note, and its duration counts from its first real start, not from the skip."""
    run = project.run("orders")
    note = _ended_before(project, run, how)
    assert _task_run(project, run, "publish")[4] == note
    project.db.clock.pin(NOW + timedelta(hours=2))
    queued = call(project.db, "queue_attempt", run_id=run, task_id=project.tasks["publish"])[0]
    assert queued.outcome == "QUEUED"
    _, status, start, end, message, *_ = _task_run(project, run, "publish")
    assert (status, start, end, message) == ("IN-PROGRESS", None, None, None)
    started = NOW + timedelta(hours=3)
    _claim_start_finish(project, queued.attempt_id, started)
    _, status, start, end, message, error, written, _ = _task_run(project, run, "publish")
    assert (status, message, error, written) == ("SUCCESS", None, None, 3)
    assert (_when(start), _when(end)) == (started, started + timedelta(minutes=1))
    [line] = [t for t in run_status(project.db, "orders", run).tasks if t.task_code == "publish"]
    assert (line.status, line.note, line.seconds) == ("SUCCESS", "", 60.0)


def test_a_task_queued_again_after_an_interrupt_succeeds_without_the_interrupt_note(project: Project) -> None:
    """interrupt_attempt queues the task again with a note saying so; the attempt that then succeeds clears it
    (finish_attempt), while the interrupted attempt keeps its own error."""
    run = project.run("orders")
    first = call(project.db, "queue_attempt", run_id=run, task_id=project.tasks["load_orders"])[0]
    call(project.db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=RUNNER)
    call(project.db, "start_attempt", attempt_id=first.attempt_id, owner_id=RUNNER, host="host-a", pid=4242,
         process_start="1700000000.25")
    again = call(project.db, "interrupt_attempt", attempt_id=first.attempt_id, owner_id=RUNNER,
                 reason="the etl-craft run supervising it received SIGTERM")[0]
    assert _task_run(project, run, "load_orders")[4] == ("interrupted: the etl-craft run supervising it received"
                                                         " SIGTERM; queued to run again")
    _claim_start_finish(project, again.next_attempt_id, NOW + timedelta(minutes=5))
    _, status, _, _, message, error, *_ = _task_run(project, run, "load_orders")
    assert (status, message, error) == ("SUCCESS", None, None)
    assert project.scalar("SELECT ERROR_MESSAGE FROM {AUD_TASK_ATTEMPTS} WHERE ATTEMPT_ID = :a",
                          a=first.attempt_id) == "interrupted: the etl-craft run supervising it received SIGTERM"
