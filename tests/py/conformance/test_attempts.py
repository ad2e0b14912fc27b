"""Attempt functions (sql/functions/020_attempts.sql.j2), the same on SQLite and PostgreSQL: claim, start, finish,
time out, cancel and lose, each a compare-and-set that changes nothing when refused."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from etlcraft.core.errors import NotFoundError, RefusedByPolicyError, StaleTransitionError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support.attempts import OTHER, OWNER, T0, Attempts, Queued, as_utc, later

STATUSES = ("QUEUED", "CLAIMED", "RUNNING", "SUCCESS", "FAILED", "TIMED_OUT", "CANCELLED", "LOST")


@pytest.fixture
def att(engine_db: EngineDB) -> Attempts:
    engine_db.clock.pin(T0)
    return Attempts(engine_db)


def in_every_status(att: Attempts) -> dict[str, Queued]:
    """One attempt in each attempt status, each in its own run, reached through the write API."""
    made: dict[str, Queued] = {}
    for status in STATUSES[1:]:
        key = f"manual:{status.lower()}"
        a = att.running(key=key) if status in ("RUNNING", "TIMED_OUT") else att.claimed(key=key)
        if status in ("SUCCESS", "FAILED"):
            call(att.db, "finish_attempt", attempt_id=a.attempt_id, owner_id=OWNER, status=status)
        elif status == "TIMED_OUT":
            call(att.db, "time_out_attempt", attempt_id=a.attempt_id, owner_id=OWNER, message="limit")
        elif status == "CANCELLED":
            call(att.db, "cancel_attempt", attempt_id=a.attempt_id, owner_id=OWNER, reason="stop")
        elif status == "LOST":
            call(att.db, "lose_attempt", attempt_id=a.attempt_id, owner_id=OWNER)
        made[status] = a
    made["QUEUED"] = att.queue(key="manual:queued")  # last: the claims above must not take it
    assert {s: att.attempt(a.attempt_id)["STATUS"] for s, a in made.items()} == {s: s for s in STATUSES}
    return made


# Each function with its arguments for an attempt id, and the statuses it may start from.
FENCED: dict[str, tuple[Callable[[int], dict[str, Any]], set[str]]] = {
    "start_attempt": (lambda a: {"attempt_id": a, "owner_id": OWNER, "host": "h", "pid": 1, "process_start": "1"},
                      {"CLAIMED"}),
    "finish_attempt": (lambda a: {"attempt_id": a, "owner_id": OWNER, "status": "SUCCESS", "offset_value": "9",
                                  "offset_type": "INTEGER"}, {"CLAIMED", "RUNNING"}),
    "time_out_attempt": (lambda a: {"attempt_id": a, "owner_id": OWNER, "message": "limit"}, {"RUNNING"}),
    "cancel_attempt": (lambda a: {"attempt_id": a, "reason": "stop"}, {"QUEUED", "CLAIMED", "RUNNING"}),
    "cancel_attempt(owner)": (lambda a: {"attempt_id": a, "reason": "stop", "owner_id": OWNER},
                              {"CLAIMED", "RUNNING"}),
    "lose_attempt": (lambda a: {"attempt_id": a, "owner_id": OWNER}, {"CLAIMED", "RUNNING"}),
}


@pytest.mark.parametrize("function", sorted(FENCED))
def test_each_disallowed_starting_status_is_a_stale_transition_that_changes_nothing(att: Attempts,
                                                                                    function: str) -> None:
    arguments, allowed = FENCED[function]
    name = function.partition("(")[0]
    made = in_every_status(att)
    before = att.snapshot()
    for status in sorted(set(STATUSES) - allowed):
        attempt_id = made[status].attempt_id
        with pytest.raises(StaleTransitionError, match=f"^attempt {attempt_id} is {status}"):
            call(att.db, name, **arguments(attempt_id))
    assert att.snapshot() == before
    for status in sorted(allowed):
        call(att.db, name, **arguments(made[status].attempt_id))
    assert att.snapshot() != before


@pytest.mark.parametrize("function", sorted(f for f in FENCED if f != "cancel_attempt"))
def test_a_wrong_owner_is_refused_and_changes_nothing(att: Attempts, function: str) -> None:
    arguments, allowed = FENCED[function]
    a = att.running() if "RUNNING" in allowed else att.claimed()
    status = "RUNNING" if "RUNNING" in allowed else "CLAIMED"
    before = att.snapshot()
    expected = (f"^attempt {a.attempt_id} is {status} owned by {OWNER} \\(lease until 2026-03-01 12:01:00 UTC\\),"
                f" expected .* owned by {OTHER}; ")
    with pytest.raises(StaleTransitionError, match=expected):
        call(att.db, function.partition("(")[0], **{**arguments(a.attempt_id), "owner_id": OTHER})
    assert att.snapshot() == before


@pytest.mark.parametrize("function", sorted(FENCED))
def test_an_unknown_attempt_is_not_found(att: Attempts, function: str) -> None:
    with pytest.raises(NotFoundError, match="^attempt 999 does not exist; "):
        call(att.db, function.partition("(")[0], **FENCED[function][0](999))


# -- claim_attempt ---------------------------------------------------------------------------------------------


def test_claim_attempt__a_ready_attempt__is_claimed_with_owner_and_lease(att: Attempts) -> None:
    a = att.queue()
    rows = call(att.db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=OWNER, lease_seconds=90)
    assert [tuple(r) for r in rows] == [(a.attempt_id, a.task_run_id, a.run_id, att.task_id("load"), 1, later(90))]
    row = att.attempt(a.attempt_id)
    assert (row["STATUS"], row["OWNER_ID"]) == ("CLAIMED", OWNER)
    assert [as_utc(row[c]) for c in ("CLAIMED_AT", "HEARTBEAT_AT", "LEASE_EXPIRES_AT")] == [T0, T0, later(90)]
    assert (row["STARTED_AT"], row["HOST"], row["ENDED_AT"]) == (None, None, None)
    assert att.task_run(a.task_run_id)["STATUS"] == "IN-PROGRESS"
    assert call(att.db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=OWNER) == []


def test_claim_attempt__pool_and_slot_kinds__only_matching_attempts(att: Attempts) -> None:
    warehouse = att.queue("load", key="manual:1")
    ingestion = att.queue("ingest", key="manual:1")
    elsewhere = att.queue("load", key="manual:2", pool="gpu")
    claim = {"pool": "default", "owner_id": OWNER, "max_attempts": 10}
    assert call(att.db, "claim_attempt", slot_kinds="ingestion", **claim)[0].attempt_id == ingestion.attempt_id
    assert call(att.db, "claim_attempt", slot_kinds="ingestion,warehouse", **claim)[0].attempt_id == \
        warehouse.attempt_id
    assert call(att.db, "claim_attempt", slot_kinds="ingestion,warehouse", **claim) == []
    assert att.attempt(elsewhere.attempt_id)["STATUS"] == "QUEUED"
    assert [r.attempt_id for r in call(att.db, "claim_attempt", pool="gpu", slot_kinds="warehouse",
                                       owner_id=OTHER)] == [elsewhere.attempt_id]


def test_claim_attempt__not_before__claims_only_once_due(att: Attempts) -> None:
    a = att.queue(not_before=later(30))
    assert call(att.db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=OWNER) == []
    att.db.clock.pin(later(29.999999))
    assert call(att.db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=OWNER) == []
    att.db.clock.pin(later(30))
    rows = call(att.db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=OWNER)
    assert [(r.attempt_id, r.lease_expires_at) for r in rows] == [(a.attempt_id, later(90))]


def test_claim_attempt__order_is_priority_then_queued_at_then_id__up_to_max_attempts(att: Attempts) -> None:
    old_low = att.queue(key="manual:1", priority=0, queued_at=T0 - timedelta(hours=1))
    new_high = att.queue(key="manual:2", priority=5, queued_at=T0 - timedelta(minutes=1))
    old_high = att.queue(key="manual:3", priority=5, queued_at=T0 - timedelta(minutes=2))
    tie_a = att.queue(key="manual:4", priority=1, queued_at=T0 - timedelta(minutes=3))
    tie_b = att.queue(key="manual:5", priority=1, queued_at=T0 - timedelta(minutes=3))
    claim = {"pool": "default", "slot_kinds": "warehouse", "owner_id": OWNER}
    first = call(att.db, "claim_attempt", max_attempts=2, **claim)
    assert [r.attempt_id for r in first] == [old_high.attempt_id, new_high.attempt_id]
    rest = call(att.db, "claim_attempt", max_attempts=10, **claim)
    assert [r.attempt_id for r in rest] == [tie_a.attempt_id, tie_b.attempt_id, old_low.attempt_id]


def test_claim_attempt__several_slot_kinds__one_order_across_kinds(att: Attempts) -> None:
    ingest_high = att.queue("ingest", key="manual:1", priority=5)
    load_mid = att.queue("load", key="manual:2", priority=3)
    ingest_low = att.queue("ingest", key="manual:3", priority=1)
    load_low = att.queue("load", key="manual:4", priority=1, queued_at=T0 - timedelta(seconds=1))
    claim = {"pool": "default", "slot_kinds": "ingestion,warehouse", "owner_id": OWNER}
    assert [r.attempt_id for r in call(att.db, "claim_attempt", max_attempts=2, **claim)] == [
        ingest_high.attempt_id, load_mid.attempt_id]
    assert [r.attempt_id for r in call(att.db, "claim_attempt", max_attempts=1, **claim)] == [load_low.attempt_id]
    assert [r.attempt_id for r in call(att.db, "claim_attempt", max_attempts=5, **claim)] == [ingest_low.attempt_id]


def test_claim_attempt__runs_not_in_progress_or_asked_to_cancel__are_skipped(att: Attempts) -> None:
    att.run("manual:queued", status="QUEUED")
    in_queued_run = att.queue(key="manual:queued")
    live = att.claimed(key="manual:cancelled")
    call(att.db, "cancel_run", run_id=live.run_id, reason="wrong day")
    in_cancelled_run = att.queue("ingest", key="manual:cancelled", slot_kind="warehouse")
    ended = att.run("manual:ended")
    call(att.db, "mark_run", run_id=ended, status="FAILED", reason="broken")
    in_ended_run = att.queue(key="manual:ended")
    ready = att.queue(key="manual:ready")
    rows = call(att.db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=OTHER, max_attempts=10)
    assert [r.attempt_id for r in rows] == [ready.attempt_id]
    for skipped in (in_queued_run, in_cancelled_run, in_ended_run):
        assert att.attempt(skipped.attempt_id)["STATUS"] == "QUEUED"


def test_claim_attempt__run_id__only_that_runs_attempts_in_claim_order_while_it_runs(att: Attempts) -> None:
    """`etl-craft run` claims with run_id: the run's own queue (ix_attempts_run_queue), across slot kinds, and
    nothing of a run that is not IN-PROGRESS or is asked to cancel."""
    other = att.queue("load", key="manual:other", priority=9)
    mine_low = att.queue("load", key="manual:mine", priority=1)
    mine_high = att.queue("ingest", key="manual:mine", priority=5)
    claim = {"pool": "default", "slot_kinds": "ingestion,warehouse", "owner_id": OWNER, "max_attempts": 10}
    assert call(att.db, "claim_attempt", run_id=mine_low.run_id, **{**claim, "pool": "gpu"}) == []
    assert call(att.db, "claim_attempt", run_id=mine_low.run_id, **{**claim, "slot_kinds": "warehouse",
                                                                    "max_attempts": 1})[0].attempt_id == \
        mine_low.attempt_id
    rows = call(att.db, "claim_attempt", run_id=mine_low.run_id, **claim)
    assert [(r.attempt_id, r.pipeline_run_id) for r in rows] == [(mine_high.attempt_id, mine_high.run_id)]
    assert call(att.db, "claim_attempt", run_id=mine_low.run_id, **claim) == []
    assert att.attempt(other.attempt_id)["STATUS"] == "QUEUED"
    assert [r.attempt_id for r in call(att.db, "claim_attempt", run_id=other.run_id, **claim)] == [other.attempt_id]
    att.run("manual:queued", status="QUEUED")
    in_queued_run = att.queue(key="manual:queued")
    live = att.claimed(key="manual:cancelled")
    call(att.db, "cancel_run", run_id=live.run_id, reason="wrong day")
    in_cancelled_run = att.queue("ingest", key="manual:cancelled", slot_kind="warehouse")
    for skipped in (in_queued_run, in_cancelled_run):
        assert call(att.db, "claim_attempt", run_id=skipped.run_id, **claim) == []
        assert att.attempt(skipped.attempt_id)["STATUS"] == "QUEUED"


def test_claim_attempt__not_durable__claims_alike_on_both_dialects(att: Attempts) -> None:
    """durable=False changes when PostgreSQL flushes the claim (tests/sql: synchronous_commit), never what it claims;
    SQLite accepts and ignores it."""
    a = att.queue()
    rows = call(att.db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=OWNER, durable=False)
    assert [(r.attempt_id, r.pipeline_run_id) for r in rows] == [(a.attempt_id, a.run_id)]
    assert (att.attempt(a.attempt_id)["STATUS"], att.attempt(a.attempt_id)["OWNER_ID"]) == ("CLAIMED", OWNER)


def test_claim_attempt__bad_arguments__are_refused_by_policy(att: Attempts) -> None:
    att.queue()
    before = att.snapshot()
    claim = {"pool": "default", "slot_kinds": "warehouse"}
    with pytest.raises(RefusedByPolicyError, match="claim_attempt needs an owner_id"):
        call(att.db, "claim_attempt", owner_id="", **claim)
    with pytest.raises(RefusedByPolicyError, match="max_attempts must be at least 1, not 0"):
        call(att.db, "claim_attempt", owner_id=OWNER, max_attempts=0, **claim)
    with pytest.raises(RefusedByPolicyError, match="lease_seconds must be a whole number of seconds of at least 1"):
        call(att.db, "claim_attempt", owner_id=OWNER, lease_seconds=0, **claim)
    assert att.snapshot() == before


def test_b1_claimers_taking_turns_split_the_queue_without_sharing_an_attempt(att: Attempts) -> None:
    queued = {att.queue(key=f"manual:{i}").attempt_id for i in range(7)}
    got: dict[str, list[int]] = {OWNER: [], OTHER: []}
    while True:
        progress = False
        for owner in (OWNER, OTHER):  # the same pinned time for every claim: only the ids returned count
            rows = call(att.db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=owner,
                        max_attempts=2)
            got[owner].extend(r.attempt_id for r in rows)
            progress = progress or bool(rows)
        if not progress:
            break
    assert not set(got[OWNER]) & set(got[OTHER])
    assert sorted(got[OWNER] + got[OTHER]) == sorted(queued)
    assert all(len(ids) >= 3 for ids in got.values())
    assert {a: att.attempt(a)["OWNER_ID"] for a in queued} == {a: o for o, ids in got.items() for a in ids}


def test_an_attempt_queued_by_queue_attempt_is_claimed_started_and_finished(att: Attempts) -> None:
    run = att.run()
    queued = call(att.db, "queue_attempt", run_id=run, task_id=att.task_id("ingest"))[0]
    claimed = call(att.db, "claim_attempt", pool="default", slot_kinds="ingestion", owner_id=OWNER)
    assert [(r.attempt_id, r.task_run_id, r.pipeline_run_id, r.attempt_number) for r in claimed] == [
        (queued.attempt_id, queued.task_run_id, run, 1)]
    call(att.db, "start_attempt", attempt_id=queued.attempt_id, owner_id=OWNER, host="h", pid=1, process_start="1")
    row = call(att.db, "finish_attempt", attempt_id=queued.attempt_id, owner_id=OWNER, status="SUCCESS",
               offset_value="5", offset_type="INTEGER")[0]
    assert tuple(row) == (queued.attempt_id, queued.task_run_id, "SUCCESS", "SUCCESS", 1)


# -- start_attempt ---------------------------------------------------------------------------------------------


def test_start_attempt__claimed_by_owner__runs_with_process_identity_and_a_new_lease(att: Attempts) -> None:
    a = att.claimed()
    att.db.clock.pin(later(10))
    row = call(att.db, "start_attempt", attempt_id=a.attempt_id, owner_id=OWNER, host="host-a", pid=4242,
               process_start="1700000000.25", lease_seconds=120)[0]
    assert tuple(row) == (a.attempt_id, "RUNNING", later(130))
    stored = att.attempt(a.attempt_id)
    assert (stored["HOST"], stored["PID"], stored["PROCESS_START"]) == ("host-a", 4242, "1700000000.25")
    assert [as_utc(stored[c]) for c in ("CLAIMED_AT", "STARTED_AT", "HEARTBEAT_AT", "LEASE_EXPIRES_AT")] == [
        T0, later(10), later(10), later(130)]
    assert as_utc(att.task_run(a.task_run_id)["START_DATE"]) == later(10)


def test_start_attempt__a_retry__keeps_the_task_runs_first_start_date(att: Attempts) -> None:
    first = att.running()
    call(att.db, "finish_attempt", attempt_id=first.attempt_id, owner_id=OWNER, status="FAILED")
    att.db.clock.pin(later(300))
    retry = att.running()
    assert retry.task_run_id == first.task_run_id
    assert as_utc(att.task_run(first.task_run_id)["START_DATE"]) == T0
    assert as_utc(att.attempt(retry.attempt_id)["STARTED_AT"]) == later(300)


# -- finish_attempt --------------------------------------------------------------------------------------------

COUNTS = {"source_count": 10, "insert_count": 4, "update_count": 3, "delete_count": 2, "duplicate_count": 1,
          "rows_written": 9, "target_count": 40}


def test_finish_attempt__success__attempt_and_summary_agree(att: Attempts) -> None:
    a = att.running()
    att.db.clock.pin(later(45))
    row = call(att.db, "finish_attempt", attempt_id=a.attempt_id, owner_id=OWNER, status="SUCCESS", exit_code=0,
               task_log="done in 45 s", log_path="/logs/1.log", retryable="N", **COUNTS)[0]
    assert tuple(row) == (a.attempt_id, a.task_run_id, "SUCCESS", "SUCCESS", 1)
    attempt, summary = att.attempt(a.attempt_id), att.task_run(a.task_run_id)
    assert {c.upper(): attempt[c.upper()] for c in COUNTS} == {c.upper(): v for c, v in COUNTS.items()}
    assert {c.upper(): summary[c.upper()] for c in COUNTS} == {c.upper(): v for c, v in COUNTS.items()}
    assert (attempt["STATUS"], attempt["EXIT_CODE"], attempt["RETRYABLE"], attempt["LOG_PATH"]) == (
        "SUCCESS", 0, "N", "/logs/1.log")
    assert (attempt["ERROR_MESSAGE"], attempt["TASK_LOG"]) == (summary["ERROR_MESSAGE"], summary["TASK_LOG"]) == (
        None, "done in 45 s")
    assert (attempt["OWNER_ID"], attempt["LEASE_EXPIRES_AT"]) == (OWNER, None)
    assert as_utc(attempt["ENDED_AT"]) == as_utc(summary["END_DATE"]) == later(45)
    assert (summary["STATUS"], summary["ATTEMPT_COUNT"]) == ("SUCCESS", 1)


def test_finish_attempt__failed_then_a_retry_succeeds__the_summary_is_the_latest_attempt(att: Attempts) -> None:
    first = att.claimed()  # CLAIMED -> FAILED: the process never started
    row = call(att.db, "finish_attempt", attempt_id=first.attempt_id, owner_id=OWNER, status="FAILED", exit_code=2,
               error_message="table main.t does not exist", retryable="Y", rows_written=0)[0]
    assert tuple(row) == (first.attempt_id, first.task_run_id, "FAILED", "FAILED", 1)
    summary = att.task_run(first.task_run_id)
    assert (summary["STATUS"], summary["ERROR_MESSAGE"], summary["ROWS_WRITTEN"]) == (
        "FAILED", "table main.t does not exist", 0)
    retry = att.running(owner=OTHER)
    assert att.attempt(retry.attempt_id)["ATTEMPT_NUMBER"] == 2
    row = call(att.db, "finish_attempt", attempt_id=retry.attempt_id, owner_id=OTHER, status="SUCCESS",
               rows_written=5)[0]
    assert tuple(row) == (retry.attempt_id, first.task_run_id, "SUCCESS", "SUCCESS", 2)
    summary = att.task_run(first.task_run_id)
    assert (summary["STATUS"], summary["ERROR_MESSAGE"], summary["ROWS_WRITTEN"], summary["ATTEMPT_COUNT"]) == (
        "SUCCESS", None, 5, 2)
    assert att.attempt(first.attempt_id)["ERROR_MESSAGE"] == "table main.t does not exist"


def test_finish_attempt__a_status_it_does_not_record__is_refused_by_policy(att: Attempts) -> None:
    a = att.running()
    before = att.snapshot()
    for status in ("LOST", "TIMED_OUT", "CANCELLED", "RUNNING", None):
        expected = f"finish_attempt records SUCCESS or FAILED, not {status or 'NULL'};"
        with pytest.raises(RefusedByPolicyError, match=expected):
            call(att.db, "finish_attempt", attempt_id=a.attempt_id, owner_id=OWNER, status=status)
    with pytest.raises(RefusedByPolicyError, match="retryable is Y or N"):
        call(att.db, "finish_attempt", attempt_id=a.attempt_id, owner_id=OWNER, status="FAILED", retryable="yes")
    assert att.snapshot() == before


def test_b8_zombie_finish_after_lose_changes_nothing(att: Attempts) -> None:
    upstream, upstream_task_run, edge = _upstream(att)
    a = att.running()
    att.gate_decision(a, upstream_run=upstream, upstream_task_run=upstream_task_run, dependency=edge)
    call(att.db, "lose_attempt", attempt_id=a.attempt_id, owner_id=OWNER)
    before = att.snapshot()
    zombie = {"attempt_id": a.attempt_id, "owner_id": OWNER, "status": "SUCCESS", "rows_written": 99,
              "offset_value": "1000", "offset_type": "INTEGER", "error_message": None}
    with pytest.raises(StaleTransitionError, match=f"^attempt {a.attempt_id} is LOST owned by {OWNER} \\(ended "):
        call(att.db, "finish_attempt", **zombie)
    assert att.snapshot() == before
    # a retry is claimed by another process; the zombie still cannot touch the old attempt or the new one
    retry = att.running(owner=OTHER)
    before = att.snapshot()
    with pytest.raises(StaleTransitionError, match=f"^attempt {a.attempt_id} is LOST"):
        call(att.db, "finish_attempt", **zombie)
    with pytest.raises(StaleTransitionError, match=f"^attempt {retry.attempt_id} is RUNNING owned by {OTHER}"):
        call(att.db, "finish_attempt", **{**zombie, "attempt_id": retry.attempt_id})
    assert att.snapshot() == before
    summary = att.task_run(a.task_run_id)
    assert (summary["STATUS"], summary["ROWS_WRITTEN"]) == ("IN-PROGRESS", None)
    assert att.project.rows("SELECT COUNT(*) FROM {AUD_TASK_OFFSETS}") == [(0,)]
    assert att.project.rows("SELECT COUNT(*) FROM {AUD_DEPENDENCY_CONSUMPTION}") == [(0,)]


def test_b6_offset_is_stored_only_with_success(att: Attempts) -> None:
    ingest = att.task_id("ingest")
    failed = att.running("ingest")
    call(att.db, "finish_attempt", attempt_id=failed.attempt_id, owner_id=OWNER, status="FAILED",
         offset_value="100", offset_type="INTEGER")
    assert att.project.rows("SELECT COUNT(*) FROM {AUD_TASK_OFFSETS}") == [(0,)]
    ok = att.running("ingest")
    att.db.clock.pin(later(5))
    call(att.db, "finish_attempt", attempt_id=ok.attempt_id, owner_id=OWNER, status="SUCCESS", offset_value="100",
         offset_type="INTEGER")
    offsets = "SELECT TASK_ID, OFFSET_TYPE, OFFSET_VALUE, TASK_RUN_ID, ATTEMPT_ID FROM {AUD_TASK_OFFSETS}"
    assert att.project.rows(offsets) == [(ingest, "INTEGER", "100", ok.task_run_id, ok.attempt_id)]
    assert as_utc(att.project.scalar("SELECT STORED_AT FROM {AUD_TASK_OFFSETS}")) == later(5)
    # the pipeline's next run (it runs one run at a time: the first has ended), in which the same task runs again;
    # an invalid offset type refuses the whole SUCCESS: the attempt is still RUNNING, the old offset kept
    call(att.db, "mark_run", run_id=ok.run_id, status="SUCCESS", reason="done")
    next_run = att.running("ingest", key="manual:2", pipeline_of="manual:1")
    before = att.snapshot()
    with pytest.raises(RefusedByPolicyError, match="the offset 2026-03-02 needs an offset_type of INTEGER, DECIMAL,"):
        call(att.db, "finish_attempt", attempt_id=next_run.attempt_id, owner_id=OWNER, status="SUCCESS",
             offset_value="2026-03-02", offset_type="DAY")
    assert att.snapshot() == before
    # the next SUCCESS replaces it; a SUCCESS without an offset leaves it
    call(att.db, "finish_attempt", attempt_id=next_run.attempt_id, owner_id=OWNER, status="SUCCESS",
         offset_value="250", offset_type="INTEGER")
    assert att.project.rows(offsets) == [(ingest, "INTEGER", "250", next_run.task_run_id, next_run.attempt_id)]
    call(att.db, "mark_run", run_id=next_run.run_id, status="SUCCESS", reason="done")
    plain = att.running("ingest", key="manual:3", pipeline_of="manual:1")
    call(att.db, "finish_attempt", attempt_id=plain.attempt_id, owner_id=OWNER, status="SUCCESS")
    assert att.project.rows(offsets) == [(ingest, "INTEGER", "250", next_run.task_run_id, next_run.attempt_id)]


def _upstream(att: Attempts) -> tuple[int, int, int]:
    """Pipeline 'upstream' with task 'dep', which load depends on across pipelines, and a SUCCESS task run of dep:
    the upstream run id, its task run id and the edge's TASK_DEPENDENCY_ID."""
    att.project.pipeline("upstream")
    att.project.task("upstream", "dep")
    edge = att.depends("load", on=att.project.tasks["dep"])
    run = att.project.run("upstream", key="manual:up")
    with att.db.write() as conn:
        task_run = conn.execute(sa.text(
            f"INSERT INTO {att.db.qualify('AUD_TASK_RUN_LOG')} (PIPELINE_RUN_ID, TASK_ID, STATUS, ATTEMPT_COUNT)"
            " VALUES (:r, :t, 'SUCCESS', 1) RETURNING TASK_RUN_ID"), {"r": run, "t": att.project.tasks["dep"]})
        return run, int(task_run.scalar_one()), edge


def test_finish_attempt__success__consumes_the_satisfied_task_decisions_of_this_attempt(att: Attempts) -> None:
    upstream, upstream_task_run, edge = _upstream(att)
    failed = att.running()
    att.gate_decision(failed, upstream_run=upstream, upstream_task_run=upstream_task_run, dependency=edge)
    call(att.db, "finish_attempt", attempt_id=failed.attempt_id, owner_id=OWNER, status="FAILED")
    assert att.project.rows("SELECT COUNT(*) FROM {AUD_DEPENDENCY_CONSUMPTION}") == [(0,)]
    retry = att.running()
    decision = att.gate_decision(retry, upstream_run=upstream, upstream_task_run=upstream_task_run, dependency=edge,
                                 revision=2)
    att.gate_decision(retry, upstream_run=upstream, upstream_task_run=None, dependency=edge, result="UNSATISFIED")
    att.db.clock.pin(later(7))
    call(att.db, "finish_attempt", attempt_id=retry.attempt_id, owner_id=OWNER, status="SUCCESS")
    consumed = att.project.rows(
        "SELECT PIPELINE_RUN_ID, TASK_RUN_ID, PIPELINE_DEPENDENCY_ID, TASK_DEPENDENCY_ID, CONSUMED_PIPELINE_RUN_ID,"
        " CONSUMED_TASK_RUN_ID, CONSUMED_REVISION, DECISION_ID FROM {AUD_DEPENDENCY_CONSUMPTION}")
    assert consumed == [(retry.run_id, retry.task_run_id, None, edge, upstream, upstream_task_run, 2, decision)]
    assert as_utc(att.project.scalar("SELECT CONSUMED_AT FROM {AUD_DEPENDENCY_CONSUMPTION}")) == later(7)
    # a rerun that consumed the same upstream revision again keeps the one record and still succeeds
    rerun = att.running()
    att.gate_decision(rerun, upstream_run=upstream, upstream_task_run=upstream_task_run, dependency=edge, revision=2)
    row = call(att.db, "finish_attempt", attempt_id=rerun.attempt_id, owner_id=OWNER, status="SUCCESS")[0]
    assert (row.status, row.attempt_count) == ("SUCCESS", 3)
    assert att.project.rows("SELECT DECISION_ID FROM {AUD_DEPENDENCY_CONSUMPTION}") == [(decision,)]


# -- time_out_attempt ------------------------------------------------------------------------------------------


def test_time_out_attempt__running__ends_timed_out_and_the_task_run_failed(att: Attempts) -> None:
    a = att.running()
    att.db.clock.pin(later(3600))
    row = call(att.db, "time_out_attempt", attempt_id=a.attempt_id, owner_id=OWNER,
               message="stopped at its time limit of 3600 s (TASK_TIMEOUT_SECONDS)")[0]
    assert tuple(row) == (a.attempt_id, "TIMED_OUT", "FAILED")
    attempt, summary = att.attempt(a.attempt_id), att.task_run(a.task_run_id)
    assert attempt["ERROR_MESSAGE"] == summary["ERROR_MESSAGE"] == (
        "stopped at its time limit of 3600 s (TASK_TIMEOUT_SECONDS)")
    assert attempt["LEASE_EXPIRES_AT"] is None
    assert as_utc(attempt["ENDED_AT"]) == as_utc(summary["END_DATE"]) == later(3600)


# -- cancel_attempt --------------------------------------------------------------------------------------------


def test_cancel_attempt__queued__ends_cancelled_at_once_and_is_recorded(att: Attempts) -> None:
    a = att.queue()
    row = call(att.db, "cancel_attempt", attempt_id=a.attempt_id, reason="not today")[0]
    assert tuple(row) == (a.attempt_id, "CANCELLED", T0)
    attempt, summary = att.attempt(a.attempt_id), att.task_run(a.task_run_id)
    assert (attempt["ERROR_MESSAGE"], attempt["CANCEL_ACKNOWLEDGED_AT"], as_utc(attempt["ENDED_AT"])) == (
        "cancelled before it started: not today", None, T0)
    assert (summary["STATUS"], summary["MESSAGE"], as_utc(summary["END_DATE"])) == (
        "CANCELLED", "cancelled: not today", T0)
    assert att.project.rows("SELECT PIPELINE_RUN_ID, TASK_RUN_ID, ATTEMPT_ID, INTERVENTION, FROM_STATUS, TO_STATUS,"
                            " REASON, REQUESTED_BY FROM {AUD_RUN_INTERVENTIONS}") == [
        (a.run_id, a.task_run_id, a.attempt_id, "CANCEL", "QUEUED", "CANCELLED", "not today", "tester@pytest")]


def test_cancel_attempt__running__is_requested_then_acknowledged_by_its_owner(att: Attempts) -> None:
    a = att.running()
    att.db.clock.pin(later(5))
    assert tuple(call(att.db, "cancel_attempt", attempt_id=a.attempt_id, reason="stop")[0]) == (
        a.attempt_id, "RUNNING", later(5))
    att.db.clock.pin(later(8))
    assert tuple(call(att.db, "cancel_attempt", attempt_id=a.attempt_id, reason="stop now")[0]) == (
        a.attempt_id, "RUNNING", later(5)), "the first request's time is kept"
    assert att.task_run(a.task_run_id)["STATUS"] == "IN-PROGRESS"
    assert att.attempt(a.attempt_id)["LEASE_EXPIRES_AT"] is not None
    before = att.snapshot()
    with pytest.raises(StaleTransitionError, match=f"expected CLAIMED or RUNNING owned by {OTHER}; "):
        call(att.db, "cancel_attempt", attempt_id=a.attempt_id, reason="stop", owner_id=OTHER)
    assert att.snapshot() == before
    att.db.clock.pin(later(12))
    row = call(att.db, "cancel_attempt", attempt_id=a.attempt_id, reason="stopped on request", owner_id=OWNER)[0]
    assert tuple(row) == (a.attempt_id, "CANCELLED", later(5))
    attempt, summary = att.attempt(a.attempt_id), att.task_run(a.task_run_id)
    assert [as_utc(attempt[c]) for c in ("CANCEL_REQUESTED_AT", "CANCEL_ACKNOWLEDGED_AT", "ENDED_AT")] == [
        later(5), later(12), later(12)]
    assert (attempt["LEASE_EXPIRES_AT"], attempt["ERROR_MESSAGE"]) == (None, "cancelled: stopped on request")
    assert (summary["STATUS"], as_utc(summary["END_DATE"])) == ("CANCELLED", later(12))
    assert att.project.rows("SELECT FROM_STATUS, TO_STATUS, REASON FROM {AUD_RUN_INTERVENTIONS}"
                            " ORDER BY INTERVENTION_ID") == [
        ("RUNNING", "CANCELLED", "stop"), ("RUNNING", "CANCELLED", "stop now")], "owners' acknowledgements are not"


def test_cancel_attempt__by_its_owner_without_a_request__ends_cancelled(att: Attempts) -> None:
    a = att.claimed()
    row = call(att.db, "cancel_attempt", attempt_id=a.attempt_id, reason="worker drained", owner_id=OWNER)[0]
    assert tuple(row) == (a.attempt_id, "CANCELLED", T0)
    assert att.task_run(a.task_run_id)["STATUS"] == "CANCELLED"
    assert att.project.rows("SELECT COUNT(*) FROM {AUD_RUN_INTERVENTIONS}") == [(0,)]


# -- lose_attempt ----------------------------------------------------------------------------------------------


def test_lose_attempt__running__ends_lost_and_the_task_run_failed_naming_the_owner(att: Attempts) -> None:
    a = att.running()  # lease until T0 + 60 s
    att.db.clock.pin(later(200))
    row = call(att.db, "lose_attempt", attempt_id=a.attempt_id, owner_id=OWNER)[0]
    assert tuple(row) == (a.attempt_id, "LOST", "FAILED")
    message = f"attempt {a.attempt_id} was lost: owner {OWNER} stopped renewing its lease at 2026-03-01 12:01:00 UTC"
    attempt, summary = att.attempt(a.attempt_id), att.task_run(a.task_run_id)
    assert attempt["ERROR_MESSAGE"] == summary["ERROR_MESSAGE"] == message
    assert (attempt["OWNER_ID"], attempt["LEASE_EXPIRES_AT"]) == (OWNER, None)
    assert as_utc(attempt["ENDED_AT"]) == as_utc(summary["END_DATE"]) == later(200)


def test_lose_attempt__claimed_with_a_message__keeps_the_message(att: Attempts) -> None:
    a = att.claimed()
    row = call(att.db, "lose_attempt", attempt_id=a.attempt_id, owner_id=OWNER, message="host-a rebooted")[0]
    assert tuple(row) == (a.attempt_id, "LOST", "FAILED")
    assert att.task_run(a.task_run_id)["ERROR_MESSAGE"] == "host-a rebooted"
