"""sql/state_machine.yaml, the value-set CHECK constraints of the engine migrations and of a migrated Engine DB,
ENG_TRANSITIONS and ENG_STATUSES must say the same thing on both dialects; this fails when any of them drifts.

Every engine migration is read, in order, and the last definition of each CHECK constraint counts (migration 0010
replaces the hot tables' checks on PostgreSQL). A value-set CHECK that maps to no value set of the YAML file fails
here: each closes one. (tests/py/unit/test_generated_enums.py compares the YAML file with the Python enums.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from etlcraft.core.states import state_machine
from etlcraft.engine.db import EngineDB
from etlcraft.engine.migrations import engine_migrations
from etlcraft.paths import sql_dir
from tests.py.support.value_checks import Checks, ValueCheck, apply, catalog_checks, migrated_checks, statements

DIALECTS = ["sqlite", "postgresql"]

#: The value set of each CHECKed column that is one of state_machine.yaml's `enums`: (table, column) -> enum name.
#: Not listed: an entity's STATUS column (its `statuses`, found by the entity's `table`) and a Y/N column, whose
#: CHECK the flag macro names <column>_is_y_or_n (`Flag`).
ENUM_COLUMNS = {
    ("SCHEMA_MIGRATIONS", "STREAM"): "MigrationStream",
    ("CFG_API_TOKENS", "TOKEN_ROLE"): "TokenRole",
    ("SCHEMA_MIGRATIONS", "KIND"): "MigrationKind",
    ("AUD_PIPELINES_RUN_LOG", "TRIGGER_KIND"): "TriggerKind",
    ("AUD_PIPELINES_RUN_LOG", "SLA_STATUS"): "SlaStatus",
    ("AUD_PIPELINES_RUN_LOG", "STARTED_BY_KIND"): "ActorKind",
    ("AUD_OVERSEERS", "STARTED_BY_KIND"): "ActorKind",
    ("AUD_WORKERS", "STARTED_BY_KIND"): "ActorKind",
    ("AUD_PROJECT_BUNDLES", "CREATED_BY_KIND"): "ActorKind",
    ("CFG_POOLS", "PROVIDER"): "PoolProvider",
    ("AUD_PIPELINES_RUN_LOG", "ENDED_BY_KIND"): "ActorKind",
    ("AUD_TASK_ATTEMPTS", "REQUESTED_BY_KIND"): "ActorKind",
    ("AUD_TASK_ATTEMPTS", "SLOT_KIND"): "SlotKind",
    ("AUD_GATE_DECISIONS", "RESULT"): "GateResult",
    ("AUD_GATE_DECISIONS", "DECIDED_BY_KIND"): "ActorKind",
    ("AUD_GATE_WAITS", "OUTCOME"): "GateWaitOutcome",
    ("AUD_RUN_INTERVENTIONS", "INTERVENTION"): "Intervention",
    ("AUD_RUN_INTERVENTIONS", "REQUESTED_BY_KIND"): "ActorKind",
    ("AUD_PIPELINE_PAUSES", "PAUSED_BY_KIND"): "ActorKind",
    ("AUD_PIPELINE_PAUSES", "RESUMED_BY_KIND"): "ActorKind",
    ("AUD_ACTIONS", "ACTOR_KIND"): "ActorKind",
    ("AUD_ACTIONS", "OUTCOME"): "ActionOutcome",
    ("AUD_METADATA_CHANGES", "ACTOR_KIND"): "ActorKind",
    ("AUD_METADATA_CHANGES", "OPERATION"): "MetadataOperation",
    ("AUD_TASK_OFFSETS", "OFFSET_TYPE"): "OffsetType",
    ("AUD_TARGET_HASH_VERSION", "RECOMPUTED_BY_KIND"): "ActorKind",
    ("CFG_PIPELINES", "OVERLAP_POLICY"): "OverlapPolicy",
    ("CFG_TASKS", "HANDLER"): "Handler",
    ("CFG_TASKS", "ACTION"): "SqlAction",
    ("CFG_TASKS", "RUN_CONDITION"): "RunCondition",
    ("CFG_PIPELINE_DEPENDENCY", "DEPENDENCY_TYPE"): "DependencyType",
    ("CFG_TASK_DEPENDENCY", "DEPENDENCY_TYPE"): "DependencyType",
    ("CFG_BUSINESS_RULES", "RULE_TYPE"): "RuleType",
    ("ENG_SETTINGS", "SETTING"): "EngineSetting",
    ("ENG_SETTINGS", "SET_BY_KIND"): "ActorKind",
    ("CFG_ALERT_RULES", "ALERT_KIND"): "AlertKind",
    ("AUD_ALERTS", "ALERT_KIND"): "AlertKind",
    ("AUD_ALERT_DELIVERIES", "DELIVERY_STATUS"): "DeliveryStatus",
}


def _migrated(dialect: str) -> Checks:
    migrations = engine_migrations(dialect, "etl_craft")
    assert [m.source for m in migrations] == [f"sql/migrations/{p.name}"
                                             for p in sorted((sql_dir() / "migrations").glob("*.sql.j2"))]
    return migrated_checks(migrations)


def yaml_value_set(check: ValueCheck) -> tuple[str, tuple[str, ...]] | None:
    """The name and values of the state_machine.yaml value set a CHECK closes; None when it maps to none."""
    sm = state_machine()
    for entity in sm.entities:
        if (check.table, check.column) == (entity.table, "STATUS"):
            return f"the statuses of {entity.name}", entity.statuses
    name = "Flag" if check.name.endswith("_is_y_or_n") else ENUM_COLUMNS.get((check.table, check.column))
    return (f"the value set {name}", sm.enums[name]) if name in sm.enums else None


def _drift(check: ValueCheck) -> str | None:
    where = f"CHECK {check.name} on {check.table}.{check.column} (last defined by {check.source})"
    found = yaml_value_set(check)
    if found is None:
        return (f"{where} closes the value set {list(check.values)}, which maps to no value set of "
                "sql/state_machine.yaml: add it to the file's enums: (then run make enums) and map "
                f"({check.table!r}, {check.column!r}) to it in ENUM_COLUMNS of {Path(__file__).name}")
    name, values = found
    if set(check.values) == set(values):
        return None
    return (f"{where} allows {list(check.values)}, but sql/state_machine.yaml gives {name}: {list(values)}; "
            f"only in the CHECK {sorted(set(check.values) - set(values))}, only in the YAML file "
            f"{sorted(set(values) - set(check.values))}; a new value needs a new migration that replaces the CHECK "
            "(docs/adr/0002)")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_value_set_check_of_the_migrations_is_its_yaml_value_set(dialect: str) -> None:
    problems = [p for check in _migrated(dialect).values() if (p := _drift(check))]
    assert not problems, f"{dialect}:\n" + "\n".join(problems)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_yaml_value_set_closes_a_check_of_the_migrations(dialect: str) -> None:
    sm = state_machine()
    used = {found[0] for check in _migrated(dialect).values() if (found := yaml_value_set(check))}
    expected = {f"the statuses of {e.name}" for e in sm.entities} | {f"the value set {name}" for name in sm.enums}
    assert not expected - used, (f"{dialect}: no CHECK constraint of sql/migrations closes {sorted(expected - used)}"
                                 " of sql/state_machine.yaml; a value set there backs a CHECK")


def test_the_migrations_keep_every_value_set_check_on_both_dialects() -> None:
    """Migration 0010 rewrote some checks on PostgreSQL only: same constraints, same values, different text."""
    assert _migrated("sqlite") == _migrated("postgresql")


def test_migrated_catalog_holds_the_value_set_checks_the_migrations_define(engine_db: EngineDB) -> None:
    with engine_db.read() as conn:
        found = catalog_checks(engine_db, conn)
    expected = _migrated("postgresql" if engine_db.is_postgres else "sqlite")
    assert found == expected
    problems = [p for check in found.values() if (p := _drift(check))]
    assert not problems, "\n".join(problems)


def _replay(*sql: str) -> Checks:
    checks: Checks = {}
    for script in sql:
        for statement in statements(script):
            apply(checks, statement, "test")
    return checks


def test_a_later_definition_of_a_check_replaces_the_earlier_one() -> None:
    checks = _replay(
        "CREATE TABLE T (A VARCHAR(8) CONSTRAINT a_is_valid CHECK (A IN ('X', 'Y')), -- a comment; with a semicolon\n"
        "  B VARCHAR(8) CONSTRAINT b_is_valid CHECK (B IN ('P')), N INT CONSTRAINT n_is_positive CHECK (N >= 1));",
        "ALTER TABLE T DROP CONSTRAINT a_is_valid,\n"
        "  ADD CONSTRAINT a_is_valid CHECK (A::text = ANY ('{X,Y,Z}'::text[]));",
        "ALTER TABLE T DROP CONSTRAINT b_is_valid;",
        "ALTER TABLE T ADD COLUMN C VARCHAR(1) CONSTRAINT c_is_y_or_n CHECK (C IN ('Y', 'N'));",
    )
    assert checks == {("T", "a_is_valid"): ValueCheck("T", "a_is_valid", "A", ("X", "Y", "Z")),
                      ("T", "c_is_y_or_n"): ValueCheck("T", "c_is_y_or_n", "C", ("Y", "N"))}


def test_a_sqlite_table_rebuild_keeps_the_new_tables_checks__a_dropped_table_has_none() -> None:
    checks = _replay(
        "CREATE TABLE T (S VARCHAR(8) CONSTRAINT status_is_valid CHECK (S IN ('A')));",
        "CREATE TABLE U (S VARCHAR(8) CONSTRAINT status_is_valid CHECK (S IN ('A')));",
        "CREATE TABLE T_NEW (S VARCHAR(8) CONSTRAINT status_is_valid CHECK (S IN ('A', 'B')));"
        "INSERT INTO T_NEW SELECT * FROM T; DROP TABLE T; ALTER TABLE T_NEW RENAME TO T; DROP TABLE U;",
    )
    assert checks == {("T", "status_is_valid"): ValueCheck("T", "status_is_valid", "S", ("A", "B"))}


@pytest.mark.parametrize(("definition", "values"), [
    ("CHECK (((status)::text = ANY ((ARRAY['QUEUED'::character varying, 'IN-PROGRESS'::character varying])::text[])))",
     ("QUEUED", "IN-PROGRESS")),
    ("CHECK (((status)::text = ANY ('{QUEUED,IN-PROGRESS}'::text[])))", ("QUEUED", "IN-PROGRESS")),
    ("CHECK (STATUS IN ('QUEUED', 'IN-PROGRESS'))", ("QUEUED", "IN-PROGRESS")),
    ("CHECK (((status)::text = 'REQUESTED'::text))", ("REQUESTED",)),
])
def test_each_written_and_catalog_form_of_a_value_set_reads_the_same(definition: str, values: tuple[str, ...]) -> None:
    checks = _replay(f"ALTER TABLE T ADD CONSTRAINT status_is_valid {definition}")
    assert checks == {("T", "status_is_valid"): ValueCheck("T", "status_is_valid", "STATUS", values)}


def test_a_check_of_another_rule_is_no_value_set() -> None:
    assert _replay("CREATE TABLE T (H VARCHAR(8), A VARCHAR(8), N INT CONSTRAINT n_is_positive CHECK (N >= 1),"
                   " CONSTRAINT sql_has_action CHECK ((H = 'SQL') = (A IS NOT NULL)),"
                   " CONSTRAINT h_is_not_sql CHECK (((h)::text <> 'SQL'::text)))") == {}


@pytest.mark.parametrize(("sql", "message"), [
    ("CREATE TABLE T (S VARCHAR(8) CHECK (S IN ('A', 'B')))", "has no name; name it after its rule"),
    ("CREATE TABLE T (S VARCHAR(8) CONSTRAINT s_is_valid CHECK (S IN ('A') OR S IS NULL))",
     "looks like a value set but is not COL IN"),
    ("CREATE TABLE T (S VARCHAR(8) CONSTRAINT s_is_valid CHECK (S IN (SELECT X FROM U)))",
     "looks like a value set but is not COL IN"),
])
def test_a_value_set_check_the_test_cannot_compare_is_refused(sql: str, message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        _replay(sql)


def test_a_check_that_maps_to_no_yaml_value_set_is_reported_with_the_remedy() -> None:
    problem = _drift(ValueCheck("AUD_NEW", "colour_is_valid", "COLOUR", ("RED", "BLUE"), "sql/migrations/0099.sql.j2"))
    assert problem is not None and "maps to no value set of sql/state_machine.yaml: add it" in problem
    problem = _drift(ValueCheck("AUD_TASK_RUN_LOG", "status_is_valid", "STATUS", ("SUCCESS", "PAUSED")))
    assert problem is not None and "only in the CHECK ['PAUSED']" in problem


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
