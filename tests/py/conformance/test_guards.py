"""The Engine DB's own rules, the same on SQLite and PostgreSQL: engine-only writes, append-only history,
stamped metadata with its change record, and the transitions of sql/state_machine.yaml."""

from __future__ import annotations

import itertools
import json
import sqlite3

import psycopg
import pytest
import sqlalchemy as sa

from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import (
    AppendOnlyError,
    EngineDbError,
    EngineOnlyWriteError,
    IllegalTransitionError,
    StampColumnError,
)
from etlcraft.core.states import state_machine
from etlcraft.engine.catalog import owned_tables
from etlcraft.engine.db import EngineDB
from tests.py.support import rows

APPEND_ONLY = ["AUD_RUN_INTERVENTIONS", "AUD_ACTIONS", "AUD_METADATA_CHANGES", "AUD_DEPENDENCY_CONSUMPTION",
               "AUD_GATE_DECISIONS"]


def _seed_run(db: EngineDB) -> dict[str, int]:
    with db.write() as conn:
        project, pipeline, task = rows.project_pipeline_task(db, conn)
        run_id = rows.run(db, conn, pipeline, "manual:1")
        task_run_id = rows.task_run(db, conn, run_id, task)
        attempt_id = rows.attempt(db, conn, task_run_id)
        rows.insert(db, conn, "AUD_RUN_INTERVENTIONS", "INTERVENTION_ID", PIPELINE_RUN_ID=run_id,
                    INTERVENTION="MARK", REQUESTED_BY="t", REQUESTED_BY_KIND="HUMAN", REQUESTED_AT=rows.ts(db))
        rows.insert(db, conn, "AUD_ACTIONS", "ACTION_ID", STARTED_AT=rows.ts(db), ACTOR="t", ACTOR_KIND="HUMAN",
                    COMMAND="run", ARGUMENTS="{}")
    return {"project": project, "pipeline": pipeline, "task": task, "run": run_id, "task_run": task_run_id,
            "attempt": attempt_id}


def _plain_write(db: EngineDB, sql: str) -> None:
    """Run one statement on a connection that is not etl-craft's (a DBA's shell, a BI tool)."""
    if db.is_postgres:
        with psycopg.connect(db.url.set(drivername="postgresql").render_as_string(hide_password=False)) as conn:
            conn.execute(f"SET search_path TO {db.schema}")
            conn.execute(sql)
    else:
        conn = sqlite3.connect(str(db.url.database))
        try:
            conn.execute(sql)
            conn.commit()
        finally:
            conn.close()


def test_every_owned_table_is_guarded(engine_db: EngineDB) -> None:
    with engine_db.read() as conn:
        names = [t.name for t in owned_tables(engine_db, conn)]
    assert len(names) == 33
    assert {"SCHEMA_MIGRATIONS", "ENG_TRANSITIONS", "CFG_TASKS", "AUD_TASK_ATTEMPTS", "AUD_GATE_WAITS",
            "CFG_BUSINESS_RULES", "AUD_BUSINESS_RULE_FLAGS", "AUD_OVERSEERS", "CFG_API_TOKENS", "CFG_ALERT_RULES",
            "AUD_ALERTS", "AUD_ALERT_DELIVERIES", "AUD_PROJECT_BUNDLES"} <= set(names)


@pytest.mark.parametrize("operation", ["INSERT", "UPDATE", "DELETE"])
def test_plain_connection_writes_are_refused_on_every_table(engine_db: EngineDB, operation: str) -> None:
    _seed_run(engine_db)
    with engine_db.read() as conn:
        tables = owned_tables(engine_db, conn)
    for table in tables:
        sql = {
            "INSERT": f"INSERT INTO {table.name} DEFAULT VALUES",
            "UPDATE": f"UPDATE {table.name} SET {table.columns[-1]} = {table.columns[-1]}",
            "DELETE": f"DELETE FROM {table.name}",
        }[operation]
        if engine_db.is_postgres:
            with pytest.raises(psycopg.Error) as raised:
                _plain_write(engine_db, sql)
            assert raised.value.sqlstate == "EC001", table.name
            expected = f"{operation} on {table.name} refused: {table.name} is written only by etl-craft"
            assert expected in str(raised.value)
        else:
            with pytest.raises(sqlite3.OperationalError, match=r"(no such|unknown) function: etl_craft_"):
                _plain_write(engine_db, sql)


@pytest.mark.postgres
def test_plain_connection_truncate_is_refused_on_postgres(pg_url: str) -> None:
    db = EngineDB(pg_url)
    with db.read() as conn:
        tables = owned_tables(db, conn)
    for table in tables:
        with pytest.raises(psycopg.Error) as raised:
            _plain_write(db, f"TRUNCATE {table.name} CASCADE")
        assert raised.value.sqlstate == "EC001", table.name
    db.dispose()


def test_engine_writes_succeed_and_are_stamped(engine_db: EngineDB) -> None:
    ids = _seed_run(engine_db)
    with engine_db.read() as conn:
        created_by, updated_by = conn.execute(
            sa.text(f"SELECT CREATED_BY, UPDATED_BY FROM {engine_db.qualify('CFG_TASKS')} WHERE TASK_ID = :id"),
            {"id": ids["task"]},
        ).one()
    assert (created_by, updated_by) == ("tester@pytest", "tester@pytest")


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_append_only_tables_refuse_update_and_delete_even_from_the_engine(engine_db: EngineDB, table: str) -> None:
    _seed_run(engine_db)
    if table == "AUD_METADATA_CHANGES":
        pass  # the seed's CFG_ inserts recorded rows
    elif table in ("AUD_GATE_DECISIONS", "AUD_DEPENDENCY_CONSUMPTION"):
        _seed_gate_rows(engine_db)
    with engine_db.read() as conn:
        info = next(t for t in owned_tables(engine_db, conn) if t.name == table)
        count = conn.execute(sa.text(f"SELECT COUNT(*) FROM {engine_db.qualify(table)}")).scalar()
    assert count, f"{table} has a row to refuse changing"
    column, qualified = info.columns[-1], engine_db.qualify(table)
    for sql in (f"UPDATE {qualified} SET {column} = {column}", f"DELETE FROM {qualified}"):
        with pytest.raises(AppendOnlyError, match=f"{table}"), engine_db.write() as conn:
            conn.execute(sa.text(sql))


def _seed_gate_rows(db: EngineDB) -> None:
    with db.write() as conn:
        p2 = rows.insert(db, conn, "CFG_PIPELINES", "PIPELINE_ID", PROJECT_ID=1, PIPELINE_CODE="down")
        dep = rows.insert(db, conn, "CFG_PIPELINE_DEPENDENCY", "PIPELINE_DEPENDENCY_ID", PIPELINE_ID=p2,
                          DEPENDS_ON_PIPELINE_ID=1)
        down_run = rows.run(db, conn, p2, "manual:down")
        rows.insert(db, conn, "AUD_GATE_DECISIONS", "DECISION_ID", PIPELINE_RUN_ID=down_run,
                    PIPELINE_DEPENDENCY_ID=dep, RESULT="UNSATISFIED", REASON="no upstream run", DECIDED_AT=rows.ts(db),
                    DECIDED_BY="etl-craft", DECIDED_BY_KIND="SYSTEM")
        rows.insert(db, conn, "AUD_DEPENDENCY_CONSUMPTION", "CONSUMPTION_ID", PIPELINE_RUN_ID=down_run,
                    PIPELINE_DEPENDENCY_ID=dep, CONSUMED_PIPELINE_RUN_ID=1, CONSUMED_AT=rows.ts(db))


def test_ended_attempts_are_final_and_attempts_are_never_deleted(engine_db: EngineDB) -> None:
    ids = _seed_run(engine_db)
    attempt = state_machine().entity("ATTEMPT")
    table = engine_db.qualify("AUD_TASK_ATTEMPTS")
    with engine_db.write() as conn:
        conn.execute(sa.text(f"UPDATE {table} SET STATUS = 'CLAIMED', OWNER_ID = 'w1' WHERE ATTEMPT_ID = :id"),
                     {"id": ids["attempt"]})
        rows.set_status(engine_db, conn, attempt, ids["attempt"], "RUNNING")
        rows.set_status(engine_db, conn, attempt, ids["attempt"], "FAILED")
    with pytest.raises(AppendOnlyError, match=f"ATTEMPT_ID={ids['attempt']} refused: the attempt has ended"):
        with engine_db.write() as conn:
            conn.execute(sa.text(f"UPDATE {table} SET ERROR_MESSAGE = 'rewritten' WHERE ATTEMPT_ID = :id"),
                         {"id": ids["attempt"]})
    with pytest.raises(AppendOnlyError, match="attempts are history and are never deleted"):
        with engine_db.write() as conn:
            conn.execute(sa.text(f"DELETE FROM {table}"))



@pytest.mark.parametrize("how", ["INSERT OR REPLACE", "REPLACE"])
def test_sqlite_replace_cannot_get_past_the_final_attempt_and_append_only_guards(engine_db: EngineDB, how: str) -> None:
    """SQLite resolves REPLACE by deleting the row in the way without firing its DELETE triggers: an insert over a
    taken key (the primary key or a unique index) is refused first, naming the row, and nothing changes. PostgreSQL
    has no REPLACE (a taken key is a unique violation there)."""
    if engine_db.is_postgres:
        pytest.skip("REPLACE is SQLite's")
    ids = _seed_run(engine_db)
    _seed_gate_rows(engine_db)
    attempt = state_machine().entity("ATTEMPT")
    attempts = engine_db.qualify("AUD_TASK_ATTEMPTS")
    with engine_db.write() as conn:
        conn.execute(sa.text(f"UPDATE {attempts} SET STATUS = 'CLAIMED', OWNER_ID = 'w1' WHERE ATTEMPT_ID = :id"),
                     {"id": ids["attempt"]})
        rows.set_status(engine_db, conn, attempt, ids["attempt"], "RUNNING")
        rows.set_status(engine_db, conn, attempt, ids["attempt"], "SUCCESS")
        before = {t: conn.execute(sa.text(f"SELECT * FROM {t} ORDER BY 1")).all()
                  for t in ("AUD_TASK_ATTEMPTS", "AUD_DEPENDENCY_CONSUMPTION", "AUD_GATE_DECISIONS")}
        task_run = conn.execute(sa.text(f"SELECT TASK_RUN_ID FROM {attempts}")).scalar()
    columns = "TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, QUEUED_AT, REQUESTED_BY, REQUESTED_BY_KIND"
    values = f"{task_run}, 1, 'QUEUED', '2026-01-01 00:00:00.000000+00:00', 'x', 'HUMAN'"
    refused = {
        f"{how} INTO AUD_TASK_ATTEMPTS (ATTEMPT_ID, {columns}) VALUES ({ids['attempt']}, {values})":
            f"the row ATTEMPT_ID={ids['attempt']} exists",
        f"{how} INTO AUD_TASK_ATTEMPTS ({columns}) VALUES ({values})":
            f"the row TASK_RUN_ID={task_run}, ATTEMPT_NUMBER=1 exists",
        f"{how} INTO AUD_GATE_DECISIONS (DECISION_ID, PIPELINE_RUN_ID, RESULT, REASON, DECIDED_AT, DECIDED_BY,"
        " DECIDED_BY_KIND, PIPELINE_DEPENDENCY_ID) VALUES (1, 2, 'SATISFIED', 'x', '2026-01-01', 'x', 'HUMAN', 1)":
            "the row DECISION_ID=1 exists",
        f"{how} INTO AUD_DEPENDENCY_CONSUMPTION (PIPELINE_RUN_ID, PIPELINE_DEPENDENCY_ID, CONSUMED_PIPELINE_RUN_ID,"
        " CONSUMED_REVISION, CONSUMED_AT) VALUES (2, 1, 1, 1, '2026-01-01')":
            "the row PIPELINE_RUN_ID=2 consuming run 1 revision 1 exists",
    }
    for sql, row in refused.items():
        with pytest.raises(AppendOnlyError, match=f"INSERT into .* refused: {row}"), engine_db.write() as conn:
            conn.execute(sa.text(sql))
    with engine_db.read() as conn:
        after = {t: conn.execute(sa.text(f"SELECT * FROM {t} ORDER BY 1")).all() for t in before}
    assert after == before, "nothing was replaced"

def test_metadata_changes_are_recorded_with_images_actor_and_migration(engine_db: EngineDB) -> None:
    ids = _seed_run(engine_db)
    tasks, changes = engine_db.qualify("CFG_TASKS"), engine_db.qualify("AUD_METADATA_CHANGES")
    with acting_as(Actor("carol@laptop", ActorKind.HUMAN)), engine_db.write() as conn:
        engine_db.set_migration(conn, "0002_rename.sql")
        conn.execute(sa.text(f"UPDATE {tasks} SET TASK_NAME = 'Renamed' WHERE TASK_ID = :id"), {"id": ids["task"]})
        conn.execute(sa.text(f"UPDATE {tasks} SET TASK_NAME = 'Renamed' WHERE TASK_ID = :id"), {"id": ids["task"]})
    with engine_db.read() as conn:
        found = conn.execute(sa.text(
            f"SELECT ACTOR, ACTOR_KIND, TABLE_NAME, ROW_KEY, OPERATION, BEFORE_JSON, AFTER_JSON, MIGRATION"
            f" FROM {changes} WHERE OPERATION = 'UPDATE'")).all()
        updated_by = conn.execute(sa.text(f"SELECT UPDATED_BY, CREATED_BY FROM {tasks}")).one()
    assert len(found) == 1, "an UPDATE that changes nothing records nothing"
    actor, kind, table, key, operation, before, after, migration = found[0]
    before, after = (v if isinstance(v, dict) else json.loads(v) for v in (before, after))
    assert (actor, kind, table, key, operation, migration) == (
        "carol@laptop", "HUMAN", "CFG_TASKS", f"TASK_ID={ids['task']}", "UPDATE", "0002_rename.sql")
    assert (before["TASK_NAME"], after["TASK_NAME"]) == (None, "Renamed")
    assert after["UPDATED_BY"] == "carol@laptop"
    assert tuple(updated_by) == ("carol@laptop", "tester@pytest")


def test_delete_of_metadata_is_recorded(engine_db: EngineDB) -> None:
    with engine_db.write() as conn:
        pool = rows.insert(engine_db, conn, "CFG_POOLS", "POOL_ID", POOL_NAME="spare")
    with engine_db.write() as conn:
        conn.execute(sa.text(f"DELETE FROM {engine_db.qualify('CFG_POOLS')} WHERE POOL_ID = :id"), {"id": pool})
    with engine_db.read() as conn:
        operations = conn.execute(sa.text(
            f"SELECT OPERATION FROM {engine_db.qualify('AUD_METADATA_CHANGES')} WHERE TABLE_NAME = 'CFG_POOLS'"
            " ORDER BY CHANGE_ID")).scalars().all()
    assert operations == ["INSERT", "DELETE"]


@pytest.mark.parametrize("assignment", ["CREATED_BY = 'mallory'", "UPDATED_BY = 'mallory'",
                                        "CREATED_DATE = UPDATED_DATE"])
def test_hand_set_stamps_are_refused(engine_db: EngineDB, assignment: str) -> None:
    ids = _seed_run(engine_db)
    with pytest.raises(StampColumnError, match="CFG_TASKS: CREATED_BY, CREATED_DATE, UPDATED_BY and UPDATED_DATE"):
        with acting_as(Actor("dave@host", ActorKind.HUMAN)), engine_db.write() as conn:
            if "CREATED_DATE" in assignment:
                conn.execute(sa.text(f"UPDATE {engine_db.qualify('CFG_TASKS')} SET CREATED_DATE = :t"),
                             {"t": rows.ts(engine_db)})
            else:
                conn.execute(sa.text(f"UPDATE {engine_db.qualify('CFG_TASKS')} SET {assignment}"))
    assert ids


def test_hand_set_stamps_are_refused_on_insert(engine_db: EngineDB) -> None:
    with pytest.raises(StampColumnError), engine_db.write() as conn:
        rows.insert(engine_db, conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE="p", CREATED_BY="mallory")


@pytest.mark.parametrize("code", ["load $(touch x); echo", "__init__", "__finalize__", "_x", "1abc", "a-b", "",
                                  "a" * 129, "caf\u00e9"])
def test_b47_b64_codes_that_are_not_identifiers_are_refused(engine_db: EngineDB, code: str) -> None:
    with pytest.raises(EngineDbError, match="code_is_identifier|value too long"), engine_db.write() as conn:
        rows.insert(engine_db, conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE=code)


def test_codes_that_are_identifiers_are_accepted(engine_db: EngineDB) -> None:
    with engine_db.write() as conn:
        for code in ("a", "Ab_1", "a" * 128):
            rows.insert(engine_db, conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE=code)


@pytest.mark.parametrize("entity_name", ["RUN", "TASK_RUN", "ATTEMPT"])
def test_transition_triggers_allow_exactly_the_state_machine(engine_db: EngineDB, entity_name: str) -> None:
    """Every (from, to) pair among the entity's statuses: allowed pairs succeed, the others are refused by the
    database (an ended attempt as a final row), and no pair behaves differently from sql/state_machine.yaml."""
    entity = state_machine().entity(entity_name)
    mismatches = []
    for number, (frm, to) in enumerate(itertools.product(entity.statuses, repeat=2)):
        if frm == to:
            continue
        with engine_db.write() as conn:
            # a pipeline per row: a pipeline has at most one IN-PROGRESS run (ux_one_running_run)
            _, pipeline, task = rows.project_pipeline_task(engine_db, conn, suffix=str(number))
            row_id = _row_in_status(engine_db, conn, entity, pipeline, task, number, frm)
        expected = "ok" if entity.is_allowed(frm, to) else (
            "final" if entity.name == "ATTEMPT" and frm in entity.terminal else "illegal")
        try:
            with engine_db.write() as conn:
                rows.set_status(engine_db, conn, entity, row_id, to)
            outcome = "ok"
        except IllegalTransitionError as exc:
            outcome = "illegal"
            if f"{entity.key}={row_id}: status {frm} -> {to} is not an allowed transition" not in str(exc):
                mismatches.append((frm, to, f"message: {exc}"))
        except AppendOnlyError:
            outcome = "final"
        if outcome != expected:
            mismatches.append((frm, to, outcome))
    assert mismatches == []


def _row_in_status(db: EngineDB, conn: sa.Connection, entity, pipeline: int, task: int, n: int, status: str) -> int:
    path = rows.path_to(entity, status)
    run_id = rows.run(db, conn, pipeline, f"manual:{n}", status=path[0] if entity.name == "RUN" else "IN-PROGRESS")
    if entity.name == "RUN":
        row_id = run_id
    else:
        task_run_id = rows.task_run(db, conn, run_id, task, path[0] if entity.name == "TASK_RUN" else "IN-PROGRESS")
        row_id = task_run_id if entity.name == "TASK_RUN" else rows.attempt(db, conn, task_run_id)
    for status_step in path[1:]:
        rows.set_status(db, conn, entity, row_id, status_step)
    return row_id


@pytest.mark.parametrize("entity_name", ["RUN", "TASK_RUN", "ATTEMPT"])
def test_new_rows_must_start_in_an_initial_status(engine_db: EngineDB, entity_name: str) -> None:
    entity = state_machine().entity(entity_name)
    not_initial = next(s for s in entity.statuses if s not in entity.initial)
    with engine_db.write() as conn:
        _, pipeline, task = rows.project_pipeline_task(engine_db, conn)
        run_id = rows.run(engine_db, conn, pipeline, "manual:x")
        task_run_id = rows.task_run(engine_db, conn, run_id, task)
    with pytest.raises(IllegalTransitionError, match=f"a new row cannot start in status {not_initial}"):
        with engine_db.write() as conn:
            if entity_name == "RUN":
                rows.run(engine_db, conn, pipeline, "manual:y", status=not_initial)
            elif entity_name == "TASK_RUN":
                rows.insert(engine_db, conn, "CFG_TASKS", "TASK_ID", PIPELINE_ID=pipeline, TASK_CODE="t2",
                            HANDLER="SQL", ACTION="OVERWRITE_TABLE", SQL_FILE="t.sql")
                rows.task_run(engine_db, conn, run_id, task + 1, status=not_initial)
            else:
                rows.insert(engine_db, conn, "AUD_TASK_ATTEMPTS", "ATTEMPT_ID", TASK_RUN_ID=task_run_id,
                            ATTEMPT_NUMBER=1, STATUS=not_initial, QUEUED_AT=rows.ts(engine_db),
                            REQUESTED_BY="t", REQUESTED_BY_KIND="HUMAN")


def test_one_live_attempt_per_task_run(engine_db: EngineDB) -> None:
    ids = _seed_run(engine_db)
    # PostgreSQL: the unique index; SQLite refuses the insert before it, naming the live attempt in the way
    with pytest.raises((EngineDbError, AppendOnlyError), match="(?i)unique|ux_attempt_live|its live attempt"), \
            engine_db.write() as conn:
        rows.attempt(engine_db, conn, ids["task_run"], number=2)


def test_run_keys_are_unique_per_pipeline(engine_db: EngineDB) -> None:
    ids = _seed_run(engine_db)
    with pytest.raises(EngineDbError, match="(?i)unique|ux_run_key"), engine_db.write() as conn:
        rows.run(engine_db, conn, ids["pipeline"], "manual:1")


def test_failed_transaction_leaves_nothing(engine_db: EngineDB) -> None:
    with pytest.raises(EngineDbError), engine_db.write() as conn:
        rows.insert(engine_db, conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE="kept_not")
        rows.insert(engine_db, conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE="bad code")
    with engine_db.read() as conn:
        assert conn.execute(sa.text(f"SELECT COUNT(*) FROM {engine_db.qualify('CFG_PROJECTS')}")).scalar() == 0
        assert conn.execute(sa.text(f"SELECT COUNT(*) FROM {engine_db.qualify('AUD_METADATA_CHANGES')}")).scalar() == 0


def test_b18_a_savepoint_is_nested_in_its_transaction__released_it_commits_nothing__rolled_back_it_undoes_its_part(
        engine_db: EngineDB) -> None:
    """A savepoint that holds a transaction's first write must not commit it when it is released: the transaction's
    later failure undoes it too. Left to itself, SQLite's Python driver sends no BEGIN before a SAVEPOINT, so the
    savepoint would be the transaction and its release a commit; etl-craft sends BEGIN itself."""
    projects = engine_db.qualify("CFG_PROJECTS")
    with pytest.raises(EngineDbError), engine_db.write() as conn:
        with conn.begin_nested():
            rows.insert(engine_db, conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE="released_first")
        rows.insert(engine_db, conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE="bad code")
    with engine_db.read() as conn:
        assert conn.execute(sa.text(f"SELECT COUNT(*) FROM {projects}")).scalar() == 0
        assert conn.execute(sa.text(f"SELECT COUNT(*) FROM {engine_db.qualify('AUD_METADATA_CHANGES')}")).scalar() == 0
    with engine_db.write() as conn:
        savepoint = conn.begin_nested()
        rows.insert(engine_db, conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE="undone")
        savepoint.rollback()
        rows.insert(engine_db, conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE="kept")
    with engine_db.read() as conn:
        assert conn.execute(sa.text(f"SELECT PROJECT_CODE FROM {projects}")).scalars().all() == ["kept"]


@pytest.mark.postgres
def test_transaction_that_drops_its_marker_is_refused_on_postgres(pg_url: str) -> None:
    """On PostgreSQL the marker is a transaction setting: an engine transaction that clears it writes like any
    other tool and is refused. (SQLite keeps the marker in the connection's registered functions.)"""
    db = EngineDB(pg_url)
    with pytest.raises(EngineOnlyWriteError, match="CFG_PROJECTS is written only by etl-craft"), db.write() as conn:
        conn.execute(sa.text("SELECT set_config('etl_craft.actor', '', true)"))
        rows.insert(db, conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE="p")
    db.dispose()


def test_a_stamp_only_update_is_recorded_like_any_change(engine_db: EngineDB) -> None:
    """Stamps set by hand to the acting actor and time are a change: recorded, never silent."""
    with engine_db.write() as conn:
        rows.insert(engine_db, conn, "CFG_POOLS", "POOL_ID", POOL_NAME="spare")
    pools, now = engine_db.qualify("CFG_POOLS"), engine_db.now_sql
    with acting_as(Actor("erin@host", ActorKind.HUMAN)), engine_db.write() as conn:
        conn.execute(sa.text(f"UPDATE {pools} SET UPDATED_BY = 'erin@host', UPDATED_DATE = {now}"))
    with engine_db.read() as conn:
        found = conn.execute(sa.text(
            f"SELECT ACTOR, OPERATION FROM {engine_db.qualify('AUD_METADATA_CHANGES')}"
            " WHERE TABLE_NAME = 'CFG_POOLS' ORDER BY CHANGE_ID")).all()
        stamp = conn.execute(sa.text(f"SELECT UPDATED_BY FROM {pools}")).scalar()
    assert [tuple(r) for r in found] == [("tester@pytest", "INSERT"), ("erin@host", "UPDATE")]
    assert stamp == "erin@host"
