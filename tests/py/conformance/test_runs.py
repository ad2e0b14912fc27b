"""Run functions (sql/functions/010_runs.sql.j2), the same on SQLite and PostgreSQL."""

from __future__ import annotations

import re

import pytest

from etlcraft.core.errors import NotFoundError, RefusedByPolicyError, StaleTransitionError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call, call_in
from tests.py.support.scenario import RUN_DATE, Project


@pytest.fixture
def project(engine_db: EngineDB) -> Project:
    project = Project(engine_db)
    project.pipeline("orders")
    return project


def test_create_run_creates_once_per_key(project: Project) -> None:
    pipeline = project.pipelines["orders"]
    first = call(project.db, "create_run", pipeline_id=pipeline, run_key="manual:a", run_date=RUN_DATE)
    again = call(project.db, "create_run", pipeline_id=pipeline, run_key="manual:a", run_date=RUN_DATE)
    assert (first[0].status, first[0].created) == ("IN-PROGRESS", True)
    assert (again[0].pipeline_run_id, again[0].created) == (first[0].pipeline_run_id, False)
    assert project.rows("SELECT STARTED_BY, STARTED_BY_KIND, TRIGGER_KIND FROM {AUD_PIPELINES_RUN_LOG}") == [
        ("tester@pytest", "HUMAN", "MANUAL")]



@pytest.mark.parametrize(("key", "given", "recorded"), [
    ("orchestrator:manual__2026-01-01T06:00:00+00:00", None, "ORCHESTRATOR"),
    ("manual:a", None, "MANUAL"),
    ("my-key", None, "MANUAL"),
    ("Orchestrator:x", None, "MANUAL"),
    ("orchestrator:x", "MANUAL", "MANUAL"),
    ("backfill:2026-01-01:1", "BACKFILL", "BACKFILL"),
])
def test_create_run__without_a_trigger_kind__an_orchestrator_key_is_recorded_orchestrator(
        project: Project, key: str, given: str | None, recorded: str) -> None:
    """A run an external orchestrator names by its own run id (orchestrator:<id>) is recorded ORCHESTRATOR, as the
    seed's trigger kinds have it; any other key MANUAL; a trigger kind the caller gives is kept."""
    kind = {} if given is None else {"trigger_kind": given}
    call(project.db, "create_run", pipeline_id=project.pipelines["orders"], run_key=key, run_date=RUN_DATE, **kind)
    assert project.rows("SELECT RUN_KEY, TRIGGER_KIND FROM {AUD_PIPELINES_RUN_LOG}") == [(key, recorded)]


def test_create_run_in_progress_never_skips_a_pipeline_gate_silently(project: Project) -> None:
    """A run created IN-PROGRESS starts without admit_run: on a pipeline with a gate it is refused unless the caller
    gives a reason, and then each dependency is recorded BYPASSED with who and why. QUEUED is always allowed (the
    gate is judged when admit_run admits it); a key that exists returns its run."""
    project.pipeline("sales")
    project.pipeline("billing")
    project.pipeline_depends("orders", "sales")
    project.pipeline_depends("orders", "billing", type_="ALWAYS")
    pipeline = project.pipelines["orders"]
    before = project.rows("SELECT COUNT(*) FROM {AUD_PIPELINES_RUN_LOG}")
    refusal = ("pipeline orders has a pipeline gate (SUCCESS on sales, ALWAYS on billing), which a run created "
               "IN-PROGRESS would skip; create the run QUEUED and admit it with admit_run")
    with pytest.raises(RefusedByPolicyError, match="^" + re.escape(refusal)):
        call(project.db, "create_run", pipeline_id=pipeline, run_key="manual:a", run_date=RUN_DATE)
    assert project.rows("SELECT COUNT(*) FROM {AUD_PIPELINES_RUN_LOG}") == before
    queued = call(project.db, "create_run", pipeline_id=pipeline, run_key="manual:q", run_date=RUN_DATE,
                  status="QUEUED")[0]
    assert queued.status == "QUEUED"
    started = call(project.db, "create_run", pipeline_id=pipeline, run_key="manual:b", run_date=RUN_DATE,
                   status="IN-PROGRESS", bypass_reason="the upstream is loaded by hand today")[0]
    assert (started.status, started.created) == ("IN-PROGRESS", True)
    assert project.rows(
        "SELECT PIPELINE_DEPENDENCY_ID IS NOT NULL, RESULT, SELECTED_PIPELINE_RUN_ID, REASON, DECIDED_BY,"
        " DECIDED_BY_KIND FROM {AUD_GATE_DECISIONS} ORDER BY DECISION_ID") == [
        (True, "BYPASSED", None, "bypassed (SUCCESS dependency on sales): the upstream is loaded by hand today",
         "tester@pytest", "HUMAN"),
        (True, "BYPASSED", None, "bypassed (ALWAYS dependency on billing): the upstream is loaded by hand today",
         "tester@pytest", "HUMAN")]
    again = call(project.db, "create_run", pipeline_id=pipeline, run_key="manual:b", run_date=RUN_DATE)[0]
    assert (again.pipeline_run_id, again.created) == (started.pipeline_run_id, False)
    assert project.rows("SELECT COUNT(*) FROM {AUD_GATE_DECISIONS}") == [(2,)], "nothing is recorded twice"


def test_create_run_of_an_unknown_pipeline_is_not_found(project: Project) -> None:
    with pytest.raises(NotFoundError, match="pipeline 999 does not exist or is switched off"):
        call(project.db, "create_run", pipeline_id=999, run_key="manual:a", run_date=RUN_DATE)


def test_start_run_refuses_another_owner_while_its_lease_lives(project: Project) -> None:
    run = project.run("orders")
    owned = call(project.db, "start_run", run_id=run, owner_id="host:1:a")[0]
    assert owned.owner_id == "host:1:a" and owned.lease_expires_at is not None
    with pytest.raises(RefusedByPolicyError, match=f"run {run} is supervised by host:1:a \\(lease until "):
        call(project.db, "start_run", run_id=run, owner_id="host:2:b")
    assert call(project.db, "start_run", run_id=run, owner_id="host:1:a")[0].owner_id == "host:1:a"


def test_start_run_refuses_an_ended_run(project: Project) -> None:
    run = project.run("orders")
    call(project.db, "cancel_run", run_id=run, reason="not today")
    with pytest.raises(StaleTransitionError, match=f"run {run} is CANCELLED, expected IN-PROGRESS"):
        call(project.db, "start_run", run_id=run, owner_id="host:1:a")


def test_finish_run_ends_a_queued_run_only_from_the_status_seen(project: Project) -> None:
    run = project.run("orders", status="QUEUED")
    assert call(project.db, "finish_run", run_id=run, from_status="QUEUED", status="SKIPPED")[0].status == "SKIPPED"
    with pytest.raises(StaleTransitionError, match=f"run {run} is SKIPPED, expected QUEUED"):
        call(project.db, "finish_run", run_id=run, from_status="QUEUED", status="SKIPPED")


def test_reopen_and_mark_publish_a_new_revision_once(project: Project) -> None:
    run = project.run("orders")
    assert call(project.db, "mark_run", run_id=run, status="SUCCESS", reason="done")[0].output_revision == 1
    reopened = call(project.db, "reopen_run", run_id=run, reason="repair")[0]
    assert (reopened.status, reopened.repair_pending) == ("IN-PROGRESS", True)
    assert call(project.db, "mark_run", run_id=run, status="SUCCESS", reason="fixed")[0].output_revision == 2
    assert project.rows("SELECT INTERVENTION, FROM_STATUS, TO_STATUS, REQUESTED_BY FROM {AUD_RUN_INTERVENTIONS}"
                        " ORDER BY INTERVENTION_ID") == [
        ("MARK", "IN-PROGRESS", "SUCCESS", "tester@pytest"), ("REOPEN", "SUCCESS", "IN-PROGRESS", "tester@pytest"),
        ("MARK", "IN-PROGRESS", "SUCCESS", "tester@pytest")]


def test_reopen_is_refused_while_another_run_of_the_pipeline_is_active(project: Project) -> None:
    run = project.run("orders", key="manual:old")
    call(project.db, "mark_run", run_id=run, status="FAILED", reason="broken")
    other = project.run("orders", key="manual:new")
    expected = f"while run {other} \\(manual:new\\) of the same pipeline is IN-PROGRESS"
    with pytest.raises(RefusedByPolicyError, match=expected):
        call(project.db, "reopen_run", run_id=run, reason="repair")


def test_mark_run_refuses_a_status_it_does_not_set(project: Project) -> None:
    run = project.run("orders")
    with pytest.raises(RefusedByPolicyError, match="mark_run sets SUCCESS, FAILED or SKIPPED, not CANCELLED"):
        call(project.db, "mark_run", run_id=run, status="CANCELLED", reason="x")


def test_cancel_run_without_live_attempts_ends_it_at_once(project: Project) -> None:
    run = project.run("orders")
    ended = call(project.db, "cancel_run", run_id=run, reason="wrong day")[0]
    assert (ended.status, ended.live_attempts) == ("CANCELLED", 0)
    with pytest.raises(StaleTransitionError, match=f"run {run} already ended CANCELLED"):
        call(project.db, "cancel_run", run_id=run, reason="again")


def test_a_pipeline_runs_one_run_at_a_time(project: Project) -> None:
    first = project.run("orders", key="manual:first")
    with pytest.raises(RefusedByPolicyError, match=(
            f"pipeline orders already has run {first} \\(manual:first\\) IN-PROGRESS since .*; a pipeline runs one run"
            " at a time")):
        project.run("orders", key="manual:second")
    queued = project.run("orders", key="schedule:next", status="QUEUED")
    assert project.rows("SELECT PIPELINE_RUN_ID, STATUS FROM {AUD_PIPELINES_RUN_LOG} ORDER BY PIPELINE_RUN_ID") == [
        (first, "IN-PROGRESS"), (queued, "QUEUED")]


def test_b29_a_skipped_run_is_an_ended_run(project: Project) -> None:
    """A SKIPPED run is ended like any other: it takes no owner, no attempt, and no mark of a live run."""
    project.task("orders", "load")
    run = project.run("orders", key="schedule:1", status="QUEUED")
    call(project.db, "finish_run", run_id=run, from_status="QUEUED", status="SKIPPED", message="gate refused")
    with pytest.raises(StaleTransitionError, match=f"run {run} is SKIPPED, expected IN-PROGRESS"):
        call(project.db, "start_run", run_id=run, owner_id="host:1:a")
    with pytest.raises(StaleTransitionError, match=f"run {run} is SKIPPED"):
        call(project.db, "queue_attempt", run_id=run, task_id=project.tasks["load"])
    with pytest.raises(StaleTransitionError, match=f"run {run} already ended SKIPPED"):
        call(project.db, "cancel_run", run_id=run, reason="x")
    assert project.rows("SELECT STATUS FROM {AUD_PIPELINES_RUN_LOG}") == [("SKIPPED",)]


def test_b31_a_refused_rerun_leaves_the_ended_run_as_it_was(project: Project) -> None:
    """Reopening and queueing a rerun happen in one transaction: when the queueing is refused, the run stays
    ended, with no REOPEN recorded."""
    project.task("orders", "load")
    run = project.run("orders")
    queued = call(project.db, "queue_attempt", run_id=run, task_id=project.tasks["load"])[0]
    claimed = call(project.db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id="w1")[0]
    call(project.db, "finish_attempt", attempt_id=claimed.attempt_id, owner_id="w1", status="SUCCESS")
    call(project.db, "finalize_run", run_id=run)
    with pytest.raises(RefusedByPolicyError, match="already succeeded"), project.db.write() as conn:
        call_in(project.db, conn, "reopen_run", run_id=run, reason="rerun load")
        call_in(project.db, conn, "queue_attempt", run_id=run, task_id=project.tasks["load"])  # no rerun=True
    assert queued.attempt_number == 1
    assert project.rows("SELECT STATUS FROM {AUD_PIPELINES_RUN_LOG}") == [("SUCCESS",)]
    assert project.rows("SELECT INTERVENTION FROM {AUD_RUN_INTERVENTIONS}") == []
    with pytest.raises(RefusedByPolicyError, match="mark_task_run sets SUCCESS, FAILED or SKIPPED"):
        call(project.db, "mark_task_run", run_id=run, task_id=project.tasks["load"], status="RUNNING", reason="x")
    assert project.rows("SELECT STATUS FROM {AUD_PIPELINES_RUN_LOG}") == [("SUCCESS",)]
