"""run_business_rules: one attempt of a BUSINESS_RULES task, which judges the rows of its TARGET_OBJECT against the
task's active rules (CFG_BUSINESS_RULES) and records the keys that break each one as open flags
(AUD_BUSINESS_RULE_FLAGS).

A rule judges current rows only: the active version of an SCD2 key (ACTIVE_FLAG Y) and no soft-deleted row
(DELETE_FLAG Y). A normal run judges only the keys its own run wrote (B52): the keys of the rows whose
PIPELINE_RUN_ID is the run's, one set-based query per rule in the warehouse, and the Engine DB judges again only the
flags of those keys (record_rule_scope, at most SCOPE_BATCH keys per statement): a key in scope that breaks the
rule gets a flag, one that meets it again (or has no current row left) is cleared, and every other flag is left as
it stands. A full check judges the table whole and closes every flag whose key does not break the rule any more or
is gone from the table (B21, record_rule_flags): on `etl-craft run --task-code T --force`, on a run whose run date
falls on Orchestration.Full_check_day, and always on a table without PIPELINE_RUN_ID (with a warning naming the
column). The warehouse is only read; the flags of every rule are written in one Engine DB transaction, fenced by
the attempt's owner, so a refused batch rolls back the ones before it. A task configured so that it cannot be
judged (no rule, no table, a key column the table lacks, a RULE_SQL that is not one condition) fails without
retries (SqlGuardError); a warehouse error while judging may be retried.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from etlcraft.config.keys import WEEKDAYS
from etlcraft.core.actor import current_actor
from etlcraft.core.errors import EtlCraftError, SqlGuardError
from etlcraft.core.selects import SelectError, read_condition
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call_in
from etlcraft.engine.queries import fetch_all
from etlcraft.handlers.context import Counts, HandlerResult, TaskContext
from etlcraft.warehouse.connection import Session, driver_errors, driver_message, open_warehouse
from etlcraft.warehouse.names import TableName, parse_table_name

log = logging.getLogger(__name__)

#: The longest key a flag holds (AUD_BUSINESS_RULE_FLAGS.BUSINESS_RULE_KEY).
KEY_LENGTH = 512
#: The most keys one record_rule_scope statement carries.
SCOPE_BATCH = 1000
#: The column every SQL target carries: the run that wrote the row; a normal run judges the keys of its own rows.
RUN_COLUMN = "PIPELINE_RUN_ID"


@dataclass(frozen=True)
class Rule:
    rule_id: int
    code: str
    rule_type: str
    key_column: str
    condition: str


@dataclass(frozen=True)
class Judgement:
    rule: Rule
    failing: list[str]
    #: The keys judged (those the run wrote), failing among them; None: the whole table was judged.
    scope: list[str] | None = None


@dataclass(frozen=True)
class Recorded:
    """What the Engine DB did with one rule's judgement: flags opened and closed, and how many are open now."""

    flagged: int
    cleared: int
    active: int


def run_business_rules(ctx: TaskContext, *, engine_db: EngineDB, owner_id: str) -> HandlerResult:
    """Judge the task's table against each of its active rules; record the flags; the counts and a summary."""
    task = f"{ctx.pipeline_code}.{ctx.task_code}"
    full_check = full_check_reason(ctx)
    warehouse = open_warehouse(ctx.config)
    try:
        dialect = warehouse.dialect.name
        table = _table(ctx, task, dialect)
        rules = _rules(ctx, task, engine_db, dialect)
        try:
            with warehouse.transaction() as session:
                run_id = None if full_check else ctx.pipeline_run_id
                judged, no_key, judgements = judge(session, task, table, rules, run_id=run_id)
        except driver_errors() as exc:
            raise EtlCraftError(
                f"BUSINESS_RULES task {task} on {table}: a rule could not be judged in the {dialect} warehouse: "
                f"{driver_message(exc)}; no flag was recorded: fix the rule's RULE_SQL with a project migration, "
                "then run the task again") from exc
    finally:
        warehouse.dispose()
    recorded = []
    with engine_db.write(current_actor()) as conn:
        for judgement in judgements:
            recorded.append((judgement, _record(engine_db, conn, ctx, owner_id, judgement)))
    flagged = sum(row.flagged for _, row in recorded)
    cleared = sum(row.cleared for _, row in recorded)
    active = sum(row.active for _, row in recorded)
    parts = [f"{j.rule.code} ({j.rule.rule_type}): {len(j.failing):,} key(s) break it, {row.flagged:,} newly flagged, "
             f"{row.cleared:,} cleared" for j, row in recorded]
    unkeyed = f"; {no_key:,} row(s) with no key could not be flagged" if no_key else ""
    full = all(j.scope is None for j in judgements)
    how = (f"a full check ({full_check or f'the table has no {RUN_COLUMN}'})" if full
           else f"the keys run {ctx.pipeline_run_id} wrote")
    message = (f"BUSINESS_RULES on {table}, {how}: {judged:,} row(s) judged by {len(rules)} rule(s){unkeyed}; "
               + "; ".join(parts))
    log.info("%s", message)
    counts = Counts(source=judged, insert=flagged, delete=cleared, rows_written=flagged + cleared, target=active)
    return HandlerResult(counts=counts, message=message)


def full_check_reason(ctx: TaskContext) -> str | None:
    """Why this attempt judges its whole table (--force, or the weekly Full_check_day); None: only its run's keys."""
    if ctx.force:
        return "etl-craft run --force"
    day = ctx.config.orchestration.full_check_day
    if day in WEEKDAYS and WEEKDAYS[ctx.run_date.weekday()] == day:
        return f"run date {ctx.run_date.isoformat()} is a {day.capitalize()}, Orchestration.Full_check_day"
    return None


def _record(engine_db: EngineDB, conn: Any, ctx: TaskContext, owner_id: str, judgement: Judgement) -> Recorded:
    """Record one rule's judgement on `conn`: the whole list of failing keys for a full check, else the judged keys
    in batches of SCOPE_BATCH (each with its failing keys); the counts summed over the batches."""
    rule_id = judgement.rule.rule_id
    if judgement.scope is None:
        row = call_in(engine_db, conn, "record_rule_flags", attempt_id=ctx.attempt_id, owner_id=owner_id,
                      business_rule_id=rule_id, failing_keys=json.dumps(judgement.failing))[0]
        return Recorded(int(row.flagged), int(row.cleared), int(row.active))
    failing = set(judgement.failing)
    flagged = cleared = active = 0
    for start in range(0, max(len(judgement.scope), 1), SCOPE_BATCH):
        batch = judgement.scope[start:start + SCOPE_BATCH]
        row = call_in(engine_db, conn, "record_rule_scope", attempt_id=ctx.attempt_id, owner_id=owner_id,
                      business_rule_id=rule_id, scope_keys=json.dumps(batch),
                      failing_keys=json.dumps([k for k in batch if k in failing]))[0]
        flagged, cleared, active = flagged + int(row.flagged), cleared + int(row.cleared), int(row.active)
    return Recorded(flagged, cleared, active)


def _table(ctx: TaskContext, task: str, dialect: str) -> TableName:
    if not ctx.target_object:
        raise SqlGuardError(f"BUSINESS_RULES task {task} has no TARGET_OBJECT: set it to the table its rules judge "
                            "with a project migration")
    try:
        return parse_table_name(ctx.target_object, dialect)
    except ValueError as exc:
        raise SqlGuardError(f"BUSINESS_RULES task {task}: TARGET_OBJECT {exc}; correct it with a project "
                            "migration") from None


def _rules(ctx: TaskContext, task: str, engine_db: EngineDB, dialect: str) -> list[Rule]:
    with engine_db.read() as conn:
        rows = fetch_all(engine_db, conn, "business_rules_of", task_id=ctx.task_id)
    if not rows:
        raise SqlGuardError(f"BUSINESS_RULES task {task} has no active rule: add rows to CFG_BUSINESS_RULES with its "
                            f"TASK_ID ({ctx.task_id}) with a project migration, or switch the task off")
    rules = []
    for row in rows:
        try:
            condition = read_condition(row["rule_sql"], dialect, source=f"rule {row['rule_code']}")
        except SelectError as exc:
            raise SqlGuardError(f"BUSINESS_RULES task {task}: the RULE_SQL of rule {row['rule_code']} {exc.found}; "
                                f"{exc.remedy}; correct it with a project migration") from None
        rules.append(Rule(int(row["business_rule_id"]), row["rule_code"], row["rule_type"], row["key_column"],
                          condition))
    return rules


def judge(session: Session, task: str, table: TableName, rules: list[Rule], *,
          run_id: int | None = None) -> tuple[int, int, list[Judgement]]:
    """Rows judged, rows without a key, and the keys breaking each rule: current rows only (B21). With run_id, only
    the keys of the rows that run wrote (B52), each rule in one query, when the table has PIPELINE_RUN_ID."""
    dialect = session.dialect
    ref = dialect.table(table)
    columns = {name.lower(): name for name, _ in session.rows(dialect.columns_sql(table))}
    if not columns:
        raise SqlGuardError(f"BUSINESS_RULES task {task}: the table {table} does not exist in the warehouse; "
                            "create it first (a SQL task upstream of this one), or correct TARGET_OBJECT")
    current = ["1 = 1"]
    if "active_flag" in columns:
        current.append(f"t.{dialect.quote(columns['active_flag'])} = 'Y'")
    if "delete_flag" in columns:
        current.append(f"COALESCE(t.{dialect.quote(columns['delete_flag'])}, 'N') <> 'Y'")
    where = " AND ".join(current)
    run_column = columns.get(RUN_COLUMN.lower())
    if run_id is not None and run_column is None:
        log.warning("BUSINESS_RULES task %s: the table %s has no %s column, so its rules judge the whole table on "
                    "every run; add the column %s (BIGINT, the run that wrote the row, as etl-craft's SQL targets "
                    "carry it) so a run judges only the keys it wrote", task, table, RUN_COLUMN, RUN_COLUMN)
        run_id = None
    wrote = None if run_id is None else f"{dialect.quote(run_column or RUN_COLUMN)} = {dialect.literal(run_id)}"
    judged = int(session.scalar(f"SELECT COUNT(*) FROM {ref} t WHERE {where}"
                                + ("" if wrote is None else f" AND t.{wrote}")))
    judgements, no_key = [], 0
    for rule in rules:
        key = columns.get(rule.key_column.lower())
        if key is None:
            raise SqlGuardError(f"BUSINESS_RULES task {task}: rule {rule.code} names KEY_COLUMN {rule.key_column}, "
                                f"which {table} does not have (its columns: {', '.join(columns.values())}); "
                                "correct KEY_COLUMN with a project migration")
        column = f"t.{dialect.quote(key)}"
        breaks = f"NOT COALESCE((\n{rule.condition}\n), FALSE)"
        scope: list[str] | None = None
        if wrote is None:
            failing = [str(k) for (k,) in session.rows(
                f"SELECT DISTINCT CAST({column} AS VARCHAR) FROM {ref} t WHERE {where} AND {column} IS NOT NULL AND "
                f"{breaks}\nORDER BY 1")]
            no_key = max(no_key, int(session.scalar(
                f"SELECT COUNT(*) FROM {ref} t WHERE {where} AND {column} IS NULL AND {breaks}")))
        else:
            # Every key the run wrote, whether a current row of it breaks the rule: a key whose current row is gone
            # (soft-deleted, or only a closed SCD2 version left) is judged too, and its flag cleared.
            found = session.rows(
                f"SELECT CAST({column} AS VARCHAR), MAX(CASE WHEN {where} AND {breaks}\nTHEN 1 ELSE 0 END) FROM {ref} t"
                f" WHERE {column} IN (SELECT w.{dialect.quote(key)} FROM {ref} w WHERE w.{wrote})"
                "\nGROUP BY 1 ORDER BY 1")
            scope = [str(k) for k, _ in found]
            failing = [str(k) for k, b in found if b]
            no_key = max(no_key, int(session.scalar(
                f"SELECT COUNT(*) FROM {ref} t WHERE {where} AND t.{wrote} AND {column} IS NULL AND {breaks}")))
        long = next((k for k in (scope if scope is not None else failing) if len(k) > KEY_LENGTH), None)
        if long is not None:
            raise SqlGuardError(f"BUSINESS_RULES task {task}: rule {rule.code} found the key {long[:40]}... of "
                                f"{len(long)} characters; a flag holds keys of up to {KEY_LENGTH}: choose a "
                                "shorter KEY_COLUMN")
        judgements.append(Judgement(rule, failing, scope))
    return judged, no_key, judgements
