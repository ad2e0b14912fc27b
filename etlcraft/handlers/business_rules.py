"""run_business_rules: one attempt of a BUSINESS_RULES task, which judges the rows of its TARGET_OBJECT against the
task's active rules (CFG_BUSINESS_RULES) and records the keys that break each one as open flags
(AUD_BUSINESS_RULE_FLAGS).

Every run judges the table whole: its current rows only, so the active version of an SCD2 key (ACTIVE_FLAG Y)
and no soft-deleted row (DELETE_FLAG Y). A flag stays open while its key breaks the rule and closes when the key
meets it again or has no current row left (B21). The warehouse is only read; the flags of every rule are written
in one Engine DB transaction by record_rule_flags, fenced by the attempt's owner. A task configured so that it
cannot be judged (no rule, no table, a key column the table lacks, a RULE_SQL that is not one condition) fails
without retries (SqlGuardError); a warehouse error while judging may be retried.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

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


def run_business_rules(ctx: TaskContext, *, engine_db: EngineDB, owner_id: str) -> HandlerResult:
    """Judge the task's table against each of its active rules; record the flags; the counts and a summary."""
    task = f"{ctx.pipeline_code}.{ctx.task_code}"
    warehouse = open_warehouse(ctx.config)
    try:
        dialect = warehouse.dialect.name
        table = _table(ctx, task, dialect)
        rules = _rules(ctx, task, engine_db, dialect)
        try:
            with warehouse.transaction() as session:
                judged, no_key, judgements = judge(session, task, table, rules)
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
            row = call_in(engine_db, conn, "record_rule_flags", attempt_id=ctx.attempt_id, owner_id=owner_id,
                          business_rule_id=judgement.rule.rule_id, failing_keys=json.dumps(judgement.failing))[0]
            recorded.append((judgement, row))
    flagged = sum(row.flagged for _, row in recorded)
    cleared = sum(row.cleared for _, row in recorded)
    active = sum(row.active for _, row in recorded)
    parts = [f"{j.rule.code} ({j.rule.rule_type}): {len(j.failing):,} key(s) break it, {row.flagged:,} newly flagged, "
             f"{row.cleared:,} cleared" for j, row in recorded]
    unkeyed = f"; {no_key:,} row(s) with no key could not be flagged" if no_key else ""
    message = (f"BUSINESS_RULES on {table}: {judged:,} row(s) judged by {len(rules)} rule(s){unkeyed}; "
               + "; ".join(parts))
    log.info("%s", message)
    counts = Counts(source=judged, insert=flagged, delete=cleared, rows_written=flagged + cleared, target=active)
    return HandlerResult(counts=counts, message=message)


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


def judge(session: Session, task: str, table: TableName, rules: list[Rule]) -> tuple[int, int, list[Judgement]]:
    """Rows judged, rows without a key, and the keys breaking each rule: current rows only (B21)."""
    dialect = session.dialect
    ref = dialect.table(table)
    columns = {name.lower(): name for name, _ in session.rows(dialect.columns_sql(table))}
    if not columns:
        raise SqlGuardError(f"BUSINESS_RULES task {task}: the table {table} does not exist in the warehouse; "
                            "create it first (a SQL task upstream of this one), or correct TARGET_OBJECT")
    scope = ["1 = 1"]
    if "active_flag" in columns:
        scope.append(f"t.{dialect.quote(columns['active_flag'])} = 'Y'")
    if "delete_flag" in columns:
        scope.append(f"COALESCE(t.{dialect.quote(columns['delete_flag'])}, 'N') <> 'Y'")
    where = " AND ".join(scope)
    judged = int(session.scalar(f"SELECT COUNT(*) FROM {ref} t WHERE {where}"))
    judgements, no_key = [], 0
    for rule in rules:
        key = columns.get(rule.key_column.lower())
        if key is None:
            raise SqlGuardError(f"BUSINESS_RULES task {task}: rule {rule.code} names KEY_COLUMN {rule.key_column}, "
                                f"which {table} does not have (its columns: {', '.join(columns.values())}); "
                                "correct KEY_COLUMN with a project migration")
        column = f"t.{dialect.quote(key)}"
        breaks = f"NOT COALESCE((\n{rule.condition}\n), FALSE)"
        failing = [str(k) for (k,) in session.rows(
            f"SELECT DISTINCT CAST({column} AS VARCHAR) FROM {ref} t WHERE {where} AND {column} IS NOT NULL AND "
            f"{breaks}\nORDER BY 1")]
        no_key = max(no_key, int(session.scalar(
            f"SELECT COUNT(*) FROM {ref} t WHERE {where} AND {column} IS NULL AND {breaks}")))
        long = next((k for k in failing if len(k) > KEY_LENGTH), None)
        if long is not None:
            raise SqlGuardError(f"BUSINESS_RULES task {task}: rule {rule.code} found the key {long[:40]}... of "
                                f"{len(long)} characters; a flag holds keys of up to {KEY_LENGTH}: choose a "
                                "shorter KEY_COLUMN")
        judgements.append(Judgement(rule, failing))
    return judged, no_key, judgements
