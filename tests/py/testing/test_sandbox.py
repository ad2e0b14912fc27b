"""The in-memory databases of etl-craft test: the engine schema migrated once per process and copied per project;
one DuckDB connection per process with a database of its own per test; the time budget interrupting a statement."""

from __future__ import annotations

from pathlib import Path

import pytest

from etlcraft.engine.db import EngineDB
from etlcraft.engine.migrations import engine_migrations
from etlcraft.testing import sandbox
from etlcraft.testing.files import Deadline
from etlcraft.testing.runner import load_project
from tests.py.testing.conftest import make_project
from tests.py.testing.test_hermetic import manifest, run_json, src

SLOW_MIGRATION = """
INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, TARGET_OBJECT)
SELECT PIPELINE_ID, 'slow', 'SQL', 'OVERWRITE_TABLE', 'slow.sql', 'main.t_slow'
  FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'actions';
"""
#: Minutes of work for DuckDB (10^16 pairs): only an interrupt ends it within a test's budget.
SLOW_SELECT = "SELECT COUNT(*) AS n FROM generate_series(1, 100000000) a, generate_series(1, 100000000) b\n"


def test_engine_db__second_project__engine_migrations_not_applied_again(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    load_project(make_project(tmp_path, "first"))
    engine_scripts = {m.sql for m in engine_migrations("sqlite", "")}
    ran: list[str] = []
    real = EngineDB.execute_script

    def spy(self: EngineDB, conn: object, script: str) -> None:
        ran.append(script)
        real(self, conn, script)  # type: ignore[arg-type]

    monkeypatch.setattr(EngineDB, "execute_script", spy)
    project = load_project(make_project(tmp_path, "second"))
    assert ran and not engine_scripts & set(ran), "the engine's migrations ran again for a second project"
    assert {p.code for p in project.metadata.pipelines} >= {"actions", "customer_orders"}


def test_engine_db__copies__one_project_metadata_never_in_another(tmp_path: Path) -> None:
    first = make_project(tmp_path, "first")
    (first / "migrations" / "0004_extra.sql").write_text(
        "INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'only_first' FROM CFG_PROJECTS;\n",
        encoding="utf-8")
    assert "only_first" in {p.code for p in load_project(first).metadata.pipelines}
    second = load_project(make_project(tmp_path, "second"))
    assert "only_first" not in {p.code for p in second.metadata.pipelines}


def test_warehouse__two_tests__one_connection_and_no_table_of_the_first(project: Path) -> None:
    manifest(project, "a_loads", {"relations": {**src(project), "raw.extra": {"fixture": "fixtures/src.jsonl"}},
                                  "task": "overwrite", "expect": {"rows": 2}})
    (project / "sql_files" / "extra.sql").write_text("SELECT id, name FROM raw.extra\n", encoding="utf-8")
    (project / "migrations" / "0004_extra.sql").write_text(
        "UPDATE CFG_TASKS SET SQL_FILE = 'extra.sql' WHERE TASK_CODE = 'append';\n", encoding="utf-8")
    manifest(project, "b_reads", {"relations": src(project), "task": "append", "expect": {"rows": 2}})
    shared = sandbox._shared_warehouse()
    code, report = run_json(project, ".")
    first, second = report["tests"]
    assert first["status"] == "passed", first
    # raw.extra existed only in the first test's database: the second test's SELECT cannot see it.
    assert (second["status"], second["errors"][0]["code"]) == ("blocked", "warehouse_error"), second
    assert code == 2
    # The first test ended clean, so its connection served the second; the second's failure closed it.
    assert sandbox._shared_warehouse() is not shared


def test_warehouse__clean_tests__the_connection_is_kept(project: Path) -> None:
    manifest(project, "a", {"relations": src(project), "task": "overwrite", "expect": {"rows": 2}})
    manifest(project, "b", {"relations": src(project), "task": "scd1", "expect": {"rows": 2}})
    shared = sandbox._shared_warehouse()
    code, report = run_json(project, ".")
    assert code == 0, report
    assert sandbox._shared_warehouse() is shared


def test_warehouse__temporary_table_left_behind__next_test_gets_a_new_connection() -> None:
    with sandbox.warehouse_for_test(Deadline(30)) as warehouse, warehouse.transaction() as session:
        session.run("CREATE TEMP TABLE leftover (a INTEGER)")
        first = warehouse
    with sandbox.warehouse_for_test(Deadline(30)) as warehouse, warehouse.transaction() as session:
        assert warehouse is not first
        assert session.scalar("SELECT COUNT(*) FROM duckdb_tables()") == 0


def test_timeout__slow_select__interrupted_and_reported_as_a_safety_violation(project: Path) -> None:
    (project / "migrations" / "0004_slow.sql").write_text(SLOW_MIGRATION, encoding="utf-8")
    (project / "sql_files" / "slow.sql").write_text(SLOW_SELECT, encoding="utf-8")
    target = manifest(project, "slow", {"relations": src(project), "task": "slow", "limits": {"timeout_seconds": 1},
                                        "expect": {"rows": 1}})
    code, report = run_json(project, target)
    test = report["tests"][0]
    assert (code, test["status"]) == (4, "blocked"), test
    error = test["errors"][0]
    assert error["code"] == "timeout" and "1 s budget (limits.timeout_seconds)" in error["message"], error
    assert "interrupted" in error["message"], error


def test_select__tests_of_one_task_in_a_suite__read_once(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from etlcraft.testing import runner

    runner._sql_task.cache_clear()
    calls: list[str] = []
    real = runner.task_from_text

    def spy(**kwargs: object) -> object:
        calls.append(str(kwargs["task"]))
        return real(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "task_from_text", spy)
    for name in ("a", "b", "c"):
        manifest(project, name, {"relations": src(project), "task": "overwrite", "expect": {"rows": 2}})
    code, report = run_json(project, ".")
    assert code == 0, report
    assert calls == ["actions.overwrite"], calls


def test_timeout__suite_after_a_timed_out_test__one_budget_thread_and_the_next_tests_pass(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    (project / "migrations" / "0004_slow.sql").write_text(SLOW_MIGRATION, encoding="utf-8")
    (project / "sql_files" / "slow.sql").write_text(SLOW_SELECT, encoding="utf-8")
    manifest(project, "a_slow", {"relations": src(project), "task": "slow", "limits": {"timeout_seconds": 1},
                                 "expect": {"rows": 1}})
    for name in ("b", "c"):
        manifest(project, name, {"relations": src(project), "task": "overwrite", "expect": {"rows": 2}})
    started: list[str] = []
    real = threading.Thread.start

    def spy(self: threading.Thread) -> None:
        started.append(self.name)
        real(self)

    monkeypatch.setattr(threading.Thread, "start", spy)
    code, report = run_json(project, ".")
    slow, *others = report["tests"]
    assert (slow["status"], slow["errors"][0]["code"]) == ("blocked", "timeout"), slow
    assert [t["status"] for t in others] == ["passed", "passed"], others
    assert code == 4
    # The budget is watched by one thread for the whole suite (none when this thread's watchdog already runs).
    assert len(started) <= 1, started


def test_timeout__budget_ends_between_two_statements__the_next_statement_is_interrupted() -> None:
    import time

    from etlcraft.testing.errors import SafetyViolation

    # DuckDB forgets an interrupt that arrives while no statement runs: the budget must still stop the next one.
    with pytest.raises(SafetyViolation) as raised:
        with sandbox.warehouse_for_test(Deadline(0.2)) as warehouse:
            time.sleep(0.5)
            with warehouse.transaction() as session:  # seconds of work when nothing stops it
                session.scalar("SELECT COUNT(*) FROM range(40000) a, range(40000) b WHERE a.range + b.range > 0")
    assert raised.value.code == "timeout", raised.value


def test_warehouse__shared_connection__no_progress_bar_on_stdout_and_one_thread() -> None:
    # DuckDB draws a progress bar on stdout for a statement running over two seconds, even when stdout is not a
    # terminal: it would land in the middle of a JSON report. One thread: a test's statements are tiny.
    sandbox._close_shared()
    with sandbox.warehouse_for_test(Deadline(30)) as warehouse, warehouse.transaction() as session:
        assert session.rows("SELECT current_setting('enable_progress_bar'), current_setting('threads')") == [
            (False, sandbox.DUCKDB_THREADS)]


#: Runs `etl-craft test .` in a new interpreter and prints the warehouse drivers it imported.
_DRIVERS_IMPORTED = """
import runpy, sys
sys.argv = ["etl-craft", "--project", sys.argv[1], "test", "."]
try:
    runpy.run_module("etlcraft", run_name="__main__")
except SystemExit as exc:
    print("exit", exc.code)
print("imported", sorted(m for m in ("psycopg", "duckdb") if m in sys.modules))
"""


def test_start__etl_craft_test__does_not_import_psycopg(project: Path) -> None:
    import subprocess
    import sys

    manifest(project, "a", {"relations": src(project), "task": "overwrite", "expect": {"rows": 2}})
    done = subprocess.run([sys.executable, "-c", _DRIVERS_IMPORTED, str(project)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.stdout.splitlines()[-2:] == ["exit 0", "imported ['duckdb']"], done.stdout + done.stderr


READ_FILE_MIGRATION = """
INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, TARGET_OBJECT)
SELECT PIPELINE_ID, 'peek', 'SQL', 'OVERWRITE_TABLE', 'peek.sql', 'main.t_peek'
  FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'actions';
"""


def test_select__reads_a_file_of_the_machine__refused_by_the_warehouse(project: Path) -> None:
    """Hermetic: a test's SQL reads its fixtures and nothing else, not a file beside them (nor a URL)."""
    (project / "outside.csv").write_text("a\n42\n", encoding="utf-8")
    (project / "migrations" / "0004_peek.sql").write_text(READ_FILE_MIGRATION, encoding="utf-8")
    (project / "sql_files" / "peek.sql").write_text(f"SELECT a FROM read_csv('{project / 'outside.csv'}')\n",
                                                   encoding="utf-8")
    target = manifest(project, "peek", {"relations": src(project), "task": "peek", "expect": {"rows": 1}})
    code, report = run_json(project, target)
    test = report["tests"][0]
    assert (code, test["status"]) == (4, "blocked"), test
    assert [e["code"] for e in test["errors"]] == ["external_access"], test
    assert "reads a file or a URL" in test["errors"][0]["message"], test
