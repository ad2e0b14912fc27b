"""validate on both Engine DB dialects: every broken metadata row or project file is reported with its exact
message, all problems at once, and nothing is written to the Engine DB."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
import sqlalchemy as sa

from etlcraft.core.errors import NotFoundError
from etlcraft.core.selects import read_select
from etlcraft.engine.catalog import owned_tables
from etlcraft.engine.db import EngineDB
from etlcraft.services.metadata import (
    Metadata,
    ParameterValue,
    PipelineView,
    ProjectView,
    TaskEdge,
    TaskView,
    list_pipelines,
    show_pipeline,
)
from etlcraft.services.validate import ValidationReport, check_metadata, validate
from tests.py.support.rows import insert, ts
from tests.py.support.scenario import Project

CLEAN_SELECT = "SELECT 1 AS order_id, 10 AS customer_id, 2.5 AS amount\n"


@dataclass
class Setup:
    """A clean project (pipeline sales, task load_orders) that each case breaks in one way."""

    project: Project
    root: Path

    def file(self, relative: str, text: str) -> None:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def sql_task(self, code: str, sql: str | None = CLEAN_SELECT, pipeline: str = "sales", **columns: Any) -> int:
        columns.setdefault("TARGET_OBJECT", f"main.{code}")
        if sql is not None:
            self.file(f"sql_files/{columns.get('SQL_FILE', f'{code}.sql')}", sql)
        return self.project.task(pipeline, code, **columns)

    def parameter(self, task: str, name: str, value: str | None) -> None:
        db = self.project.db
        with db.write() as conn:
            conn.execute(sa.text(f"INSERT INTO {db.qualify('CFG_TASK_PARAMETERS')} (TASK_ID, PARAMETER_NAME, "
                                 "PARAMETER_VALUE) VALUES (:task, :name, :value)"),
                         {"task": self.project.tasks[task], "name": name, "value": value})

    def update(self, table: str, key: str, row_id: int, **values: Any) -> None:
        db = self.project.db
        assignments = ", ".join(f"{column} = :{column}" for column in values)
        with db.write() as conn:
            conn.execute(sa.text(f"UPDATE {db.qualify(table)} SET {assignments} WHERE {key} = :id"),
                         {**values, "id": row_id})


@pytest.fixture
def setup(engine_db: EngineDB, tmp_path: Path) -> Setup:
    project = Project(engine_db)
    project.pipeline("sales", RUN_SCHEDULE="0 6 * * *")
    done = Setup(project, tmp_path)
    for folder in ("sql_files", "ingestion_scripts"):
        (tmp_path / folder).mkdir()
    done.sql_task("load_orders")
    return done


def run(setup: Setup, dialect: str = "duckdb", pipeline: str | None = None) -> ValidationReport:
    return validate(setup.project.db, setup.root, dialect, pipeline)


def messages(report: ValidationReport) -> list[str]:
    return [p.message for p in report.problems]


def test_clean_project__no_problems(setup: Setup) -> None:
    report = run(setup)
    assert (report.ok, report.pipelines, report.tasks, report.files) == (True, ("sales",), 1, 1)


# -- the table of broken cases ---------------------------------------------------------------------------------

def _scd1(s: Setup, **parameters: str) -> None:
    s.sql_task("customers", "SELECT 1 AS customer_id, 'Ada' AS name\n", ACTION="SCD1_MERGE")
    for name, value in parameters.items():
        s.parameter("customers", name, value)


CASES: dict[str, tuple[Callable[[Setup], None], tuple[str, ...]]] = {}
MIG = " in a new project migration (migrations/NNNN_name.sql)"


def case(name: str, *expected: str) -> Callable[[Callable[[Setup], None]], Callable[[Setup], None]]:
    """A broken setup and the exact messages validate gives for it (all problems, in order)."""
    def register(build: Callable[[Setup], None]) -> Callable[[Setup], None]:
        CASES[name] = (build, expected)
        return build
    return register


@case("parameter_unknown",
     f"task sales.load_orders: parameter RETRYS is not a task parameter (did you mean "
     f"RETRIES?); expected one of the parameters OVERWRITE_TABLE tasks take (SCHEMA_EVOLUTION, "
     f"TABLE_FORMAT, TASK_TIMEOUT_SECONDS, RETRIES, RETRY_DELAY_SECONDS, RETRY_BACKOFF, POOL; see "
     f"docs/reference/task-parameters.md); rename or remove it{MIG}")
def _(s: Setup) -> None:
    s.parameter("load_orders", "RETRYS", "2")


@case("parameter_wrong_case",
     f"task sales.load_orders: parameter retries is not a task parameter (did you mean "
     f"RETRIES?); expected one of the parameters OVERWRITE_TABLE tasks take (SCHEMA_EVOLUTION, "
     f"TABLE_FORMAT, TASK_TIMEOUT_SECONDS, RETRIES, RETRY_DELAY_SECONDS, RETRY_BACKOFF, POOL; see "
     f"docs/reference/task-parameters.md); rename or remove it{MIG}")
def _(s: Setup) -> None:
    s.parameter("load_orders", "retries", "2")


@case("parameter_not_applicable",
     "task sales.load_orders: parameter MERGE_KEY does not apply to OVERWRITE_TABLE tasks; expected "
     f"MERGE_KEY only on SQL tasks with ACTION SCD1_MERGE, SCD2_MERGE or DELETE_ROWS; remove it{MIG}")
def _(s: Setup) -> None:
    s.parameter("load_orders", "MERGE_KEY", "order_id")


@case("parameter_below_minimum",
     f"task sales.load_orders: parameter RETRIES is -1, out of range; expected a whole number "
     f"of at least 0; correct its PARAMETER_VALUE{MIG}")
def _(s: Setup) -> None:
    s.parameter("load_orders", "RETRIES", "-1")


@case("parameter_not_a_number",
     f"task sales.load_orders: parameter TASK_TIMEOUT_SECONDS is 'soon', not a whole number; "
     f"expected a whole number of at least 0; correct its PARAMETER_VALUE{MIG}")
def _(s: Setup) -> None:
    s.parameter("load_orders", "TASK_TIMEOUT_SECONDS", "soon")


@case("parameter_backoff_below_one",
     f"task sales.load_orders: parameter RETRY_BACKOFF is 0.5, out of range; expected a number "
     f"of at least 1; correct its PARAMETER_VALUE{MIG}")
def _(s: Setup) -> None:
    s.parameter("load_orders", "RETRY_BACKOFF", "0.5")


@case("parameter_flag_not_y_or_n",
     f"task sales.load_orders: parameter SCHEMA_EVOLUTION is 'true'; expected Y or N; correct "
     f"its PARAMETER_VALUE{MIG}")
def _(s: Setup) -> None:
    s.parameter("load_orders", "SCHEMA_EVOLUTION", "true")


@case("parameter_choice_unknown",
     f"task sales.load_orders: parameter TABLE_FORMAT is 'delta'; expected native or iceberg; "
     f"correct its PARAMETER_VALUE{MIG}")
def _(s: Setup) -> None:
    s.parameter("load_orders", "TABLE_FORMAT", "delta")


@case("parameter_pool_not_identifier",
     f"task sales.load_orders: parameter POOL is 'big pool'; expected a name made of letters, "
     f"digits and _, starting with a letter, at most 128 characters; correct its "
     f"PARAMETER_VALUE{MIG}")
def _(s: Setup) -> None:
    s.parameter("load_orders", "POOL", "big pool")


@case("parameter_without_value",
     f"task sales.load_orders: parameter RETRIES has no value; expected a whole number of at "
     f"least 0; correct its PARAMETER_VALUE{MIG}")
def _(s: Setup) -> None:
    s.parameter("load_orders", "RETRIES", None)


@case("merge_key_missing",
     f"task sales.customers: parameter MERGE_KEY is missing; expected MERGE_KEY on every "
     f"SCD1_MERGE task: a comma-separated list of column names (letters, digits and _, not "
     f"starting with a digit); add a CFG_TASK_PARAMETERS row MERGE_KEY for the task{MIG}")
def _(s: Setup) -> None:
    _scd1(s)


@case("merge_key_not_a_column_list",
     f"task sales.customers: parameter MERGE_KEY is 'customer_id, customer_id', which names "
     f"customer_id twice; expected a comma-separated list of column names (letters, digits and "
     f"_, not starting with a digit); correct its PARAMETER_VALUE{MIG}")
def _(s: Setup) -> None:
    _scd1(s, MERGE_KEY="customer_id, customer_id")


@case("merge_key_not_returned",
     f"task sales.customers: parameter MERGE_KEY names customer_key, which the SELECT of "
     f"'customers.sql' does not return; expected columns the SELECT returns (customer_id, "
     f"name); correct MERGE_KEY{MIG}, or return the column")
def _(s: Setup) -> None:
    _scd1(s, MERGE_KEY="customer_key")


@case("dedupe_order_not_an_order",
     f"task sales.customers: parameter MERGE_DEDUPE_ORDER is 'updated_at DESCENDING'; expected "
     f"a comma-separated list of column names, each optionally followed by ASC or DESC and by "
     f"NULLS FIRST or NULLS LAST; correct its PARAMETER_VALUE{MIG}")
def _(s: Setup) -> None:
    _scd1(s, MERGE_KEY="customer_id", MERGE_DEDUPE_ORDER="updated_at DESCENDING")


@case("delete_mode_unknown",
     f"task sales.gone: parameter DELETE_MODE is 'purge'; expected soft or hard; correct its "
     f"PARAMETER_VALUE{MIG}")
def _(s: Setup) -> None:
    s.sql_task("gone", "SELECT 1 AS order_id\n", ACTION="DELETE_ROWS", TARGET_OBJECT="main.load_orders")
    s.parameter("gone", "MERGE_KEY", "order_id")
    s.parameter("gone", "DELETE_MODE", "purge")


def _scd2(s: Setup, **parameters: str) -> None:
    s.sql_task("customers", "SELECT 1 AS customer_id, 'Ada' AS name\n", ACTION="SCD2_MERGE")
    for name, value in {"MERGE_KEY": "customer_id", **parameters}.items():
        s.parameter("customers", name, value)


def _missing_keys_refused(mode: str) -> str:
    return (f"task sales.customers: parameter SCD2_MISSING_KEYS is {mode}, but FULL_SNAPSHOT is not Y, so a key the "
            f"SELECT does not return may only be outside an incremental extract; expected FULL_SNAPSHOT = Y with "
            f"SCD2_MISSING_KEYS {mode}, or SCD2_MISSING_KEYS KEEP; set FULL_SNAPSHOT to Y if the SELECT returns the "
            f"whole source on every run, else set SCD2_MISSING_KEYS to KEEP,{MIG}")


@case("scd2_close_without_full_snapshot", _missing_keys_refused("CLOSE"))
def _(s: Setup) -> None:
    _scd2(s, SCD2_MISSING_KEYS="CLOSE")


@case("scd2_mark_deleted_on_a_declared_incremental_select", _missing_keys_refused("MARK_DELETED"))
def _(s: Setup) -> None:
    _scd2(s, SCD2_MISSING_KEYS="mark_deleted", FULL_SNAPSHOT="N")


@case("scd2_missing_keys_unknown",
     f"task sales.customers: parameter SCD2_MISSING_KEYS is 'DROP'; expected KEEP or CLOSE or MARK_DELETED; "
     f"correct its PARAMETER_VALUE{MIG}")
def _(s: Setup) -> None:
    _scd2(s, SCD2_MISSING_KEYS="DROP", FULL_SNAPSHOT="Y")


@case("full_snapshot_on_scd1",
     f"task sales.customers: parameter FULL_SNAPSHOT does not apply to SCD1_MERGE tasks; expected FULL_SNAPSHOT "
     f"only on SQL tasks with ACTION SCD2_MERGE; remove it{MIG}")
def _(s: Setup) -> None:
    _scd1(s, MERGE_KEY="customer_id", FULL_SNAPSHOT="Y")


def test_scd2_missing_keys_with_full_snapshot__accepted(setup: Setup) -> None:
    for mode in ("KEEP", "CLOSE", "MARK_DELETED"):
        setup.sql_task(f"c_{mode.lower()}", "SELECT 1 AS customer_id, 'Ada' AS name\n", ACTION="SCD2_MERGE")
        for name, value in {"MERGE_KEY": "customer_id", "SCD2_MISSING_KEYS": mode, "FULL_SNAPSHOT": "Y"}.items():
            setup.parameter(f"c_{mode.lower()}", name, value)
    setup.sql_task("c_default", "SELECT 1 AS customer_id, 'Ada' AS name\n", ACTION="SCD2_MERGE")
    setup.parameter("c_default", "MERGE_KEY", "customer_id")
    assert messages(run(setup)) == []


@case("email_alert_without_recipients",
     f"task sales.alert: parameter RECIPIENTS is missing; expected RECIPIENTS on every "
     f"EMAIL_ALERT task: a comma-separated list of e-mail addresses (name@example.com); add a "
     f"CFG_TASK_PARAMETERS row RECIPIENTS for the task{MIG}")
def _(s: Setup) -> None:
    s.project.task("sales", "alert", handler="EMAIL_ALERT")


@case("email_alert_bad_recipient",
     f"task sales.alert: parameter RECIPIENTS is 'team@example.com, nobody', in which 'nobody' "
     f"is not valid; expected a comma-separated list of e-mail addresses (name@example.com); "
     f"correct its PARAMETER_VALUE{MIG}")
def _(s: Setup) -> None:
    s.project.task("sales", "alert", handler="EMAIL_ALERT")
    s.parameter("alert", "RECIPIENTS", "team@example.com, nobody")


@case("email_alert_unknown_token",
     f"task sales.alert: parameter SUBJECT uses $$run_day, which has no value; expected tokens among "
     f"$$pipeline_id, $$pipeline_code, $$pipeline_run_id, $$task_run_id, $$task_code, $$run_date; correct its "
     f"PARAMETER_VALUE{MIG}")
def _(s: Setup) -> None:
    s.project.task("sales", "alert", handler="EMAIL_ALERT")
    s.parameter("alert", "RECIPIENTS", "team@example.com")
    s.parameter("alert", "SUBJECT", "Run $$pipeline_run_id of $$run_day")


@case("input_params_not_an_object",
     f"task sales.pull: parameter INPUT_PARAMS is JSON list, not an object; expected a JSON "
     f"object, for example {{\"since\": \"2026-01-01\"}}; correct its PARAMETER_VALUE{MIG}")
def _(s: Setup) -> None:
    s.file("ingestion_scripts/pull.py", "def run(task):\n    return None\n")
    s.project.task("sales", "pull", handler="PYTHON", SCRIPT_FILE="pull.py")
    s.parameter("pull", "INPUT_PARAMS", "[1, 2]")


@case("target_missing",
     f"task sales.orphan: TARGET_OBJECT is not set; expected the table the task writes "
     f"(schema.table); set TARGET_OBJECT{MIG}")
def _(s: Setup) -> None:
    s.sql_task("orphan", TARGET_OBJECT=None)


@case("target_not_a_table_name",
     f"task sales.odd: TARGET_OBJECT 'main.my table' is not a table name; expected table, "
     f"schema.table or catalog.schema.table, each part made of letters, digits and _; correct "
     f"TARGET_OBJECT{MIG}")
def _(s: Setup) -> None:
    s.sql_task("odd", TARGET_OBJECT="main.my table")


@case("sql_file_on_python_task",
     f"task sales.pull: SQL_FILE 'pull.sql' is set on a PYTHON task; expected SQL_FILE only on "
     f"SQL tasks; set SQL_FILE to NULL{MIG}")
def _(s: Setup) -> None:
    s.file("ingestion_scripts/pull.py", "def run(task):\n    return None\n")
    s.project.task("sales", "pull", handler="PYTHON", SCRIPT_FILE="pull.py", SQL_FILE="pull.sql")


@case("sql_file_missing",
     f"task sales.absent: SQL_FILE 'absent.sql' does not exist; expected the file "
     f"sql_files/absent.sql; create sql_files/absent.sql, or correct SQL_FILE{MIG}")
def _(s: Setup) -> None:
    s.sql_task("absent", sql=None)


@case("sql_file_outside_sql_files",
     f"task sales.escape: SQL_FILE '../secret.sql' is outside sql_files/; expected a path "
     f"relative to sql_files/ that stays inside it; move the file into sql_files/ and correct "
     f"SQL_FILE{MIG}")
def _(s: Setup) -> None:
    s.file("secret.sql", CLEAN_SELECT)
    s.sql_task("escape", sql=None, SQL_FILE="../secret.sql")


@case("sql_file_not_utf8",
     "task sales.latin: SQL_FILE 'latin.sql' is not UTF-8 text (invalid continuation byte at "
     "byte 11); expected UTF-8 text; save the file as UTF-8")
def _(s: Setup) -> None:
    s.sql_task("latin", sql=None)
    (s.root / "sql_files" / "latin.sql").write_bytes("SELECT 'café' AS name\n".encode("latin-1"))


@case("sql_is_a_delete",
     "task sales.purge: SQL_FILE 'purge.sql' is a DELETE statement, not a SELECT; expected "
     "exactly one read-only SELECT (a trailing ; and comments are fine); etl-craft writes the "
     "SELECT's rows into TARGET_OBJECT with the task's ACTION; keep only the read-only query "
     "in the file")
def _(s: Setup) -> None:
    s.sql_task("purge", "DELETE FROM main.load_orders\n")


@case("sql_has_two_statements",
     "task sales.two: SQL_FILE 'two.sql' holds 2 statements (the second starts on line 2); "
     "expected exactly one read-only SELECT (a trailing ; and comments are fine); etl-craft "
     "writes the SELECT's rows into TARGET_OBJECT with the task's ACTION; keep only the "
     "read-only query in the file")
def _(s: Setup) -> None:
    s.sql_task("two", "SELECT 1 AS a;\nSELECT 2 AS a;\n")


@case("sql_hides_a_delete_in_a_cte",
     "task sales.sneaky: SQL_FILE 'sneaky.sql' changes data: it holds a DELETE inside the "
     "SELECT; expected exactly one read-only SELECT (a trailing ; and comments are fine); "
     "etl-craft writes the SELECT's rows into TARGET_OBJECT with the task's ACTION; keep only "
     "the read-only query in the file")
def _(s: Setup) -> None:
    s.sql_task("sneaky", "WITH d AS (DELETE FROM main.load_orders RETURNING *) SELECT order_id FROM d\n")


@case("sql_creates_a_table",
     "task sales.into: SQL_FILE 'into.sql' creates a table (SELECT ... INTO); expected "
     "exactly one read-only SELECT (a trailing ; and comments are fine); etl-craft writes the "
     "SELECT's rows into TARGET_OBJECT with the task's ACTION; keep only the read-only query "
     "in the file")
def _(s: Setup) -> None:
    s.sql_task("into", "SELECT 1 AS a INTO main.copy\n")


@case("sql_does_not_parse",
     "task sales.broken: SQL_FILE 'broken.sql' is not valid duckdb SQL at line 1, column 19: "
     "Expected table name but got 'WHERE'; expected exactly one read-only SELECT (a trailing "
     "; and comments are fine); fix the SQL")
def _(s: Setup) -> None:
    s.sql_task("broken", "SELECT a FROM WHERE\n")


@case("sql_unclosed_quote",
     "task sales.quote: SQL_FILE 'quote.sql' cannot be read: a quote or comment is not "
     "closed; expected exactly one read-only SELECT (a trailing ; and comments are fine); "
     "close it")
def _(s: Setup) -> None:
    s.sql_task("quote", "SELECT 'open AS a\n")


@case("sql_unknown_token",
     "task sales.tokens: SQL_FILE 'tokens.sql' uses $$run_dat on line 3 (did you mean "
     "$$run_date?), which has no value; expected one of $$pipeline_id, $$pipeline_run_id, "
     "$$run_date, $$task_run_id; correct the token, or keep $$ text inside a string literal "
     "or a comment")
def _(s: Setup) -> None:
    s.sql_task("tokens", "SELECT 1 AS a\n  FROM main.load_orders\n WHERE d = $$run_dat AND p = $$pipeline_id\n")


@case("sql_engine_managed_column",
     "task sales.engine: the SELECT of 'engine.sql' returns row_id, HASH_KEY, which etl-craft "
     "writes itself; expected no column named PIPELINE_ID, PIPELINE_RUN_ID, TASK_RUN_ID, "
     "ROW_ID, HASH_KEY, CREATE_DATE, CREATED_BY, UPDATE_DATE, UPDATED_BY, DELETE_FLAG, "
     "ACTIVE_FLAG; alias those columns, or leave them out")
def _(s: Setup) -> None:
    s.sql_task("engine", "SELECT order_id, row_id, 1 AS HASH_KEY FROM main.load_orders\n")


@case("sql_valid_from_in_scd2",
     "task sales.history: the SELECT of 'history.sql' returns valid_from, which etl-craft "
     "writes itself; expected no column named PIPELINE_ID, PIPELINE_RUN_ID, TASK_RUN_ID, "
     "ROW_ID, HASH_KEY, CREATE_DATE, CREATED_BY, UPDATE_DATE, UPDATED_BY, DELETE_FLAG, "
     "ACTIVE_FLAG, VALID_FROM, VALID_TO; alias those columns, or leave them out")
def _(s: Setup) -> None:
    s.sql_task("history", "SELECT 1 AS customer_id, CURRENT_DATE AS valid_from\n", ACTION="SCD2_MERGE")
    s.parameter("history", "MERGE_KEY", "customer_id")


@case("sql_star_over_engine_target",
     "task sales.copy: the SELECT of 'copy.sql' takes every column of main.load_orders with "
     "*, and main.load_orders is written by task sales.load_orders, so it returns the columns "
     "etl-craft writes itself; expected no column named PIPELINE_ID, PIPELINE_RUN_ID, "
     "TASK_RUN_ID, ROW_ID, HASH_KEY, CREATE_DATE, CREATED_BY, UPDATE_DATE, UPDATED_BY, "
     "DELETE_FLAG, ACTIVE_FLAG; list the columns you need instead of *")
def _(s: Setup) -> None:
    s.sql_task("copy", "SELECT * FROM main.load_orders\n")


@case("sql_column_needs_quotes",
     "task sales.quoted: the SELECT of 'quoted.sql' returns a column named \"CustomerId\", "
     "which needs quoting; expected names of lower-case letters, digits and _ (a quoted name "
     "keeps its case, so every later statement would have to quote it); alias it, for example "
     "AS customer_id",
     "task sales.quoted: the SELECT of 'quoted.sql' returns a column named \"order total\", "
     "which needs quoting; expected names of lower-case letters, digits and _ (a quoted name "
     "keeps its case, so every later statement would have to quote it); alias it, for example "
     "AS order_total")
def _(s: Setup) -> None:
    s.sql_task("quoted", 'SELECT 1 AS "CustomerId", 2 AS "order total"\n')


@case("sql_column_without_name",
     "task sales.counts: column 2 of the SELECT of 'counts.sql' (COUNT(*)) has no name, so "
     "the warehouse names it; expected a name for every computed column; give it one: "
     "COUNT(*) AS <name>")
def _(s: Setup) -> None:
    s.sql_task("counts", "SELECT customer_id, COUNT(*) FROM main.load_orders GROUP BY customer_id\n")


@case("sql_column_twice",
     "task sales.twice: the SELECT of 'twice.sql' returns ORDER_ID twice (columns 1 and 2); "
     "expected each output name once; alias one of them")
def _(s: Setup) -> None:
    s.sql_task("twice", "SELECT order_id, 1 AS ORDER_ID FROM main.load_orders\n")


@case("script_missing",
     f"task sales.pull: SCRIPT_FILE 'pull.py' does not exist; expected the file "
     f"ingestion_scripts/pull.py; create ingestion_scripts/pull.py, or correct SCRIPT_FILE{MIG}")
def _(s: Setup) -> None:
    s.project.task("sales", "pull", handler="PYTHON", SCRIPT_FILE="pull.py")


@case("script_not_python",
     "task sales.pull: SCRIPT_FILE 'pull.py' is not valid Python: expected ':' at line 1; "
     "expected a Python module that compiles; fix the script")
def _(s: Setup) -> None:
    s.file("ingestion_scripts/pull.py", "def run(task)\n    return None\n")
    s.project.task("sales", "pull", handler="PYTHON", SCRIPT_FILE="pull.py")


@case("schedule_not_cron",
     f"pipeline sales: RUN_SCHEDULE '0 25 * * *' is not a cron schedule: the hour value 25 is "
     f"outside 0-23; expected five cron fields (minute hour day-of-month month day-of-week) or "
     f"a macro (@hourly, @daily, @weekly, @monthly, @yearly); correct RUN_SCHEDULE{MIG}")
def _(s: Setup) -> None:
    s.update("CFG_PIPELINES", "PIPELINE_ID", s.project.pipelines["sales"], RUN_SCHEDULE="0 25 * * *")


@case("schedule_never_fires",
     f"pipeline sales: RUN_SCHEDULE '0 0 30 2 *' is not a cron schedule: day of month 30 never "
     f"occurs in month 2, so the schedule never fires; expected five cron fields (minute hour "
     f"day-of-month month day-of-week) or a macro (@hourly, @daily, @weekly, @monthly, "
     f"@yearly); correct RUN_SCHEDULE{MIG}")
def _(s: Setup) -> None:
    s.update("CFG_PIPELINES", "PIPELINE_ID", s.project.pipelines["sales"], RUN_SCHEDULE="0 0 30 2 *")


@case("schedule_timezone_unknown",
     f"pipeline sales: SCHEDULE_TIMEZONE 'Europe/Londres' is not an IANA time zone; expected "
     f"an IANA time zone name such as UTC, Europe/London or America/New_York; correct "
     f"SCHEDULE_TIMEZONE{MIG}, or set it to NULL to use the project's time zone")
def _(s: Setup) -> None:
    s.update("CFG_PIPELINES", "PIPELINE_ID", s.project.pipelines["sales"], SCHEDULE_TIMEZONE="Europe/Londres")


@case("project_timezone_unknown",
     f"project proj: TIMEZONE 'CET+1' is not an IANA time zone; expected an IANA time zone "
     f"name such as UTC, Europe/London or America/New_York; set CFG_PROJECTS.TIMEZONE{MIG}, or set it to NULL to "
     "use Orchestration: Timezone of craft-connector.yml, else UTC")
def _(s: Setup) -> None:
    assert s.project.project_id is not None
    s.update("CFG_PROJECTS", "PROJECT_ID", s.project.project_id, TIMEZONE="CET+1")


@case("cycle_in_a_pipeline",
     f"pipeline sales: its tasks wait for each other in a cycle: a -> b -> load_orders -> a; "
     f"expected task dependencies without a cycle (an arrow reads 'waits for'); switch off "
     f"(ACTIVE_FLAG = 'N') one CFG_TASK_DEPENDENCY row of the cycle{MIG}")
def _(s: Setup) -> None:
    s.sql_task("a")
    s.sql_task("b")
    s.project.depends("load_orders", "a")
    s.project.depends("a", "b")
    s.project.depends("b", "load_orders")


@case("cycle_across_pipelines",
     f"pipelines billing, sales: they wait for each other in a cycle: billing -> sales (pipeline "
     f"dependency) -> billing (task sales.load_orders waits for billing.invoices); expected "
     f"dependencies between pipelines without a cycle (an arrow reads 'waits for'); switch off "
     f"one CFG_PIPELINE_DEPENDENCY or cross-pipeline CFG_TASK_DEPENDENCY row of the cycle{MIG}")
def _(s: Setup) -> None:
    s.project.pipeline("billing")
    s.sql_task("invoices", pipeline="billing")
    s.project.pipeline_depends("billing", "sales")
    s.project.depends("load_orders", "invoices", "HAS_DATA")


@case("dependency_on_switched_off_task",
     f"task sales.load_orders: it depends on sales.old, which is switched off (ACTIVE_FLAG = "
     f"'N'); expected dependencies on active tasks only; switch the dependency off too, or the "
     f"task back on,{MIG}")
def _(s: Setup) -> None:
    s.sql_task("old")
    s.project.depends("load_orders", "old")
    s.update("CFG_TASKS", "TASK_ID", s.project.tasks["old"], ACTIVE_FLAG="N")


@pytest.mark.parametrize("name", list(CASES))
def test_broken_metadata_or_file__exact_problem(setup: Setup, name: str) -> None:
    build, expected = CASES[name]
    build(setup)
    report = run(setup)
    assert messages(report) == list(expected)
    assert not report.ok


# -- all at once, read-only, narrowed to a pipeline ------------------------------------------------------------

def _counts(db: EngineDB) -> dict[str, int]:
    with db.read() as conn:
        return {t.name: int(conn.execute(sa.text(f"SELECT COUNT(*) FROM {db.qualify(t.name)}")).scalar_one())
                for t in owned_tables(db, conn)}


def test_every_problem_is_reported_at_once_and_nothing_is_written(setup: Setup) -> None:
    setup.parameter("load_orders", "RETRIES", "many")
    setup.sql_task("absent", sql=None)
    setup.update("CFG_PIPELINES", "PIPELINE_ID", setup.project.pipelines["sales"], RUN_SCHEDULE="@often")
    before = _counts(setup.project.db)
    report = run(setup)
    assert _counts(setup.project.db) == before
    assert any(name.startswith("AUD_") for name in before)
    assert [(p.check, p.object) for p in report.problems] == [
        ("schedule-invalid", "pipeline sales"),
        ("file-not-found", "task sales.absent"),
        ("parameter-invalid", "task sales.load_orders"),
    ]


def test_pipeline_code_narrows_the_report_to_that_pipeline(setup: Setup) -> None:
    setup.project.pipeline("billing")
    setup.sql_task("invoices", pipeline="billing", sql=None)
    setup.parameter("load_orders", "RETRIES", "-2")
    assert [p.object for p in run(setup, pipeline="sales").problems] == ["task sales.load_orders"]
    billing = run(setup, pipeline="billing")
    assert ([p.object for p in billing.problems], billing.pipelines) == (["task billing.invoices"], ("billing",))
    with pytest.raises(NotFoundError, match=r"pipeline 'nope' is not an active pipeline .*\(active: billing, sales\)"):
        run(setup, pipeline="nope")


def test_a_cross_pipeline_cycle_is_reported_for_each_pipeline_in_it(setup: Setup) -> None:
    setup.project.pipeline("billing")
    setup.sql_task("invoices", pipeline="billing")
    setup.project.pipeline_depends("billing", "sales")
    setup.project.depends("load_orders", "invoices")
    assert [p.check for p in run(setup, pipeline="billing").problems] == ["cycle-pipelines"]
    assert [p.check for p in run(setup, pipeline="sales").problems] == ["cycle-pipelines"]


def test_tokens_in_literals_comments_and_quoted_names_are_left_alone(setup: Setup) -> None:
    setup.sql_task("tokens", "-- uses $$nothing\nSELECT '$$not_a_token' AS note, \"$$odd\" AS other, /* $$x */\n"
                             "  $$run_date AS run_date, $$RETRIES AS retries FROM main.load_orders\n")
    setup.parameter("tokens", "RETRIES", "3")
    assert messages(run(setup)) == []
    assert messages(run(setup, dialect="postgresql")) == []


def test_select_star_over_a_table_etl_craft_does_not_write_is_accepted(setup: Setup) -> None:
    setup.sql_task("raw", "SELECT * FROM landing.raw_orders\n")
    setup.sql_task("nested", "WITH x AS (SELECT * FROM landing.raw_orders) SELECT x.* FROM x\n")
    assert messages(run(setup)) == []


def test_a_postgresql_warehouse_reads_postgresql_sql(setup: Setup) -> None:
    setup.sql_task("casts", "SELECT order_id::bigint AS order_id, amount::numeric(12, 2) AS amount\n"
                            "  FROM main.load_orders WHERE note ~ '^a' \n")
    assert messages(run(setup, dialect="postgresql")) == []


# -- regressions ----------------------------------------------------------------------------------------------

def test_b12_engine_managed_columns_are_reported_when_the_select_names_them(setup: Setup) -> None:
    setup.sql_task("explicit", "SELECT order_id, created_by, 1 AS PIPELINE_RUN_ID FROM landing.raw_orders\n")
    setup.sql_task("starred", "SELECT * FROM load_orders\n")  # an unqualified name is in the default schema
    setup.sql_task("subquery", "SELECT s.* FROM (SELECT o.*, 1 AS x FROM main.LOAD_ORDERS o) s\n")
    setup.sql_task("aliased", "SELECT order_id, row_id AS source_row_id FROM main.load_orders\n")
    report = run(setup)
    assert [(p.task, p.check, p.value) for p in report.problems] == [
        ("explicit", "column-engine-managed", "created_by, PIPELINE_RUN_ID"),
        ("starred", "column-engine-managed", "load_orders"),
        ("subquery", "column-engine-managed", "main.load_orders"),
    ]
    assert "list the columns you need instead of *" in report.problems[1].message


def test_b43_tasks_writing_one_target_must_resolve_to_one_table_format(setup: Setup) -> None:
    setup.sql_task("iceberg_load", TARGET_OBJECT="MAIN.LOAD_ORDERS", ACTION="APPEND_TABLE")
    setup.parameter("iceberg_load", "TABLE_FORMAT", "ICEBERG")
    setup.sql_task("native_load", TARGET_OBJECT="main.load_orders", ACTION="APPEND_TABLE")
    setup.parameter("native_load", "TABLE_FORMAT", "native")
    setup.sql_task("deletes", "SELECT 1 AS order_id\n", TARGET_OBJECT="main.load_orders", ACTION="DELETE_ROWS")
    setup.parameter("deletes", "MERGE_KEY", "order_id")
    assert messages(run(setup)) == [
        "target main.load_orders: the tasks writing it resolve to different table formats: iceberg "
        "(sales.iceberg_load); native (sales.load_orders, sales.native_load); expected one TABLE_FORMAT for every "
        f"task writing the same TARGET_OBJECT; set the same TABLE_FORMAT on all of them (without it a task writes "
        f"native){MIG}"]
    setup.update("CFG_TASKS", "TASK_ID", setup.project.tasks["iceberg_load"], ACTIVE_FLAG="N")
    assert messages(run(setup)) == []


@pytest.mark.parametrize("ending", ["\n-- the last line is a comment", " -- a comment after the query",
                                   "\n/* a block comment */"])
def test_b44_a_select_ending_with_a_comment_is_one_select_and_embeds_safely(setup: Setup, ending: str) -> None:
    sql = "SELECT 1 AS order_id, 'a' AS note" + ending
    setup.sql_task("setup_orders", sql, ACTION="SETUP_TABLE")
    assert messages(run(setup)) == []
    embedded = f"SELECT * FROM (\n{read_select(sql, 'duckdb').text}\n) etl_src WHERE 1 = 0"
    assert duckdb.sql(embedded).columns == ["order_id", "note"]


def test_b45_output_names_that_need_quoting_are_reported(setup: Setup) -> None:
    setup.sql_task("names", 'SELECT 1 AS "CustomerId", 2 AS "Order-Total", 3 AS "plain_name", 4 AS CamelCase\n')
    for dialect in ("duckdb", "postgresql"):
        report = run(setup, dialect=dialect)
        assert [(p.check, p.value) for p in report.problems] == [
            ("column-needs-quotes", "CustomerId"), ("column-needs-quotes", "Order-Total")]
        assert report.problems[0].message.endswith("alias it, for example AS customer_id")
        assert report.problems[1].message.endswith("alias it, for example AS order_total")


@pytest.mark.parametrize("ending", [";", ";\n", ";\n-- done\n", "; /* done */", ";;\n"])
def test_b57_a_select_ending_with_a_semicolon_and_comment_passes_and_embeds(setup: Setup, ending: str) -> None:
    sql = "SELECT 1 AS order_id, 'x' AS note" + ending
    setup.sql_task("semi", sql)
    assert messages(run(setup)) == messages(run(setup, dialect="postgresql")) == []
    text = read_select(sql, "duckdb").text
    assert not text.rstrip().endswith(";")
    assert duckdb.sql(f"SELECT * FROM (\n{text}\n) etl_src WHERE 1 = 0").columns == ["order_id", "note"]


def test_rows_an_engine_db_without_the_checks_could_hold_are_reported(tmp_path: Path) -> None:
    """The Engine DB refuses these rows today; validate still reports them on an older database."""
    pipeline = PipelineView(1, "proj", "load $(x)", None, None, None, None, False, "SKIP", 0, None, 2, False)
    tasks = (
        TaskView(1, 1, "load $(x)", "__init__", None, "SHELL", None, None, None, None, "ALL", ()),
        TaskView(2, 1, "load $(x)", "mail", None, "EMAIL_ALERT", "SCD1_MERGE", None, None, None, "SOME",
                 (ParameterValue("RECIPIENTS", "ops@example.com"),)),
    )
    edge = TaskEdge(1, 2, "mail", "load $(x)", 1, "__init__", "load $(x)", 1, 1, "MAYBE", True, True)
    snapshot = Metadata((ProjectView(1, "proj", None, "UTC", "default"),), (pipeline,), tasks, (edge,), ())
    report = check_metadata(snapshot, tmp_path, "duckdb")
    assert [(p.object, p.check, p.value) for p in report.problems] == [
        ("pipeline load $(x)", "code-not-identifier", "load $(x)"),
        ("task load $(x).__init__", "code-not-identifier", "__init__"),
        ("task load $(x).__init__", "handler-unknown", "SHELL"),
        ("task load $(x).mail", "action-not-applicable", "SCD1_MERGE"),
        ("task load $(x).mail", "run-condition-unknown", "SOME"),
        ("task load $(x).mail", "dependency-type-unknown", "MAYBE"),
    ]
    assert report.problems[0].message == (
        "pipeline load $(x): PIPELINE_CODE 'load $(x)' is not an identifier; expected a letter, then letters, "
        f"digits or _, at most 128 characters; rename it{MIG}: codes appear in commands, file names and "
        "generated YAML")


# -- the read views behind list and show ------------------------------------------------------------------------

def test_list_and_show_views_on_both_dialects(setup: Setup) -> None:
    db = setup.project.db
    setup.project.pipeline("billing", PIPELINE_NAME="Billing", RUN_SCHEDULE="@daily", SCHEDULE_TIMEZONE="UTC")
    setup.sql_task("invoices", pipeline="billing")
    setup.sql_task("totals", pipeline="billing")
    setup.parameter("totals", "RETRIES", "1")
    setup.project.depends("totals", "invoices")
    setup.project.depends("invoices", "load_orders", "HAS_DATA")
    setup.project.pipeline_depends("billing", "sales")
    setup.sql_task("retired")
    setup.update("CFG_TASKS", "TASK_ID", setup.project.tasks["retired"], ACTIVE_FLAG="N")
    with db.write() as conn:
        insert(db, conn, "AUD_PIPELINE_PAUSES", "PAUSE_ID", PIPELINE_ID=setup.project.pipelines["billing"],
               PAUSED_AT=ts(db), PAUSED_BY="tester@pytest", PAUSED_BY_KIND="HUMAN")
    listed = list_pipelines(db)
    assert [(p.code, p.schedule, p.timezone, p.task_count, p.state) for p in listed] == [
        ("billing", "@daily", "UTC", 2, "paused"), ("sales", "0 6 * * *", None, 1, "active")]
    billing = show_pipeline(db, "billing")
    assert billing.levels == (("invoices",), ("totals",)) and billing.unleveled == ()
    assert [(e.task_code, e.upstream_pipeline_code, e.upstream_task_code, e.type, e.cross_pipeline)
            for e in billing.edges] == [("invoices", "sales", "load_orders", "HAS_DATA", True),
                                       ("totals", "billing", "invoices", "SUCCESS", False)]
    assert [t.parameters for t in billing.tasks] == [(), (ParameterValue("RETRIES", "1"),)]
    assert [e.upstream_pipeline_code for e in billing.upstream_pipelines] == ["sales"]
    sales = show_pipeline(db, "sales")
    assert [t.code for t in sales.tasks] == ["load_orders"]
    assert [(e.pipeline_code, e.task_code) for e in sales.downstream_edges] == [("billing", "invoices")]
    assert [e.pipeline_code for e in sales.downstream_pipelines] == ["billing"]


def test_show_places_tasks_on_a_cycle_outside_the_levels(setup: Setup) -> None:
    setup.sql_task("a")
    setup.sql_task("b")
    setup.project.depends("a", "b")
    setup.project.depends("b", "a")
    detail = show_pipeline(setup.project.db, "sales")
    assert (detail.levels, detail.unleveled) == ((("load_orders",),), ("a", "b"))


@pytest.mark.parametrize(("schedule", "names"), [
    ("61 * * * *", ("minute", "61")),
    ("0 24 * * *", ("hour", "24")),
    ("0 0 30 2 *", ("day of month", "30")),
    ("0 0 * 13 *", ("month", "13")),
    ("0 0 * * FRX", ("day of week", "FRX")),
    ("*/0 * * * *", ("minute", "*/0")),
    ("0 0 * *", ("five fields", "found 4")),
    ("@fortnightly", ("@fortnightly", "macro")),
])
def test_an_invalid_schedule_is_refused_naming_the_field_and_the_value(
        setup: Setup, schedule: str, names: tuple[str, str]) -> None:
    setup.update("CFG_PIPELINES", "PIPELINE_ID", setup.project.pipelines["sales"], RUN_SCHEDULE=schedule)
    [problem] = run(setup).problems
    assert (problem.check, problem.object, problem.value) == ("schedule-invalid", "pipeline sales", schedule)
    assert all(name in problem.message for name in names), problem.message


def _alert_rule(s: Setup, channels: str, pipeline: str | None = None, active: str = "Y") -> None:
    db = s.project.db
    with db.write() as conn:
        conn.execute(sa.text(f"INSERT INTO {db.qualify('CFG_ALERT_RULES')} (PROJECT_ID, PIPELINE_ID, ALERT_KIND, "
                             "CHANNELS, ACTIVE_FLAG) VALUES (:p, :pl, 'RUN_FAILED', :c, :a)"),
                     {"p": s.project.project_id, "pl": s.project.pipelines.get(pipeline or ""), "c": channels,
                      "a": active})


def test_alert_rules__a_channel_not_in_the_alerts_section__is_a_problem_of_its_pipelines(setup: Setup) -> None:
    _alert_rule(setup, "ops, pager")
    _alert_rule(setup, "chat", pipeline="sales")
    _alert_rule(setup, "nowhere", active="N")
    report = validate(setup.project.db, setup.root, "duckdb", alert_channels=("ops", "chat"))
    assert [(p.check, p.pipelines) for p in report.problems] == [("alert-channel-unknown", ("sales",))]
    assert messages(report) == [
        "alert rule 1 (RUN_FAILED, default of project proj): CHANNELS names the channel 'pager', which is not among "
        "the Alerts channels of craft-connector.yml (chat, ops); expected a channel name of Alerts: channels; add "
        "the channel pager under Alerts: channels in craft-connector.yml, or correct CFG_ALERT_RULES.CHANNELS in a "
        "new project migration (migrations/NNNN_name.sql)"]
    assert run(setup).ok  # without the configuration's channels, rules are not judged
    none = validate(setup.project.db, setup.root, "duckdb", alert_channels=())
    assert len(none.problems) == 3 and "none: craft-connector.yml has no Alerts section" in none.problems[0].message
