"""The PYTHON handler: scripts loaded as real modules (B19), offsets returned typed and exact, every result
checked before anything is committed, library loggers kept quiet (B49), and the warehouse connection committed
only when run() returns a valid result, on DuckDB and PostgreSQL."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import psycopg
import pytest

from etlcraft.config.loader import load_config
from etlcraft.core.errors import ScriptError
from etlcraft.handlers.context import HandlerResult, Offset, TaskContext
from etlcraft.handlers.python_script import SECRET_BEARING_LOGGERS, run_python_task
from tests.py.conftest import PgServer

ROOT = Path(__file__).resolve().parents[3]
DUCKDB_CONFIG = "Engine:\n  dialect: sqlite\n  path: .etl-craft/engine.db\nWarehouse:\n  dialect: duckdb\n" \
                "  path: warehouse.duckdb\n"
PREFIX = "ingestion_scripts/load.py: "


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "craft-connector.yml").write_text(DUCKDB_CONFIG, encoding="utf-8")
    (tmp_path / "ingestion_scripts").mkdir()
    return tmp_path


@pytest.fixture(autouse=True)
def _forget_scripts() -> Iterator[None]:
    yield
    for name in [n for n in sys.modules if n.startswith("etl_craft_script_")]:
        del sys.modules[name]


def write_script(project: Path, body: str, name: str = "load.py") -> str:
    path = project / "ingestion_scripts" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return name


def context(project: Path, script_file: str | None, *, parameters: dict[str, str] | None = None,
            last_offset: Offset | None = None, task_run_id: int = 100) -> TaskContext:
    return TaskContext(
        project_dir=project, config=load_config(project), pipeline_id=1, pipeline_code="orders",
        pipeline_run_id=10, run_date=date(2026, 1, 31), task_id=5, task_code="ingest_orders",
        task_run_id=task_run_id, attempt_id=1000, handler="PYTHON", action=None, sql_file=None,
        script_file=script_file, target_object="lnd_orders", parameters=parameters or {}, last_offset=last_offset)


def run_script(project: Path, body: str, **kwargs: object) -> HandlerResult:
    return run_python_task(context(project, write_script(project, body), **kwargs))  # type: ignore[arg-type]


def warehouse_rows(project: Path, sql: str) -> list[tuple[object, ...]]:
    with duckdb.connect(str(project / "warehouse.duckdb")) as conn:
        return conn.execute(sql).fetchall()


# ------------------------------------------------------------------------------------- B19: real modules


def test_b19_plain_dataclass_works(project: Path) -> None:
    result = run_script(project, """
        from dataclasses import dataclass, field
        from etlcraft.scripting import ScriptResult

        @dataclass
        class Row:
            id: int
            tags: list[str] = field(default_factory=list)

        def run(task):
            rows = [Row(1), Row(2, ["x"])]
            return ScriptResult(row_count=len(rows))
    """)
    assert result.counts.source == 2 and result.counts.rows_written == 2


def test_b19_dataclass_under_future_annotations_works(project: Path) -> None:
    """A string ClassVar annotation is only recognized when the dataclass's module is in sys.modules."""
    result = run_script(project, """
        from __future__ import annotations

        import dataclasses
        from dataclasses import dataclass
        from typing import ClassVar
        from etlcraft.scripting import ScriptResult

        @dataclass(frozen=True)
        class Row:
            kind: ClassVar[str] = "order"
            id: int = 0
            name: str = ""

        def run(task):
            assert [f.name for f in dataclasses.fields(Row)] == ["id", "name"]
            return ScriptResult(row_count=Row(3, "c").id)
    """)
    assert result.counts.source == 3


def test_b19_script_class_pickles(project: Path) -> None:
    result = run_script(project, """
        import pickle
        from dataclasses import dataclass
        from etlcraft.scripting import ScriptResult

        @dataclass(frozen=True)
        class Batch:
            size: int

        def run(task):
            again = pickle.loads(pickle.dumps(Batch(4)))
            assert type(again) is Batch and again == Batch(4)
            return ScriptResult(row_count=again.size)
    """)
    assert result.counts.source == 4


def test_b19_enum_works(project: Path) -> None:
    result = run_script(project, """
        import enum
        import pickle
        from etlcraft.scripting import ScriptResult

        class Source(enum.Enum):
            API = "api"
            FILE = "file"

        Kind = enum.Enum("Kind", "FULL DELTA")

        def run(task):
            assert pickle.loads(pickle.dumps(Source.FILE)) is Source.FILE
            assert pickle.loads(pickle.dumps(Kind.DELTA)) is Kind.DELTA
            return ScriptResult(row_count=len(Source) + len(Kind))
    """)
    assert result.counts.source == 4


def test_b19_typing_get_type_hints_works(project: Path) -> None:
    result = run_script(project, """
        from __future__ import annotations

        import typing
        from dataclasses import dataclass
        from datetime import date
        from etlcraft.scripting import ScriptResult, ScriptTask

        @dataclass
        class Order:
            id: int
            placed: date

        def run(task: ScriptTask) -> ScriptResult:
            assert typing.get_type_hints(Order) == {"id": int, "placed": date}
            assert typing.get_type_hints(run) == {"task": ScriptTask, "return": ScriptResult}
            return ScriptResult(row_count=1)
    """)
    assert result.counts.source == 1


def test_b19_process_pool_with_fork_works(project: Path) -> None:
    result = run_script(project, """
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from etlcraft.scripting import ScriptResult

        def square(x):
            return x * x

        def run(task):
            with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("fork")) as pool:
                total = sum(pool.map(square, range(5)))
            return ScriptResult(row_count=total)
    """)
    assert result.counts.source == 30


def test_b19_loader_future_flags_do_not_leak_into_scripts(project: Path) -> None:
    """The handler's module uses `from __future__ import annotations`; a script without it gets real objects."""
    result = run_script(project, """
        from etlcraft.scripting import ScriptResult

        def annotated(x: int) -> str:
            return str(x)

        def run(task):
            assert annotated.__annotations__ == {"x": int, "return": str}
            return ScriptResult(row_count=0)
    """)
    assert result.counts.source == 0


def test_b19_module_is_named_after_its_path_and_has_a_spec(project: Path) -> None:
    name = write_script(project, """
        import sys
        from etlcraft.scripting import ScriptResult

        def run(task):
            module = sys.modules[__name__]
            assert __name__ == "etl_craft_script_crm_contacts_v2_py"
            assert module.__spec__.name == __name__ and module.__spec__.origin == __file__
            return ScriptResult(row_count=1)
    """, name="crm/contacts.v2.py")
    run_python_task(context(project, name))
    assert sys.modules["etl_craft_script_crm_contacts_v2_py"].__file__ == str(
        project / "ingestion_scripts" / "crm" / "contacts.v2.py")


def test_b19_module_is_removed_when_loading_fails(project: Path) -> None:
    with pytest.raises(ScriptError) as refused:
        run_script(project, """
            raise ValueError("no source configured")
        """)
    assert str(refused.value) == (
        PREFIX.rstrip(": ") + " raised ValueError while it was loaded, before run() was called: no source "
        "configured; fix the script, or install what it imports into etl-craft's Python environment")
    assert isinstance(refused.value.__cause__, ValueError)
    assert "etl_craft_script_load_py" not in sys.modules


# ------------------------------------------------------------------------------------------------ offsets


OFFSET_SCRIPT = """
    from datetime import date, datetime, timedelta, timezone
    from decimal import Decimal
    from zoneinfo import ZoneInfo
    from etlcraft.scripting import ScriptResult

    VALUE = {value}

    def run(task):
        if task.last_offset is not None:
            assert task.last_offset == VALUE, (task.last_offset, VALUE)
            assert type(task.last_offset) is (datetime if isinstance(VALUE, datetime) else type(VALUE))
        return ScriptResult(row_count=1, offset=VALUE)
"""


@pytest.mark.parametrize(("value", "stored"), [
    ("12345678901234567890", Offset("12345678901234567890", "INTEGER")),
    ("Decimal('98765.432101')", Offset("98765.432101", "DECIMAL")),
    ("'0000000042_orders.json'", Offset("0000000042_orders.json", "TEXT")),
    ("date(2026, 1, 31)", Offset("2026-01-31", "DATE")),
    ("datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=timezone.utc)",
     Offset("2026-01-01T00:00:00.000001+00:00", "TIMESTAMP")),
    ("datetime(2026, 7, 1, 9, 30, 15, 999999, tzinfo=ZoneInfo('Europe/Paris'))",
     Offset("2026-07-01T07:30:15.999999+00:00", "TIMESTAMP")),
    ("datetime(2026, 1, 1, 0, 0, tzinfo=timezone(timedelta(hours=5, minutes=45)))",
     Offset("2025-12-31T18:15:00.000000+00:00", "TIMESTAMP")),
])
def test_offset__every_type__round_trips_through_the_store_exactly(project: Path, value: str, stored: Offset) -> None:
    first = run_script(project, OFFSET_SCRIPT.format(value=value))
    assert first.offset == stored
    again = run_script(project, OFFSET_SCRIPT.format(value=value), last_offset=first.offset)
    assert again.offset == stored


def test_offset__stored_timestamp__comes_back_in_utc_to_the_microsecond(project: Path) -> None:
    result = run_script(project, """
        from datetime import datetime, timezone
        from etlcraft.scripting import ScriptResult

        def run(task):
            assert task.last_offset == datetime(2026, 3, 1, 12, 0, 0, 654321, tzinfo=timezone.utc)
            assert task.last_offset.tzinfo is timezone.utc and task.last_offset.microsecond == 654321
            return ScriptResult(row_count=0)
    """, last_offset=Offset("2026-03-01T12:00:00.654321+00:00", "TIMESTAMP"))
    assert result.offset is None


def test_offset__none__keeps_the_stored_one(project: Path) -> None:
    result = run_script(project, """
        from etlcraft.scripting import ScriptResult

        def run(task):
            return ScriptResult(row_count=0, offset=None)
    """, last_offset=Offset("41", "INTEGER"))
    assert result.offset is None
    assert result.message == PREFIX + "0 row(s) written; no new offset"


def test_b60_nanosecond_offset_is_refused_and_nothing_is_stored(project: Path) -> None:
    with duckdb.connect(str(project / "warehouse.duckdb")) as conn:
        conn.execute("CREATE TABLE landed (id INTEGER)")
    with pytest.raises(ScriptError) as refused:
        run_script(project, """
            from datetime import datetime, timezone
            from etlcraft.scripting import ScriptResult

            class Timestamp(datetime):  # what a pandas Timestamp looks like to etl-craft
                nanosecond = 789

                def __str__(self):
                    return "2026-01-01 00:00:00.123456789"

            def run(task):
                task.warehouse.connection().execute("INSERT INTO landed VALUES (1)")
                return ScriptResult(row_count=1, offset=Timestamp(2026, 1, 1, 0, 0, 0, 123456, tzinfo=timezone.utc))
        """)
    assert str(refused.value) == PREFIX + (
        "offset 2026-01-01 00:00:00.123456789 has nanoseconds, which the offset store can't keep; "
        "round it to microseconds")
    assert warehouse_rows(project, "SELECT * FROM landed") == []


def test_b60_timestamp_with_zero_nanoseconds_is_stored(project: Path) -> None:
    result = run_script(project, """
        from datetime import datetime, timezone
        from etlcraft.scripting import ScriptResult

        class Timestamp(datetime):
            nanosecond = 0

        def run(task):
            return ScriptResult(row_count=1, offset=Timestamp(2026, 1, 1, 0, 0, 0, 123456, tzinfo=timezone.utc))
    """)
    assert result.offset == Offset("2026-01-01T00:00:00.123456+00:00", "TIMESTAMP")


# ------------------------------------------------------------------------------ every result is checked

EXPECTED_OFFSET = "an int, a Decimal, a str, a date, a timezone-aware datetime or None"


@pytest.mark.parametrize(("returned", "message"), [
    ("None", "run() returned None (a NoneType); expected a ScriptResult; end run() with "
             "return ScriptResult(row_count=..., offset=...)"),
    ("{'row_count': 1}", "run() returned {'row_count': 1} (a dict); expected a ScriptResult; end run() with "
                         "return ScriptResult(row_count=..., offset=...)"),
    ("ScriptResult(row_count=-1)", "ScriptResult.row_count is -1 (an int); expected a whole number of 0 or more "
                                   "(an int: the rows the script wrote); return int(count)"),
    ("ScriptResult(row_count=True)", "ScriptResult.row_count is True (a bool); expected a whole number of 0 or "
                                     "more (an int: the rows the script wrote); return int(count)"),
    ("ScriptResult(row_count=2.0)", "ScriptResult.row_count is 2.0 (a float); expected a whole number of 0 or "
                                    "more (an int: the rows the script wrote); return int(count)"),
    ("ScriptResult(row_count='3')", "ScriptResult.row_count is '3' (a str); expected a whole number of 0 or more "
                                    "(an int: the rows the script wrote); return int(count)"),
    ("ScriptResult(row_count=1, offset=1.5)", f"offset 1.5 is a float, which can't be stored exactly; expected "
                                              f"{EXPECTED_OFFSET}; return a Decimal (Decimal(str(value))) or an int"),
    ("ScriptResult(row_count=1, offset=False)", f"offset False is a bool; expected {EXPECTED_OFFSET}; return a "
                                                "number or a text instead"),
    ("ScriptResult(row_count=1, offset=Decimal('NaN'))", f"offset Decimal('NaN') is not a finite number; expected "
                                                         f"{EXPECTED_OFFSET}"),
    ("ScriptResult(row_count=1, offset='a\\x00b')", "offset 'a\\x00b' contains a NUL character, which the offset "
                                                     "store can't keep; remove it"),
    ("ScriptResult(row_count=1, offset=datetime(2026, 1, 1))",
     "offset 2026-01-01 00:00:00 is a datetime without a time zone, so the instant it names is unknown; expected a "
     "timezone-aware datetime; attach the source's zone (for UTC: value.replace(tzinfo=timezone.utc))"),
    ("ScriptResult(row_count=1, offset=(1, 2))", f"offset (1, 2) is a tuple; expected {EXPECTED_OFFSET}; convert "
                                                 "it to one of those"),
    ("ScriptResult(row_count=1, variables=['a'])", "ScriptResult.variables is ['a'] (a list); expected a mapping "
                                                   "of names (str) to values, or None; return a dict"),
    ("ScriptResult(row_count=1, variables={1: 'a'})", "ScriptResult.variables has the key 1 (an int); expected "
                                                      "names (str) as keys; convert the keys with str()"),
])
def test_invalid_result__is_refused_naming_the_script__and_the_warehouse_is_rolled_back(
        project: Path, returned: str, message: str) -> None:
    with duckdb.connect(str(project / "warehouse.duckdb")) as conn:
        conn.execute("CREATE TABLE landed (id INTEGER)")
    with pytest.raises(ScriptError) as refused:
        run_script(project, f"""
            from datetime import datetime
            from decimal import Decimal
            from etlcraft.scripting import ScriptResult

            def run(task):
                task.warehouse.connection().execute("INSERT INTO landed VALUES (1)")
                return {returned}
        """, last_offset=Offset("7", "INTEGER"))
    assert str(refused.value) == PREFIX + message
    assert refused.value.exit_code == 8
    assert warehouse_rows(project, "SELECT * FROM landed") == []


def test_valid_result__message_carries_counts_offset_and_variables(project: Path) -> None:
    result = run_script(project, """
        from decimal import Decimal
        from etlcraft.scripting import ScriptResult

        def run(task):
            return ScriptResult(row_count=12, offset=Decimal("10.50"), variables={"pages": 3, "source": "api"})
    """)
    assert result.counts.source == 12 and result.counts.rows_written == 12 and result.counts.insert is None
    assert result.offset == Offset("10.50", "DECIMAL")
    assert result.message == PREFIX + '12 row(s) written; offset 10.50 (DECIMAL); variables {"pages": 3, ' \
                                      '"source": "api"}'


def test_valid_result__odd_variables_and_long_offsets__are_shown_cut_and_still_succeed(project: Path) -> None:
    result = run_script(project, """
        from etlcraft.scripting import ScriptResult

        def run(task):
            loop = []
            loop.append(loop)
            return ScriptResult(row_count=1, offset="k" * 500, variables={"loop": loop})
    """)
    assert result.offset == Offset("k" * 500, "TEXT")
    assert result.message == PREFIX + f"1 row(s) written; offset {'k' * 197}... (TEXT); variables {{'loop': [[...]]}}"


# ---------------------------------------------------------------------------------- what the script gets


def test_script_task__carries_the_identities_parameters_and_inputs(project: Path) -> None:
    result = run_script(project, """
        from datetime import date
        from etlcraft.scripting import ScriptResult, ScriptTask

        def run(task: ScriptTask) -> ScriptResult:
            assert (task.pipeline_id, task.pipeline_code, task.pipeline_run_id) == (1, "orders", 10)
            assert (task.task_run_id, task.attempt_id, task.task_code) == (100, 1000, "ingest_orders")
            assert task.run_date == date(2026, 1, 31)
            assert dict(task.parameters) == {"INPUT_PARAMS": '{"since": "2026-01-01", "pages": 2}', "RETRIES": "1"}
            assert dict(task.input_params) == {"since": "2026-01-01", "pages": 2}
            assert task.last_offset is None and task.warehouse.dialect == "duckdb"
            assert task.logger.name == "etlcraft.script.ingest_orders"
            assert (task.project_dir / "craft-connector.yml").is_file()
            return ScriptResult(row_count=0)
    """, parameters={"INPUT_PARAMS": '{"since": "2026-01-01", "pages": 2}', "RETRIES": "1"})
    assert result.counts.source == 0


def test_script_task__without_input_params__gets_an_empty_mapping(project: Path) -> None:
    run_script(project, """
        from etlcraft.scripting import ScriptResult

        def run(task):
            assert dict(task.input_params) == {}
            return ScriptResult(row_count=0)
    """)


# ----------------------------------------------------------------------------------------------- failures


@pytest.mark.parametrize(("script_file", "message"), [
    (None, "task ingest_orders has HANDLER PYTHON but no SCRIPT_FILE; set CFG_TASKS.SCRIPT_FILE to a file under "
           "ingestion_scripts/ in a project migration"),
    ("../secrets.py", "task ingest_orders: SCRIPT_FILE '../secrets.py' is not a .py file inside "
                      "ingestion_scripts/; name the script by its path relative to ingestion_scripts/, for example "
                      "load_orders.py"),
    ("/etc/passwd.py", "task ingest_orders: SCRIPT_FILE '/etc/passwd.py' is not a .py file inside "
                       "ingestion_scripts/; name the script by its path relative to ingestion_scripts/, for example "
                       "load_orders.py"),
    ("load.sh", "task ingest_orders: SCRIPT_FILE 'load.sh' is not a .py file inside ingestion_scripts/; name the "
                "script by its path relative to ingestion_scripts/, for example load_orders.py"),
])
def test_script_file__unusable__is_refused(project: Path, script_file: str | None, message: str) -> None:
    with pytest.raises(ScriptError) as refused:
        run_python_task(context(project, script_file))
    assert str(refused.value) == message


def test_script_file__missing__names_where_it_was_looked_for(project: Path) -> None:
    with pytest.raises(ScriptError) as refused:
        run_python_task(context(project, "absent.py"))
    assert str(refused.value) == (
        f"task ingest_orders: the script ingestion_scripts/absent.py does not exist (looked for "
        f"{project / 'ingestion_scripts' / 'absent.py'}); create it, or fix CFG_TASKS.SCRIPT_FILE in a project "
        "migration")


def test_script__syntax_error__names_the_line(project: Path) -> None:
    with pytest.raises(ScriptError) as refused:
        run_script(project, "x = 1\ndef run(task)\n    return 1\n")
    path = project / "ingestion_scripts" / "load.py"
    assert str(refused.value) == (
        f"ingestion_scripts/load.py, line 2: expected ':'; fix the script's syntax (python3 -m py_compile {path})")


@pytest.mark.parametrize(("body", "found"), [
    ("x = 1\n", "defines no run"),
    ("run = 42\n", "has run = int, not a function"),
])
def test_script__without_a_run_function__is_refused(project: Path, body: str, found: str) -> None:
    with pytest.raises(ScriptError) as refused:
        run_script(project, body)
    assert str(refused.value) == (
        f"ingestion_scripts/load.py {found}; expected a function run(task: ScriptTask) -> ScriptResult; add it "
        "(from etlcraft.scripting import ScriptResult, ScriptTask)")


def test_script__exception__is_passed_on_unchanged(project: Path) -> None:
    with pytest.raises(ConnectionError, match="^source API answered 503$"):
        run_script(project, """
            def run(task):
                raise ConnectionError("source API answered 503")
        """)


def test_input_params__not_json__is_refused(project: Path) -> None:
    with pytest.raises(ScriptError) as refused:
        run_script(project, "def run(task):\n    pass\n", parameters={"INPUT_PARAMS": "{since: 1}"})
    assert str(refused.value) == (
        "task ingest_orders: INPUT_PARAMS is not valid JSON (Expecting property name enclosed in double quotes at "
        'character 2); expected a JSON object, for example {"since": "2026-01-01"}; fix it in CFG_TASK_PARAMETERS '
        "with a project migration (etl-craft validate checks it)")


def test_stored_offset__unreadable__is_refused(project: Path) -> None:
    with pytest.raises(ScriptError) as refused:
        run_script(project, "def run(task):\n    pass\n", last_offset=Offset("abc", "INTEGER"))
    assert str(refused.value) == (
        "task ingest_orders: the stored offset 'abc' (INTEGER) can't be read for ingestion_scripts/load.py: invalid "
        "literal for int() with base 10: 'abc'; store a valid one with a successful attempt, or clear it")


# ---------------------------------------------------------------------------------------- B49: logging

B49_SCRIPT = """
    import logging
    from etlcraft.scripting import ScriptResult

    def run(task):
        logging.getLogger("urllib3.connectionpool").info(
            "https://api.example.com:443 GET /v1/orders?api_key=sk_live_123456 HTTP/1.1 200")
        logging.getLogger("botocore.endpoint").debug("https://s3.example.com/?X-Amz-Credential=AKIA999")
        task.logger.info("fetched 3 rows")
        return ScriptResult(row_count=3)
"""


def test_b49_library_loggers_keep_keys_out_of_the_attempt_log(project: Path) -> None:
    """As in the task process: nothing configures logging, stdout and stderr are the attempt's log."""
    write_script(project, B49_SCRIPT)
    driver = project / "driver.py"
    driver.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from tests.py.handlers.test_python_script import context
        from etlcraft.handlers.python_script import run_python_task
        result = run_python_task(context(Path({str(project)!r}), "load.py"))
        print(result.message)
    """), encoding="utf-8")
    done = subprocess.run([sys.executable, str(driver)], capture_output=True, text=True, timeout=60, check=True)
    log = done.stdout + done.stderr
    assert re.search(r"^\d{4}-\d\d-\d\d [\d:,]+ INFO etlcraft\.script\.ingest_orders: fetched 3 rows$", log, re.M)
    assert "api_key" not in log and "sk_live" not in log and "AKIA" not in log
    assert "ingestion_scripts/load.py: 3 row(s) written; no new offset" in log


def test_b49_levels_are_restored_afterwards(project: Path, caplog: pytest.LogCaptureFixture) -> None:
    logging.getLogger("requests").setLevel(logging.ERROR)
    try:
        before = {name: logging.getLogger(name).level for name in SECRET_BEARING_LOGGERS}
        root_before = logging.getLogger().level
        run_script(project, B49_SCRIPT)
        assert {name: logging.getLogger(name).level for name in SECRET_BEARING_LOGGERS} == before
        assert logging.getLogger().level == root_before
        assert "fetched 3 rows" in caplog.text and "api_key" not in caplog.text
    finally:
        logging.getLogger("requests").setLevel(logging.NOTSET)


def test_b49_engine_at_debug_lets_the_libraries_log(project: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A developer's debugging session (etl-craft itself at DEBUG) sees the libraries' records."""
    caplog.set_level(logging.DEBUG, logger="etlcraft")
    run_script(project, B49_SCRIPT)
    assert "api_key=sk_live_123456" in caplog.text


# ------------------------------------------------------------------------------------ warehouse: DuckDB


def test_warehouse__duckdb__commits_when_run_returns(project: Path) -> None:
    run_script(project, """
        import duckdb
        from etlcraft.scripting import ScriptResult

        def run(task):
            conn = task.warehouse.connection()
            assert isinstance(conn, duckdb.DuckDBPyConnection) and task.warehouse.connection() is conn
            assert conn.execute("SELECT current_setting('TimeZone')").fetchone() == ("UTC",)
            conn.execute("CREATE TABLE landed (id INTEGER, changed_at TIMESTAMPTZ)")
            conn.execute("INSERT INTO landed VALUES (1, TIMESTAMPTZ '2026-01-01 00:00:00+00')")
            return ScriptResult(row_count=1)
    """)
    rows = warehouse_rows(project, "SELECT id, CAST(changed_at AS VARCHAR) FROM landed")
    assert rows == [(1, "2026-01-01 00:00:00+00")]


def test_warehouse__duckdb__rolls_back_when_run_raises(project: Path) -> None:
    with duckdb.connect(str(project / "warehouse.duckdb")) as conn:
        conn.execute("CREATE TABLE landed (id INTEGER)")
    with pytest.raises(RuntimeError, match="^half-way$"):
        run_script(project, """
            def run(task):
                task.warehouse.connection().execute("INSERT INTO landed VALUES (1)")
                raise RuntimeError("half-way")
        """)
    assert warehouse_rows(project, "SELECT * FROM landed") == []


def test_warehouse__stopped_script__rolls_back_and_the_stop_goes_on(project: Path) -> None:
    """A stop arrives as an exception outside Exception (KeyboardInterrupt here): rolled back, passed on."""
    with duckdb.connect(str(project / "warehouse.duckdb")) as conn:
        conn.execute("CREATE TABLE landed (id INTEGER)")
    with pytest.raises(KeyboardInterrupt):
        run_script(project, """
            def run(task):
                task.warehouse.connection().execute("INSERT INTO landed VALUES (1)")
                try:
                    raise KeyboardInterrupt
                except Exception:  # what a script may catch: the stop passes through
                    pass
        """)
    assert warehouse_rows(project, "SELECT * FROM landed") == []


def test_warehouse__not_opened_unless_the_script_asks(project: Path) -> None:
    run_script(project, """
        from etlcraft.scripting import ScriptResult

        def run(task):
            return ScriptResult(row_count=0)
    """)
    assert not (project / "warehouse.duckdb").exists()


@contextmanager
def _lock_held(path: Path, seconds: float) -> Iterator[None]:
    """Another process holds the DuckDB file for `seconds` (killed on leaving, if it still does)."""
    code = f"import duckdb, time; c = duckdb.connect({str(path)!r}); print('held', flush=True); time.sleep({seconds})"
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            yield
        finally:
            if holder.poll() is None and seconds > 5:
                holder.kill()
            holder.wait(timeout=30)


COUNT_SCRIPT = """
    from etlcraft.scripting import ScriptResult

    def run(task):
        task.warehouse.connection().execute("CREATE TABLE t AS SELECT 1 AS x")
        return ScriptResult(row_count=1)
"""


def test_warehouse__duckdb_held_by_another_process__waits_for_it(project: Path) -> None:
    with _lock_held(project / "warehouse.duckdb", 1.0):
        assert run_script(project, COUNT_SCRIPT).counts.source == 1
    assert warehouse_rows(project, "SELECT x FROM t") == [(1,)]


def test_warehouse__duckdb_held_too_long__fails_naming_the_file_and_the_key(project: Path) -> None:
    config = project / "craft-connector.yml"
    config.write_text(config.read_text(encoding="utf-8") + "  busy_timeout_seconds: 1\n", encoding="utf-8")
    with _lock_held(project / "warehouse.duckdb", 30), pytest.raises(ScriptError) as refused:
        run_script(project, COUNT_SCRIPT)
    assert str(refused.value).startswith(
        f"the DuckDB warehouse {project / 'warehouse.duckdb'} is locked by another process after waiting 1 s "
        "(Warehouse.busy_timeout_seconds) (")
    assert str(refused.value).endswith(
        "; a DuckDB file has one writer at a time: make the tasks that write it depend on each other, raise "
        "Warehouse.busy_timeout_seconds, or use a PostgreSQL warehouse")
    assert refused.value.retryable is True


# -------------------------------------------------------------------------------- warehouse: PostgreSQL


@pytest.fixture
def pg_project(project: Path, pg_server: PgServer) -> Iterator[tuple[Path, str]]:
    name = pg_server.create()
    url = pg_server.url_for(name)
    (project / "craft-connector.yml").write_text(
        f"Engine:\n  dialect: sqlite\n  path: .etl-craft/engine.db\nWarehouse:\n  dialect: postgresql\n"
        f"  url: {url}\n  secret: WAREHOUSE_PASSWORD\n", encoding="utf-8")
    (project / ".env").write_text("WAREHOUSE_PASSWORD=not-needed-under-trust\n", encoding="utf-8")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE landed (id INTEGER, changed_at TIMESTAMPTZ)")
    yield project, url
    pg_server.drop(name)


@pytest.mark.postgres
def test_warehouse__postgresql__commits_when_run_returns_and_rolls_back_when_it_raises(
        pg_project: tuple[Path, str]) -> None:
    project, url = pg_project
    run_script(project, """
        import psycopg
        from etlcraft.scripting import ScriptResult

        def run(task):
            conn = task.warehouse.connection()
            assert isinstance(conn, psycopg.Connection) and task.warehouse.dialect == "postgresql"
            assert conn.execute("SHOW TimeZone").fetchone() == ("UTC",)
            conn.execute("INSERT INTO landed VALUES (%s, %s)", (1, "2026-01-01 00:00:00+00"))
            return ScriptResult(row_count=1)
    """)
    with pytest.raises(RuntimeError, match="^half-way$"):
        run_script(project, """
            def run(task):
                task.warehouse.connection().execute("INSERT INTO landed VALUES (2, now())")
                raise RuntimeError("half-way")
        """)
    with pytest.raises(ScriptError):
        run_script(project, """
            def run(task):
                task.warehouse.connection().execute("INSERT INTO landed VALUES (3, now())")
                return 3
        """)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT id, changed_at FROM landed").fetchall() == [(1, datetime(2026, 1, 1, tzinfo=UTC))]


# ------------------------------------------------------------------------------- the guide's example


def _guide_example() -> str:
    guide = (ROOT / "docs" / "guides" / "ingestion-scripts.md").read_text(encoding="utf-8")
    found = re.search(r"Save it as\s+`ingestion_scripts/load_orders\.py`:\n\n```python\n(.*?)```", guide, re.S)
    assert found, "the guide's example script is missing"
    return found.group(1)


def _orders(*rows: tuple[int, int, str, str]) -> str:
    return "".join(json.dumps({"order_id": o, "customer_id": c, "amount": a, "updated_at": u}) + "\n"
                   for o, c, a, u in rows)


@pytest.mark.parametrize("warehouse", ["duckdb", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_guide_example__loads_new_orders_once_and_keeps_its_offset(
        warehouse: str, project: Path, request: pytest.FixtureRequest) -> None:
    if warehouse == "postgresql":
        request.getfixturevalue("pg_project")
    (project / "ingestion_scripts" / "load_orders.py").write_text(_guide_example(), encoding="utf-8")
    (project / "landing").mkdir()
    export = project / "landing" / "orders.jsonl"
    export.write_text(_orders((1, 7, "12.50", "2026-01-30T10:00:00.123456+01:00"),
                              (2, 8, "3.10", "2026-01-30T08:00:00Z")), encoding="utf-8")
    params = {"INPUT_PARAMS": '{"source": "landing/orders.jsonl"}'}

    first = run_python_task(context(project, "load_orders.py", parameters=params, task_run_id=100))
    assert first.counts.source == 2
    assert first.offset == Offset("2026-01-30T09:00:00.123456+00:00", "TIMESTAMP")

    with export.open("a", encoding="utf-8") as more:
        more.write(_orders((3, 7, "99.99", "2026-01-31T00:00:00Z")))
    second = context(project, "load_orders.py", parameters=params, last_offset=first.offset, task_run_id=101)
    assert run_python_task(second).counts.source == 1
    again = run_python_task(second)  # a retry of the same task run replaces its rows
    assert again.offset == Offset("2026-01-31T00:00:00.000000+00:00", "TIMESTAMP")

    query = "SELECT order_id, amount, TASK_RUN_ID FROM lnd_orders ORDER BY order_id"
    if warehouse == "duckdb":
        rows = warehouse_rows(project, query)
    else:
        with psycopg.connect(request.getfixturevalue("pg_project")[1]) as conn:
            rows = conn.execute(query).fetchall()
    assert rows == [(1, Decimal("12.50"), 100), (2, Decimal("3.10"), 100), (3, Decimal("99.99"), 101)]
