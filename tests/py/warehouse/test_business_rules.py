"""BUSINESS_RULES tasks through the real command line, on each warehouse: a SQL task keeps an SCD2 table of
customers, a rules task after it judges the table's current rows and keeps one open flag per rule and key that
breaks it. A flag closes when its key meets the rule again or has no current row left (B21): fixed (only its
closed SCD2 version still breaks the rule, and closed versions are not judged), deleted, or soft-deleted. A normal
run judges only the keys it wrote; a forced run checks the whole table (B52)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.py.support.cli import etl_craft
from tests.py.support.engine_state import engine_db, rows
from tests.py.warehouse.conftest import Wh

pytestmark = pytest.mark.process

#: The rules of task `check`: (code, type, key column, condition). email_has_at ends with a semicolon and a comment,
#: which a rule may (B57).
RULES = (("email_has_at", "REJECT", "customer_id", "email LIKE '%@%'; -- an address has an @\n"),
         ("name_given", "WARN", "customer_id", "customer_name <> ''"))


def _metadata(wh: Wh, rules: tuple[tuple[str, str, str, str], ...] = RULES) -> str:
    table = wh.t("customers")
    statements = [
        "INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('rules')",
        "INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'quality' FROM CFG_PROJECTS",
        "INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, TARGET_OBJECT)"
        f" SELECT PIPELINE_ID, 'load', 'SQL', 'SCD2_MERGE', 'load.sql', '{table}' FROM CFG_PIPELINES",
        "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)"
        " SELECT TASK_ID, 'MERGE_KEY', 'customer_id' FROM CFG_TASKS WHERE TASK_CODE = 'load'",
        "INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, TARGET_OBJECT)"
        f" SELECT PIPELINE_ID, 'check', 'BUSINESS_RULES', '{table}' FROM CFG_PIPELINES",
        "INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)"
        " SELECT c.TASK_ID, l.TASK_ID, 'SUCCESS' FROM CFG_TASKS c, CFG_TASKS l"
        " WHERE c.TASK_CODE = 'check' AND l.TASK_CODE = 'load'",
    ]
    for code, kind, key, condition in rules:
        sql = condition.replace("'", "''")
        statements.append("INSERT INTO CFG_BUSINESS_RULES (TASK_ID, RULE_CODE, RULE_TYPE, KEY_COLUMN, RULE_SQL)"
                          f" SELECT TASK_ID, '{code}', '{kind}', '{key}', '{sql}' FROM CFG_TASKS"
                          " WHERE TASK_CODE = 'check'")
    return ";\n".join(statements) + ";\n"


def _project(wh: Wh, **metadata: Any) -> Path:
    project = wh.project
    (project / "migrations").mkdir(exist_ok=True)
    (project / "migrations" / "0001_quality.sql").write_text(_metadata(wh, **metadata), encoding="utf-8")
    (project / "sql_files" / "load.sql").write_text(
        f"SELECT customer_id, customer_name, email FROM {wh.t('src')}\n", encoding="utf-8")
    wh.execute("CREATE TABLE {s}.src (customer_id INT, customer_name VARCHAR(40), email VARCHAR(80))")
    # a full check only when a test forces one, whatever the day the test runs on (B52)
    with (project / "craft-connector.yml").open("a", encoding="utf-8") as config:
        config.write("Orchestration:\n  Full_check_day: never\n")
    done = etl_craft("migrate", cwd=project)
    assert done.code == 0, done.err
    return project


def _source(wh: Wh, *customers: tuple[int, str | None, str]) -> None:
    wh.execute("DELETE FROM {s}.src", *(
        "INSERT INTO {s}.src VALUES (" + f"{key}, {'NULL' if name is None else repr(name)}, '{email}')"
        for key, name, email in customers))


def _run(project: Path, key: str, code: int = 0) -> None:
    done = etl_craft("run", "--pipeline-code", "quality", "--run-key", key, cwd=project)
    assert done.code == code, done.out + done.err


def _flags(project: Path) -> list[dict[str, Any]]:
    with engine_db(project) as db:
        return rows(db, f"SELECT r.RULE_CODE, f.BUSINESS_RULE_KEY, f.ACTIVE_FLAG, f.END_DATE, f.PIPELINE_RUN_ID,"
                        f" f.ATTEMPT_ID, f.CLEARED_BY_ATTEMPT_ID"
                        f" FROM {db.qualify('AUD_BUSINESS_RULE_FLAGS')} f"
                        f" JOIN {db.qualify('CFG_BUSINESS_RULES')} r ON r.BUSINESS_RULE_ID = f.BUSINESS_RULE_ID"
                        " ORDER BY f.FLAG_ID")


def _open(project: Path) -> set[tuple[str, str]]:
    return {(f["rule_code"], f["business_rule_key"]) for f in _flags(project) if f["active_flag"] == "Y"}


def _check_attempt(project: Path, run_id: int) -> dict[str, Any]:
    with engine_db(project) as db:
        found = rows(db, "SELECT a.* FROM {AUD_TASK_ATTEMPTS} a JOIN {AUD_TASK_RUN_LOG} tr"
                         " ON tr.TASK_RUN_ID = a.TASK_RUN_ID JOIN {CFG_TASKS} t ON t.TASK_ID = tr.TASK_ID"
                         " WHERE t.TASK_CODE = 'check' AND tr.PIPELINE_RUN_ID = :run ORDER BY a.ATTEMPT_ID", run=run_id)
    return found[-1]


def test_b21_flags_close_when_their_key_is_fixed__deleted__or_soft_deleted__closed_scd2_versions_are_not_judged(
        wh: Wh) -> None:
    """A normal run clears the flag of a key it wrote that meets the rule now; a forced run (a full check) clears
    those of keys deleted or soft-deleted outside etl-craft too (B52)."""
    project = _project(wh)
    _source(wh, (1, "Ann", "ann@example.com"), (2, "Bob", "bob-at-example"), (3, "Cy", "cy-at-example"),
            (4, "Di", "di-at-example"), (5, None, "eve@example.com"))
    _run(project, "day-1")
    assert _open(project) == {("email_has_at", "2"), ("email_has_at", "3"), ("email_has_at", "4"),
                              ("name_given", "5")}, "a NULL that the condition cannot judge breaks the rule"
    first = _check_attempt(project, 1)
    assert (first["status"], first["source_count"], first["insert_count"], first["delete_count"],
            first["rows_written"], first["target_count"]) == ("SUCCESS", 5, 4, 0, 4, 4)

    # Bob's email is fixed (the merge closes his old version and opens a new one), Cy is deleted from the table,
    # Di is soft-deleted, and Fay arrives with a bad email.
    _source(wh, (1, "Ann", "ann@example.com"), (2, "Bob", "bob@example.com"), (5, None, "eve@example.com"),
            (6, "Fay", "fay-at-example"))
    wh.execute("DELETE FROM {s}.customers WHERE customer_id = 3",
               "UPDATE {s}.customers SET DELETE_FLAG = 'Y' WHERE customer_id = 4")
    _run(project, "day-2")
    assert wh.query("SELECT COUNT(*) FROM {s}.customers WHERE customer_id = 2 AND email NOT LIKE '%@%'") == [(1,)], (
        "Bob's closed version still breaks the rule")
    # A normal run judges the keys it wrote (B52): Bob's is cleared, Fay's flagged; Cy and Di, changed outside
    # etl-craft, keep their flags until a full check.
    assert _open(project) == {("email_has_at", "3"), ("email_has_at", "4"), ("email_has_at", "6"),
                              ("name_given", "5")}
    incremental = _check_attempt(project, 2)
    assert (incremental["insert_count"], incremental["delete_count"]) == (1, 1)
    done = etl_craft("run", "--pipeline-code", "quality", "--run-key", "day-2", "--task-code", "check", "--force",
                     cwd=project)
    assert done.code == 0, done.out + done.err
    assert _open(project) == {("email_has_at", "6"), ("name_given", "5")}
    second = _check_attempt(project, 2)
    assert second["attempt_id"] != incremental["attempt_id"]
    assert (second["source_count"], second["insert_count"], second["delete_count"], second["rows_written"],
            second["target_count"]) == (4, 0, 2, 2, 2)
    closed = {f["business_rule_key"]: f for f in _flags(project) if f["active_flag"] == "N"}
    assert sorted(closed) == ["2", "3", "4"]
    assert {k: f["cleared_by_attempt_id"] for k, f in closed.items()} == {
        "2": incremental["attempt_id"], "3": second["attempt_id"], "4": second["attempt_id"]}
    assert all(f["end_date"] is not None and f["attempt_id"] == first["attempt_id"] for f in closed.values())
    assert [f["pipeline_run_id"] for f in _flags(project) if f["business_rule_key"] == "5"] == [1], (
        "a key that still breaks its rule keeps its one open flag")

    # Bob's email breaks again: a new flag; the closed one stays as history.
    _source(wh, (1, "Ann", "ann@example.com"), (2, "Bob", "bob-at-example"), (5, None, "eve@example.com"),
            (6, "Fay", "fay-at-example"))
    _run(project, "day-3")
    bob = [(f["active_flag"], f["pipeline_run_id"]) for f in _flags(project)
           if (f["rule_code"], f["business_rule_key"]) == ("email_has_at", "2")]
    assert bob == [("N", 1), ("Y", 3)]


def test_b52_a_table_without_pipeline_run_id_is_checked_in_full__and_the_task_log_says_which_column_to_add(
        wh: Wh) -> None:
    """The rules task judges a table no etl-craft SQL task writes (src has no PIPELINE_RUN_ID): every run checks it
    whole, so a key fixed outside etl-craft is cleared by the next normal run, and the attempt's log warns."""
    project = _project(wh)
    (project / "migrations" / "0002_src.sql").write_text(
        f"UPDATE CFG_TASKS SET TARGET_OBJECT = '{wh.t('src')}' WHERE TASK_CODE = 'check';\n", encoding="utf-8")
    assert etl_craft("migrate", cwd=project).code == 0
    _source(wh, (1, "Ann", "ann@example.com"), (2, "Bob", "bob-at-example"))
    _run(project, "day-1")
    assert _open(project) == {("email_has_at", "2")}
    _source(wh, (1, "Ann", "ann@example.com"), (2, "Bob", "bob@example.com"))
    _run(project, "day-2")
    assert _open(project) == set()
    log = _check_attempt(project, 2)["task_log"]
    assert f"the table {wh.t('src')} has no PIPELINE_RUN_ID column" in log and "add the column PIPELINE_RUN_ID" in log
    assert "a full check (the table has no PIPELINE_RUN_ID)" in log


@pytest.mark.parametrize(("rules", "said", "retryable"), [
    ((("email_has_at", "REJECT", "customer_id", "emial LIKE '%@%'"),),
     "a rule could not be judged in the {dialect} warehouse", None),
    ((("email_has_at", "REJECT", "cust_id", "email LIKE '%@%'"),),
     "rule email_has_at names KEY_COLUMN cust_id, which {table} does not have (its columns: customer_id, "
     "customer_name, email,", "N"),
    ((("email_has_at", "REJECT", "customer_id", "email LIKE '%@%'; DELETE FROM src"),),
     "the RULE_SQL of rule email_has_at holds 2 statements", "N"),
    ((("email_has_at", "REJECT", "customer_id", "email IN (SELECT 1 FROM src FOR UPDATE)"),),
     "the RULE_SQL of rule email_has_at locks rows (FOR UPDATE or FOR SHARE); write one condition", "N"),
])
def test_a_rule_that_cannot_be_judged_fails_the_task_and_records_no_flag(
        wh: Wh, rules: tuple[tuple[str, str, str, str], ...], said: str, retryable: str | None) -> None:
    """A configuration the task cannot judge is not retried (RETRYABLE N); a warehouse error may be."""
    project = _project(wh, rules=(*rules, ("name_given", "WARN", "customer_id", "customer_name <> ''")))
    _source(wh, (1, None, "ann-at-example"))
    _run(project, "day-1", code=9)
    failed = _check_attempt(project, 1)
    assert failed["status"] == "FAILED"
    assert said.format(dialect=wh.dialect, table=wh.t("customers")) in failed["error_message"], failed["error_message"]
    assert failed["retryable"] == retryable
    assert _flags(project) == [], "no rule's flags are recorded when one rule cannot be judged"


def test_validate_names_a_rules_task_without_rules__a_rule_that_is_not_one_condition__a_rule_on_another_task(
        wh: Wh) -> None:
    project = _project(wh)
    (project / "migrations" / "0002_more.sql").write_text(
        "INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER) SELECT PIPELINE_ID, 'bare', 'BUSINESS_RULES'"
        " FROM CFG_PIPELINES;\n"
        "INSERT INTO CFG_BUSINESS_RULES (TASK_ID, RULE_CODE, KEY_COLUMN, RULE_SQL)"
        " SELECT TASK_ID, 'two', 'customer_id', 'email <> ''''; DELETE FROM src' FROM CFG_TASKS"
        " WHERE TASK_CODE = 'check';\n"
        "INSERT INTO CFG_BUSINESS_RULES (TASK_ID, RULE_CODE, KEY_COLUMN, RULE_SQL)"
        " SELECT TASK_ID, 'misplaced', 'customer_id', 'email <> ''''' FROM CFG_TASKS WHERE TASK_CODE = 'load';\n",
        encoding="utf-8")
    assert etl_craft("migrate", cwd=project).code == 0
    done = etl_craft("validate", "--format", "json", cwd=project)
    assert done.code == 7, done.err
    found = {(p["task"], p["check"]) for p in json.loads(done.out)["problems"]}
    assert found == {("bare", "target-missing"), ("bare", "rules-missing"), ("check", "rule-sql-invalid"),
                     ("load", "rule-not-applicable")}, "email_has_at, with its semicolon and comment, is valid (B57)"


def test_show_lists_a_rules_task_s_rules_in_text_and_json(wh: Wh) -> None:
    project = _project(wh)
    text = etl_craft("show", "--pipeline-code", "quality", cwd=project)
    assert text.code == 0, text.err
    assert ("    rule email_has_at (REJECT, key customer_id): email LIKE '%@%'; -- an address has an @\n"
            "    rule name_given (WARN, key customer_id): customer_name <> ''\n") in text.out
    doc = json.loads(etl_craft("show", "--pipeline-code", "quality", "--format", "json", cwd=project).out)
    tasks = {t["code"]: t for t in doc["tasks"]}
    assert tasks["load"]["rules"] == []
    assert tasks["check"]["rules"] == [
        {"code": code, "type": kind, "key_column": key, "rule_sql": sql} for code, kind, key, sql in RULES]
