"""Alerts raised by the Engine DB's decisions, and the delivery outbox (sql/functions/055_alerts.sql.j2, issue 23),
the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from etlcraft.core.errors import NotFoundError, RefusedByPolicyError, StaleTransitionError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support.gates import T0, as_utc, attempt, execute, task_run
from tests.py.support.scenario import Project


@pytest.fixture
def project(engine_db: EngineDB) -> Project:
    """orders (task extract, SLA 60 minutes) and reports (task build) in project proj."""
    engine_db.clock.pin(T0)
    project = Project(engine_db)
    project.pipeline("orders", SLA_MINUTES=60)
    project.pipeline("reports")
    project.task("orders", "extract")
    project.task("reports", "build")
    return project


def at(project: Project, minutes: float) -> None:
    project.db.clock.pin(T0 + timedelta(minutes=minutes))


def rule(project: Project, kind: str, channels: str, pipeline: str | None = None, threshold: int | None = None,
         active: str = "Y") -> None:
    execute(project, f"INSERT INTO {project.db.qualify('CFG_ALERT_RULES')} (PROJECT_ID, PIPELINE_ID, ALERT_KIND,"
            " CHANNELS, THRESHOLD_MINUTES, ACTIVE_FLAG) VALUES (:project_id, :pipeline, :kind, :channels, :threshold,"
            " :active)", project_id=project.project_id, pipeline=project.pipelines.get(pipeline or ""), kind=kind,
            channels=channels, threshold=threshold, active=active)


def alerts(project: Project) -> list[tuple[Any, ...]]:
    """(run, kind, task id, attempt id, status, error, channels) of every alert, in order."""
    return execute(project, f"SELECT PIPELINE_RUN_ID, ALERT_KIND, TASK_ID, ATTEMPT_ID, STATUS, ERROR_MESSAGE, CHANNELS"
                   f" FROM {project.db.qualify('AUD_ALERTS')} ORDER BY ALERT_ID")


def deliveries(project: Project) -> list[tuple[Any, ...]]:
    """(alert kind, channel, status, attempts, owner) of every delivery, in order."""
    return execute(project, f"SELECT a.ALERT_KIND, d.CHANNEL, d.DELIVERY_STATUS, d.ATTEMPTS, d.OWNER_ID"
                   f" FROM {project.db.qualify('AUD_ALERT_DELIVERIES')} d"
                   f" JOIN {project.db.qualify('AUD_ALERTS')} a ON a.ALERT_ID = d.ALERT_ID ORDER BY d.DELIVERY_ID")


def failed_run(project: Project, pipeline: str = "orders", key: str = "manual:1", task: str = "extract") -> int:
    run = project.run(pipeline, key)
    tr = task_run(project, run, task, "FAILED")
    execute(project, f"UPDATE {project.db.qualify('AUD_TASK_RUN_LOG')} SET ERROR_MESSAGE = 'boom' WHERE TASK_RUN_ID"
            " = :id", id=tr)
    assert call(project.db, "finalize_run", run_id=run)[0].status == "FAILED"
    return run


def succeeded_run(project: Project, pipeline: str = "orders", key: str = "manual:2", task: str = "extract") -> int:
    run = project.run(pipeline, key)
    task_run(project, run, task, "SUCCESS")
    assert call(project.db, "finalize_run", run_id=run)[0].status == "SUCCESS"
    return run


def test_finalize_run__failed_run_under_a_project_rule__raises_run_failed_with_a_delivery_per_channel(
        project: Project) -> None:
    rule(project, "RUN_FAILED", "ops, oncall")
    run = failed_run(project)
    assert alerts(project) == [(run, "RUN_FAILED", project.tasks["extract"], None, "FAILED", "boom", "ops, oncall")]
    assert deliveries(project) == [("RUN_FAILED", "ops", "PENDING", 0, None), ("RUN_FAILED", "oncall", "PENDING", 0,
                                                                                   None)]


def test_finalize_run__no_active_rule_of_the_kind__raises_nothing(project: Project) -> None:
    rule(project, "RUN_FAILED", "ops", active="N")
    rule(project, "RUN_RECOVERED", "ops")
    failed_run(project)
    assert alerts(project) == [] and deliveries(project) == []


def test_alert_rules__a_pipelines_own_rule_replaces_the_project_default(project: Project) -> None:
    rule(project, "RUN_FAILED", "ops")
    rule(project, "RUN_FAILED", "reports_team", pipeline="reports")
    orders = failed_run(project)
    reports = failed_run(project, "reports", task="build")
    assert [(a[0], a[6]) for a in alerts(project)] == [(orders, "ops"), (reports, "reports_team")]


def test_finalize_run__success_after_a_failed_run__raises_run_recovered_once(project: Project) -> None:
    rule(project, "RUN_RECOVERED", "ops")
    succeeded_run(project, key="manual:0")
    assert alerts(project) == []
    failed_run(project, key="manual:1")
    at(project, 10)
    recovered = succeeded_run(project, key="manual:2")
    at(project, 20)
    succeeded_run(project, key="manual:3")
    assert alerts(project) == [(recovered, "RUN_RECOVERED", None, None, "SUCCESS", None, "ops")]


def test_sla_breach__raised_by_breach_slas_while_running__is_not_raised_again_by_finalize_run(
        project: Project) -> None:
    rule(project, "SLA_BREACHED", "ops")
    run = project.run("orders")
    at(project, 30)
    call(project.db, "breach_slas")
    assert alerts(project) == []
    at(project, 61)
    call(project.db, "breach_slas")
    call(project.db, "breach_slas")
    task_run(project, run, "extract", "SUCCESS")
    call(project.db, "finalize_run", run_id=run)
    assert alerts(project) == [(run, "SLA_BREACHED", None, None, "IN-PROGRESS", None, "ops")]
    assert deliveries(project) == [("SLA_BREACHED", "ops", "PENDING", 0, None)]


def test_finalize_run__sla_breached_at_the_end__raises_sla_breached(project: Project) -> None:
    rule(project, "SLA_BREACHED", "ops")
    run = project.run("orders")
    task_run(project, run, "extract", "SUCCESS")
    at(project, 90)
    assert call(project.db, "finalize_run", run_id=run)[0].sla_status == "BREACHED"
    assert [a[:2] for a in alerts(project)] == [(run, "SLA_BREACHED")]


def test_lose_attempt__raises_attempt_lost_naming_the_attempt(project: Project) -> None:
    rule(project, "ATTEMPT_LOST", "ops")
    run = project.run("orders")
    tr = task_run(project, run, "extract", "IN-PROGRESS")
    lost = attempt(project, tr, "RUNNING")
    call(project.db, "lose_attempt", attempt_id=lost, owner_id="host:1:a", message="gone")
    assert alerts(project) == [(run, "ATTEMPT_LOST", project.tasks["extract"], lost, "LOST", "gone", "ops")]


def test_reconcile_expired__raises_one_attempt_lost_per_run(project: Project) -> None:
    rule(project, "ATTEMPT_LOST", "ops")
    run = project.run("orders")
    first = attempt(project, task_run(project, run, "extract", "IN-PROGRESS"), "RUNNING")
    other = project.run("reports")
    second = attempt(project, task_run(project, other, "build", "IN-PROGRESS"), "RUNNING")
    execute(project, f"UPDATE {project.db.qualify('AUD_TASK_ATTEMPTS')} SET LEASE_EXPIRES_AT = {{now}}")
    at(project, 1)
    assert sorted(r.attempt_id for r in call(project.db, "reconcile_expired")) == sorted([first, second])
    assert sorted((a[0], a[1], a[3]) for a in alerts(project)) == sorted(
        [(run, "ATTEMPT_LOST", first), (other, "ATTEMPT_LOST", second)])


def _wait(project: Project, run: int, task: str | None) -> None:
    execute(project, f"INSERT INTO {project.db.qualify('AUD_GATE_WAITS')} (PIPELINE_RUN_ID, TASK_ID, FIRST_CHECK_AT,"
            " LAST_CHECK_AT, NEXT_CHECK_AT, WAIT_UNTIL, LOOKS, WAITING_FOR) VALUES (:run, :task, {now}, {now}, {now},"
            " {now}, 1, 'orders to succeed')", run=run, task=None if task is None else project.tasks[task])


def test_raise_overdue_alerts__a_gate_waiting_past_the_rules_threshold__raises_gate_waiting_once(
        project: Project) -> None:
    rule(project, "GATE_WAITING", "ops", threshold=30)
    run = project.run("reports")
    _wait(project, run, "build")
    at(project, 29)
    assert call(project.db, "raise_overdue_alerts") == []
    at(project, 30)
    [raised] = call(project.db, "raise_overdue_alerts")
    assert (raised.pipeline_run_id, raised.alert_kind) == (run, "GATE_WAITING")
    assert call(project.db, "raise_overdue_alerts") == []
    assert alerts(project) == [(run, "GATE_WAITING", project.tasks["build"], None, "WAITING", "orders to succeed",
                                "ops")]


def test_alert_rules__channels_must_be_a_list_of_names(project: Project) -> None:
    for bad in ("", "ops,", "ops;drop", "a,,b", "o'ps"):
        with pytest.raises(Exception, match="channels_are_names"):
            rule(project, "RUN_FAILED", bad)
    with pytest.raises(Exception, match="threshold_is_for_gate_waits"):
        rule(project, "GATE_WAITING", "ops")


# -- the outbox: claim_alert_deliveries, record_alert_delivery ----------------------------------------------------


def _pending(project: Project, channels: str = "ops") -> None:
    rule(project, "RUN_FAILED", channels)
    failed_run(project)


def test_claim_alert_deliveries__claims_due_deliveries_once_until_the_claim_expires(project: Project) -> None:
    _pending(project, "ops,oncall")
    claimed = call(project.db, "claim_alert_deliveries", owner_id="a", max_deliveries=1, lease_seconds=60)
    assert [c.channel for c in claimed] == ["ops"] and as_utc(claimed[0].claim_expires_at) == T0 + timedelta(
        seconds=60)
    assert [c.channel for c in call(project.db, "claim_alert_deliveries", owner_id="b", max_deliveries=5)] == [
        "oncall"]
    assert call(project.db, "claim_alert_deliveries", owner_id="b", max_deliveries=5) == []
    at(project, 1.5)
    assert sorted(c.channel for c in call(project.db, "claim_alert_deliveries", owner_id="c", max_deliveries=5)) == [
        "oncall", "ops"]
    assert {d[4] for d in deliveries(project)} == {"c"}


def test_record_alert_delivery__outcomes(project: Project) -> None:
    _pending(project, "ops,oncall,pager")
    ops, oncall, pager = call(project.db, "claim_alert_deliveries", owner_id="a")
    done = call(project.db, "record_alert_delivery", delivery_id=ops.delivery_id, owner_id="a",
                outcome="DELIVERED", detail="250 ok", warning="1 of 2 recipients refused")[0]
    assert (done.delivery_status, done.attempts, done.next_attempt_at) == ("DELIVERED", 1, None)
    again = call(project.db, "record_alert_delivery", delivery_id=oncall.delivery_id, owner_id="a",
                 outcome="FAILED", detail="connection refused", retry_after_seconds=30)[0]
    assert (again.delivery_status, again.attempts, as_utc(again.next_attempt_at)) == (
        "PENDING", 1, T0 + timedelta(seconds=30))
    gone = call(project.db, "record_alert_delivery", delivery_id=pager.delivery_id, owner_id="a", outcome="FAILED",
                detail="404")[0]
    assert (gone.delivery_status, gone.attempts) == ("FAILED", 1)
    assert call(project.db, "claim_alert_deliveries", owner_id="a") == []
    at(project, 0.5)
    assert [c.channel for c in call(project.db, "claim_alert_deliveries", owner_id="a")] == ["oncall"]
    assert execute(project, f"SELECT WARNING, LAST_DETAIL FROM {project.db.qualify('AUD_ALERT_DELIVERIES')}"
                   " WHERE DELIVERY_ID = :id", id=ops.delivery_id) == [("1 of 2 recipients refused", "250 ok")]


def test_record_alert_delivery__a_stale_owner_records_nothing(project: Project) -> None:
    _pending(project)
    [first] = call(project.db, "claim_alert_deliveries", owner_id="a", lease_seconds=10)
    at(project, 1)
    [second] = call(project.db, "claim_alert_deliveries", owner_id="b")
    assert second.delivery_id == first.delivery_id
    with pytest.raises(StaleTransitionError, match=r"claimed by b, expected PENDING claimed by a"):
        call(project.db, "record_alert_delivery", delivery_id=first.delivery_id, owner_id="a", outcome="DELIVERED")
    assert deliveries(project) == [("RUN_FAILED", "ops", "PENDING", 0, "b")]
    call(project.db, "record_alert_delivery", delivery_id=first.delivery_id, owner_id="b", outcome="DELIVERED")
    with pytest.raises(StaleTransitionError, match="is DELIVERED and unclaimed"):
        call(project.db, "record_alert_delivery", delivery_id=first.delivery_id, owner_id="b", outcome="DELIVERED")


def test_record_alert_delivery__refuses_unknown_deliveries_and_outcomes(project: Project) -> None:
    _pending(project)
    [claimed] = call(project.db, "claim_alert_deliveries", owner_id="a")
    with pytest.raises(NotFoundError, match="alert delivery 999 does not exist"):
        call(project.db, "record_alert_delivery", delivery_id=999, owner_id="a", outcome="DELIVERED")
    with pytest.raises(RefusedByPolicyError, match="DELIVERED or FAILED"):
        call(project.db, "record_alert_delivery", delivery_id=claimed.delivery_id, owner_id="a", outcome="SENT")
    with pytest.raises(RefusedByPolicyError, match="lease_seconds >= 1"):
        call(project.db, "claim_alert_deliveries", owner_id="a", lease_seconds=0)
