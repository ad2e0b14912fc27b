"""Gate functions (sql/functions/045_gates.sql.j2): admit_run and queue_attempt, the same on SQLite and PostgreSQL."""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from etlcraft.core.errors import EtlCraftError, NotFoundError, RefusedByPolicyError, StaleTransitionError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support.gates import (
    T0,
    as_utc,
    attempt,
    consumption,
    decisions,
    execute,
    reasons,
    run_row,
    set_task_run,
    snapshot,
    task_run,
    upstream_run,
)
from tests.py.support.scenario import Project

UTC_T0 = "2026-01-02 06:00:00 UTC"


@pytest.fixture
def project(engine_db: EngineDB) -> Project:
    """orders_daily (task extract) feeds reports (tasks build, depending on extract, and publish, PYTHON ingest and
    an EMAIL_ALERT alert) through a pipeline edge and a task edge, both SUCCESS."""
    engine_db.clock.pin(T0)
    project = Project(engine_db)
    project.pipeline("orders_daily")
    project.pipeline("reports", PRIORITY=7)
    project.task("orders_daily", "extract")
    project.task("reports", "build")
    project.task("reports", "publish")
    project.task("reports", "ingest", handler="PYTHON")
    project.pipeline_depends("reports", "orders_daily")
    project.depends("build", "extract")
    return project


def at(project: Project, minutes: float) -> None:
    project.db.clock.pin(T0 + timedelta(minutes=minutes))


def admit(project: Project, run_id: int, **arguments: object) -> tuple[object, ...]:
    """admit_run's run id, status and counts of satisfied and unsatisfied decisions."""
    return tuple(call(project.db, "admit_run", run_id=run_id, **arguments)[0])[:4]


def queue(project: Project, run_id: int, task: str, **arguments: object) -> Any:
    """The queue_attempt row."""
    return call(project.db, "queue_attempt", run_id=run_id, task_id=project.tasks[task], **arguments)[0]


def at_once(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run the calls in threads released together; each result is a row or the EtlCraftError it raised."""
    barrier, results = threading.Barrier(len(calls)), [None] * len(calls)

    def run(i: int, fn: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            results[i] = fn()
        except EtlCraftError as exc:
            results[i] = exc

    threads = [threading.Thread(target=contextvars.copy_context().run, args=(run, i, fn)) for i, fn in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def dependency(project: Project, pipeline: str) -> int:
    return int(project.scalar("SELECT PIPELINE_DEPENDENCY_ID FROM {CFG_PIPELINE_DEPENDENCY} WHERE PIPELINE_ID = :p",
                              p=project.pipelines[pipeline]))


def task_dependency(project: Project, task: str) -> int:
    return int(project.scalar("SELECT TASK_DEPENDENCY_ID FROM {CFG_TASK_DEPENDENCY} WHERE TASK_ID = :t",
                              t=project.tasks[task]))


# -- admit_run -------------------------------------------------------------------------------------------------


def test_admit_run__no_dependencies__starts_the_run_with_its_owner_and_lease(project: Project) -> None:
    project.pipeline("solo")
    owned, unowned = project.run("solo", key="k:1", status="QUEUED"), project.run("solo", key="k:2", status="QUEUED")
    assert admit(project, owned, owner_id="host:1:a", lease_seconds=90) == (owned, "IN-PROGRESS", 0, 0)
    status, start, _, owner, lease, *_ = run_row(project, owned)
    assert (status, as_utc(start), owner, as_utc(lease)) == ("IN-PROGRESS", T0, "host:1:a", T0 + timedelta(seconds=90))
    assert decisions(project, owned) == []
    call(project.db, "mark_run", run_id=owned, status="SUCCESS", reason="done")
    assert admit(project, unowned) == (unowned, "IN-PROGRESS", 0, 0)
    assert run_row(project, unowned)[3:5] == (None, None)


def test_admit_run__satisfied_dependency__records_the_upstream_run_and_revision(project: Project) -> None:
    upstream = upstream_run(project, "orders_daily", "schedule:1")
    at(project, 5)
    run = project.run("reports", status="QUEUED")
    assert admit(project, run) == (run, "IN-PROGRESS", 1, 0)
    assert decisions(project, run) == [(dependency(project, "reports"), "SATISFIED", upstream, None, 1, None, None)]
    assert project.rows("SELECT REASON, DECIDED_BY, DECIDED_BY_KIND, TASK_DEPENDENCY_ID, DECIDED_AT"
                        " FROM {AUD_GATE_DECISIONS}")[0][:4] == (
        f"orders_daily run {upstream} revision 1 ended SUCCESS at {UTC_T0}", "tester@pytest", "HUMAN", None)
    assert as_utc(project.scalar("SELECT DECIDED_AT FROM {AUD_GATE_DECISIONS}")) == T0 + timedelta(minutes=5)


def test_admit_run__unmet_dependency__stays_queued_with_its_reason_and_is_admitted_later(project: Project) -> None:
    run = project.run("reports", status="QUEUED")
    assert admit(project, run) == (run, "QUEUED", 0, 1)
    assert run_row(project, run)[:2] == ("QUEUED", None)
    assert reasons(project, run) == ["orders_daily has no SUCCESS run that is not a backfill (SUCCESS dependency)"]
    upstream = upstream_run(project, "orders_daily", "schedule:1")
    assert admit(project, run) == (run, "IN-PROGRESS", 1, 0)
    assert [d[1:3] for d in decisions(project, run)] == [("UNSATISFIED", None), ("SATISFIED", upstream)]


def test_admit_run__skip_unmet__ends_the_run_skipped_with_the_gate_reason(project: Project) -> None:
    """The server's rule: an unmet gate that does not wait ends its run SKIPPED in admit_run itself."""
    run = project.run("reports", status="QUEUED")
    assert admit(project, run, skip_unmet=True, owner_id="host:1:a") == (run, "SKIPPED", 0, 1)
    assert project.rows("SELECT STATUS, MESSAGE, OWNER_ID, END_DATE IS NOT NULL FROM {AUD_PIPELINES_RUN_LOG} "
                        "WHERE PIPELINE_RUN_ID = :r", r=run) == [
        ("SKIPPED", "pipeline gate not met: orders_daily has no SUCCESS run that is not a backfill (SUCCESS "
                    "dependency)", None, True)]


def test_admit_run__refusals_name_the_run_and_change_nothing(project: Project) -> None:
    running = project.run("reports", key="manual:running")
    with pytest.raises(NotFoundError, match="run 999 does not exist"):
        call(project.db, "admit_run", run_id=999)
    with pytest.raises(StaleTransitionError, match=f"run {running} is IN-PROGRESS, expected QUEUED"):
        call(project.db, "admit_run", run_id=running)
    call(project.db, "mark_run", run_id=running, status="FAILED", reason="x")
    queued = project.run("reports", key="manual:queued", status="QUEUED")
    call(project.db, "pause_pipeline", pipeline_id=project.pipelines["reports"], reason="warehouse upgrade")
    before = snapshot(project)
    with pytest.raises(RefusedByPolicyError, match=(
            f"pipeline reports is paused since {UTC_T0} by tester@pytest \\(warehouse upgrade\\); a paused pipeline"
            " starts no run: resume it with etl-craft resume --pipeline-code reports")):
        call(project.db, "admit_run", run_id=queued)
    assert snapshot(project) == before


def test_b23_admission_never_touches_another_run(project: Project) -> None:
    upstream_run(project, "orders_daily", "schedule:1")
    other = project.run("reports", key="schedule:other")
    call(project.db, "start_run", run_id=other, owner_id="host:2:b")
    queued = project.run("reports", key="schedule:mine", status="QUEUED")
    before = snapshot(project)
    with pytest.raises(RefusedByPolicyError, match=(
            f"run {queued} of pipeline reports cannot be admitted while run {other} \\(schedule:other\\) of the same"
            f" pipeline is IN-PROGRESS \\(started {UTC_T0} by tester@pytest\\); it stays QUEUED")):
        call(project.db, "admit_run", run_id=queued, owner_id="host:1:a")
    assert snapshot(project) == before
    assert run_row(project, other)[0] == "IN-PROGRESS" and run_row(project, other)[3] == "host:2:b"


def test_admit_run__bypass_records_every_dependency_bypassed_with_its_reason(project: Project) -> None:
    project.pipeline("customers")
    project.pipeline_depends("reports", "customers", type_="HAS_DATA")
    run = project.run("reports", status="QUEUED")
    assert admit(project, run, bypass_reason="upstream late; approved by ops") == (run, "IN-PROGRESS", 2, 0)
    assert [d[1:5] for d in decisions(project, run)] == [("BYPASSED", None, None, None)] * 2
    assert reasons(project, run) == [
        "bypassed (SUCCESS dependency on orders_daily): upstream late; approved by ops",
        "bypassed (HAS_DATA dependency on customers): upstream late; approved by ops"]


def test_has_data_edge_needs_an_upstream_success_that_wrote_rows(project: Project) -> None:
    project.pipeline("sink")
    project.pipeline_depends("sink", "orders_daily", type_="HAS_DATA")
    upstream_run(project, "orders_daily", "schedule:empty", rows={"extract": 0})
    run = project.run("sink", status="QUEUED")
    assert admit(project, run)[1:] == ("QUEUED", 0, 1)
    at(project, 10)
    full = upstream_run(project, "orders_daily", "schedule:full", rows={"extract": 5})
    at(project, 20)
    upstream_run(project, "orders_daily", "schedule:empty-again", rows={"extract": 0})
    assert admit(project, run)[1:] == ("IN-PROGRESS", 1, 0)
    assert reasons(project, run) == [
        "orders_daily has no SUCCESS (with rows written) run that is not a backfill (HAS_DATA dependency)",
        f"orders_daily run {full} revision 1 ended SUCCESS at 2026-01-02 06:10:00 UTC with 5 rows written"]


def test_failure_and_always_edges_are_met_by_a_failed_and_by_any_ended_upstream(project: Project) -> None:
    project.pipeline("alerts")
    project.pipeline("cleanup")
    project.pipeline_depends("alerts", "orders_daily", type_="FAILURE")
    project.pipeline_depends("cleanup", "orders_daily", type_="ALWAYS")
    upstream_run(project, "orders_daily", "schedule:ok")
    alert, clean = project.run("alerts", status="QUEUED"), project.run("cleanup", status="QUEUED")
    assert admit(project, alert)[1:] == ("QUEUED", 0, 1)
    assert reasons(project, alert) == ["orders_daily has no FAILED run that is not a backfill (FAILURE dependency)"]
    skipped = project.run("orders_daily", key="schedule:skipped", status="QUEUED")
    call(project.db, "finish_run", run_id=skipped, from_status="QUEUED", status="SKIPPED")
    assert admit(project, clean)[1:] == ("IN-PROGRESS", 1, 0)
    assert decisions(project, clean)[0][2] == skipped
    failed = upstream_run(project, "orders_daily", "schedule:failed", status="FAILED")
    assert admit(project, alert)[1:] == ("IN-PROGRESS", 1, 0)
    assert decisions(project, alert)[-1][1:3] == ("SATISFIED", failed)


def test_b4_backfill_runs_never_feed_gates(project: Project) -> None:
    backfill = upstream_run(project, "orders_daily", "backfill:2025-12-01", trigger_kind="BACKFILL",
                            rows={"extract": 3})
    run = project.run("reports", key="schedule:1", status="QUEUED")
    assert admit(project, run)[1:] == ("QUEUED", 0, 1)
    assert reasons(project, run) == ["orders_daily has no SUCCESS run that is not a backfill (SUCCESS dependency)"]
    at(project, 10)
    scheduled = upstream_run(project, "orders_daily", "schedule:2026-01-01", rows={"extract": 3})
    # Newer backfills, a success and a failure, neither feed nor block the gate.
    at(project, 20)
    upstream_run(project, "orders_daily", "backfill:2025-12-02", trigger_kind="BACKFILL", rows={"extract": 3})
    upstream_run(project, "orders_daily", "backfill:2025-12-03", status="FAILED", trigger_kind="BACKFILL")
    assert admit(project, run)[1:] == ("IN-PROGRESS", 1, 0)
    assert decisions(project, run)[-1][1:3] == ("SATISFIED", scheduled)
    # The task gate ignores the backfill's task runs too.
    queued = queue(project, run, "build")
    [selected] = project.rows("SELECT SELECTED_PIPELINE_RUN_ID FROM {AUD_GATE_DECISIONS} WHERE ATTEMPT_ID = :a",
                              a=queued.attempt_id)
    assert (queued.outcome, selected[0]) == ("QUEUED", scheduled) and backfill != scheduled


def test_b15_failure_edges_are_unmet_in_backfills(project: Project) -> None:
    project.pipeline("alerts")
    project.task("alerts", "mail", handler="EMAIL_ALERT")
    project.pipeline_depends("alerts", "orders_daily", type_="FAILURE")
    project.depends("mail", "extract", type_="FAILURE")
    failed = project.run("orders_daily", key="schedule:1")
    task_run(project, failed, "extract", "FAILED")
    call(project.db, "mark_run", run_id=failed, status="FAILED", reason="upstream broke")
    backfill = project.run("alerts", key="backfill:2025-12-01", status="QUEUED", trigger_kind="BACKFILL")
    assert admit(project, backfill)[1:] == ("QUEUED", 0, 1)
    assert reasons(project, backfill) == [
        "backfills don't evaluate FAILURE dependencies on other pipelines (FAILURE dependency on orders_daily)"]
    call(project.db, "finish_run", run_id=backfill, from_status="QUEUED", status="SKIPPED")
    scheduled = project.run("alerts", key="schedule:1", status="QUEUED")
    assert admit(project, scheduled)[1:] == ("IN-PROGRESS", 1, 0)
    # The task gate of a backfill run: the alert task is never queued on a FAILURE edge.
    call(project.db, "mark_run", run_id=scheduled, status="SUCCESS", reason="done")
    running_backfill = project.run("alerts", key="backfill:2025-12-02", trigger_kind="BACKFILL")
    refused = queue(project, running_backfill, "mail")
    assert (refused.outcome, refused.attempt_id) == ("UNSATISFIED", None)
    assert refused.reason == ("dependencies not met: backfills don't evaluate FAILURE dependencies on other pipelines"
                              " (FAILURE dependency on orders_daily.extract)")


def test_b14_a_repaired_upstream_satisfies_again_with_consume_repairs(project: Project) -> None:
    project.pipeline("repairs_yes")
    project.pipeline("repairs_no")
    project.pipeline_depends("repairs_yes", "orders_daily", consume_repairs="Y")
    project.pipeline_depends("repairs_no", "orders_daily", consume_repairs="N")
    upstream = upstream_run(project, "orders_daily", "schedule:1")
    for pipeline in ("repairs_yes", "repairs_no"):
        first = project.run(pipeline, key="schedule:1", status="QUEUED")
        assert admit(project, first)[1] == "IN-PROGRESS"
        assert call(project.db, "finalize_run", run_id=first)[0].consumed == 1
    yes, no = project.run("repairs_yes", key="schedule:2", status="QUEUED"), project.run(
        "repairs_no", key="schedule:2", status="QUEUED")
    for run in (yes, no):
        assert admit(project, run)[1:] == ("QUEUED", 0, 1)
        assert f"orders_daily run {upstream} revision 1 was already consumed by run" in reasons(project, run)[-1]
    # Repair the upstream run: revision 2.
    at(project, 60)
    call(project.db, "reopen_run", run_id=upstream, reason="late rows")
    assert call(project.db, "mark_run", run_id=upstream, status="SUCCESS", reason="fixed")[0].output_revision == 2
    assert admit(project, yes)[1:] == ("IN-PROGRESS", 1, 0)
    assert decisions(project, yes)[-1][1:5] == ("SATISFIED", upstream, None, 2)
    assert admit(project, no)[1:] == ("QUEUED", 0, 1)
    assert reasons(project, no)[-1].endswith(
        "; a newer run satisfies this dependency again (CONSUME_REPAIRS = N: repairs are not consumed)")


def test_backfill_runs_neither_block_nor_are_blocked_by_consumption(project: Project) -> None:
    project.pipeline("marts")
    project.pipeline_depends("marts", "orders_daily")
    upstream = upstream_run(project, "orders_daily", "schedule:1")
    backfill = project.run("marts", key="backfill:1", status="QUEUED", trigger_kind="BACKFILL")
    assert admit(project, backfill)[1] == "IN-PROGRESS"
    assert call(project.db, "finalize_run", run_id=backfill)[0].consumed == 1
    scheduled = project.run("marts", key="schedule:1", status="QUEUED")
    assert admit(project, scheduled)[1:] == ("IN-PROGRESS", 1, 0)
    call(project.db, "finalize_run", run_id=scheduled)
    again = project.run("marts", key="backfill:2", status="QUEUED", trigger_kind="BACKFILL")
    assert admit(project, again)[1:] == ("IN-PROGRESS", 1, 0)
    assert [c[2] for c in consumption(project)] == [upstream, upstream]


def test_admit_run__queued_runs_of_one_pipeline_admitted_at_once__one_starts(project: Project) -> None:
    upstream_run(project, "orders_daily", "schedule:1")
    runs = [project.run("reports", key=f"schedule:{i}", status="QUEUED") for i in range(4)]
    results = at_once([lambda run=run: admit(project, run) for run in runs])
    started = [r for r in results if isinstance(r, tuple)]
    assert [r[1] for r in started] == ["IN-PROGRESS"]
    assert all(isinstance(r, RefusedByPolicyError) and "cannot be admitted while run" in str(r)
               for r in results if not isinstance(r, tuple))
    assert project.scalar("SELECT COUNT(*) FROM {AUD_PIPELINES_RUN_LOG} WHERE STATUS = 'IN-PROGRESS'") == 1


# -- queue_attempt ---------------------------------------------------------------------------------------------


def test_queue_attempt__creates_the_task_run_and_queues_attempt_1_with_pool_slot_and_priority(
        project: Project) -> None:
    execute(project, "UPDATE {CFG_PROJECTS} SET DEFAULT_POOL = 'etl'")
    execute(project, "INSERT INTO {CFG_TASK_PARAMETERS} (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)"
            " VALUES (:t, 'POOL', 'heavy')", t=project.tasks["ingest"])
    run = project.run("reports")
    ingest = queue(project, run, "ingest", not_before=T0 + timedelta(minutes=30))
    publish = queue(project, run, "publish")
    assert (ingest.outcome, ingest.attempt_number, publish.outcome, publish.attempt_number) == (
        "QUEUED", 1, "QUEUED", 1)
    assert ingest.reason == (
        f"queued attempt 1 of task run {ingest.task_run_id} in pool heavy (ingestion slot, priority 7)")
    rows = project.rows("SELECT ATTEMPT_ID, TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, POOL, SLOT_KIND, PRIORITY,"
                        " REQUESTED_BY, REQUESTED_BY_KIND, OWNER_ID FROM {AUD_TASK_ATTEMPTS} ORDER BY ATTEMPT_ID")
    assert rows == [
        (ingest.attempt_id, ingest.task_run_id, 1, "QUEUED", "heavy", "ingestion", 7, "tester@pytest", "HUMAN", None),
        (publish.attempt_id, publish.task_run_id, 1, "QUEUED", "etl", "warehouse", 7, "tester@pytest", "HUMAN", None)]
    [(not_before, queued_at)] = project.rows("SELECT NOT_BEFORE, QUEUED_AT FROM {AUD_TASK_ATTEMPTS}"
                                             " WHERE ATTEMPT_ID = :a", a=ingest.attempt_id)
    assert (as_utc(not_before), as_utc(queued_at)) == (T0 + timedelta(minutes=30), T0)
    assert project.rows("SELECT TASK_RUN_ID, STATUS, ATTEMPT_COUNT, END_DATE FROM {AUD_TASK_RUN_LOG}"
                        " ORDER BY TASK_RUN_ID") == [
        (ingest.task_run_id, "IN-PROGRESS", 1, None), (publish.task_run_id, "IN-PROGRESS", 1, None)]
    assert decisions(project, run) == []  # no edge to another pipeline


def test_queue_attempt__twice_for_one_task__one_attempt_and_ec020(project: Project) -> None:
    run = project.run("reports")
    first = queue(project, run, "publish")
    before = snapshot(project)
    with pytest.raises(StaleTransitionError, match=(
            f"task publish of run {run} \\(task run {first.task_run_id}\\) already has attempt {first.attempt_id}"
            f" QUEUED, queued at {UTC_T0}, expected no live attempt; a task is queued once")):
        queue(project, run, "publish")
    attempt_id = first.attempt_id
    execute(project, "UPDATE {AUD_TASK_ATTEMPTS} SET STATUS = 'CLAIMED', OWNER_ID = 'host:1:a', CLAIMED_AT = {now}"
            " WHERE ATTEMPT_ID = :a", a=attempt_id)
    with pytest.raises(StaleTransitionError, match=f"already has attempt {attempt_id} CLAIMED by host:1:a"):
        queue(project, run, "publish")
    assert project.scalar("SELECT COUNT(*) FROM {AUD_TASK_ATTEMPTS}") == 1
    assert snapshot(project)["AUD_TASK_RUN_LOG"] == before["AUD_TASK_RUN_LOG"]


def test_b1_two_callers_queue_one_task_once(project: Project) -> None:
    run = project.run("reports")
    results = at_once([lambda: queue(project, run, "publish") for _ in range(4)])
    queued = [r for r in results if not isinstance(r, EtlCraftError)]
    assert [r.outcome for r in queued] == ["QUEUED"]
    assert all(isinstance(r, StaleTransitionError) and "a task is queued once" in str(r)
               for r in results if isinstance(r, EtlCraftError))
    assert project.rows("SELECT ATTEMPT_NUMBER, STATUS FROM {AUD_TASK_ATTEMPTS}") == [(1, "QUEUED")]
    assert project.rows("SELECT ATTEMPT_COUNT FROM {AUD_TASK_RUN_LOG}") == [(1,)]


def test_queue_attempt__a_paused_pipeline_starts_no_task(project: Project) -> None:
    run = project.run("reports")
    call(project.db, "pause_pipeline", pipeline_id=project.pipelines["reports"], reason="freeze")
    before = snapshot(project)
    with pytest.raises(RefusedByPolicyError, match=(
            f"pipeline reports is paused since {UTC_T0} by tester@pytest \\(freeze\\); a paused pipeline starts no"
            " task: resume it with etl-craft resume --pipeline-code reports")):
        queue(project, run, "publish")
    assert snapshot(project) == before
    call(project.db, "resume_pipeline", pipeline_id=project.pipelines["reports"], reason="thawed")
    assert queue(project, run, "publish").outcome == "QUEUED"


def test_queue_attempt__refuses_a_run_that_is_not_running_or_a_task_it_does_not_have(project: Project) -> None:
    queued = project.run("reports", key="manual:queued", status="QUEUED")
    with pytest.raises(StaleTransitionError, match=f"run {queued} is QUEUED, expected IN-PROGRESS"):
        queue(project, queued, "publish")
    with pytest.raises(NotFoundError, match="run 999 does not exist"):
        call(project.db, "queue_attempt", run_id=999, task_id=project.tasks["publish"])
    call(project.db, "finish_run", run_id=queued, from_status="QUEUED", status="CANCELLED")
    run = project.run("reports", key="manual:1")
    with pytest.raises(NotFoundError, match=f"task {project.tasks['extract']} is not an active task of pipeline"
                                            f" reports \\(run {run}\\)"):
        queue(project, run, "extract")
    execute(project, "UPDATE {CFG_TASKS} SET ACTIVE_FLAG = 'N' WHERE TASK_ID = :t", t=project.tasks["ingest"])
    with pytest.raises(NotFoundError, match="is not an active task of pipeline reports"):
        queue(project, run, "ingest")
    # A run being cancelled queues nothing more.
    running = queue(project, run, "publish")
    execute(project, "UPDATE {AUD_TASK_ATTEMPTS} SET STATUS = 'CLAIMED', OWNER_ID = 'host:1:a', CLAIMED_AT = {now}"
            " WHERE ATTEMPT_ID = :a", a=running.attempt_id)
    call(project.db, "cancel_run", run_id=run, reason="wrong day")
    before = snapshot(project)
    with pytest.raises(StaleTransitionError, match=f"run {run} is IN-PROGRESS but being cancelled \\(requested at"
                                                   f" {UTC_T0}\\), expected no cancel request"):
        queue(project, run, "build", bypass_reason="x")
    assert snapshot(project) == before


def test_queue_attempt__a_succeeded_task_runs_again_only_with_rerun(project: Project) -> None:
    run = project.run("reports")
    done = task_run(project, run, "publish", "SUCCESS")
    with pytest.raises(RefusedByPolicyError, match=(
            f"task publish already succeeded in run {run} \\(task run {done}, ended {UTC_T0}\\); pass rerun")):
        queue(project, run, "publish")
    at(project, 5)
    again = queue(project, run, "publish", rerun=True)
    assert (again.outcome, again.task_run_id, again.attempt_number) == ("QUEUED", done, 2)
    [(status, count, start, end)] = project.rows("SELECT STATUS, ATTEMPT_COUNT, START_DATE, END_DATE"
                                                 " FROM {AUD_TASK_RUN_LOG} WHERE TASK_RUN_ID = :t", t=done)
    # START_DATE stays the task run's first start: queuing an attempt is not starting one
    assert (status, count, as_utc(start), end) == ("IN-PROGRESS", 2, T0, None)


def test_queue_attempt__failed_skipped_and_cancelled_tasks_are_queued_again(project: Project) -> None:
    run = project.run("reports")
    for task, status in (("publish", "FAILED"), ("ingest", "SKIPPED"), ("build", "CANCELLED")):
        earlier = task_run(project, run, task, status, attempts=2)
        queued = queue(project, run, task, bypass_reason="not what this test checks")
        assert (queued.outcome, queued.task_run_id, queued.attempt_number) == ("QUEUED", earlier, 3), task
        assert project.scalar("SELECT STATUS FROM {AUD_TASK_RUN_LOG} WHERE TASK_RUN_ID = :t",
                              t=earlier) == "IN-PROGRESS"


def test_queue_attempt__refuses_a_task_run_in_progress_without_a_live_attempt(project: Project) -> None:
    run = project.run("reports")
    stuck = task_run(project, run, "publish", "IN-PROGRESS")
    with pytest.raises(StaleTransitionError, match=(
            f"task publish of run {run} \\(task run {stuck}\\) is IN-PROGRESS without a live attempt, expected FAILED,"
            " SKIPPED or CANCELLED; run etl-craft reconcile")):
        queue(project, run, "publish")
    ended = attempt(project, stuck, "FAILED")
    with pytest.raises(StaleTransitionError, match="is IN-PROGRESS without a live attempt"):
        queue(project, run, "publish")
    assert project.scalar("SELECT COUNT(*) FROM {AUD_TASK_ATTEMPTS}") == 1 and ended


def test_queue_attempt__unmet_cross_pipeline_dependency_queues_nothing_and_records_why(project: Project) -> None:
    run = project.run("reports")
    edge = task_dependency(project, "build")
    unmet = queue(project, run, "build")
    assert tuple(unmet)[:5] == (None, None, None, "UNSATISFIED", "dependencies not met: orders_daily.extract has no"
                            " SUCCESS task run that is not a backfill (SUCCESS dependency)")
    assert project.scalar("SELECT COUNT(*) FROM {AUD_TASK_RUN_LOG}") == 0
    assert decisions(project, run) == [(edge, "UNSATISFIED", None, None, None, None, None)]
    # A failed task run of build: the decision names it, and it stays FAILED.
    failed = task_run(project, run, "build", "FAILED")
    assert queue(project, run, "build").task_run_id == failed
    assert decisions(project, run)[-1] == (edge, "UNSATISFIED", None, None, None, None, failed)
    assert project.scalar("SELECT STATUS FROM {AUD_TASK_RUN_LOG} WHERE TASK_RUN_ID = :t", t=failed) == "FAILED"
    # Once extract has succeeded in a run of orders_daily, build is queued and its decision names the attempt.
    upstream = project.run("orders_daily", key="schedule:1")
    extract = task_run(project, upstream, "extract", "SUCCESS", rows_written=4)
    queued = queue(project, run, "build")
    assert (queued.outcome, queued.task_run_id, queued.attempt_number) == ("QUEUED", failed, 2)
    assert decisions(project, run)[-1] == (edge, "SATISFIED", upstream, extract, 1, queued.attempt_id, failed)
    assert reasons(project, run)[-1] == (f"orders_daily.extract task run {extract} in run {upstream} revision 1 ended"
                                         f" SUCCESS at {UTC_T0}")
    assert project.scalar("SELECT PIPELINE_DEPENDENCY_ID FROM {AUD_GATE_DECISIONS} WHERE ATTEMPT_ID = :a",
                          a=queued.attempt_id) is None


def test_has_data_task_edge_needs_the_upstream_task_run_to_have_written_rows(project: Project) -> None:
    project.task("reports", "summarize")
    project.depends("summarize", "extract", type_="HAS_DATA")
    empty = project.run("orders_daily", key="schedule:empty")
    task_run(project, empty, "extract", "SUCCESS", rows_written=0)
    run = project.run("reports")
    assert queue(project, run, "summarize").reason == (
        "dependencies not met: orders_daily.extract has no SUCCESS (with rows written) task run that is not a backfill"
        " (HAS_DATA dependency)")
    # orders_daily runs one run at a time: the empty run ends before the next one starts
    call(project.db, "mark_run", run_id=empty, status="SUCCESS", reason="ran, but wrote no rows")
    full = project.run("orders_daily", key="schedule:full")
    extract = task_run(project, full, "extract", "SUCCESS", rows_written=2)
    assert queue(project, run, "summarize").outcome == "QUEUED"
    assert reasons(project, run)[-1] == (f"orders_daily.extract task run {extract} in run {full} revision 1 ended"
                                         f" SUCCESS at {UTC_T0} with 2 rows written")


def test_queue_attempt__edges_inside_the_pipeline_are_not_its_gate(project: Project) -> None:
    project.depends("publish", "build")
    run = project.run("reports")
    assert queue(project, run, "publish").outcome == "QUEUED"
    assert decisions(project, run) == []


def test_queue_attempt__a_rerun_may_use_the_upstream_its_own_run_consumed(project: Project) -> None:
    upstream = project.run("orders_daily", key="schedule:1")
    extract = task_run(project, upstream, "extract", "SUCCESS")
    run = project.run("reports", key="schedule:1")
    first = queue(project, run, "build")
    # finish_attempt records the task's consumption with its SUCCESS; here it is written by hand.
    set_task_run(project, first.task_run_id, "SUCCESS")
    execute(project, "INSERT INTO {AUD_DEPENDENCY_CONSUMPTION} (PIPELINE_RUN_ID, TASK_RUN_ID, TASK_DEPENDENCY_ID,"
            " CONSUMED_PIPELINE_RUN_ID, CONSUMED_TASK_RUN_ID, CONSUMED_REVISION, CONSUMED_AT)"
            " VALUES (:run, :tr, :dep, :up, :ext, 1, {now})", run=run, tr=first.task_run_id,
            dep=task_dependency(project, "build"), up=upstream, ext=extract)
    execute(project, "UPDATE {AUD_TASK_ATTEMPTS} SET STATUS = 'CANCELLED', ENDED_AT = {now} WHERE ATTEMPT_ID = :a",
            a=first.attempt_id)
    assert queue(project, run, "build", rerun=True).outcome == "QUEUED"
    # Another run of reports finds extract consumed.
    call(project.db, "mark_run", run_id=run, status="SUCCESS", reason="done")
    later = project.run("reports", key="schedule:2")
    refused = queue(project, later, "build")
    assert refused.outcome == "UNSATISFIED"
    assert f"orders_daily.extract run {upstream} revision 1 was already consumed by run {run} at {UTC_T0}" in (
        refused.reason)


def test_queue_attempt__bypass_records_the_task_edges_bypassed_and_queues(project: Project) -> None:
    run = project.run("reports")
    queued = queue(project, run, "build", bypass_reason=json.dumps({"ticket": "OPS-1"}))
    assert queued.outcome == "QUEUED"
    assert decisions(project, run) == [
        (task_dependency(project, "build"), "BYPASSED", None, None, None, queued.attempt_id, queued.task_run_id)]
    assert reasons(project, run) == ['bypassed (SUCCESS dependency on orders_daily.extract): {"ticket": "OPS-1"}']


# -- queue_attempts --------------------------------------------------------------------------------------------


def queue_many(project: Project, run_id: int, *tasks: str) -> dict[str, Any]:
    """queue_attempts' rows by task code, for the tasks named in that order."""
    codes = {project.tasks[t]: t for t in tasks}
    found = call(project.db, "queue_attempts", run_id=run_id, task_ids=",".join(str(project.tasks[t]) for t in tasks))
    assert [codes[r.task_id] for r in found] == list(tasks), "one row per task, in the order of the list"
    return {codes[r.task_id]: r for r in found}


def test_queue_attempts__queues_the_listed_tasks_in_order__a_gated_task_is_left_to_queue_attempt(
        project: Project) -> None:
    execute(project, "UPDATE {CFG_PROJECTS} SET DEFAULT_POOL = 'etl'")
    execute(project, "INSERT INTO {CFG_TASK_PARAMETERS} (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)"
            " VALUES (:t, 'POOL', 'heavy')", t=project.tasks["ingest"])
    run = project.run("reports")
    found = queue_many(project, run, "publish", "build", "ingest")
    publish, build, ingest = found["publish"], found["build"], found["ingest"]
    assert (publish.outcome, publish.attempt_number, ingest.outcome, ingest.attempt_number) == (
        "QUEUED", 1, "QUEUED", 1)
    assert ingest.reason == (
        f"queued attempt 1 of task run {ingest.task_run_id} in pool heavy (ingestion slot, priority 7)")
    assert (ingest.pool, ingest.slot_kind, publish.pool, publish.slot_kind) == (
        "heavy", "ingestion", "etl", "warehouse")
    assert (build.outcome, build.attempt_id, build.task_run_id) == ("GATED", None, None)
    assert build.reason == "it depends on tasks of other pipelines: its task gate is judged by queue_attempt"
    assert publish.attempt_id < ingest.attempt_id, "numbered in the order of the list: the order they are claimed in"
    assert project.rows("SELECT ATTEMPT_ID, TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, POOL, SLOT_KIND, PRIORITY, NOT_BEFORE,"
                        " REQUESTED_BY, REQUESTED_BY_KIND FROM {AUD_TASK_ATTEMPTS} ORDER BY ATTEMPT_ID") == [
        (publish.attempt_id, publish.task_run_id, 1, "QUEUED", "etl", "warehouse", 7, None, "tester@pytest", "HUMAN"),
        (ingest.attempt_id, ingest.task_run_id, 1, "QUEUED", "heavy", "ingestion", 7, None, "tester@pytest", "HUMAN")]
    assert project.rows("SELECT TASK_RUN_ID, STATUS, ATTEMPT_COUNT, START_DATE FROM {AUD_TASK_RUN_LOG}"
                        " ORDER BY TASK_RUN_ID") == [
        (publish.task_run_id, "IN-PROGRESS", 1, None), (ingest.task_run_id, "IN-PROGRESS", 1, None)]
    assert decisions(project, run) == [], "no gate was judged"
    # The gated task is queued by queue_attempt, which judges its gate (met here) and records the decision.
    upstream_run(project, "orders_daily", "manual:up", rows={"extract": 5})
    assert queue(project, run, "build").outcome == "QUEUED"
    assert [d[1] for d in decisions(project, run)] == ["SATISFIED"]


def test_queue_attempts__failed_skipped_and_cancelled_tasks_are_queued_again(project: Project) -> None:
    run = project.run("reports")
    earlier = {task: task_run(project, run, task, status, attempts=2)
               for task, status in (("publish", "FAILED"), ("ingest", "SKIPPED"))}
    execute(project, "UPDATE {AUD_TASK_RUN_LOG} SET MESSAGE = 'skipped by hand' WHERE TASK_RUN_ID = :t",
            t=earlier["ingest"])
    found = queue_many(project, run, "ingest", "publish")
    assert {t: (r.outcome, r.task_run_id, r.attempt_number) for t, r in found.items()} == {
        "ingest": ("QUEUED", earlier["ingest"], 3), "publish": ("QUEUED", earlier["publish"], 3)}
    assert project.rows("SELECT STATUS, ATTEMPT_COUNT, END_DATE, MESSAGE FROM {AUD_TASK_RUN_LOG}"
                        " ORDER BY TASK_RUN_ID") == [("IN-PROGRESS", 3, None, None)] * 2


def test_queue_attempts__a_refusal_for_one_task_queues_none_of_the_list(project: Project) -> None:
    run = project.run("reports")
    first = queue(project, run, "publish")
    before = snapshot(project)
    ids = f"{project.tasks['ingest']},{project.tasks['publish']}"
    with pytest.raises(StaleTransitionError, match=(
            f"task publish of run {run} \\(task run {first.task_run_id}\\) already has attempt {first.attempt_id}"
            f" QUEUED, queued at {UTC_T0}, expected no live attempt; a task is queued once")):
        call(project.db, "queue_attempts", run_id=run, task_ids=ids)
    assert snapshot(project) == before, "ingest, listed before publish, was not queued either"
    for bad in ("", "1,,2", "1;2", "a,b", ",1"):
        with pytest.raises(RefusedByPolicyError, match="task_ids must be a comma list of task ids such as '12,13'"):
            call(project.db, "queue_attempts", run_id=run, task_ids=bad)
    with pytest.raises(RefusedByPolicyError, match=f"task_ids names task {project.tasks['ingest']} twice"):
        call(project.db, "queue_attempts", run_id=run, task_ids=f"{project.tasks['ingest']}, {project.tasks['ingest']}")
    with pytest.raises(NotFoundError, match=f"task {project.tasks['extract']} is not an active task of pipeline"
                                            f" reports \\(run {run}\\)"):
        call(project.db, "queue_attempts", run_id=run, task_ids=f"{project.tasks['ingest']},{project.tasks['extract']}")
    done = task_run(project, run, "ingest", "SUCCESS")
    with pytest.raises(RefusedByPolicyError, match=f"task ingest already succeeded in run {run} \\(task run {done}"):
        call(project.db, "queue_attempts", run_id=run, task_ids=str(project.tasks["ingest"]))
    with pytest.raises(NotFoundError, match="run 999 does not exist"):
        call(project.db, "queue_attempts", run_id=999, task_ids=str(project.tasks["ingest"]))
    call(project.db, "pause_pipeline", pipeline_id=project.pipelines["reports"], reason="freeze")
    with pytest.raises(RefusedByPolicyError, match="pipeline reports is paused since"):
        call(project.db, "queue_attempts", run_id=run, task_ids=str(project.tasks["build"]))
    call(project.db, "resume_pipeline", pipeline_id=project.pipelines["reports"], reason="thawed")
    queued = project.run("reports", key="manual:queued", status="QUEUED")
    with pytest.raises(StaleTransitionError, match=f"run {queued} is QUEUED, expected IN-PROGRESS"):
        call(project.db, "queue_attempts", run_id=queued, task_ids=str(project.tasks["ingest"]))
    assert project.scalar("SELECT COUNT(*) FROM {AUD_TASK_ATTEMPTS}") == 1


def test_queue_attempts__two_callers_queue_a_list_once(project: Project) -> None:
    run = project.run("reports")
    ids = f"{project.tasks['publish']},{project.tasks['ingest']}"
    results = at_once([lambda: call(project.db, "queue_attempts", run_id=run, task_ids=ids) for _ in range(4)])
    queued = [r for r in results if not isinstance(r, EtlCraftError)]
    assert [[row.outcome for row in r] for r in queued] == [["QUEUED", "QUEUED"]]
    assert all(isinstance(r, StaleTransitionError) and "a task is queued once" in str(r)
               for r in results if isinstance(r, EtlCraftError))
    assert project.rows("SELECT ATTEMPT_NUMBER, STATUS FROM {AUD_TASK_ATTEMPTS}") == [(1, "QUEUED")] * 2
