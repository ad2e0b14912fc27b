"""record_rule_flags (sql/functions/070_rules.sql.j2), the same on SQLite and PostgreSQL: the owner of a RUNNING
attempt records, for one active rule of the attempt's task, the keys that break it. One open flag per rule and key;
a flag whose key left the list closes (END_DATE, CLEARED_BY_ATTEMPT_ID) and is kept as history; a refusal changes
nothing, not even the attempt's heartbeat."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pytest
import sqlalchemy as sa

from etlcraft.core.errors import NotFoundError, RefusedByPolicyError, StaleTransitionError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support.attempts import OTHER, OWNER, T0, Attempts, Queued, as_utc, later
from tests.py.support.rows import insert

FLAGS = "AUD_BUSINESS_RULE_FLAGS"
NOT_AN_ARRAY = r"^failing_keys is a JSON array of the keys \(strings of at most 512 characters\) that break the rule, "

# A flag as (key, ACTIVE_FLAG, START_DATE, END_DATE, PIPELINE_RUN_ID, TASK_RUN_ID, ATTEMPT_ID, CLEARED_BY_ATTEMPT_ID).
Flag = tuple[str, str, datetime | None, datetime | None, int, int, int, int | None]


@pytest.fixture
def att(engine_db: EngineDB) -> Attempts:
    engine_db.clock.pin(T0)
    return Attempts(engine_db)


def add_rule(att: Attempts, task: str = "load", key: str = "manual:1", *, code: str = "amount_positive",
             active: str = "Y") -> int:
    """A REJECT rule of `task` in run key `key`'s pipeline, inserted through an engine write transaction (as a project
    migration would): its BUSINESS_RULE_ID."""
    task_id = att.task_id(task, key)  # creates the pipeline first: its own write transaction
    with att.db.write() as conn:
        return insert(att.db, conn, "CFG_BUSINESS_RULES", "BUSINESS_RULE_ID", TASK_ID=task_id, RULE_CODE=code,
                      RULE_TYPE="REJECT", KEY_COLUMN="order_id", RULE_SQL="amount > 0", ACTIVE_FLAG=active)


def record(att: Attempts, attempt: Queued | int, rule: int, keys: Sequence[str | None] | str | None,
           owner: str = OWNER) -> list[tuple[int, int, int, int]]:
    """record_rule_flags for the attempt; `keys` as a list (sent as its JSON text), or the text itself."""
    attempt_id = attempt if isinstance(attempt, int) else attempt.attempt_id
    failing = keys if keys is None or isinstance(keys, str) else json.dumps(list(keys))
    rows = call(att.db, "record_rule_flags", attempt_id=attempt_id, owner_id=owner, business_rule_id=rule,
                failing_keys=failing)
    return [tuple(r) for r in rows]


def flags(att: Attempts, rule: int) -> list[Flag]:
    """The rule's flags, open and closed, by key (as Python orders text, whatever the database's collation), then
    FLAG_ID (so a key's history reads oldest first)."""
    sql = (f"SELECT BUSINESS_RULE_KEY, ACTIVE_FLAG, START_DATE, END_DATE, PIPELINE_RUN_ID, TASK_RUN_ID, ATTEMPT_ID,"
           f" CLEARED_BY_ATTEMPT_ID FROM {att.db.qualify(FLAGS)} WHERE BUSINESS_RULE_ID = :r ORDER BY FLAG_ID")
    with att.db.read() as conn:
        rows = conn.execute(sa.text(sql), {"r": rule}).all()
    found: list[Flag] = [(r[0], r[1], as_utc(r[2]), as_utc(r[3]), int(r[4]), int(r[5]), int(r[6]),
                          None if r[7] is None else int(r[7])) for r in rows]
    return sorted(found, key=lambda flag: flag[0])


def opened(key: str, at: datetime, by: Queued) -> Flag:
    return (key, "Y", at, None, by.run_id, by.task_run_id, by.attempt_id, None)


def closed(key: str, at: datetime, by: Queued, end: datetime, cleared_by: Queued) -> Flag:
    return (key, "N", at, end, by.run_id, by.task_run_id, by.attempt_id, cleared_by.attempt_id)


def snapshot(att: Attempts) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables the attempt functions write (AUD_TASK_ATTEMPTS among them) and of the flags."""
    with att.db.read() as conn:
        rows = [tuple(r) for r in conn.execute(sa.text(f"SELECT * FROM {att.db.qualify(FLAGS)} ORDER BY FLAG_ID"))]
    return {**att.snapshot(), FLAGS: rows}


def heartbeat(att: Attempts, attempt: Queued) -> datetime | None:
    return as_utc(att.attempt(attempt.attempt_id)["HEARTBEAT_AT"])


# -- recording --------------------------------------------------------------------------------------------------


def test_record_rule_flags__first_call__opens_one_flag_per_distinct_key(att: Attempts) -> None:
    a = att.running()
    rule = add_rule(att)
    att.db.clock.pin(later(5))
    rows = call(att.db, "record_rule_flags", attempt_id=a.attempt_id, owner_id=OWNER, business_rule_id=rule,
                failing_keys=json.dumps(["42", "57", "42", None, "O'Brien", "é 7", "57"]))
    assert rows[0]._fields == ("business_rule_id", "flagged", "cleared", "active")
    assert [tuple(r) for r in rows] == [(rule, 4, 0, 4)]
    assert flags(att, rule) == sorted(opened(k, later(5), a) for k in ("42", "57", "O'Brien", "é 7"))
    row = att.attempt(a.attempt_id)
    assert (row["STATUS"], row["OWNER_ID"], as_utc(row["HEARTBEAT_AT"])) == ("RUNNING", OWNER, later(5))
    # the same findings again: nothing to open or close, the heartbeat renewed again
    att.db.clock.pin(later(9))
    before = flags(att, rule)
    assert record(att, a, rule, ["57", "O'Brien", "42", "é 7"]) == [(rule, 0, 0, 4)]
    assert flags(att, rule) == before
    assert heartbeat(att, a) == later(9)


def test_record_rule_flags__the_next_run__closes_keys_that_left_and_opens_new_ones(att: Attempts) -> None:
    first = att.running()
    rule = add_rule(att)
    assert record(att, first, rule, ["1", "2", "3"]) == [(rule, 3, 0, 3)]
    call(att.db, "finish_attempt", attempt_id=first.attempt_id, owner_id=OWNER, status="SUCCESS")
    call(att.db, "mark_run", run_id=first.run_id, status="SUCCESS", reason="done")
    # the pipeline's next run: a task run and an attempt of their own, of the same task and so the same rule
    second = att.running(key="manual:2", pipeline_of="manual:1")
    assert (second.run_id, second.task_run_id) != (first.run_id, first.task_run_id)
    att.db.clock.pin(later(60))
    assert record(att, second, rule, ["3", "4", "2"]) == [(rule, 1, 1, 3)]
    assert flags(att, rule) == [
        closed("1", T0, first, later(60), second),
        opened("2", T0, first),  # still breaking: the flag opened by the first run stays open, unchanged
        opened("3", T0, first),
        opened("4", later(60), second),
    ]


def test_record_rule_flags__a_key_that_breaks_again__gets_a_new_flag_and_its_history_is_kept(att: Attempts) -> None:
    first = att.running()
    rule = add_rule(att)
    record(att, first, rule, ["9", "10"])
    call(att.db, "finish_attempt", attempt_id=first.attempt_id, owner_id=OWNER, status="FAILED")
    retry = att.running()  # attempt 2 of the same task run
    assert (retry.task_run_id, retry.attempt_id) == (first.task_run_id, first.attempt_id + 1)
    att.db.clock.pin(later(10))
    assert record(att, retry, rule, ["10"]) == [(rule, 0, 1, 1)]
    att.db.clock.pin(later(20))
    assert record(att, retry, rule, ["9", "10"]) == [(rule, 1, 0, 2)]
    att.db.clock.pin(later(30))
    assert record(att, retry, rule, ["10"]) == [(rule, 0, 1, 1)]
    assert flags(att, rule) == [
        opened("10", T0, first),
        closed("9", T0, first, later(10), retry),
        closed("9", later(20), retry, later(30), retry),
    ]


def test_record_rule_flags__an_empty_list__closes_every_open_flag_of_the_rule(att: Attempts) -> None:
    a = att.running()
    rule = add_rule(att)
    record(att, a, rule, ["1", "2", "3"])
    att.db.clock.pin(later(30))
    assert record(att, a, rule, []) == [(rule, 0, 3, 0)]
    assert flags(att, rule) == [closed(k, T0, a, later(30), a) for k in ("1", "2", "3")]
    att.db.clock.pin(later(40))
    assert record(att, a, rule, []) == [(rule, 0, 0, 0)]
    assert flags(att, rule) == [closed(k, T0, a, later(30), a) for k in ("1", "2", "3")]


def test_record_rule_flags__two_rules_of_a_task__keep_their_flags_apart(att: Attempts) -> None:
    a = att.running()
    amount = add_rule(att, code="amount_positive")
    known = add_rule(att, code="date_known")
    assert record(att, a, amount, ["1", "2"]) == [(amount, 2, 0, 2)]
    assert record(att, a, known, ["2", "3"]) == [(known, 2, 0, 2)]  # key 2 is open for both rules
    att.db.clock.pin(later(10))
    assert record(att, a, amount, []) == [(amount, 0, 2, 0)]
    assert flags(att, known) == [opened("2", T0, a), opened("3", T0, a)]
    att.db.clock.pin(later(20))
    assert record(att, a, known, ["3", "1"]) == [(known, 1, 1, 2)]
    assert flags(att, amount) == [closed("1", T0, a, later(10), a), closed("2", T0, a, later(10), a)]
    assert flags(att, known) == [opened("1", later(20), a), closed("2", T0, a, later(20), a), opened("3", T0, a)]


# -- refusals: each changes nothing, not even the heartbeat -------------------------------------------------------


def recorded(att: Attempts) -> tuple[Queued, int]:
    """A RUNNING attempt with two open flags of its task's rule; the clock moved on, so a renewed heartbeat shows."""
    a = att.running()
    rule = add_rule(att)
    record(att, a, rule, ["1", "2"])
    att.db.clock.pin(later(30))
    return a, rule


def test_record_rule_flags__another_owner__is_a_stale_transition_that_changes_nothing(att: Attempts) -> None:
    a, rule = recorded(att)
    before = snapshot(att)
    expected = (f"^attempt {a.attempt_id} is RUNNING owned by {OWNER}.*, expected RUNNING owned by {OTHER}; "
                "no flag was recorded")
    with pytest.raises(StaleTransitionError, match=expected):
        record(att, a, rule, [], owner=OTHER)
    assert snapshot(att) == before
    assert heartbeat(att, a) == T0


@pytest.mark.parametrize("status", ["QUEUED", "CLAIMED", "SUCCESS", "FAILED", "TIMED_OUT", "CANCELLED", "LOST"])
def test_record_rule_flags__an_attempt_not_running__is_a_stale_transition_that_changes_nothing(
        att: Attempts, status: str) -> None:
    a, rule = recorded(att)
    if status in ("QUEUED", "CLAIMED"):  # a retry in the same task run, once the first attempt has ended
        call(att.db, "finish_attempt", attempt_id=a.attempt_id, owner_id=OWNER, status="FAILED")
        a = att.queue() if status == "QUEUED" else att.claimed()
    elif status in ("SUCCESS", "FAILED"):
        call(att.db, "finish_attempt", attempt_id=a.attempt_id, owner_id=OWNER, status=status)
    elif status == "TIMED_OUT":
        call(att.db, "time_out_attempt", attempt_id=a.attempt_id, owner_id=OWNER, message="limit")
    elif status == "CANCELLED":
        call(att.db, "cancel_attempt", attempt_id=a.attempt_id, owner_id=OWNER, reason="stop")
    else:
        call(att.db, "lose_attempt", attempt_id=a.attempt_id, owner_id=OWNER)
    assert att.attempt(a.attempt_id)["STATUS"] == status
    att.db.clock.pin(later(90))
    before = snapshot(att)
    with pytest.raises(StaleTransitionError, match=f"^attempt {a.attempt_id} is {status}.*, expected RUNNING owned by"):
        record(att, a, rule, [])
    assert snapshot(att) == before


def test_record_rule_flags__an_unknown_attempt__is_not_found_and_changes_nothing(att: Attempts) -> None:
    _, rule = recorded(att)
    before = snapshot(att)
    with pytest.raises(NotFoundError, match="^attempt 999999 does not exist; "):
        record(att, 999999, rule, [])
    assert snapshot(att) == before


@pytest.mark.parametrize("which", ["of the other task of the pipeline", "of the same task in another pipeline",
                                   "switched off (ACTIVE_FLAG N)", "unknown"])
def test_record_rule_flags__a_rule_not_active_for_the_attempts_task__is_not_found_and_changes_nothing(
        att: Attempts, which: str) -> None:
    a, rule = recorded(att)
    if which == "of the other task of the pipeline":
        other = add_rule(att, "ingest")
    elif which == "of the same task in another pipeline":
        other = add_rule(att, key="manual:other")
    elif which == "switched off (ACTIVE_FLAG N)":
        # the rule whose flags are open is retired by a project migration: its flags can no longer be recorded
        other = rule
        with att.db.write() as conn:
            conn.execute(sa.text(f"UPDATE {att.db.qualify('CFG_BUSINESS_RULES')} SET ACTIVE_FLAG = 'N'"
                                 " WHERE BUSINESS_RULE_ID = :r"), {"r": rule})
    else:
        other = 999999
    before = snapshot(att)
    expected = f"^business rule {other} is not an active rule of task {att.task_id('load')}; "
    with pytest.raises(NotFoundError, match=expected):
        record(att, a, other, [])
    assert snapshot(att) == before
    assert heartbeat(att, a) == T0  # renewed before the rule was checked, and rolled back with the rest


@pytest.mark.parametrize("failing_keys", ['{"a": 1}', None, '"42"', "42", "null", "true", "not json", '["1", ',
                                          '["1", 2]', '["1", true]', '[["1"]]', '[{"k": "1"}]',
                                          json.dumps(["1", "x" * 513])])
def test_record_rule_flags__failing_keys_not_a_json_array_of_keys__is_refused_and_changes_nothing(
        att: Attempts, failing_keys: str | None) -> None:
    a, rule = recorded(att)
    before = snapshot(att)
    with pytest.raises(RefusedByPolicyError, match=NOT_AN_ARRAY):
        record(att, a, rule, failing_keys)
    assert snapshot(att) == before


# -- B51 ----------------------------------------------------------------------------------------------------------


def test_b51_one_call_records_any_number_of_keys(att: Attempts) -> None:
    """The keys travel as one JSON text, so no bind-parameter limit applies: more keys than SQLite's 32,766 and
    PostgreSQL's 65,535 parameters of a statement, in a single call."""
    n = 70_000 if att.db.is_postgres else 40_000
    a = att.running()
    rule = add_rule(att)
    keys = [f"order-{i:06d}" for i in range(n)]
    assert record(att, a, rule, keys) == [(rule, n, 0, n)]
    sql = (f"SELECT COUNT(*), COUNT(DISTINCT BUSINESS_RULE_KEY), MIN(BUSINESS_RULE_KEY), MAX(BUSINESS_RULE_KEY)"
           f" FROM {att.db.qualify(FLAGS)} WHERE BUSINESS_RULE_ID = :r AND ACTIVE_FLAG = 'Y' AND ATTEMPT_ID = :a")
    with att.db.read() as conn:
        found = tuple(conn.execute(sa.text(sql), {"r": rule, "a": a.attempt_id}).one())
    assert found == (n, n, "order-000000", f"order-{n - 1:06d}")

    # The next run: half the keys meet the rule now, as many new ones break it. Closing is one pass over the
    # open flags against the list, not a search of the list per flag (which took minutes at this size).
    att.db.clock.pin(later(60))
    call(att.db, "finish_attempt", attempt_id=a.attempt_id, owner_id=OWNER, status="SUCCESS")
    again = att.running()
    shifted = [f"order-{i:06d}" for i in range(n // 2, n + n // 2)]
    assert record(att, again, rule, shifted) == [(rule, n // 2, n // 2, n)]
