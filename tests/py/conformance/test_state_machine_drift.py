"""sql/state_machine.yaml, the Python enums, the STATUS and value-set CHECK constraints, ENG_TRANSITIONS and
ENG_STATUSES must say the same thing on both dialects; this fails when any of them drifts."""

from __future__ import annotations

import re

import sqlalchemy as sa

from etlcraft.core.enums import ENUMS
from etlcraft.core.states import state_machine
from etlcraft.engine.db import EngineDB

#: Columns whose CHECK constraint is a value set from state_machine.yaml: (table, column) -> enum name.
ENUM_COLUMNS = {
    ("AUD_PIPELINES_RUN_LOG", "STATUS"): "RunStatus",
    ("AUD_TASK_RUN_LOG", "STATUS"): "TaskRunStatus",
    ("AUD_TASK_ATTEMPTS", "STATUS"): "AttemptStatus",
    ("AUD_PIPELINES_RUN_LOG", "TRIGGER_KIND"): "TriggerKind",
    ("AUD_PIPELINES_RUN_LOG", "SLA_STATUS"): "SlaStatus",
    ("AUD_PIPELINES_RUN_LOG", "STARTED_BY_KIND"): "ActorKind",
    ("AUD_PIPELINES_RUN_LOG", "ENDED_BY_KIND"): "ActorKind",
    ("AUD_TASK_ATTEMPTS", "REQUESTED_BY_KIND"): "ActorKind",
    ("AUD_TASK_ATTEMPTS", "SLOT_KIND"): "SlotKind",
    ("AUD_GATE_DECISIONS", "RESULT"): "GateResult",
    ("AUD_GATE_DECISIONS", "DECIDED_BY_KIND"): "ActorKind",
    ("AUD_RUN_INTERVENTIONS", "INTERVENTION"): "Intervention",
    ("AUD_RUN_INTERVENTIONS", "REQUESTED_BY_KIND"): "ActorKind",
    ("AUD_PIPELINE_PAUSES", "PAUSED_BY_KIND"): "ActorKind",
    ("AUD_PIPELINE_PAUSES", "RESUMED_BY_KIND"): "ActorKind",
    ("AUD_ACTIONS", "ACTOR_KIND"): "ActorKind",
    ("AUD_ACTIONS", "OUTCOME"): "ActionOutcome",
    ("AUD_METADATA_CHANGES", "ACTOR_KIND"): "ActorKind",
    ("AUD_METADATA_CHANGES", "OPERATION"): "MetadataOperation",
    ("AUD_TASK_OFFSETS", "OFFSET_TYPE"): "OffsetType",
    ("CFG_PIPELINES", "OVERLAP_POLICY"): "OverlapPolicy",
    ("CFG_TASKS", "HANDLER"): "Handler",
    ("CFG_TASKS", "ACTION"): "SqlAction",
    ("CFG_TASKS", "RUN_CONDITION"): "RunCondition",
    ("CFG_PIPELINE_DEPENDENCY", "DEPENDENCY_TYPE"): "DependencyType",
    ("CFG_TASK_DEPENDENCY", "DEPENDENCY_TYPE"): "DependencyType",
}


def _check_values(db: EngineDB, conn: sa.Connection, table: str, column: str) -> list[str]:
    constraint = f"{column.lower()}_is_valid"
    if db.is_postgres:
        definition = conn.execute(sa.text(
            "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid"
            " JOIN pg_namespace n ON n.oid = t.relnamespace"
            " WHERE n.nspname = :schema AND t.relname = :table AND c.conname = :name"),
            {"schema": db.schema, "table": table.lower(), "name": constraint}).scalar_one()
    else:
        sql = conn.execute(sa.text("SELECT sql FROM sqlite_master WHERE name = :t"), {"t": table}).scalar_one()
        definition = re.search(rf"CONSTRAINT {constraint} CHECK \(([^)]*)\)", sql).group(1)  # type: ignore[union-attr]
    # Migration 0010 states the hot tables' checks on PostgreSQL over one constant array: '{A,B}'::text[].
    array = re.search(r"'\{([^']*)\}'::text\[\]", definition)
    return array.group(1).split(",") if array else re.findall(r"'([^']+)'", definition)


def test_check_constraints_are_the_yaml_value_sets(engine_db: EngineDB) -> None:
    with engine_db.read() as conn:
        found = {key: _check_values(engine_db, conn, *key) for key in ENUM_COLUMNS}
    assert found == {key: [m.value for m in ENUMS[name]] for key, name in ENUM_COLUMNS.items()}


def test_every_value_set_check_is_covered() -> None:
    """A new *_is_valid CHECK in a migration must be added to ENUM_COLUMNS above."""
    from etlcraft.engine.render import render

    sql = render("migrations/0001_engine_schema.sql.j2", "sqlite", "")
    tables = re.split(r"CREATE TABLE ", sql)[1:]
    found = set()
    for block in tables:
        name = block.split()[0]
        for column in re.findall(r"CONSTRAINT (\w+)_is_valid CHECK", block):
            found.add((name, column.upper()))
    found -= {("SCHEMA_MIGRATIONS", "STREAM"), ("SCHEMA_MIGRATIONS", "KIND")}
    assert found == set(ENUM_COLUMNS)


def test_reference_tables_are_the_yaml(engine_db: EngineDB) -> None:
    sm = state_machine()
    with engine_db.read() as conn:
        transitions = set(conn.execute(sa.text(
            f"SELECT ENTITY, TABLE_NAME, FROM_STATUS, TO_STATUS FROM {engine_db.qualify('ENG_TRANSITIONS')}")).all())
        statuses = set(conn.execute(sa.text(
            f"SELECT ENTITY, STATUS, IS_TERMINAL, SUMMARY_STATUS FROM {engine_db.qualify('ENG_STATUSES')}")).all())
    assert transitions == {(e.name, e.table, frm, to) for e in sm.entities for frm, to in e.transitions}
    assert statuses == {
        (e.name, s, "Y" if s in e.terminal else "N", e.summary.get(s)) for e in sm.entities for s in e.statuses
    }
