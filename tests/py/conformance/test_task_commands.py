"""judge_task_command (sql/functions/015_task_runs.sql.j2), the same on SQLite and PostgreSQL: whether an operator's
task command (etl-craft run --task-code T, with --force, or --rerun T) may run a task of a run, and how."""

from __future__ import annotations

from typing import Any

import pytest

from etlcraft.core.errors import NotFoundError, RefusedByPolicyError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support.attempts import OWNER, T0, Attempts


@pytest.fixture
def att(engine_db: EngineDB) -> Attempts:
    engine_db.clock.pin(T0)
    return Attempts(engine_db)


def judge(att: Attempts, command: str, key: str = "manual:1", task: str = "load") -> tuple[Any, ...]:
    row = call(att.db, "judge_task_command", run_id=att.run(key), task_id=att.task_id(task, key), command=command)[0]
    return tuple(row)


def ended(att: Attempts, status: str, key: str = "manual:1") -> None:
    """Task load of run `key` ends `status` (SUCCESS or FAILED) through its attempt."""
    a = att.running(key=key)
    call(att.db, "finish_attempt", attempt_id=a.attempt_id, owner_id=OWNER, status=status)


def test_a_task_without_a_task_run_is_queued_after_its_dependencies_are_checked(att: Attempts) -> None:
    for command in ("TASK", "FORCE"):
        assert judge(att, command) == ("QUEUE", None, False, False, True, None)
    assert judge(att, "RERUN")[:2] == (
        "REFUSE", "task load in run 1 of orders_manual_1 is not run: --rerun runs again a task that FAILED or was "
                  "CANCELLED; run this one with --task-code load")


def test_a_succeeded_task_needs_force__and_rerun_is_for_failures(att: Attempts) -> None:
    ended(att, "SUCCESS")
    assert judge(att, "TASK")[:2] == (
        "REFUSE", "task load in run 1 of orders_manual_1 already succeeded; pass --force to run it again")
    assert judge(att, "FORCE") == ("QUEUE", None, False, True, False, None)
    assert judge(att, "RERUN")[0] == "REFUSE"


def test_a_failed_task_is_rerun_or_run_again(att: Attempts) -> None:
    ended(att, "FAILED")
    assert judge(att, "RERUN") == ("QUEUE", None, False, False, False, None)
    assert judge(att, "TASK") == ("QUEUE", None, False, False, False, None)


def test_an_ended_run_is_reopened_by_force_or_rerun__never_a_cancelled_one_by_force(att: Attempts) -> None:
    ended(att, "FAILED")
    call(att.db, "mark_run", run_id=att.run(), status="FAILED", reason="load failed")
    assert judge(att, "TASK")[:2] == (
        "REFUSE", "run 1 is FAILED: pass --force to reopen it and run load (recorded as REOPEN), or --rerun load "
                  "for a task that failed")
    assert judge(att, "FORCE") == ("QUEUE", None, True, False, False, None)
    assert judge(att, "RERUN") == ("QUEUE", None, True, False, False, None)
    ended(att, "FAILED", key="manual:2")
    call(att.db, "cancel_run", run_id=att.run("manual:2"), reason="enough")
    assert judge(att, "FORCE", key="manual:2")[:2] == (
        "REFUSE", "run 2 was CANCELLED, so --force will not reopen it; start a new run with another --run-key to run "
                  "load")


def test_a_running_task_is_refused__a_task_queued_again_after_a_stop_is_claimed(att: Attempts) -> None:
    a = att.running()
    refusal = judge(att, "FORCE")
    assert refusal[0] == "REFUSE" and refusal[1] == (
        f"task load in run 1 of orders_manual_1 is running now (attempt {a.attempt_id}, RUNNING, owner {OWNER}); "
        "wait for it to end")
    again = call(att.db, "interrupt_attempt", attempt_id=a.attempt_id, owner_id=OWNER, reason="SIGTERM")[0]
    assert judge(att, "TASK") == ("CLAIM", None, False, False, False, again.next_attempt_id)


def test_a_queued_run_is_refused(att: Attempts) -> None:
    att.run("manual:q", status="QUEUED")
    assert judge(att, "TASK", key="manual:q")[:2] == (
        "REFUSE", "run 1 is QUEUED: its gates have not admitted it yet; see etl-craft status")


def test_bad_arguments_are_refused(att: Attempts) -> None:
    run, task = att.run(), att.task_id()
    with pytest.raises(RefusedByPolicyError, match="^judge_task_command takes the command TASK, FORCE or RERUN, not X"):
        call(att.db, "judge_task_command", run_id=run, task_id=task, command="X")
    with pytest.raises(NotFoundError, match="^run 99 does not exist"):
        call(att.db, "judge_task_command", run_id=99, task_id=task, command="TASK")
    with pytest.raises(NotFoundError, match="^task 9999 is not an active task of pipeline orders_manual_1"):
        call(att.db, "judge_task_command", run_id=run, task_id=9999, command="TASK")
