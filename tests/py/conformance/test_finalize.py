"""finalize_run (sql/functions/050_finalize.sql.j2), the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest

from etlcraft.core.actor import SYSTEM, acting_as
from etlcraft.core.errors import (
    EngineDbError,
    NotFoundError,
    RefusedByPolicyError,
    StaleTransitionError,
)
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call, call_in
from tests.py.support.gates import (
    T0,
    as_utc,
    attempt,
    consumption,
    execute,
    finish,
    run_row,
    set_task_run,
    snapshot,
    task_run,
    upstream_run,
)
from tests.py.support.scenario import Project


@pytest.fixture
def project(engine_db: EngineDB) -> Project:
    """orders_daily (task extract) feeds reports (tasks build and publish, SLA 60 minutes) through a pipeline edge."""
    engine_db.clock.pin(T0)
    project = Project(engine_db)
    project.pipeline("orders_daily")
    project.pipeline("reports", SLA_MINUTES=60)
    project.task("orders_daily", "extract")
    project.task("reports", "build")
    project.task("reports", "publish")
    project.pipeline_depends("reports", "orders_daily")
    return project


def at(project: Project, minutes: float) -> None:
    project.db.clock.pin(T0 + timedelta(minutes=minutes))


def finalize(project: Project, run_id: int, **arguments: object) -> tuple[object, ...]:
    return tuple(call(project.db, "finalize_run", run_id=run_id, **arguments)[0])


def settled(project: Project, run_id: int, **statuses: str) -> None:
    for task, status in statuses.items():
        task_run(project, run_id, task, status)


def test_finalize_run__every_task_succeeded__ends_success_and_releases_the_run(project: Project) -> None:
    run = project.run("reports")
    call(project.db, "start_run", run_id=run, owner_id="host:1:a")
    settled(project, run, build="SUCCESS", publish="SUCCESS")
    at(project, 30)
    assert finalize(project, run, owner_id="host:1:a") == (run, "SUCCESS", "MET", 1, 0)
    status, _, end, owner, lease, ended_by, kind, sla, revision, pending, _ = run_row(project, run)
    assert (status, as_utc(end), owner, lease, ended_by, kind, sla, revision, pending) == (
        "SUCCESS", T0 + timedelta(minutes=30), None, None, "tester@pytest", "HUMAN", "MET", 1, "N")


def test_finalize_run__by_the_engine__is_ended_by_system(project: Project) -> None:
    run = project.run("reports")
    settled(project, run, build="SUCCESS", publish="SUCCESS")
    with acting_as(SYSTEM):
        assert finalize(project, run)[1] == "SUCCESS"
    assert run_row(project, run)[5:7] == ("etl-craft", "SYSTEM")


def test_finalize_run__refuses_a_run_it_cannot_find_or_that_another_owner_supervises(project: Project) -> None:
    with pytest.raises(NotFoundError, match="run 999 does not exist"):
        call(project.db, "finalize_run", run_id=999)
    run = project.run("reports")
    settled(project, run, build="SUCCESS", publish="SUCCESS")
    call(project.db, "start_run", run_id=run, owner_id="host:2:b", lease_seconds=60)
    before = snapshot(project)
    with pytest.raises(StaleTransitionError, match=(
            f"run {run} is supervised by host:2:b \\(lease until 2026-01-02 06:01:00 UTC\\), expected host:1:a;"
            " its supervisor finalizes it")):
        call(project.db, "finalize_run", run_id=run, owner_id="host:1:a")
    assert snapshot(project) == before
    at(project, 2)  # the lease has expired
    assert finalize(project, run, owner_id="host:1:a")[1] == "SUCCESS"


def test_b24_finalize_refused_while_a_task_runs(project: Project) -> None:
    run = project.run("reports")
    build = task_run(project, run, "build", "IN-PROGRESS")
    running = attempt(project, build, "RUNNING", owner="host:9:z")
    publish = task_run(project, run, "publish", "FAILED")
    queued = attempt(project, publish, "QUEUED")
    before = snapshot(project)
    with pytest.raises(RefusedByPolicyError, match=(
            f"run {run} cannot be finalized while attempt {running} of task build is RUNNING by host:9:z \\(lease"
            f" until never\\), attempt {queued} of task publish is QUEUED; wait for them to end, cancel the run")):
        call(project.db, "finalize_run", run_id=run)
    assert snapshot(project) == before
    finish(project, running, "SUCCESS")
    execute(project, "UPDATE {AUD_TASK_ATTEMPTS} SET STATUS = 'CANCELLED', ENDED_AT = {now} WHERE ATTEMPT_ID = :a",
            a=queued)
    assert finalize(project, run)[1] == "FAILED"


def test_b25_finalize_refused_while_a_task_never_ran(project: Project) -> None:
    project.task("reports", "retired")
    execute(project, "UPDATE {CFG_TASKS} SET ACTIVE_FLAG = 'N' WHERE TASK_ID = :t", t=project.tasks["retired"])
    project.task("reports", "zeta")
    run = project.run("reports")
    settled(project, run, build="SUCCESS")
    before = snapshot(project)
    with pytest.raises(RefusedByPolicyError, match=(
            f"run {run} cannot be finalized: task\\(s\\) publish \\(never ran\\), zeta \\(never ran\\) have not settled"
            " \\(SUCCESS, FAILED, SKIPPED or CANCELLED\\)")):
        call(project.db, "finalize_run", run_id=run)
    assert snapshot(project) == before
    settled(project, run, publish="SKIPPED", zeta="SUCCESS")
    assert finalize(project, run)[1] == "SUCCESS"


def test_b30_all_skipped_run_ends_skipped(project: Project) -> None:
    run = project.run("reports")
    settled(project, run, build="SKIPPED", publish="SKIPPED")
    assert finalize(project, run)[1:3] == ("SKIPPED", "MET")
    assert consumption(project) == []


def test_finalize_run__a_failed_or_cancelled_task_fails_the_run(project: Project) -> None:
    failed = project.run("reports", key="manual:1")
    settled(project, failed, build="SUCCESS", publish="FAILED")
    assert finalize(project, failed)[1] == "FAILED"
    cancelled = project.run("reports", key="manual:2")
    settled(project, cancelled, build="SKIPPED", publish="CANCELLED")
    assert finalize(project, cancelled)[1] == "FAILED"


def test_alert_task_failures_do_not_fail_the_run(project: Project) -> None:
    project.task("reports", "mail", handler="EMAIL_ALERT")
    run = project.run("reports")
    settled(project, run, build="SUCCESS", publish="SUCCESS", mail="FAILED")
    assert finalize(project, run)[1] == "SUCCESS"
    # When every task is an alert, the alerts decide.
    project.pipeline("alerts")
    project.task("alerts", "page", handler="EMAIL_ALERT")
    alert_run = project.run("alerts")
    settled(project, alert_run, page="FAILED")
    assert finalize(project, alert_run)[1] == "FAILED"
    skipped_others = project.run("reports", key="manual:2")
    settled(project, skipped_others, build="SKIPPED", publish="SKIPPED", mail="SUCCESS")
    assert finalize(project, skipped_others)[1] == "SKIPPED"


def test_b32_finalize_of_a_cancelled_run_changes_nothing(project: Project) -> None:
    run = project.run("reports")
    settled(project, run, build="SUCCESS", publish="SUCCESS")
    call(project.db, "cancel_run", run_id=run, reason="wrong day")
    before = snapshot(project)
    with pytest.raises(StaleTransitionError, match=(
            f"run {run} is CANCELLED \\(ended 2026-01-02 06:00:00 UTC by tester@pytest\\), expected IN-PROGRESS;"
            " only a run in progress is finalized")):
        call(project.db, "finalize_run", run_id=run)
    assert snapshot(project) == before


def test_finalize_run__a_cancel_request_ends_the_run_cancelled_once_its_attempts_ended(project: Project) -> None:
    run = project.run("reports")
    build = task_run(project, run, "build", "IN-PROGRESS")
    running = attempt(project, build, "RUNNING")
    assert call(project.db, "cancel_run", run_id=run, reason="stop")[0].status == "IN-PROGRESS"
    with pytest.raises(RefusedByPolicyError, match=f"attempt {running} of task build is RUNNING"):
        call(project.db, "finalize_run", run_id=run)
    finish(project, running, "CANCELLED")
    # publish never ran: a cancelled run does not wait for it.
    assert finalize(project, run)[1] == "CANCELLED"


def test_b13_sla_is_decided_once(project: Project) -> None:
    met = project.run("reports", key="manual:met")
    settled(project, met, build="SUCCESS", publish="SUCCESS")
    at(project, 60)  # exactly SLA_MINUTES after START_DATE
    assert finalize(project, met)[2] == "MET"
    at(project, 3 * 24 * 60)  # reopened days later, repaired, ended again
    call(project.db, "reopen_run", run_id=met, reason="late rows")
    at(project, 3 * 24 * 60 + 90)
    assert finalize(project, met)[1:4] == ("SUCCESS", "MET", 2)
    breached = project.run("reports", key="manual:breached")
    settled(project, breached, build="SUCCESS", publish="SUCCESS")
    at(project, 3 * 24 * 60 + 90 + 61)
    assert finalize(project, breached)[2] == "BREACHED"
    project.pipeline("no_sla")
    free = project.run("no_sla")
    assert finalize(project, free)[1:3] == ("SUCCESS", None)


def test_finalize_run__a_repair_publishes_one_new_revision_and_a_failed_repair_stays_pending(
        project: Project) -> None:
    run = project.run("reports")
    build = task_run(project, run, "build", "SUCCESS")
    task_run(project, run, "publish", "SUCCESS")
    assert finalize(project, run)[1:4] == ("SUCCESS", "MET", 1)
    call(project.db, "reopen_run", run_id=run, reason="repair")
    set_task_run(project, build, "FAILED")
    assert finalize(project, run)[1:4] == ("FAILED", "MET", 1)
    assert run_row(project, run)[9] == "Y"
    call(project.db, "reopen_run", run_id=run, reason="repair again")
    set_task_run(project, build, "SUCCESS")
    assert finalize(project, run)[1:4] == ("SUCCESS", "MET", 2)
    assert run_row(project, run)[9] == "N"


def test_b62_consumption_comes_from_the_recorded_decision(project: Project) -> None:
    upstream = upstream_run(project, "orders_daily", "schedule:1")
    run = project.run("reports", key="schedule:1", status="QUEUED")
    assert call(project.db, "admit_run", run_id=run)[0].status == "IN-PROGRESS"
    [(decision,)] = project.rows("SELECT DECISION_ID FROM {AUD_GATE_DECISIONS}")
    # The upstream is repaired (revision 2) after the downstream was admitted on revision 1.
    at(project, 10)
    call(project.db, "reopen_run", run_id=upstream, reason="late rows")
    assert call(project.db, "mark_run", run_id=upstream, status="SUCCESS", reason="fixed")[0].output_revision == 2
    settled(project, run, build="SUCCESS", publish="SUCCESS")
    assert finalize(project, run)[4] == 1
    dependency = project.scalar("SELECT PIPELINE_DEPENDENCY_ID FROM {CFG_PIPELINE_DEPENDENCY}")
    assert consumption(project) == [(run, dependency, upstream, 1, decision)]
    assert as_utc(project.scalar("SELECT CONSUMED_AT FROM {AUD_DEPENDENCY_CONSUMPTION}")) == T0 + timedelta(minutes=10)


def test_finalize_run__consumes_the_latest_decision_of_each_dependency_once_and_only_on_success(
        project: Project) -> None:
    project.pipeline("customers")
    project.pipeline_depends("reports", "customers")
    customers = upstream_run(project, "customers", "schedule:1")
    run = project.run("reports", key="schedule:1", status="QUEUED")
    assert call(project.db, "admit_run", run_id=run)[0].unsatisfied == 1  # orders_daily has not run
    orders = upstream_run(project, "orders_daily", "schedule:1")
    assert call(project.db, "admit_run", run_id=run)[0].satisfied == 2
    settled(project, run, build="SUCCESS", publish="SUCCESS")
    assert finalize(project, run)[4] == 2
    assert sorted(c[2] for c in consumption(project)) == sorted([orders, customers])
    [latest_orders] = project.rows("SELECT MAX(DECISION_ID) FROM {AUD_GATE_DECISIONS}"
                                   " WHERE SELECTED_PIPELINE_RUN_ID = :r", r=orders)
    assert latest_orders[0] in [c[4] for c in consumption(project)]
    # A repair of the downstream that ends SUCCESS again consumes nothing twice; a failed run consumes nothing.
    call(project.db, "reopen_run", run_id=run, reason="repair")
    assert finalize(project, run)[4] == 0
    failed = project.run("reports", key="schedule:2", status="QUEUED")
    call(project.db, "admit_run", run_id=failed, bypass_reason="test")
    settled(project, failed, build="FAILED", publish="SUCCESS")
    assert finalize(project, failed)[1:] == ("FAILED", "MET", 1, 0)
    assert len(consumption(project)) == 2


def test_b9_finalize_writes_status_sla_and_consumption_together(project: Project) -> None:
    upstream = upstream_run(project, "orders_daily", "schedule:1")
    run = project.run("reports", key="schedule:1")
    settled(project, run, build="SUCCESS", publish="SUCCESS")
    # A recorded decision whose consumption the database refuses (CONSUMED_REVISION must be >= 1): the failure
    # comes after the status change, and the whole call is undone.
    execute(project, "INSERT INTO {AUD_GATE_DECISIONS} (PIPELINE_RUN_ID, PIPELINE_DEPENDENCY_ID,"
            " SELECTED_PIPELINE_RUN_ID, SELECTED_REVISION, RESULT, REASON, DECIDED_AT, DECIDED_BY, DECIDED_BY_KIND)"
            " SELECT :run, PIPELINE_DEPENDENCY_ID, :up, 0, 'SATISFIED', 'forged', {now}, 'tester@pytest', 'HUMAN'"
            " FROM {CFG_PIPELINE_DEPENDENCY}", run=run, up=upstream)
    before = snapshot(project)
    with pytest.raises(EngineDbError, match="consumed_revision_is_positive"):
        call(project.db, "finalize_run", run_id=run)
    assert snapshot(project) == before
    assert run_row(project, run)[:3] == ("IN-PROGRESS", run_row(project, run)[1], None)
    # The caller's transaction: finalize inside it, then a failure before commit, leaves nothing either.
    other = project.run("orders_daily", key="schedule:2")
    settled(project, other, extract="SUCCESS")
    before = snapshot(project)
    with pytest.raises(RuntimeError, match="the caller failed"), project.db.write() as conn:
        assert call_in(project.db, conn, "finalize_run", run_id=other)[0].status == "SUCCESS"
        raise RuntimeError("the caller failed after finalize_run")
    assert snapshot(project) == before
