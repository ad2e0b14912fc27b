"""Golden tests of explain(snapshot): one hand-made snapshot per task state, the full text asserted."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime

from etlcraft.services.explain import (
    Attempt,
    Decision,
    Edge,
    GateWait,
    Pause,
    Snapshot,
    explain,
    judge,
    render,
    to_json,
)

T0 = datetime(2026, 3, 14, 6, 0, tzinfo=UTC)


def at(minute: int) -> datetime:
    return T0.replace(minute=minute)


BASE = Snapshot(
    "sales",
    "report",
    7,
    "daily-2026-03-14",
    date(2026, 3, 14),
    "IN-PROGRESS",
    False,
    None,
    "ALL",
    None,
    None,
    (),
    (Edge("load", "SUCCESS", True, "IN-PROGRESS", state="OPEN"),
     Edge("rates", "ALWAYS", True, "SUCCESS", 4, state="MET")),
    (),
    2,
    60.0,
    2.0,
    at(30),
)
HEADER = "task report of pipeline sales in run 7 (key daily-2026-03-14, run date 2026-03-14)"


def text_of(snapshot: Snapshot) -> list[str]:
    return render(to_json(explain(snapshot))).split("\n")


def test_explain__not_run__waits_on_its_unsettled_upstream() -> None:
    snapshot = BASE
    assert text_of(snapshot) == [
        HEADER,
        "run: IN-PROGRESS",
        "pause: none",
        "task: NOT RUN, 0 attempt(s)",
        "run condition: ALL (every dependency must be met)",
        "dependencies:",
        "  load (SUCCESS): upstream IN-PROGRESS, not met yet",
        "  rates (ALWAYS): upstream SUCCESS, met",
        "cross-pipeline decisions: none",
        "retries: 2 (delay 60 s, backoff 2); none scheduled",
        "=> report runs once load succeeds.",
    ]


def test_explain__queued_run__waits_on_its_pipeline_gate() -> None:
    snapshot = replace(
        BASE,
        run_status="QUEUED",
        edges=(Edge("load", "SUCCESS", True, None, state="OPEN"),),
        decisions=(
            Decision("pipeline", "crm", "SUCCESS", "UNSATISFIED", "no ended run of crm satisfies SUCCESS", at(1)),
        ),
    )
    assert text_of(snapshot) == [
        HEADER,
        "run: QUEUED",
        "pause: none",
        "task: NOT RUN, 0 attempt(s)",
        "run condition: ALL (every dependency must be met)",
        "dependencies:",
        "  load (SUCCESS): upstream NOT RUN, not met yet",
        "cross-pipeline decisions:",
        "  pipeline gate, crm (SUCCESS): UNSATISFIED at 2026-03-14 06:01:00 UTC: no ended run of crm satisfies SUCCESS",
        "retries: 2 (delay 60 s, backoff 2); none scheduled",
        "=> report can run once run 7 passes its pipeline gate, which waits on crm (SUCCESS); the "
        "gate is judged again at the next look.",
    ]


def test_explain__waiting_on_its_task_gate__holds_no_slot__next_look_and_deadline() -> None:
    snapshot = replace(
        BASE,
        edges=(Edge("crm.extract", "SUCCESS", False, None),),
        gate_wait=GateWait("task", "crm.extract has no SUCCESS task run that is not a backfill (SUCCESS dependency)",
                           at(10), at(29), at(31), T0.replace(hour=7, minute=10), 7, None, None),
    )
    assert text_of(snapshot)[-4:] == [
        "cross-pipeline decisions: none",
        "gate wait (task gate): waiting, look 7, next at 2026-03-14 06:31:00 UTC, since 2026-03-14 06:10:00 UTC, at "
        "most until 2026-03-14 07:10:00 UTC: crm.extract has no SUCCESS task run that is not a backfill (SUCCESS "
        "dependency)",
        "retries: 2 (delay 60 s, backoff 2); none scheduled",
        "=> report runs once its task gate is met: it waits, holding no slot, because crm.extract has no SUCCESS task "
        "run that is not a backfill (SUCCESS dependency); look 7 was at 2026-03-14 06:29:00 UTC, the next is at "
        "2026-03-14 06:31:00 UTC, and it gives up at 2026-03-14 07:10:00 UTC (Gate_wait_minutes after its first "
        "look).",
    ]
    assert to_json(explain(snapshot))["gate_wait"]["next_check_at"] == "2026-03-14T06:31:00+00:00"


def test_explain__queued_run__its_pipeline_gate_waits_for_a_running_upstream() -> None:
    snapshot = replace(
        BASE, run_status="QUEUED", edges=(),
        gate_wait=GateWait("pipeline", "crm has no SUCCESS run that is not a backfill (SUCCESS dependency)",
                           at(20), at(29), at(30), T0.replace(hour=7, minute=20), 3, None, None),
    )
    assert text_of(snapshot)[-1] == (
        "=> report runs once run 7's pipeline gate is met: it waits, holding no slot, because crm has no SUCCESS run "
        "that is not a backfill (SUCCESS dependency); look 3 was at 2026-03-14 06:29:00 UTC, the next is at "
        "2026-03-14 06:30:00 UTC, and it gives up at 2026-03-14 07:20:00 UTC (Gate_wait_minutes after its first "
        "look).")


def test_explain__a_gate_wait_that_ended__shown_with_its_outcome__the_decision_decides() -> None:
    snapshot = replace(
        BASE, edges=(Edge("crm.extract", "SUCCESS", False, None),),
        decisions=(Decision("task", "crm.extract", "SUCCESS", "UNSATISFIED", "crm.extract has no SUCCESS task run",
                            at(29)),),
        gate_wait=GateWait("task", "crm.extract has no SUCCESS task run", at(10), at(29), None,
                           T0.replace(minute=29), 9, "UNSATISFIED", at(29)),
    )
    lines = text_of(snapshot)
    assert ("gate wait (task gate): UNSATISFIED at 2026-03-14 06:29:00 UTC after 9 look(s), since 2026-03-14 "
            "06:10:00 UTC, at most until 2026-03-14 06:29:00 UTC: crm.extract has no SUCCESS task run") in lines
    assert "waits, holding no slot" not in lines[-1]


def test_explain__upstream_failed__blocked_and_skipped() -> None:
    snapshot = replace(
        BASE, edges=(Edge("load", "SUCCESS", True, "FAILED", state="UNMET"),
                     Edge("rates", "ALWAYS", True, "SUCCESS", 4, state="MET"))
    )
    assert text_of(snapshot) == [
        HEADER,
        "run: IN-PROGRESS",
        "pause: none",
        "task: NOT RUN, 0 attempt(s)",
        "run condition: ALL (every dependency must be met)",
        "dependencies:",
        "  load (SUCCESS): upstream FAILED, never met",
        "  rates (ALWAYS): upstream SUCCESS, met",
        "cross-pipeline decisions: none",
        "retries: 2 (delay 60 s, backoff 2); none scheduled",
        "=> Nothing will run report: load FAILED, so the overseer skips it; report runs only if "
        "load is rerun and succeeds.",
    ]


def test_explain__failure_edge_on_a_success__unsatisfiable() -> None:
    snapshot = replace(BASE, edges=(Edge("load", "FAILURE", True, "SUCCESS", 10, state="UNMET"),))
    assert text_of(snapshot) == [
        HEADER,
        "run: IN-PROGRESS",
        "pause: none",
        "task: NOT RUN, 0 attempt(s)",
        "run condition: ALL (every dependency must be met)",
        "dependencies:",
        "  load (FAILURE): upstream SUCCESS, never met",
        "cross-pipeline decisions: none",
        "retries: 2 (delay 60 s, backoff 2); none scheduled",
        "=> Nothing will run report: its FAILURE dependency on load can never be met (load ended "
        "SUCCESS), so the overseer skips it.",
    ]


def test_explain__retry_scheduled__names_the_due_attempt() -> None:
    snapshot = replace(
        BASE,
        task_status="IN-PROGRESS",
        attempts=(
            Attempt(41, 1, "FAILED", at(2), None, at(3), at(4), "RuntimeError: warehouse unreachable\nTraceback", "Y"),
            Attempt(42, 2, "QUEUED", at(4), at(34), None, None, None, retry_number=1),
        ),
        edges=(Edge("load", "SUCCESS", True, "SUCCESS", 3, state="MET"),),
    )
    assert text_of(snapshot) == [
        HEADER,
        "run: IN-PROGRESS",
        "pause: none",
        "task: IN-PROGRESS, 2 attempt(s)",
        "  attempt 41 (try 1): FAILED, queued 2026-03-14 06:02:00 UTC, started 2026-03-14 06:03:00 UTC, "
        "ended 2026-03-14 06:04:00 UTC; error: RuntimeError: warehouse unreachable",
        "  attempt 42 (try 2): QUEUED, queued 2026-03-14 06:04:00 UTC, started -, ended -, "
        "not before 2026-03-14 06:34:00 UTC",
        "run condition: ALL (every dependency must be met)",
        "dependencies:",
        "  load (SUCCESS): upstream SUCCESS, met",
        "cross-pipeline decisions: none",
        "retries: 2 (delay 60 s, backoff 2); attempt 42 is due at 2026-03-14 06:34:00 UTC",
        "=> report runs again when attempt 42 (retry 1 of 2) falls due at 2026-03-14 06:34:00 UTC "
        "and an overseer of run 7 claims it.",
    ]


def test_explain__paused_pipeline__names_the_pause_and_resume() -> None:
    snapshot = replace(
        BASE, pause=Pause(at(10), "ops@team", "warehouse upgrade"),
        edges=(Edge("load", "SUCCESS", True, "SUCCESS", 3, state="MET"),)
    )
    assert text_of(snapshot) == [
        HEADER,
        "run: IN-PROGRESS",
        "pause: paused since 2026-03-14 06:10:00 UTC by ops@team: warehouse upgrade",
        "task: NOT RUN, 0 attempt(s)",
        "run condition: ALL (every dependency must be met)",
        "dependencies:",
        "  load (SUCCESS): upstream SUCCESS, met",
        "cross-pipeline decisions: none",
        "retries: 2 (delay 60 s, backoff 2); none scheduled",
        "=> Nothing starts report while pipeline sales is paused (since 2026-03-14 06:10:00 UTC by "
        "ops@team); etl-craft resume --pipeline-code sales would let it run.",
    ]


def test_explain__succeeded__already_ran() -> None:
    snapshot = replace(
        BASE,
        task_status="SUCCESS",
        attempts=(Attempt(41, 1, "SUCCESS", at(5), None, at(6), at(8), None),),
        edges=(Edge("load", "SUCCESS", True, "SUCCESS", 3, state="MET"),),
    )
    assert text_of(snapshot) == [
        HEADER,
        "run: IN-PROGRESS",
        "pause: none",
        "task: SUCCESS, 1 attempt(s)",
        "  attempt 41 (try 1): SUCCESS, queued 2026-03-14 06:05:00 UTC, started 2026-03-14 06:06:00 UTC, "
        "ended 2026-03-14 06:08:00 UTC",
        "run condition: ALL (every dependency must be met)",
        "dependencies:",
        "  load (SUCCESS): upstream SUCCESS, met",
        "cross-pipeline decisions: none",
        "retries: 2 (delay 60 s, backoff 2); none scheduled",
        "=> report already ran: it succeeded in attempt 41, and nothing runs it again in run 7 "
        "unless asked to (etl-craft run --pipeline-code sales --run-id 7 --task-code report "
        "--force).",
    ]


def test_explain__skipped__says_why_and_what_reruns_it() -> None:
    snapshot = replace(
        BASE,
        task_status="SKIPPED",
        task_message="load ended SUCCESS; its FAILURE dependency can never be met",
        edges=(Edge("load", "FAILURE", True, "SUCCESS", 3, state="UNMET"),),
    )
    assert text_of(snapshot) == [
        HEADER,
        "run: IN-PROGRESS",
        "pause: none",
        "task: SKIPPED, 0 attempt(s): load ended SUCCESS; its FAILURE dependency can never be met",
        "run condition: ALL (every dependency must be met)",
        "dependencies:",
        "  load (FAILURE): upstream SUCCESS, never met",
        "cross-pipeline decisions: none",
        "retries: 2 (delay 60 s, backoff 2); none scheduled",
        "=> report was skipped (load ended SUCCESS; its FAILURE dependency can never be met); it "
        "runs only if its upstream is rerun and then meets its dependencies, or when asked: "
        "etl-craft run --pipeline-code sales --run-id 7 --task-code report --ignore-dependencies.",
    ]


def test_explain__lost_attempt__queued_again_by_the_next_overseer() -> None:
    snapshot = replace(
        BASE,
        task_status="FAILED",
        task_message="attempt 1 was LOST: its owner stopped renewing the lease",
        attempts=(
            Attempt(41, 1, "LOST", at(5), None, at(6), at(20),
                    "attempt 1 was LOST: its owner stopped renewing the lease"),
        ),
        edges=(Edge("load", "SUCCESS", True, "SUCCESS", 3, state="MET"),),
    )
    assert text_of(snapshot) == [
        HEADER,
        "run: IN-PROGRESS",
        "pause: none",
        "task: FAILED, 1 attempt(s): attempt 1 was LOST: its owner stopped renewing the lease",
        "  attempt 41 (try 1): LOST, queued 2026-03-14 06:05:00 UTC, started 2026-03-14 06:06:00 UTC, ended "
        "2026-03-14 06:20:00 UTC; error: attempt 1 was LOST: its owner stopped renewing the lease",
        "run condition: ALL (every dependency must be met)",
        "dependencies:",
        "  load (SUCCESS): upstream SUCCESS, met",
        "cross-pipeline decisions: none",
        "retries: 2 (delay 60 s, backoff 2); none scheduled",
        "=> report runs again when an overseer takes over run 7 (etl-craft run --pipeline-code "
        "sales --run-id 7): its attempt 41 was LOST, so whether it finished is unknown, and it is "
        "queued again.",
    ]


def test_explain__any_condition__waits_for_one_and_shows_the_task_gate() -> None:
    snapshot = replace(
        BASE,
        run_condition="ANY",
        edges=(
            Edge("load", "SUCCESS", True, "IN-PROGRESS", state="OPEN"),
            Edge("backup", "SUCCESS", True, None, state="OPEN"),
            Edge("crm.accounts", "SUCCESS", False, None),
        ),
        decisions=(
            Decision("task", "crm.accounts", "SUCCESS", "UNSATISFIED", "no ended run of crm wrote accounts", at(3)),
        ),
    )
    assert text_of(snapshot) == [
        HEADER,
        "run: IN-PROGRESS",
        "pause: none",
        "task: NOT RUN, 0 attempt(s)",
        "run condition: ANY (one met dependency is enough)",
        "dependencies:",
        "  load (SUCCESS): upstream IN-PROGRESS, not met yet",
        "  backup (SUCCESS): upstream NOT RUN, not met yet",
        "  crm.accounts (SUCCESS): upstream gate UNSATISFIED, not met yet",
        "cross-pipeline decisions:",
        "  task gate, crm.accounts (SUCCESS): UNSATISFIED at 2026-03-14 06:03:00 UTC: no ended run "
        "of crm wrote accounts",
        "retries: 2 (delay 60 s, backoff 2); none scheduled",
        "=> report runs once load succeeds or backup succeeds.",
    ]


def test_explain__every_dependency_met__ready() -> None:
    snapshot = replace(BASE, edges=(Edge("load", "HAS_DATA", True, "SUCCESS", 3, state="MET"),))
    assert text_of(snapshot) == [
        HEADER,
        "run: IN-PROGRESS",
        "pause: none",
        "task: NOT RUN, 0 attempt(s)",
        "run condition: ALL (every dependency must be met)",
        "dependencies:",
        "  load (HAS_DATA): upstream SUCCESS, met",
        "cross-pipeline decisions: none",
        "retries: 2 (delay 60 s, backoff 2); none scheduled",
        "=> report is ready: an overseer of run 7 queues it at its next look.",
    ]


def test_explain__retries_used_up__nothing_runs_it_by_itself() -> None:
    snapshot = replace(
        BASE,
        task_status="FAILED",
        retries=1,
        attempts=(
            Attempt(41, 1, "FAILED", at(2), None, at(3), at(4), "boom", "Y"),
            Attempt(42, 2, "FAILED", at(4), at(5), at(5), at(6), "boom again", "Y", retry_number=1),
        ),
        edges=(),
    )
    assert text_of(snapshot) == [
        HEADER,
        "run: IN-PROGRESS",
        "pause: none",
        "task: FAILED, 2 attempt(s)",
        "  attempt 41 (try 1): FAILED, queued 2026-03-14 06:02:00 UTC, started 2026-03-14 06:03:00 UTC, "
        "ended 2026-03-14 06:04:00 UTC; error: boom",
        "  attempt 42 (try 2): FAILED, queued 2026-03-14 06:04:00 UTC, started 2026-03-14 06:05:00 UTC, "
        "ended 2026-03-14 06:06:00 UTC, not before 2026-03-14 06:05:00 UTC; error: boom again",
        "run condition: ALL (every dependency must be met)",
        "dependencies: none",
        "cross-pipeline decisions: none",
        "retries: 1 (delay 60 s, backoff 2); none scheduled",
        "=> Nothing will run report again by itself: attempt 42 FAILED and its 1 retry are used up; "
        "etl-craft run --pipeline-code sales --run-id 7 --rerun report would run it again.",
    ]



def test_explain__a_failure_the_retry_rule_did_not_retry__says_why_and_how_to_run_it_again() -> None:
    snapshot = replace(BASE, task_status="FAILED", retries=2,
                       attempts=(Attempt(41, 1, "FAILED", at(2), None, at(3), at(4), "boom", "Y"),), edges=())
    assert text_of(snapshot)[-1] == (
        "=> Nothing will run report again by itself: attempt 41 FAILED while run 7 was being cancelled or had ended, "
        "so the Engine DB queued no retry; etl-craft run --pipeline-code sales --run-id 7 --rerun report would run it "
        "again.")


def test_explain__ended_run__rerun_the_failed_upstream_with_downstream() -> None:
    snapshot = replace(
        BASE,
        run_status="FAILED",
        task_status="SKIPPED",
        task_message="load ended FAILED",
        edges=(Edge("load", "SUCCESS", True, "FAILED", state="UNMET"),),
    )
    assert text_of(snapshot) == [
        HEADER,
        "run: FAILED",
        "pause: none",
        "task: SKIPPED, 0 attempt(s): load ended FAILED",
        "run condition: ALL (every dependency must be met)",
        "dependencies:",
        "  load (SUCCESS): upstream FAILED, never met",
        "cross-pipeline decisions: none",
        "retries: 2 (delay 60 s, backoff 2); none scheduled",
        "=> Nothing will run report: run 7 ended FAILED and load FAILED; etl-craft run "
        "--pipeline-code sales --run-id 7 --rerun load --with-downstream would run load again and "
        "then report once its dependencies are met.",
    ]


def test_judge__takes_the_state_the_engine_db_judged__never_its_own() -> None:
    """Whether an in-pipeline edge is met is task_dependencies' answer (ready_tasks' rule in the Engine DB): judge
    reads it; an upstream of another pipeline is left to the task gate."""
    cases = [
        (Edge("u", "SUCCESS", True, "SUCCESS", state="MET"), (True, True)),
        (Edge("u", "SUCCESS", True, "SKIPPED", state="UNMET"), (False, True)),
        (Edge("u", "HAS_DATA", True, "SUCCESS", 0, state="UNMET"), (False, True)),
        (Edge("u", "ALWAYS", True, "IN-PROGRESS", state="OPEN"), (False, False)),
        (Edge("u", "SUCCESS", True, None, state="OPEN"), (False, False)),
        (Edge("p.u", "SUCCESS", False, None), (False, False)),
    ]
    assert [(judge(edge).met, judge(edge).settled) for edge, _ in cases] == [want for _, want in cases]


def test_to_json__retry_scheduled__schema_and_iso_times() -> None:
    snapshot = replace(
        BASE,
        task_status="IN-PROGRESS",
        pause=Pause(at(10), "ops@team", None),
        attempts=(Attempt(41, 1, "FAILED", at(2), None, at(3), at(4), "boom", "Y"),
                  Attempt(42, 2, "QUEUED", at(4), at(34), None, None, None, retry_number=1)),
    )
    doc = to_json(explain(snapshot))
    assert doc["schema"] == "etl-craft/explanation/1"
    assert (doc["run_id"], doc["run_date"], doc["task_status"]) == (7, "2026-03-14", "IN-PROGRESS")
    assert doc["pause"] == {"paused_at": "2026-03-14T06:10:00+00:00", "paused_by": "ops@team", "reason": None}
    assert doc["retry"] == {"retries": 2, "delay_seconds": 60.0, "backoff": 2.0, "attempts_used": 2,
                            "scheduled_attempt": 2, "scheduled_at": "2026-03-14T06:34:00+00:00",
                            "scheduled_attempt_id": 42}
    assert [d["met"] for d in doc["dependencies"]] == [False, True]
    assert doc["verdict"].startswith("report runs again when attempt 42 (retry 1 of 2) falls due")
