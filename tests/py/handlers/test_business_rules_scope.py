"""run_business_rules at size (B52), on each Engine DB with a DuckDB warehouse: a normal run judges only the keys
its own run wrote (PIPELINE_RUN_ID), so the statements it sends to the Engine DB and to the warehouse are as many
for a table of 70,000 flagged keys (40,000 on SQLite) as for one of 2,000; flags outside its scope are left alone.
A full check (--force, Orchestration.Full_check_day, a table without PIPELINE_RUN_ID) judges the table whole and
clears the flags of keys that pass now or are gone."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pytest
import sqlalchemy as sa

from etlcraft.config.loader import load_config
from etlcraft.core.errors import RefusedByPolicyError
from etlcraft.engine.db import EngineDB
from etlcraft.handlers import business_rules
from etlcraft.handlers.business_rules import run_business_rules
from etlcraft.handlers.context import HandlerResult, TaskContext
from etlcraft.warehouse import connection
from tests.py.conformance.test_rules import FLAGS, add_rule
from tests.py.conformance.test_rules_scope import bulk_flags
from tests.py.support.attempts import OWNER, T0, Attempts, Queued

MONDAY, SUNDAY = date(2026, 3, 2), date(2026, 3, 1)
OLD_RUN = 0  # the run that wrote every row but the current run's (any run other than the attempt's)


@pytest.fixture
def att(engine_db: EngineDB) -> Attempts:
    engine_db.clock.pin(T0)
    return Attempts(engine_db)


@dataclass
class Counted:
    engine: int = 0
    warehouse: int = 0


@pytest.fixture
def counted(engine_db: EngineDB, monkeypatch: pytest.MonkeyPatch) -> Iterator[Counted]:
    """Statements sent to the Engine DB (SQLAlchemy's before_cursor_execute) and to the warehouse (every statement
    of a warehouse Session goes through Session.rows or Session.run)."""
    counts = Counted()

    def on_engine(*_: Any) -> None:
        counts.engine += 1

    for name in ("rows", "run"):
        original = getattr(connection.Session, name)

        def wrapped(self: connection.Session, sql: str, _original: Any = original) -> Any:
            counts.warehouse += 1
            return _original(self, sql)

        monkeypatch.setattr(connection.Session, name, wrapped)
    sa.event.listen(engine_db.engine, "before_cursor_execute", on_engine)
    try:
        yield counts
    finally:
        sa.event.remove(engine_db.engine, "before_cursor_execute", on_engine)


def project(root: Path, full_check_day: str | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    day = f"Orchestration:\n  Full_check_day: {full_check_day}\n" if full_check_day else ""
    (root / "craft-connector.yml").write_text(
        "Engine:\n  dialect: sqlite\n  path: engine.db\nWarehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n"
        + day, encoding="utf-8")
    return root


def warehouse(root: Path, n: int, run_id: int, *, run_column: bool = True) -> None:
    """orders: n keys order-000000.. that break the rule (amount -1), written by OLD_RUN; then the run `run_id`
    writes 10 rows: 5 keys fixed (order-000000..4), 3 rewritten still breaking (order-000005..7), 2 new breaking
    keys. order-000010 is fixed outside the run (its row keeps OLD_RUN)."""
    with duckdb.connect(str(root / "warehouse.duckdb")) as con:
        run = f", CAST({OLD_RUN} AS BIGINT) AS PIPELINE_RUN_ID" if run_column else ""
        con.execute(f"CREATE TABLE orders AS SELECT 'order-' || lpad(CAST(i AS VARCHAR), 6, '0') AS order_id,"
                    f" -1 AS amount{run} FROM range({n}) t(i)")
        stamp = f", PIPELINE_RUN_ID = {run_id}" if run_column else ""
        con.execute(f"UPDATE orders SET amount = 5{stamp} WHERE order_id < 'order-000005'")
        con.execute(f"UPDATE orders SET amount = -1{stamp}"
                    " WHERE order_id BETWEEN 'order-000005' AND 'order-000007'")
        con.execute("UPDATE orders SET amount = 5 WHERE order_id = 'order-000010'")
        con.execute("INSERT INTO orders VALUES ('new-1', -3" + (f", {run_id})" if run_column else ")"))
        con.execute("INSERT INTO orders VALUES ('new-2', -4" + (f", {run_id})" if run_column else ")"))


def scenario(att: Attempts, root: Path, n: int, key: str = "manual:1", **kw: Any) -> tuple[TaskContext, int]:
    """A RUNNING attempt (in run key `key`'s pipeline) of a rules task whose rule (order_id, amount > 0) has n open
    flags (order-000000..) plus one of a key gone from the table, its warehouse (see warehouse) and its context on a
    Monday."""
    a = att.running(key=key)
    rule = add_rule(att, key=key)
    bulk_flags(att.db, rule, a, n)
    bulk_flags(att.db, rule, a, 1, prefix="gone-")
    full_check_day = kw.pop("full_check_day", None)
    warehouse(project(root, full_check_day), n, a.run_id, **kw)
    return context(att, root, a, key), rule


def context(att: Attempts, root: Path, a: Queued, key: str, **changes: Any) -> TaskContext:
    pipeline_id = int(att.run_row(a.run_id)["PIPELINE_ID"])
    ctx = TaskContext(project_dir=root, config=load_config(root), pipeline_id=pipeline_id, pipeline_code="orders",
                      pipeline_run_id=a.run_id, run_date=MONDAY, task_id=att.task_id(key=key), task_code="load",
                      task_run_id=a.task_run_id, attempt_id=a.attempt_id, handler="BUSINESS_RULES", action=None,
                      sql_file=None, script_file=None, target_object="orders")
    return replace(ctx, **changes)


def open_keys(db: EngineDB, rule: int) -> set[str]:
    sql = f"SELECT BUSINESS_RULE_KEY FROM {db.qualify(FLAGS)} WHERE BUSINESS_RULE_ID = :r AND ACTIVE_FLAG = 'Y'"
    with db.read() as conn:
        return {r[0] for r in conn.execute(sa.text(sql), {"r": rule})}


def judge_run(att: Attempts, ctx: TaskContext) -> HandlerResult:
    return run_business_rules(ctx, engine_db=att.db, owner_id=OWNER)


def expected_open(n: int) -> set[str]:
    return {f"order-{i:06d}" for i in range(5, n)} | {"new-1", "new-2", "gone-000000"}


def test_b52_an_incremental_run_judges_only_its_own_keys__statements_do_not_grow_with_the_table(
        engine_db: EngineDB, tmp_path: Path, counted: Counted) -> None:
    """The same run (10 rows written) at two table sizes: the same flags change, by the same statements."""
    big = 70_000 if engine_db.is_postgres else 40_000
    att = Attempts(engine_db)
    sent = {}
    for n in (2_000, big):
        ctx, rule = scenario(att, tmp_path / str(n), n, key=f"size:{n}")
        counted.engine = counted.warehouse = 0
        result = judge_run(att, ctx)
        sent[n] = (counted.engine, counted.warehouse)
        assert (result.counts.source, result.counts.insert, result.counts.delete, result.counts.target) == (
            10, 2, 5, n - 5 + 2 + 1), result.message
        assert f"the keys run {ctx.pipeline_run_id} wrote: 10 row(s) judged" in (result.message or "")
        # order-000010 meets the rule now and gone-000000 has no row: both outside the run's keys, left alone
        assert open_keys(engine_db, rule) == expected_open(n)
    assert sent[2_000] == sent[big], f"statements (Engine DB, warehouse) by table size: {sent}"


def test_b52_a_forced_run_checks_in_full__clears_keys_that_pass_now_and_keys_gone_from_the_table(
        att: Attempts, tmp_path: Path) -> None:
    n = 3_000
    ctx, rule = scenario(att, tmp_path, n)
    result = judge_run(att, replace(ctx, force=True))
    assert "a full check (etl-craft run --force)" in (result.message or "")
    assert (result.counts.source, result.counts.insert, result.counts.delete) == (n + 2, 2, 7)
    assert open_keys(att.db, rule) == expected_open(n) - {"order-000010", "gone-000000"}


@pytest.mark.parametrize(("day", "run_date", "full"), [
    (None, SUNDAY, True), (None, MONDAY, False), ("monday", MONDAY, True), ("monday", SUNDAY, False),
    ("never", SUNDAY, False),
])
def test_b52_full_check_day_checks_in_full_on_its_weekday(att: Attempts, tmp_path: Path, day: str | None,
                                                          run_date: date, full: bool) -> None:
    n = 1_500
    ctx, rule = scenario(att, tmp_path, n, full_check_day=day)
    result = judge_run(att, replace(ctx, run_date=run_date))
    assert ("Orchestration.Full_check_day" in (result.message or "")) is full, result.message
    gone = {"order-000010", "gone-000000"} if full else set()
    assert open_keys(att.db, rule) == expected_open(n) - gone


def test_b52_a_table_without_pipeline_run_id_is_judged_whole_with_a_warning(
        att: Attempts, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    n = 1_500
    ctx, rule = scenario(att, tmp_path, n, run_column=False)
    with caplog.at_level(logging.WARNING, logger=business_rules.__name__):
        result = judge_run(att, ctx)
    assert "a full check (the table has no PIPELINE_RUN_ID)" in (result.message or "")
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "has no PIPELINE_RUN_ID column" in warned[0] and "add the column" in warned[0]
    assert open_keys(att.db, rule) == expected_open(n) - {"order-000010", "gone-000000"}


def test_b52_more_keys_than_a_batch__are_recorded_in_batches_of_1000__a_refused_batch_rolls_back_the_others(
        att: Attempts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that wrote 2,500 keys sends three record_rule_scope batches on one Engine DB transaction: when the
    third is refused, the flags the first two cleared stay open; once it is not, all three are recorded."""
    n = 3_000
    ctx, rule = scenario(att, tmp_path, n)
    with duckdb.connect(str(tmp_path / "warehouse.duckdb")) as con:
        con.execute(f"UPDATE orders SET PIPELINE_RUN_ID = {ctx.pipeline_run_id}, amount = 7"
                    " WHERE order_id BETWEEN 'order-000000' AND 'order-002499'")
    calls: list[int] = []
    original = business_rules.call_in
    refuse = {3}

    def spy(db: EngineDB, conn: Any, name: str, **args: Any) -> Any:
        if name == "record_rule_scope":
            calls.append(len(json.loads(args["scope_keys"])))
            if len(calls) in refuse:  # a failing key outside the batch's scope: the Engine DB refuses the batch
                args = {**args, "failing_keys": '["not-in-scope"]'}
        return original(db, conn, name, **args)

    monkeypatch.setattr(business_rules, "call_in", spy)
    before = open_keys(att.db, rule)
    with pytest.raises(RefusedByPolicyError, match="^failing_keys is a JSON array of the keys of scope_keys"):
        judge_run(att, ctx)
    assert calls == [1000, 1000, 502]  # new-1, new-2 and the 2,500 keys the run wrote
    assert open_keys(att.db, rule) == before, "the flags the first two batches cleared are open again"

    refuse.clear()
    calls.clear()
    result = judge_run(att, ctx)
    assert calls == [1000, 1000, 502]
    assert (result.counts.insert, result.counts.delete) == (2, 2_500), result.message
    assert open_keys(att.db, rule) == (before - {f"order-{i:06d}" for i in range(2_500)}) | {"new-1", "new-2"}
