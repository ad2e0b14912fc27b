"""etl-craft migrate through the real command line, on a SQLite and a PostgreSQL Engine DB: a metadata migration the
Engine DB refuses (a CHECK, UNIQUE, FOREIGN KEY or NOT NULL rule, an unknown table or column), one that closes a
dependency cycle, and one that is not UTF-8 text exits with MIGRATION's code and says which file, which statement,
which table and column, which value, what is allowed and how to fix it; nothing of the file is kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import error_specs
from etlcraft.core.states import state_machine
from etlcraft.engine.db import EngineDB
from tests.py.conftest import PgServer
from tests.py.support.cli import etl_craft
from tests.py.support.project import Task, write_project

pytestmark = pytest.mark.process

MIGRATION = error_specs()["MIGRATION"].exit
FLOW = {"flow": [Task("load"), Task("report")], "other": [Task("solo")]}
EDGES = [("report", "load", "SUCCESS")]
#: A good first statement: the refusal of a later one must take it back too.
GOOD = ("INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE)\n"
        "SELECT PIPELINE_ID, 'extra', 'PYTHON', 'work.py' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'flow';\n")


def _task(code: str, handler: str = "PYTHON", action: str | None = None) -> str:
    action_sql = "NULL" if action is None else f"'{action}'"
    return ("INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, SCRIPT_FILE)\n"
            f"SELECT PIPELINE_ID, '{code}', '{handler}', {action_sql}, 'x.sql', 'work.py'\n"
            "  FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'flow';\n")


def _edge(task: str, upstream: str, kind: str = "SUCCESS") -> str:
    return ("INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)\n"
            f"SELECT t.TASK_ID, u.TASK_ID, '{kind}' FROM CFG_TASKS t, CFG_TASKS u\n"
            f" WHERE t.TASK_CODE = '{task}' AND u.TASK_CODE = '{upstream}';\n")


def _pipeline_edge(pipeline: str, upstream: str) -> str:
    return ("INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID)\n"
            "SELECT p.PIPELINE_ID, u.PIPELINE_ID FROM CFG_PIPELINES p, CFG_PIPELINES u\n"
            f" WHERE p.PIPELINE_CODE = '{pipeline}' AND u.PIPELINE_CODE = '{upstream}';\n")


def _values(name: str) -> list[str]:
    return list(state_machine().enums[name])


#: case id -> (the migration's SQL, the statement refused, what the message must also say)
CASES: dict[str, tuple[str, int, list[str]]] = {
    "check-handler": (GOOD + _task("t2", handler="BASH"), 2,
                      ["CFG_TASKS.HANDLER is 'BASH'", "handler_is_valid", ", ".join(_values("Handler"))]),
    "check-action": (_task("t2", handler="SQL", action="UPSERT"), 1,
                     ["CFG_TASKS.ACTION is 'UPSERT'", ", ".join(_values("SqlAction"))]),
    "check-dependency-type": (GOOD + _edge("extra", "load", "MAYBE"), 2,
                              ["CFG_TASK_DEPENDENCY.DEPENDENCY_TYPE is 'MAYBE'", ", ".join(_values("DependencyType"))]),
    "check-active-flag": ("UPDATE CFG_TASKS SET ACTIVE_FLAG = 'X' WHERE TASK_CODE = 'load';\n", 1,
                          ["CFG_TASKS.ACTIVE_FLAG is 'X'", ", ".join(_values("Flag"))]),
    "check-code": (_task("bad code!"), 1,
                   ["CFG_TASKS.TASK_CODE is 'bad code!'", "code_is_identifier", "letters, digits and _", "'bad_code'"]),
    "check-self-dependency": (_edge("load", "load"), 1, ["task load wait for itself", "not_self_dependent"]),
    "check-pipeline-self-dependency": (_pipeline_edge("flow", "flow"), 1,
                                       ["pipeline flow wait for itself", "CFG_PIPELINE_DEPENDENCY"]),
    "unique-task-code": (GOOD + _task("load"), 2,
                         ["CFG_TASKS already has an active row", "TASK_CODE = 'load'", "pipeline flow"]),
    "unique-task-code-in-file": (GOOD + GOOD, 2, ["TASK_CODE = 'extra'", "an earlier statement of this file"]),
    "unique-dependency": (_edge("report", "load"), 1,
                          ["CFG_TASK_DEPENDENCY already has an active row", "(task report)", "(task load)"]),
    "unique-parameter": (("INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)\n"
                          "SELECT TASK_ID, 'RETRIES', '1' FROM CFG_TASKS WHERE TASK_CODE = 'load';\n") * 2, 2,
                         ["CFG_TASK_PARAMETERS already has an active row", "PARAMETER_NAME = 'RETRIES'"]),
    "foreign-key-pipeline": (GOOD + "INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE)"
                             " VALUES (99999, 'orphan', 'PYTHON', 'work.py');\n", 2,
                             ["CFG_TASKS.PIPELINE_ID is 99999", "names no row of CFG_PIPELINES"]),
    "foreign-key-task": ("INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)"
                         " VALUES (99999, 'RETRIES', '1');\n", 1,
                         ["CFG_TASK_PARAMETERS.TASK_ID is 99999", "names no row of CFG_TASKS"]),
    "not-null": ("INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE) SELECT PIPELINE_ID, NULL,"
                 " 'PYTHON', 'work.py' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'flow';\n", 1,
                 ["CFG_TASKS.TASK_CODE would be NULL"]),
    "unknown-table": (GOOD + "INSERT INTO CFG_TASK (TASK_CODE) VALUES ('x');\n", 2,
                      ["cfg_task", "the metadata tables are CFG_ALERT_RULES, CFG_BUSINESS_RULES"]),
    "unknown-column": ("UPDATE CFG_TASKS SET TASK_NAM = 'x' WHERE TASK_CODE = 'load';\n", 1,
                       ["task_nam", "CFG_TASKS has the columns", "TASK_NAME"]),
}

#: case id -> (the migration's SQL, what the message must say)
CYCLES: dict[str, tuple[str, list[str]]] = {
    "two-tasks": (_edge("load", "report"), ["pipeline flow", "load -> report -> load"]),
    "three-tasks": (GOOD + _edge("extra", "report") + _edge("load", "extra"),
                    ["pipeline flow", "extra -> report -> load -> extra"]),
    "two-pipelines": (_pipeline_edge("flow", "other") + _pipeline_edge("other", "flow"),
                      ["flow -> other (pipeline dependency) -> flow (pipeline dependency)",
                       "CFG_PIPELINE_DEPENDENCY"]),
    "across-pipelines": (_pipeline_edge("other", "flow") + _edge("load", "solo"),
                         ["flow -> other (task flow.load waits for other.solo) -> flow (pipeline dependency)"]),
}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A migrated project (pipelines flow: load <- report, and other: solo) and its Engine DB URL."""
    name = None
    if request.param == "postgresql":
        server: PgServer = request.getfixturevalue("pg_server")
        name = server.create()
    root = write_project(tmp_path / "project", server.url_for(name) if name else None, FLOW, EDGES)
    done = etl_craft("migrate", cwd=root)
    assert done.code == 0, done.err
    yield root, server.url_for(name) if name else f"sqlite:///{root / '.etl-craft' / 'engine.db'}"
    if name:
        server.drop(name)


def _state(url: str) -> dict[str, Any]:
    """What a refused migration must leave as it was: the ledger and every metadata table, with the change log."""
    db = EngineDB(url)
    try:
        with db.read() as conn:
            found = {}
            for table in ("SCHEMA_MIGRATIONS", "CFG_PIPELINES", "CFG_TASKS", "CFG_TASK_PARAMETERS",
                          "CFG_TASK_DEPENDENCY", "CFG_PIPELINE_DEPENDENCY", "AUD_METADATA_CHANGES"):
                rows = conn.execute(sa.text(f"SELECT * FROM {db.qualify(table)}")).all()
                found[table] = sorted((tuple(str(v) for v in r) for r in rows), key=repr)
            return found
    finally:
        db.dispose()


def _refused(root: Path, url: str, sql: str | bytes) -> str:
    path = root / "migrations" / "0002_more.sql"
    path.write_bytes(sql if isinstance(sql, bytes) else sql.encode("utf-8"))
    before = _state(url)
    done = etl_craft("migrate", cwd=root)
    said = done.out + done.err
    assert done.code == MIGRATION, said
    assert "Traceback" not in said and "unexpectedly" not in said, said
    assert _state(url) == before, "nothing of a refused migration is kept"
    assert "migrations/0002_more.sql" in said, said
    assert "nothing of this migration was applied" in said or "nothing was applied" in said, said
    return said


@pytest.mark.parametrize("case", list(CASES))
def test_a_refused_statement_is_explained_and_nothing_of_the_file_is_kept(project: tuple[Path, str],
                                                                           case: str) -> None:
    root, url = project
    sql, number, expected = CASES[case]
    said = _refused(root, url, sql)
    first_line = sql.split(";\n")[number - 1].strip().splitlines()[0][:60]
    assert f"statement {number} (line " in said and first_line in said, said
    for text in expected:
        assert text.lower() in said.lower(), (text, said)
    assert "refused the statement" not in said, "the database's bare words are explained, not echoed"


@pytest.mark.parametrize("case", list(CYCLES))
def test_a_migration_that_closes_a_dependency_cycle_is_refused_naming_the_cycle(project: tuple[Path, str],
                                                                                 case: str) -> None:
    root, url = project
    sql, expected = CYCLES[case]
    said = _refused(root, url, sql)
    assert "cycle" in said, said
    for text in expected:
        assert text in said, (text, said)


def test_a_migration_that_is_not_utf8_is_refused_with_its_byte_offset(project: tuple[Path, str]) -> None:
    root, url = project
    said = _refused(root, url, b"UPDATE CFG_TASKS SET TASK_NAME = 'caf\xe9' WHERE TASK_CODE = 'load';\n")
    assert "not UTF-8" in said and "byte 37 (line 1)" in said and "0xe9" in said, said


def test_a_folder_named_like_a_migration_is_refused(project: tuple[Path, str]) -> None:
    root, url = project
    (root / "migrations" / "0002_folder.sql").mkdir()
    before = _state(url)
    done = etl_craft("migrate", cwd=root)
    assert done.code == MIGRATION, done.err
    assert "0002_folder.sql is a folder, not a migration file" in done.err, done.err
    assert _state(url) == before


def test_a_cycle_that_was_already_there_does_not_refuse_an_unrelated_migration(project: tuple[Path, str]) -> None:
    """Only a cycle the file closes refuses it: one the Engine DB had before (an older etl-craft let it in; validate
    reports it) does not block a migration that changes something else."""
    root, url = project
    db = EngineDB(url)
    try:
        with acting_as(Actor("tester@cli", ActorKind.HUMAN)), db.write() as conn:
            db.set_migration(conn, "0001_pipelines.sql")
            for statement in _edge("load", "report").split(";")[:1]:
                conn.execute(sa.text(statement))
            db.set_migration(conn, None)
    finally:
        db.dispose()
    (root / "migrations" / "0002_more.sql").write_text(GOOD, encoding="utf-8")
    done = etl_craft("migrate", cwd=root)
    assert done.code == 0, done.err
    closing = _pipeline_edge("flow", "other") + _pipeline_edge("other", "flow")
    (root / "migrations" / "0003_more.sql").write_text(closing, encoding="utf-8")
    done = etl_craft("migrate", cwd=root)
    assert done.code == MIGRATION and "flow -> other (pipeline dependency)" in done.err, done.err
