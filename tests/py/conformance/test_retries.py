"""The retry rule of the Engine DB (sql/functions/020_attempts.sql.j2), the same on SQLite and PostgreSQL: the
function that records how an attempt ended queues its retry in the same transaction, or does not, and says so;
a stop is an interruption that uses no retry; a task whose attempt was lost runs again on resume
(requeue_lost)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
import sqlalchemy as sa

from etlcraft.core.errors import RefusedByPolicyError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support.attempts import OWNER, T0, Attempts, Queued, as_utc, later


@pytest.fixture
def att(engine_db: EngineDB) -> Attempts:
    engine_db.clock.pin(T0)
    return Attempts(engine_db)


def policy(att: Attempts, task: str = "load", key: str = "manual:1", **values: str) -> None:
    """Task parameters of `task` in run key `key`'s pipeline (RETRIES="2", ...)."""
    task_id = att.task_id(task, key)
    with att.db.write() as conn:
        for name, value in values.items():
            conn.execute(sa.text(f"INSERT INTO {att.db.qualify('CFG_TASK_PARAMETERS')} (TASK_ID, PARAMETER_NAME,"
                                 " PARAMETER_VALUE) VALUES (:t, :n, :v)"), {"t": task_id, "n": name, "v": value})


def attempts_of(att: Attempts, task_run_id: int) -> list[tuple[Any, ...]]:
    """(ATTEMPT_NUMBER, STATUS, RETRY_NUMBER, NOT_BEFORE as UTC) of a task run's attempts, in order."""
    rows = att.project.rows("SELECT ATTEMPT_NUMBER, STATUS, RETRY_NUMBER, NOT_BEFORE FROM {AUD_TASK_ATTEMPTS}"
                            " WHERE TASK_RUN_ID = :t ORDER BY ATTEMPT_NUMBER", t=task_run_id)
    return [(n, s, r, as_utc(due)) for n, s, r, due in rows]


def claim(att: Attempts, at: datetime) -> list[int]:
    att.db.clock.pin(at)
    return [r.attempt_id for r in call(att.db, "claim_attempt", pool="default", slot_kinds="warehouse",
                                       owner_id=OWNER)]


def start(att: Attempts, attempt_id: int) -> None:
    call(att.db, "start_attempt", attempt_id=attempt_id, owner_id=OWNER, host="host-a", pid=4242,
         process_start="1700000000.25")


def fail(att: Attempts, attempt_id: int, **more: Any) -> Any:
    return call(att.db, "finish_attempt", attempt_id=attempt_id, owner_id=OWNER, status="FAILED",
                error_message="boom", **more)[0]


def test_fails_twice_then_succeeds_with_retries_2__each_retry_queued_with_its_backoff(att: Attempts) -> None:
    first = att.running()
    policy(att, RETRIES="2", RETRY_DELAY_SECONDS="10", RETRY_BACKOFF="3")
    row = fail(att, first.attempt_id)
    assert (row.status, row.task_run_status, row.attempt_count) == ("FAILED", "IN-PROGRESS", 2)
    assert attempts_of(att, first.task_run_id) == [(1, "FAILED", 0, None), (2, "QUEUED", 1, later(10))]
    assert att.task_run(first.task_run_id)["ERROR_MESSAGE"] == "boom"
    assert claim(att, later(9)) == [], "a retry is not claimed before it falls due"
    [second] = claim(att, later(10))
    start(att, second)
    att.db.clock.pin(later(20))
    fail(att, second)
    assert attempts_of(att, first.task_run_id)[-1] == (3, "QUEUED", 2, later(20 + 10 * 3))
    [third] = claim(att, later(50))
    row = call(att.db, "finish_attempt", attempt_id=third, owner_id=OWNER, status="SUCCESS")[0]
    assert (row.task_run_status, row.attempt_count) == ("SUCCESS", 3)
    assert [a[1] for a in attempts_of(att, first.task_run_id)] == ["FAILED", "FAILED", "SUCCESS"]


def test_retries_used_up__the_task_run_reads_failed_and_nothing_is_queued(att: Attempts) -> None:
    first = att.running()
    policy(att, RETRIES="1", RETRY_DELAY_SECONDS="0")
    fail(att, first.attempt_id)
    [second] = claim(att, T0)
    row = fail(att, second)
    assert (row.task_run_status, row.attempt_count) == ("FAILED", 2)
    assert [a[1] for a in attempts_of(att, first.task_run_id)] == ["FAILED", "FAILED"]


def test_a_non_retryable_error__such_as_a_null_key_guard__is_recorded_and_never_retried(att: Attempts) -> None:
    first = att.running()
    policy(att, RETRIES="3", RETRY_DELAY_SECONDS="0")
    row = fail(att, first.attempt_id, retryable="N")
    assert row.task_run_status == "FAILED"
    assert att.attempt(first.attempt_id)["RETRYABLE"] == "N"
    assert attempts_of(att, first.task_run_id) == [(1, "FAILED", 0, None)]


def test_a_timed_out_attempt_is_retried(att: Attempts) -> None:
    first = att.running()
    policy(att, RETRIES="1", RETRY_DELAY_SECONDS="5")
    row = call(att.db, "time_out_attempt", attempt_id=first.attempt_id, owner_id=OWNER, message="limit")[0]
    assert (row.status, row.task_run_status) == ("TIMED_OUT", "IN-PROGRESS")
    assert attempts_of(att, first.task_run_id) == [(1, "TIMED_OUT", 0, None), (2, "QUEUED", 1, later(5))]


@pytest.mark.parametrize("how", ["reconcile_expired", "lose_attempt"])
def test_a_lost_attempt_is_retried(att: Attempts, how: str) -> None:
    first = att.running()
    policy(att, RETRIES="1", RETRY_DELAY_SECONDS="30")
    att.db.clock.pin(later(120))  # the 60 s lease expired
    if how == "reconcile_expired":
        rows = call(att.db, "reconcile_expired")
        assert [(r.attempt_id, r.task_run_status) for r in rows] == [(first.attempt_id, "IN-PROGRESS")]
    else:
        call(att.db, "lose_attempt", attempt_id=first.attempt_id, owner_id=OWNER)
    assert attempts_of(att, first.task_run_id) == [(1, "LOST", 0, None), (2, "QUEUED", 1, later(150))]
    assert att.task_run(first.task_run_id)["STATUS"] == "IN-PROGRESS"


def test_backoff_is_capped_at_an_hour__even_where_the_power_would_overflow(att: Attempts) -> None:
    first = att.running()
    policy(att, RETRIES="3", RETRY_DELAY_SECONDS="1000", RETRY_BACKOFF="999999999")
    fail(att, first.attempt_id)
    assert attempts_of(att, first.task_run_id)[-1] == (2, "QUEUED", 1, later(1000))
    [second] = claim(att, later(1000))
    fail(att, second)
    assert attempts_of(att, first.task_run_id)[-1] == (3, "QUEUED", 2, later(1000 + 3600))


def test_the_runs_defaults_apply_where_the_task_sets_nothing__a_task_parameter_wins(att: Attempts) -> None:
    run = att.project.run(att.pipeline(), key="manual:1", retries=1, retry_delay_seconds=7, retry_backoff=2.0)
    att._runs["manual:1"] = run
    stored = att.run_row(run)
    assert (stored["DEFAULT_RETRIES"], stored["DEFAULT_RETRY_DELAY_SECONDS"], stored["DEFAULT_RETRY_BACKOFF"]) == (
        1, 7, 2.0)
    load = att.running()
    fail(att, load.attempt_id)
    assert attempts_of(att, load.task_run_id)[-1] == (2, "QUEUED", 1, later(7))
    policy(att, "ingest", RETRIES="0")
    ingest = att.running("ingest")
    assert fail(att, ingest.attempt_id).task_run_status == "FAILED"
    by_task = {r.task_code: (r.retries, r.retry_delay_seconds, r.retry_backoff, r.max_delay_seconds)
               for r in call(att.db, "retry_policy", run_id=run)}
    assert by_task == {"ingest": (0, 7, 2.0, 3600), "load": (1, 7, 2.0, 3600)}


def test_without_a_setting_anywhere_the_built_in_defaults_apply__no_retry(att: Attempts) -> None:
    first = att.running()
    assert fail(att, first.attempt_id).task_run_status == "FAILED"
    assert [(r.retries, r.retry_delay_seconds, r.retry_backoff) for r in call(att.db, "retry_policy",
                                                                              run_id=first.run_id)] == [
        (0, 60, 2.0), (0, 60, 2.0)]


def test_a_value_that_is_not_a_number_falls_back_to_the_default(att: Attempts) -> None:
    first = att.running()
    policy(att, RETRIES="two", RETRY_DELAY_SECONDS="soon")
    assert fail(att, first.attempt_id).task_run_status == "FAILED"


def test_create_run_refuses_retry_defaults_out_of_range(att: Attempts) -> None:
    code = att.pipeline()
    with pytest.raises(RefusedByPolicyError, match="retry_backoff >= 1, not 1, 0 and 0.5;"):
        att.project.run(code, key="manual:x", retries=1, retry_delay_seconds=0, retry_backoff=0.5)


def test_cancelled_never_retries__nor_does_a_failure_in_a_run_being_cancelled(att: Attempts) -> None:
    first = att.running()
    policy(att, RETRIES="5", RETRY_DELAY_SECONDS="0")
    call(att.db, "cancel_attempt", attempt_id=first.attempt_id, owner_id=OWNER, reason="stop")
    assert attempts_of(att, first.task_run_id) == [(1, "CANCELLED", 0, None)]
    ingest = att.running("ingest")
    policy(att, "ingest", RETRIES="5", RETRY_DELAY_SECONDS="0")
    call(att.db, "cancel_run", run_id=ingest.run_id, reason="enough")
    assert fail(att, ingest.attempt_id).task_run_status == "FAILED"
    assert attempts_of(att, ingest.task_run_id) == [(1, "FAILED", 0, None)]


def test_a_retry_consumes_the_gate_decision_its_task_run_was_queued_with(att: Attempts) -> None:
    att.project.pipeline("upstream")
    att.project.task("upstream", "dep")
    edge = att.depends("load", on=att.project.tasks["dep"])
    upstream = att.project.run("upstream", key="manual:up")
    with att.db.write() as conn:
        upstream_task_run = int(conn.execute(sa.text(
            f"INSERT INTO {att.db.qualify('AUD_TASK_RUN_LOG')} (PIPELINE_RUN_ID, TASK_ID, STATUS, ATTEMPT_COUNT)"
            " VALUES (:r, :t, 'SUCCESS', 1) RETURNING TASK_RUN_ID"),
            {"r": upstream, "t": att.project.tasks["dep"]}).scalar_one())
    first = att.running()
    decision = att.gate_decision(first, upstream_run=upstream, upstream_task_run=upstream_task_run, dependency=edge)
    policy(att, RETRIES="1", RETRY_DELAY_SECONDS="0")
    fail(att, first.attempt_id)
    [retry] = claim(att, T0)
    call(att.db, "finish_attempt", attempt_id=retry, owner_id=OWNER, status="SUCCESS")
    assert att.project.rows("SELECT TASK_RUN_ID, DECISION_ID FROM {AUD_DEPENDENCY_CONSUMPTION}") == [
        (first.task_run_id, decision)]


# -- interrupt_attempt -----------------------------------------------------------------------------------------


def test_interrupt__uses_no_retry__queues_the_task_again_at_once(att: Attempts) -> None:
    first = att.running()
    att.db.clock.pin(later(5))
    row = call(att.db, "interrupt_attempt", attempt_id=first.attempt_id, owner_id=OWNER,
               reason="the etl-craft run supervising it received SIGTERM")[0]
    assert (row.status, row.task_run_status) == ("CANCELLED", "IN-PROGRESS")
    ended = att.attempt(first.attempt_id)
    assert ended["ERROR_MESSAGE"] == "interrupted: the etl-craft run supervising it received SIGTERM"
    assert ended["LEASE_EXPIRES_AT"] is None
    assert attempts_of(att, first.task_run_id) == [(1, "CANCELLED", 0, None), (2, "QUEUED", 0, None)]
    assert row.next_attempt_id == att.project.scalar(
        "SELECT ATTEMPT_ID FROM {AUD_TASK_ATTEMPTS} WHERE STATUS = 'QUEUED'")
    assert att.task_run(first.task_run_id)["MESSAGE"].endswith("; queued to run again")
    assert claim(att, later(5)) == [row.next_attempt_id]


def test_interrupt_in_a_run_being_cancelled__the_task_run_reads_cancelled(att: Attempts) -> None:
    first = att.running()
    call(att.db, "cancel_run", run_id=first.run_id, reason="enough")
    row = call(att.db, "interrupt_attempt", attempt_id=first.attempt_id, owner_id=OWNER, reason="SIGTERM")[0]
    assert (row.task_run_status, row.next_attempt_id) == ("CANCELLED", None)
    assert attempts_of(att, first.task_run_id) == [(1, "CANCELLED", 0, None)]


def test_interrupt_keeps_the_retry_count__a_retry_after_it_is_still_retry_1(att: Attempts) -> None:
    first = att.running()
    policy(att, RETRIES="1", RETRY_DELAY_SECONDS="0")
    call(att.db, "interrupt_attempt", attempt_id=first.attempt_id, owner_id=OWNER, reason="SIGTERM")
    [again] = claim(att, T0)
    fail(att, again)
    assert attempts_of(att, first.task_run_id) == [
        (1, "CANCELLED", 0, None), (2, "FAILED", 0, None), (3, "QUEUED", 1, T0)]


# -- requeue_lost ----------------------------------------------------------------------------------------------


def test_requeue_lost__a_lost_task_without_retries_runs_again_on_resume(att: Attempts) -> None:
    first: Queued = att.running()
    done = att.running("ingest")
    call(att.db, "finish_attempt", attempt_id=done.attempt_id, owner_id=OWNER, status="FAILED")
    att.db.clock.pin(later(120))
    call(att.db, "reconcile_expired")
    assert att.task_run(first.task_run_id)["STATUS"] == "FAILED"
    rows = call(att.db, "requeue_lost", run_id=first.run_id)
    assert [(r.task_id, r.lost_attempt_id) for r in rows] == [(att.task_id("load"), first.attempt_id)]
    assert attempts_of(att, first.task_run_id) == [(1, "LOST", 0, None), (2, "QUEUED", 0, None)]
    summary = att.task_run(first.task_run_id)
    assert (summary["STATUS"], summary["MESSAGE"]) == ("IN-PROGRESS",
                                                       f"attempt {first.attempt_id} was lost; queued again")
    assert att.task_run(done.task_run_id)["STATUS"] == "FAILED", "a task that failed is not lost: it stays"
    assert call(att.db, "requeue_lost", run_id=first.run_id) == []


def test_requeue_lost__nothing_in_a_run_being_cancelled(att: Attempts) -> None:
    first = att.running()
    att.db.clock.pin(later(120))
    call(att.db, "reconcile_expired")
    call(att.db, "cancel_run", run_id=first.run_id, reason="enough")
    assert call(att.db, "requeue_lost", run_id=first.run_id) == []



# -- the task-run summary ----------------------------------------------------------------------------------------


def test_a_task_runs_start_is_its_first_start__not_when_an_attempt_was_queued(att: Attempts) -> None:
    run = att.run()
    att.db.clock.pin(later(5))
    queued = call(att.db, "queue_attempt", run_id=run, task_id=att.task_id())[0]
    assert att.task_run(queued.task_run_id)["START_DATE"] is None, "queued is not started"
    policy(att, RETRIES="1", RETRY_DELAY_SECONDS="0")
    [first] = claim(att, later(10))
    att.db.clock.pin(later(12))
    start(att, first)
    fail(att, first)
    [retry] = claim(att, later(30))
    att.db.clock.pin(later(31))
    start(att, retry)
    assert as_utc(att.task_run(queued.task_run_id)["START_DATE"]) == later(12)


def test_a_cancelled_task_run_does_not_keep_an_earlier_attempts_error(att: Attempts) -> None:
    first = att.running()
    policy(att, RETRIES="1", RETRY_DELAY_SECONDS="600")
    fail(att, first.attempt_id)
    assert att.task_run(first.task_run_id)["ERROR_MESSAGE"] == "boom", "waiting for its retry, it shows the error"
    retry = att.project.scalar("SELECT ATTEMPT_ID FROM {AUD_TASK_ATTEMPTS} WHERE STATUS = 'QUEUED'")
    call(att.db, "cancel_attempt", attempt_id=retry, reason="not today")
    summary = att.task_run(first.task_run_id)
    assert (summary["STATUS"], summary["ERROR_MESSAGE"], summary["MESSAGE"]) == (
        "CANCELLED", None, "cancelled: not today")
    assert att.attempt(first.attempt_id)["ERROR_MESSAGE"] == "boom", "the error stays on its attempt"
    ingest = att.running("ingest")
    policy(att, "ingest", RETRIES="1", RETRY_DELAY_SECONDS="600")
    fail(att, ingest.attempt_id)
    call(att.db, "cancel_run", run_id=ingest.run_id, reason="enough")
    assert att.task_run(ingest.task_run_id)["ERROR_MESSAGE"] is None
