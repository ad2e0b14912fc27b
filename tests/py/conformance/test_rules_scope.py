"""record_rule_scope (sql/functions/070_rules.sql.j2), the same on SQLite and PostgreSQL: the owner of a RUNNING
attempt records, for one active rule of the attempt's task, what it found for the keys its run wrote (B52). Only
the flags of those keys are judged again: a failing key in scope gets a flag, an open flag of a key in scope that
no longer fails closes, and the flags of every other key are left as they stand. At most 1,000 keys a call; the
calls of one attempt share the caller's transaction, so a refused later batch rolls back the earlier ones."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
import sqlalchemy as sa

from etlcraft.core.errors import RefusedByPolicyError, StaleTransitionError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call, call_in
from tests.py.conformance.test_rules import FLAGS, add_rule, closed, flags, opened, record, snapshot
from tests.py.support.attempts import OTHER, OWNER, T0, Attempts, Queued, as_utc, later
from tests.py.support.rows import ts

BAD_SCOPE = r"^scope_keys is a JSON array of at most 1000 keys \(strings of at most 512 characters\)"
BAD_FAILING = r"^failing_keys is a JSON array of the keys of scope_keys that break the rule"


@pytest.fixture
def att(engine_db: EngineDB) -> Attempts:
    engine_db.clock.pin(T0)
    return Attempts(engine_db)


def scoped(att: Attempts, attempt: Queued, rule: int, scope: Sequence[str] | str | None,
           failing: Sequence[str] | str | None, owner: str = OWNER) -> list[tuple[int, int, int, int]]:
    """record_rule_scope for the attempt; each list sent as its JSON text (or the text itself)."""
    def text(keys: Sequence[str] | str | None) -> str | None:
        return keys if keys is None or isinstance(keys, str) else json.dumps(list(keys))

    rows = call(att.db, "record_rule_scope", attempt_id=attempt.attempt_id, owner_id=owner, business_rule_id=rule,
                scope_keys=text(scope), failing_keys=text(failing))
    return [tuple(r) for r in rows]


def test_record_rule_scope__judges_only_the_keys_in_scope(att: Attempts) -> None:
    a = att.running()
    rule = add_rule(att)
    other = add_rule(att, code="date_known")
    assert record(att, a, rule, ["1", "2", "3", "4"]) == [(rule, 4, 0, 4)]
    assert record(att, a, other, ["2"]) == [(other, 1, 0, 1)]
    att.db.clock.pin(later(30))
    # the run wrote keys 2, 3 and 5: 2 meets the rule now, 3 still breaks it, 5 breaks it for the first time;
    # 1 and 4 are outside the scope and keep their flags although the list does not name them
    rows = call(att.db, "record_rule_scope", attempt_id=a.attempt_id, owner_id=OWNER, business_rule_id=rule,
                scope_keys=json.dumps(["2", "3", "5"]), failing_keys=json.dumps(["3", "5"]))
    assert rows[0]._fields == ("business_rule_id", "flagged", "cleared", "active")
    assert [tuple(r) for r in rows] == [(rule, 1, 1, 4)]
    assert flags(att, rule) == [opened("1", T0, a), closed("2", T0, a, later(30), a), opened("3", T0, a),
                                opened("4", T0, a), opened("5", later(30), a)]
    assert flags(att, other) == [opened("2", T0, a)], "the other rule's flag of key 2 is untouched"
    assert as_utc(att.attempt(a.attempt_id)["HEARTBEAT_AT"]) == later(30)
    # an empty scope judges nothing, and says how many flags are open
    assert scoped(att, a, rule, [], []) == [(rule, 0, 0, 4)]


@pytest.mark.parametrize(("scope", "failing", "said"), [
    (None, [], BAD_SCOPE), ("not json", [], BAD_SCOPE), ('{"1": 1}', [], BAD_SCOPE), (["1", None], [], BAD_SCOPE),
    (["1", 2], [], BAD_SCOPE), (["x" * 513], [], BAD_SCOPE), ([str(i) for i in range(1001)], [], BAD_SCOPE),
    (["1"], None, BAD_FAILING), (["1"], "[", BAD_FAILING), (["1"], ["2"], BAD_FAILING), (["1"], [1], BAD_FAILING),
    (["1"], '"1"', BAD_FAILING),
])
def test_record_rule_scope__lists_that_are_not_keys_in_scope__are_refused_and_change_nothing(
        att: Attempts, scope: Sequence[object] | str | None, failing: Sequence[object] | str | None,
        said: str) -> None:
    a = att.running()
    rule = add_rule(att)
    record(att, a, rule, ["1", "2"])
    att.db.clock.pin(later(30))
    before = snapshot(att)
    scope_text = scope if scope is None or isinstance(scope, str) else json.dumps(list(scope))
    failing_text = failing if failing is None or isinstance(failing, str) else json.dumps(list(failing))
    with pytest.raises(RefusedByPolicyError, match=said):
        scoped(att, a, rule, scope_text, failing_text)
    assert snapshot(att) == before


def test_record_rule_scope__a_thousand_keys_are_taken(att: Attempts) -> None:
    a = att.running()
    rule = add_rule(att)
    keys = [f"k{i:04d}" for i in range(1000)]
    assert scoped(att, a, rule, keys, keys[::2]) == [(rule, 500, 0, 500)]


def test_record_rule_scope__another_owner__is_a_stale_transition_that_changes_nothing(att: Attempts) -> None:
    a = att.running()
    rule = add_rule(att)
    record(att, a, rule, ["1"])
    before = snapshot(att)
    with pytest.raises(StaleTransitionError, match=f"^attempt {a.attempt_id} is RUNNING owned by {OWNER}"):
        scoped(att, a, rule, ["1"], [], owner=OTHER)
    assert snapshot(att) == before


def test_b52_a_refused_later_batch_rolls_back_the_earlier_ones(att: Attempts) -> None:
    """The batches of one attempt go through the caller's connection in one transaction: the first batch clears
    and opens flags, the second is refused, and nothing of the first is left."""
    a = att.running()
    rule = add_rule(att)
    record(att, a, rule, ["a1", "a2"])
    att.db.clock.pin(later(30))
    before = snapshot(att)
    with pytest.raises(RefusedByPolicyError, match=BAD_FAILING), att.db.write() as conn:
        first = call_in(att.db, conn, "record_rule_scope", attempt_id=a.attempt_id, owner_id=OWNER,
                        business_rule_id=rule, scope_keys=json.dumps(["a1", "a2", "a3"]),
                        failing_keys=json.dumps(["a3"]))
        assert [tuple(r) for r in first] == [(rule, 1, 2, 1)]
        call_in(att.db, conn, "record_rule_scope", attempt_id=a.attempt_id, owner_id=OWNER, business_rule_id=rule,
                scope_keys=json.dumps(["b1"]), failing_keys=json.dumps(["b2"]))
    assert snapshot(att) == before
    assert flags(att, rule) == [opened("a1", T0, a), opened("a2", T0, a)]


def test_b52_rules_at_size__a_scoped_call_leaves_every_other_flag_alone(att: Attempts) -> None:
    """70,000 open flags on PostgreSQL, 40,000 on SQLite (written set-based): a call for ten keys clears and opens
    only among those ten."""
    n = 70_000 if att.db.is_postgres else 40_000
    a = att.running()
    rule = add_rule(att)
    bulk_flags(att.db, rule, a, n)
    att.db.clock.pin(later(60))
    scope = [f"order-{i:06d}" for i in range(5)] + [f"new-{i}" for i in range(5)]
    assert scoped(att, a, rule, scope, scope[3:]) == [(rule, 5, 3, n + 2)]
    sql = (f"SELECT ACTIVE_FLAG, COUNT(*) FROM {att.db.qualify(FLAGS)} WHERE BUSINESS_RULE_ID = :r"
           " GROUP BY ACTIVE_FLAG ORDER BY ACTIVE_FLAG")
    with att.db.read() as conn:
        assert [tuple(r) for r in conn.execute(sa.text(sql), {"r": rule})] == [("N", 3), ("Y", n + 2)]


def bulk_flags(db: EngineDB, rule: int, by: Queued, n: int, prefix: str = "order-") -> None:
    """n open flags of `rule`, keys prefix + 000000.., opened by attempt `by` at T0, in one INSERT ... SELECT."""
    if db.is_postgres:
        keys = "SELECT :p || lpad(CAST(i AS text), 6, '0') AS k FROM generate_series(0, :n - 1) AS g(i)"
    else:
        keys = ("WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i < :n - 1)"
                " SELECT :p || printf('%06d', i) AS k FROM g")
    sql = (f"INSERT INTO {db.qualify(FLAGS)} (BUSINESS_RULE_ID, BUSINESS_RULE_KEY, ACTIVE_FLAG, START_DATE,"
           f" PIPELINE_RUN_ID, TASK_RUN_ID, ATTEMPT_ID) SELECT :r, s.k, 'Y', :t, :run, :tr, :a FROM ({keys}) s")
    with db.write() as conn:
        conn.execute(sa.text(sql), {"r": rule, "p": prefix, "n": n, "t": ts(db, T0), "run": by.run_id,
                                    "tr": by.task_run_id, "a": by.attempt_id})
