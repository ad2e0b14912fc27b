"""validate reads the warehouse, on DuckDB and PostgreSQL: the tables and columns each SELECT reads, the merge keys
a * returns, each existing target against its task's action; a table a task makes is no error before its first
run; --offline skips all of it and an unreachable warehouse is one warning that leaves the exit code alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etlcraft.core.actor import acting_as
from etlcraft.services.validate import ValidationReport, validate
from tests.py.conftest import TEST_ACTOR
from tests.py.support.cli import etl_craft
from tests.py.support.scenario import Project
from tests.py.warehouse.conftest import Wh

MIG = " in a new project migration (migrations/NNNN_name.sql)"


class Case:
    """One project on `wh`: pipeline sales, its SQL tasks reading wh's schema."""

    def __init__(self, wh: Wh) -> None:
        self.wh = wh
        self.project = Project(wh.engine_db)
        with acting_as(TEST_ACTOR):
            self.project.pipeline("sales")
        wh.execute("CREATE TABLE {s}.orders (order_id INTEGER, customer_id INTEGER, amount DECIMAL(12,2))")

    def task(self, code: str, sql: str, action: str = "OVERWRITE_TABLE", target: str | None = None,
             **parameters: str) -> None:
        (self.wh.project / "sql_files" / f"{code}.sql").write_text(sql.replace("{s}", self.wh.schema) + "\n",
                                                                     encoding="utf-8")
        with acting_as(TEST_ACTOR):
            self.project.task("sales", code, ACTION=action, TARGET_OBJECT=self.wh.t(target or code))
        for name, value in parameters.items():
            with self.wh.engine_db.write() as conn:
                table = self.wh.engine_db.qualify("CFG_TASK_PARAMETERS")
                conn.exec_driver_sql(f"INSERT INTO {table} (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) VALUES "
                                     f" ({self.project.tasks[code]}, '{name}', '{value}')")

    def report(self, *, offline: bool = False) -> ValidationReport:
        wh = self.wh
        return validate(wh.engine_db, wh.project, wh.dialect, config=None if offline else wh.config)

    def messages(self, **kwargs: bool) -> list[str]:
        return [p.message for p in self.report(**kwargs).problems]


@pytest.fixture
def case(wh: Wh) -> Case:
    return Case(wh)


def test_validate__selects_reading_what_the_warehouse_has__no_problem_warehouse_checked(case: Case) -> None:
    case.task("totals", "SELECT customer_id, SUM(amount) AS total FROM {s}.orders GROUP BY customer_id")
    report = case.report()
    assert (report.ok, report.warehouse, report.warnings, report.notes) == (True, "checked", (), ())


def test_validate__select_reads_a_missing_table__problem_names_task_file_table_and_fix(case: Case) -> None:
    case.task("summary", "SELECT o.customer_id FROM {s}.orderz o")
    s = case.wh.schema
    assert case.messages() == [
        f"task sales.summary: the SELECT of 'summary.sql' reads {s}.orderz, which the {case.wh.dialect} warehouse "
        f"does not have and no task of the project writes (did you mean {s}.orders?); expected a table or view of "
        "the warehouse, or the TARGET_OBJECT of a SQL task of the project; correct the table in "
        f"sql_files/summary.sql, or create {s}.orderz in the warehouse"]
    assert case.report(offline=True).ok, "--offline does not read the warehouse"


def test_validate__select_reads_a_missing_column__problem_lists_the_table_columns(case: Case) -> None:
    case.task("totals", "SELECT o.customer_id, amountt FROM {s}.orders o")
    s = case.wh.schema
    assert case.messages() == [
        f"task sales.totals: the SELECT of 'totals.sql' reads column amountt, which {s}.orders does not have (did "
        f"you mean amount?); expected a column of {s}.orders: order_id, customer_id, amount; correct the column in "
        f"sql_files/totals.sql, or add it to {s}.orders"]


def test_validate__misspelt_merge_key_under_select_star__problem_names_the_returned_columns(case: Case) -> None:
    case.task("orders_copy", "SELECT * FROM {s}.orders", "SCD1_MERGE", MERGE_KEY="order_key")
    assert case.messages() == [
        "task sales.orders_copy: parameter MERGE_KEY names order_key, which the SELECT of 'orders_copy.sql' does "
        f"not return; expected columns the SELECT returns (order_id, customer_id, amount); correct MERGE_KEY{MIG}, "
        "or return the column"]


def test_validate__target_lacks_the_columns_its_action_writes__problem_from_the_handler_judgement(case: Case) -> None:
    case.wh.execute("CREATE TABLE {s}.customers (customer_id INTEGER, total DECIMAL(12,2))")
    case.task("customers", "SELECT customer_id, SUM(amount) AS total FROM {s}.orders GROUP BY customer_id",
              "SCD1_MERGE", MERGE_KEY="customer_id")
    target = case.wh.t("customers")
    [problem] = case.report().problems
    assert (problem.check, problem.task, problem.value) == ("target-incompatible", "customers", target)
    assert problem.finding == (f"SCD1_MERGE into {target} would be refused: {target} has no HASH_KEY column, which "
                               "SCD1_MERGE writes")
    assert problem.remedy.startswith(f"add it (ALTER TABLE {target} ADD COLUMN HASH_KEY VARCHAR(32); existing rows")


def test_validate__select_returns_a_column_the_target_lacks__problem_says_schema_evolution(case: Case) -> None:
    case.wh.execute("CREATE TABLE {s}.totals (customer_id INTEGER)")
    case.task("totals", "SELECT customer_id, amount FROM {s}.orders")
    [problem] = case.report().problems
    assert problem.message == (
        f"task sales.totals: OVERWRITE_TABLE into {case.wh.t('totals')} would be refused: the SELECT returns amount, "
        f"which {case.wh.t('totals')} does not have; expected a target OVERWRITE_TABLE can write: the columns and "
        "format the SELECT and the task's parameters need; set SCHEMA_EVOLUTION = 'Y' to add new columns, or add "
        "them to the table yourself")


def test_validate__table_made_by_an_upstream_task_before_its_first_run__no_problem(case: Case) -> None:
    case.task("customers", "SELECT customer_id, SUM(amount) AS total FROM {s}.orders GROUP BY customer_id",
              "SCD2_MERGE", MERGE_KEY="customer_id")
    case.task("top", "SELECT c.customer_id, c.total FROM {s}.customers c WHERE c.active_flag = 'Y'")
    report = case.report()
    assert (report.ok, report.notes) == (True, ())


def test_validate__made_table_read_for_a_column_its_task_does_not_return__problem(case: Case) -> None:
    case.task("customers", "SELECT customer_id, SUM(amount) AS total FROM {s}.orders GROUP BY customer_id")
    case.task("top", "SELECT c.customer_id, c.totl FROM {s}.customers c")
    [message] = case.messages()
    expected = (f"task sales.top: the SELECT of 'top.sql' reads column totl, which {case.wh.t('customers')} does "
                f"not have (did you mean total?); expected a column of {case.wh.t('customers')} (made by task "
                "sales.customers from customers.sql): customer_id, total, pipeline_id")
    assert message.lower().startswith(expected.lower()), message
    assert message.endswith("; correct the column in sql_files/top.sql, or return it from sql_files/customers.sql")


def test_validate__made_table_whose_columns_sqlglot_cannot_name__column_check_skipped_with_a_note(
        case: Case) -> None:
    case.task("series", "SELECT g.* FROM generate_series(1, 3) g")
    case.task("top", "SELECT s.anything FROM {s}.series s")
    report = case.report()
    assert report.ok
    assert report.notes == (f"task sales.top: {case.wh.t('series')} is made by task sales.series on its first run; "
                            "the columns read from it are not checked until it exists (series.sql does not say "
                            "which columns it has)",)


def _unreachable(wh: Wh) -> None:
    text = (wh.project / "craft-connector.yml").read_text(encoding="utf-8")
    warehouse = ("  dialect: postgresql\n  url: postgresql://nobody@127.0.0.1:1/none\n" if wh.dialect == "postgresql"
                 else "  dialect: duckdb\n  path: garbage.duckdb\n")
    (wh.project / "garbage.duckdb").write_text("not a DuckDB file", encoding="utf-8")
    head = text[:text.index("Warehouse:\n") + len("Warehouse:\n")]
    (wh.project / "craft-connector.yml").write_text(head + warehouse, encoding="utf-8")


def test_cli_validate__unreachable_warehouse__one_warning_metadata_checked_exit_code_unchanged(case: Case) -> None:
    case.task("totals", "SELECT o.customer_id FROM {s}.orderz o")
    case.task("broken", "SELECT a FROM WHERE")
    assert "orderz" in etl_craft("validate", cwd=case.wh.project).out, "reachable: the missing table is a problem"
    _unreachable(case.wh)
    done = etl_craft("validate", cwd=case.wh.project)
    assert done.code == 7, done.err  # the broken SQL file, found offline
    warnings = [line for line in done.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, done.err
    if case.wh.dialect == "postgresql":
        assert warnings[0] == (
            "warning: the warehouse checks were skipped: cannot reach the warehouse at postgresql://nobody@127.0.0.1:1/"
            "none: the connection was refused (nothing listens on 127.0.0.1:1); check Warehouse.url in "
            "craft-connector.yml and that the server is running; or pass --offline to skip these checks")
    else:
        assert warnings[0].startswith("warning: the warehouse checks were skipped: cannot open the warehouse "
                                      f"{case.wh.project / 'garbage.duckdb'}: ")
        assert warnings[0].endswith("; check Warehouse.path in craft-connector.yml and that etl-craft may read and "
                                    "write that file; or pass --offline to skip these checks")
    assert "broken.sql" in done.out and "orderz" not in done.out
    assert done.out.splitlines()[-1].endswith("warehouse unreachable)")
    offline = etl_craft("validate", "--offline", "--format", "json", cwd=case.wh.project)
    assert (offline.code, offline.err) == (7, "")
    assert json.loads(offline.out)["warehouse"] == "offline"


def test_cli_validate__offline__the_missing_table_is_not_reported(case: Case) -> None:
    case.task("totals", "SELECT o.customer_id FROM {s}.orderz o")
    assert etl_craft("validate", cwd=case.wh.project).code == 7
    done = etl_craft("validate", "--offline", cwd=case.wh.project)
    assert (done.code, done.err) == (0, "")
    assert done.out.splitlines()[-1] == "valid: 1 pipeline, 1 task, 1 file read"


def test_validate__a_duckdb_file_not_created_yet__read_as_empty_and_not_created(tmp_path: Path, wh: Wh) -> None:
    if wh.dialect != "duckdb":
        pytest.skip("a DuckDB file only")
    case = Case(wh)
    case.task("totals", "SELECT 1 AS customer_id")
    case.task("top", "SELECT customer_id FROM {s}.totals")
    (wh.project / "warehouse.duckdb").unlink()
    report = case.report()
    assert (report.ok, report.warehouse) == (True, "checked")
    assert not (wh.project / "warehouse.duckdb").exists()
