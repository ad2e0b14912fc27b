"""The bad-input corpus: mistakes a user makes in craft-connector.yml, metadata migrations, SQL files, ingestion
scripts and on the command line, each with the exit code docs/reference/exit-codes.md gives it.

A case changes a copy of a migrated, once-run example project (`edit`), runs one command (`args`) and expects
`code`. tests/py/process/test_bad_inputs.py runs every case and checks that it exits with that code, prints no
traceback and leaves the Engine DB and the warehouse exactly as they were.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from etlcraft.core.errors import error_specs

Edit = Callable[[Path], None]


def _exit(name: str) -> int:
    return error_specs()[name].exit


USAGE, CONFIGURATION, ENGINE_DB, MIGRATION = _exit("USAGE"), _exit("CONFIGURATION"), _exit("ENGINE_DB"), \
    _exit("MIGRATION")
VALIDATION, NOT_FOUND, REFUSED = _exit("VALIDATION"), _exit("NOT_FOUND"), _exit("REFUSED_BY_POLICY")
STALE, WAREHOUSE = _exit("STALE_TRANSITION"), _exit("WAREHOUSE")

#: The option spellings the corpus uses (kebab-case is the documented one).
P, T = "--pipeline-code", "--task-code"


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    code: int
    edit: Edit | None = None


# -- craft-connector.yml ---------------------------------------------------------------------------------------------

def _config(project: Path) -> dict[str, object]:
    loaded = yaml.safe_load((project / "craft-connector.yml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _write_config(project: Path, config: object) -> None:
    (project / "craft-connector.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def _raw_config(text: str | bytes) -> Edit:
    def edit(project: Path) -> None:
        path = project / "craft-connector.yml"
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return edit


def _set(section: str, key: str, value: object) -> Edit:
    def edit(project: Path) -> None:
        config = _config(project)
        part = config.setdefault(section, {})
        assert isinstance(part, dict)
        part[key] = value
        _write_config(project, config)
    return edit


def _drop(section: str, key: str | None = None) -> Edit:
    def edit(project: Path) -> None:
        config = _config(project)
        if key is None:
            config.pop(section)
        else:
            part = config[section]
            assert isinstance(part, dict)
            part.pop(key)
        _write_config(project, config)
    return edit


def _replace_section(section: str, value: object) -> Edit:
    def edit(project: Path) -> None:
        config = _config(project)
        config[section] = value
        _write_config(project, config)
    return edit


CONFIG_EDITS: dict[str, Edit] = {
    "yaml-syntax": _raw_config("Engine:\n  dialect: sqlite\n   path: [unclosed\n"),
    "yaml-tab-indent": _raw_config("Engine:\n\tdialect: sqlite\n"),
    "yaml-a-list": _raw_config("- Engine\n- Warehouse\n"),
    "yaml-a-scalar": _raw_config("just text\n"),
    "yaml-empty": _raw_config(""),
    "yaml-not-utf8": _raw_config(b"Engine:\n  dialect: sqlite\n  path: \xff\xfe.db\n"),
    "yaml-duplicate-section": _raw_config("Engine:\n  dialect: sqlite\n  path: a.db\nEngine:\n  dialect: sqlite\n"
                                          "  path: b.db\nWarehouse:\n  dialect: duckdb\n  path: w.duckdb\n"),
    "yaml-duplicate-key": _raw_config("Engine:\n  dialect: sqlite\n  path: a.db\n  path: b.db\n"
                                      "Warehouse:\n  dialect: duckdb\n  path: w.duckdb\n"),
    "yaml-alias-bomb": _raw_config("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                                   "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nEngine: *c\n"),
    "engine-missing": _drop("Engine"),
    "warehouse-missing": _drop("Warehouse"),
    "engine-not-a-mapping": _replace_section("Engine", "sqlite"),
    "warehouse-a-list": _replace_section("Warehouse", ["duckdb"]),
    "section-unknown": _replace_section("Engnie", {"dialect": "sqlite"}),
    "section-lower-case": _replace_section("orchestration", {"Retries": 1}),
    "engine-dialect-unknown": _set("Engine", "dialect", "oracle"),
    "engine-dialect-missing": _drop("Engine", "dialect"),
    "engine-dialect-a-number": _set("Engine", "dialect", 5),
    "engine-path-missing": _drop("Engine", "path"),
    "engine-path-empty": _set("Engine", "path", ""),
    "engine-path-a-list": _set("Engine", "path", ["a.db"]),
    "engine-url-with-sqlite": _set("Engine", "url", "sqlite:///x.db"),
    "engine-schema-with-sqlite": _set("Engine", "schema", "etl"),
    "engine-secret-with-sqlite": _set("Engine", "secret", "ETL_CRAFT_ENGINE_PASSWORD"),
    "engine-key-unknown": _set("Engine", "paht", "x.db"),
    "engine-connect-timeout-with-sqlite": _set("Engine", "connect_timeout_seconds", 5),
    "engine-busy-timeout-zero": _set("Engine", "busy_timeout_seconds", 0),
    "engine-busy-timeout-with-unit": _set("Engine", "busy_timeout_seconds", "30s"),
    "warehouse-busy-timeout-huge": _set("Warehouse", "busy_timeout_seconds", 10**6),
    "warehouse-statement-timeout-with-duckdb": _set("Warehouse", "statement_timeout_seconds", 60),
    "warehouse-dialect-snowflake": _set("Warehouse", "dialect", "snowflake"),
    "warehouse-path-missing": _drop("Warehouse", "path"),
    "warehouse-key-unknown": _set("Warehouse", "database", "x"),
    "orchestration-not-a-mapping": _replace_section("Orchestration", "fast"),
    "orchestration-key-typo": _set("Orchestration", "Max_paralel_tasks", 4),
    "orchestration-key-case": _set("Orchestration", "max_parallel_tasks", 4),
    "max-parallel-zero": _set("Orchestration", "Max_parallel_tasks", 0),
    "max-parallel-negative": _set("Orchestration", "Max_parallel_tasks", -2),
    "max-parallel-text": _set("Orchestration", "Max_parallel_tasks", "four"),
    "max-parallel-fraction": _set("Orchestration", "Max_parallel_tasks", 1.5),
    "max-parallel-boolean": _set("Orchestration", "Max_parallel_tasks", True),
    "max-parallel-huge": _set("Orchestration", "Max_parallel_tasks", 2**40),
    "lease-too-short": _set("Orchestration", "Lease_seconds", 4),
    "heartbeat-over-half-lease": _set("Orchestration", "Heartbeat_seconds", 40),
    "retries-negative": _set("Orchestration", "Retries", -1),
    "retries-text": _set("Orchestration", "Retries", "two"),
    "retry-delay-negative": _set("Orchestration", "Retry_delay_seconds", -5),
    "retry-backoff-under-one": _set("Orchestration", "Retry_backoff", 0.5),
    "retry-backoff-text": _set("Orchestration", "Retry_backoff", "double"),
    "gate-wait-negative": _set("Orchestration", "Gate_wait_minutes", -1),
    "timezone-unknown": _set("Orchestration", "Timezone", "Mars/Olympus_Mons"),
    "timezone-a-number": _set("Orchestration", "Timezone", 5),
    "timezone-offset-text": _set("Orchestration", "Timezone", "+02:00"),
    "email-section-empty": _replace_section("Email", {}),
    "email-without-host": _replace_section("Email", {"from_address": "etl@example.com", "to": ["ops@example.com"]}),
    "email-bad-address": _replace_section("Email", {"host": "smtp.example.com", "from_address": "not an address",
                                                    "to": ["ops@example.com"]}),
    "email-tls-none-with-login": _replace_section("Email", {
        "host": "smtp.example.com", "from_address": "etl@example.com", "to": ["ops@example.com"], "tls_mode": "none",
        "username": "etl", "secret": "SMTP_PASSWORD"}),
    "alerts-channel-of-no-type": _replace_section("Alerts", {"channels": {"pager": {"type": "pager"}}}),
    "alerts-webhook-without-url": _replace_section("Alerts", {"channels": {"hook": {"type": "webhook"}}}),
    "project-key-not-a-code": _set("Orchestration", "Project", "shop floor"),
    "db-pool-size-below-what-the-server-holds": _set("Orchestration", "Db_pool_size", 8),
    "db-pool-size-text": _set("Orchestration", "Db_pool_size", "ten"),
}

#: Commands that read the configuration first; each config case runs with one of them in turn, so every command
#: that loads the project is seen to refuse a bad file.
CONFIG_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("validate",), ("list",), ("migrate",), ("run", P, "shop_ingest", "--run-key", "bad-config"),
    ("status", P, "shop_ingest"), ("history", P, "shop_ingest"), ("show", P, "customer_orders"),
    ("pause", P, "shop_ingest", "--reason", "x"), ("doctor",), ("reconcile",),
)


#: A valid craft-connector.yml whose SQLite Engine DB cannot be where Engine: path puts it (a regular file of the
#: project stands where a folder of the path should be): the Engine DB cannot be opened, whichever command asks.
ENGINE_PATH_EDITS: dict[str, tuple[Edit, tuple[str, ...]]] = {
    "engine-folder-is-a-file-init-db": (_set("Engine", "path", "warehouse.duckdb/engine.db"), ("init-db",)),
    "engine-folder-under-a-file-migrate": (_set("Engine", "path", "sql_files/customer_totals.sql/db/engine.db"),
                                           ("migrate",)),
    "engine-folder-under-a-file-run": (_set("Engine", "path", "warehouse.duckdb/db/engine.db"),
                                       ("run", P, "shop_ingest", "--run-key", "bad-engine-folder")),
    "engine-folder-under-a-file-list": (_set("Engine", "path", "craft-connector.yml/engine.db"), ("list",)),
}


def config_cases() -> list[Case]:
    cases = [Case(f"config-{name}", CONFIG_COMMANDS[i % len(CONFIG_COMMANDS)], CONFIGURATION, edit)
             for i, (name, edit) in enumerate(CONFIG_EDITS.items())]
    return cases + [Case(f"config-{name}", args, ENGINE_DB, edit) for name, (edit, args) in ENGINE_PATH_EDITS.items()]


# -- metadata migrations ---------------------------------------------------------------------------------------------

def _migration(text: str | bytes, name: str = "0003_more.sql") -> Edit:
    def edit(project: Path) -> None:
        path = project / "migrations" / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return edit


def _task(code: str, handler: str = "SQL", action: str = "OVERWRITE_TABLE", pipeline: str = "customer_orders",
          sql_file: str = "customer_totals.sql", target: str = "main.copy") -> str:
    file_column = "SQL_FILE" if handler == "SQL" else "SCRIPT_FILE"
    return (f"INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, {file_column}, TARGET_OBJECT)\n"
            f"SELECT PIPELINE_ID, '{code}', '{handler}', '{action}', '{sql_file}', '{target}'\n"
            f"  FROM CFG_PIPELINES WHERE PIPELINE_CODE = '{pipeline}';\n")


def _parameter(task: str, name: str, value: str) -> str:
    return (f"INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)\n"
            f"SELECT TASK_ID, '{name}', '{value}' FROM CFG_TASKS WHERE TASK_CODE = '{task}';\n")


def _edge(task: str, upstream: str, kind: str = "SUCCESS") -> str:
    return ("INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)\n"
            f"SELECT t.TASK_ID, u.TASK_ID, '{kind}' FROM CFG_TASKS t, CFG_TASKS u\n"
            f" WHERE t.TASK_CODE = '{task}' AND u.TASK_CODE = '{upstream}';\n")


def _pipeline(code: str, extra_columns: str = "", extra_values: str = "") -> str:
    return (f"INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE, PIPELINE_NAME{extra_columns})\n"
            f"SELECT PROJECT_ID, '{code}', '{code}'{extra_values} FROM CFG_PROJECTS;\n")


def _edit_applied(project: Path) -> None:
    path = project / "migrations" / "0001_shop_ingest.sql"
    path.write_text(path.read_text(encoding="utf-8") + "\n-- an edit after it was applied\n", encoding="utf-8")


def _remove_applied(project: Path) -> None:
    (project / "migrations" / "0002_customer_orders.sql").unlink()


def _folder_as_migration(project: Path) -> None:
    (project / "migrations" / "0003_folder.sql").mkdir()


GOOD = _task("copy_totals")

MIGRATION_EDITS: dict[str, Edit] = {
    "action-unknown": _migration(_task("t_bad_action", action="UPSERT")),
    "action-lower-case": _migration(_task("t_lower_action", action="overwrite_table")),
    "handler-unknown": _migration(_task("t_bad_handler", handler="BASH")),
    "code-not-identifier": _migration(_task("bad code!")),
    "code-duplicate": _migration(_task("customer_totals")),
    "code-duplicate-in-file": _migration(GOOD + GOOD),
    "pipeline-missing": _migration("INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, "
                                   "TARGET_OBJECT) VALUES (99999, 'orphan', 'SQL', 'OVERWRITE_TABLE', "
                                   "'customer_totals.sql', 'main.orphan');\n"),
    "task-code-null": _migration("INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE) "
                                 "SELECT PIPELINE_ID, NULL, 'SQL', 'OVERWRITE_TABLE', 'x.sql' FROM CFG_PIPELINES "
                                 "WHERE PIPELINE_CODE = 'customer_orders';\n"),
    "active-flag-bad": _migration("UPDATE CFG_TASKS SET ACTIVE_FLAG = 'X' WHERE TASK_CODE = 'customer_totals';\n"),
    "pipeline-code-duplicate": _migration(_pipeline("shop_ingest")),
    "pipeline-code-not-identifier": _migration(_pipeline("9lives")),
    "dependency-type-unknown": _migration(GOOD + _edge("copy_totals", "customer_totals", "MAYBE")),
    "dependency-self": _migration(_edge("customer_totals", "customer_totals")),
    "dependency-cycle-two": _migration(_edge("load_orders", "customer_totals")),
    "dependency-cycle-three": _migration(GOOD + _edge("copy_totals", "customer_totals")
                                         + _edge("load_customers", "copy_totals")),
    "dependency-duplicate": _migration(_edge("customer_totals", "load_orders")),
    "pipeline-dependency-cycle": _migration(
        "INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE)\n"
        "SELECT u.PIPELINE_ID, p.PIPELINE_ID, 'SUCCESS' FROM CFG_PIPELINES p, CFG_PIPELINES u\n"
        " WHERE p.PIPELINE_CODE = 'customer_orders' AND u.PIPELINE_CODE = 'shop_ingest';\n"),
    "pipeline-dependency-self": _migration(
        "INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE)\n"
        "SELECT PIPELINE_ID, PIPELINE_ID, 'SUCCESS' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'shop_ingest';\n"),
    "parameter-retries-text": _migration(_parameter("customer_totals", "RETRIES", "two")),
    "parameter-retries-negative": _migration(_parameter("customer_totals", "RETRIES", "-1")),
    "parameter-timeout-text": _migration(_parameter("customer_totals", "TASK_TIMEOUT_SECONDS", "soon")),
    "parameter-delay-fraction": _migration(_parameter("customer_totals", "RETRY_DELAY_SECONDS", "1.5x")),
    # A Y/N parameter with another value (RETRYABLE is no task parameter but a column of AUD_TASK_ATTEMPTS: a
    # CFG_TASK_PARAMETERS row named so is validate's parameter-unknown finding, not a refusal).
    "parameter-flag-bad": _migration(_parameter("customer_totals", "SCHEMA_EVOLUTION", "perhaps")),
    "parameter-duplicate": _migration(_parameter("customer_totals", "MERGE_KEY", "customer_id")),
    "parameter-task-missing": _migration("INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, "
                                         "PARAMETER_VALUE) VALUES (99999, 'RETRIES', '1');\n"),
    "sql-syntax-error": _migration("INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE VALUES (1, 'x');\n"),
    "sql-unknown-table": _migration("INSERT INTO CFG_TASK (TASK_CODE) VALUES ('x');\n"),
    "sql-unknown-column": _migration("UPDATE CFG_TASKS SET TASK_NAM = 'x' WHERE TASK_CODE = 'customer_totals';\n"),
    "sql-unclosed-quote": _migration("UPDATE CFG_TASKS SET TASK_NAME = 'x WHERE TASK_CODE = 'customer_totals';\n"),
    "sql-second-statement-fails": _migration(GOOD + "INSERT INTO CFG_NOPE VALUES (1);\n"),
    "sql-audit-write": _migration("DELETE FROM AUD_PIPELINES_RUN_LOG;\n"),
    "sql-audit-update": _migration("UPDATE AUD_TASK_ATTEMPTS SET STATUS = 'SUCCESS';\n"),
    "sql-engine-table-write": _migration("DELETE FROM ENG_TRANSITIONS;\n"),
    "sql-ledger-write": _migration("DELETE FROM SCHEMA_MIGRATIONS;\n"),
    "sql-drop-table": _migration("DROP TABLE CFG_TASK_PARAMETERS;\n"),
    "sql-stamp-by-hand": _migration("UPDATE CFG_TASKS SET CREATED_BY = 'mallory' WHERE TASK_CODE = 'load_orders';\n"),
    "file-not-utf8": _migration(b"UPDATE CFG_TASKS SET TASK_NAME = 'caf\xe9' WHERE TASK_CODE = 'load_orders';\n"),
    "file-applied-then-edited": _edit_applied,
    "file-applied-then-removed": _remove_applied,
    "file-number-taken": _migration(GOOD, name="0002_another.sql"),
    "file-a-folder": _folder_as_migration,
}


#: Cases refused with another documented code than MIGRATION: the Engine DB's own rule, before any explanation.
MIGRATION_CODES: dict[str, int] = {
    "sql-stamp-by-hand": _exit("STAMP_COLUMN"),
}


def migration_cases() -> list[Case]:
    return [Case(f"migration-{name}", ("migrate",), MIGRATION_CODES.get(name, MIGRATION), edit)
            for name, edit in MIGRATION_EDITS.items()]


# -- SQL files and ingestion scripts (validate reads them) -----------------------------------------------------------

def _file(folder: str, name: str, text: str | bytes) -> Edit:
    def edit(project: Path) -> None:
        path = project / folder / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return edit


def _sql(text: str | bytes) -> Edit:
    return _file("sql_files", "customer_totals.sql", text)


def _script(text: str | bytes) -> Edit:
    return _file("ingestion_scripts", "ingest_orders.py", text)


def _remove(folder: str, name: str) -> Edit:
    def edit(project: Path) -> None:
        (project / folder / name).unlink()
    return edit


def _folder_instead(folder: str, name: str) -> Edit:
    def edit(project: Path) -> None:
        (project / folder / name).unlink()
        (project / folder / name).mkdir()
    return edit


SQL_EDITS: dict[str, Edit] = {
    "missing": _remove("sql_files", "customer_totals.sql"),
    "a-folder": _folder_instead("sql_files", "customer_totals.sql"),
    "empty": _sql(""),
    "comments-only": _sql("-- nothing here\n/* nor here */\n"),
    "two-selects": _sql("SELECT 1 AS customer_id; SELECT 2 AS customer_id;"),
    "delete": _sql("DELETE FROM main.customers"),
    "insert": _sql("INSERT INTO main.customers SELECT * FROM main.customers"),
    "update": _sql("UPDATE main.customers SET city = 'x'"),
    "drop": _sql("DROP TABLE main.customers"),
    "create-as": _sql("CREATE TABLE main.x AS SELECT 1 AS customer_id"),
    "select-then-drop": _sql("SELECT 1 AS customer_id; DROP TABLE main.customers"),
    "syntax-error": _sql("SELEC customer_id FROM main.customers"),
    "unbalanced-parenthesis": _sql("SELECT (customer_id FROM main.customers"),
    "attach": _sql("ATTACH 'other.duckdb' AS other"),
    "copy": _sql("COPY main.customers TO 'out.csv'"),
    "pragma": _sql("PRAGMA database_list"),
    "set": _sql("SET threads = 1"),
    "not-utf8": _sql(b"SELECT 'caf\xe9' AS customer_id"),
    "token-unknown": _sql("SELECT customer_id FROM main.customers WHERE city = $$CITY"),
    "merge-key-not-returned": _sql("SELECT customer_name, segment FROM main.customers"),
    "duplicate-output-column": _sql("SELECT customer_id, customer_id FROM main.customers"),
    "unnamed-expression": _sql("SELECT customer_id, COUNT(*) + 1 FROM main.customers GROUP BY customer_id"),
    "engine-managed-column": _sql("SELECT customer_id, 'x' AS HASH_KEY FROM main.customers"),
    "unknown-table": _sql("SELECT customer_id FROM main.no_such_table"),
    "unknown-column": _sql("SELECT customer_id, no_such_column FROM main.customers"),
}

SCRIPT_EDITS: dict[str, Edit] = {
    "missing": _remove("ingestion_scripts", "ingest_orders.py"),
    "a-folder": _folder_instead("ingestion_scripts", "ingest_orders.py"),
    "syntax-error": _script("def run(task)\n    return None\n"),
    "indentation-error": _script("def run(task):\nreturn None\n"),
    "not-utf8": _script(b"# caf\xe9\ndef run(task):\n    return None\n"),
    "null-byte": _script(b"def run(task):\n    return None\x00\n"),
    "unclosed-string": _script("def run(task):\n    return 'x\n"),
    "tabs-and-spaces": _script("def run(task):\n\tif task:\n        return None\n"),
}


def file_cases() -> list[Case]:
    cases = [Case(f"sql-file-{name}", ("validate",), VALIDATION, edit) for name, edit in SQL_EDITS.items()]
    cases += [Case(f"script-{name}", ("validate",), VALIDATION, edit) for name, edit in SCRIPT_EDITS.items()]
    return cases


# -- command lines ---------------------------------------------------------------------------------------------------

def command_cases() -> list[Case]:
    run = ("run", P, "customer_orders")
    lines: list[tuple[str, tuple[str, ...], int]] = [
        ("no-command-unknown", ("lsit",), USAGE),
        ("option-unknown", ("list", "--colour"), USAGE),
        ("format-unknown", ("list", "--format", "yaml"), USAGE),
        ("run-no-pipeline", ("run",), USAGE),
        ("run-pipeline-unknown", ("run", P, "no_such_pipeline"), NOT_FOUND),
        ("run-pipeline-empty", ("run", P, ""), NOT_FOUND),
        ("run-date-month-13", (*run, "--run-date", "2026-13-01"), USAGE),
        ("run-date-text", (*run, "--run-date", "yesterday"), USAGE),
        ("run-date-feb-30", (*run, "--run-date", "2026-02-30"), USAGE),
        ("run-id-text", (*run, "--run-id", "first"), USAGE),
        ("run-id-unknown", (*run, "--run-id", "99999"), NOT_FOUND),
        ("run-id-of-other-pipeline", ("run", P, "shop_ingest", "--run-id", "2"), NOT_FOUND),
        ("run-task-typo-new-key", (*run, "--run-key", "new-key-1", T, "custmer_totals"), NOT_FOUND),
        ("run-rerun-typo-new-key", (*run, "--run-key", "new-key-2", "--rerun", "custmer_totals"), NOT_FOUND),
        ("run-skip-typo-new-key", (*run, "--run-key", "new-key-3", "--skip", "custmer_totals", "--reason", "x"),
         NOT_FOUND),
        ("run-finalize-only-typo", (*run, "--run-key", "new-key-4", "--finalize-only", T, "nope"), USAGE),
        ("run-task-typo-existing-run", (*run, "--run-id", "2", T, "custmer_totals"), NOT_FOUND),
        ("run-rerun-a-success", (*run, "--run-id", "2", "--rerun", "customer_totals"), REFUSED),
        ("run-backfill-reversed", (*run, "--backfill", "2026-03-05:2026-03-01"), USAGE),
        ("run-backfill-not-a-range", (*run, "--backfill", "2026-03-05"), USAGE),
        ("run-backfill-bad-date", (*run, "--backfill", "2026-03-01:2026-03-40"), USAGE),
        ("run-force-without-task", (*run, "--run-id", "2", "--force"), USAGE),
        ("run-with-downstream-alone", (*run, "--run-id", "2", "--with-downstream"), USAGE),
        ("run-id-and-key", (*run, "--run-id", "2", "--run-key", "other"), USAGE),
        ("status-pipeline-unknown", ("status", P, "nope"), NOT_FOUND),
        ("status-run-id-unknown", ("status", P, "customer_orders", "--run-id", "99999"), NOT_FOUND),
        ("status-run-id-negative", ("status", P, "customer_orders", "--run-id", "-3"), NOT_FOUND),
        ("history-limit-zero", ("history", P, "shop_ingest", "--limit", "0"), USAGE),
        ("history-limit-huge", ("history", P, "shop_ingest", "--limit", "100000"), USAGE),
        ("history-pipeline-unknown", ("history", P, "nope"), NOT_FOUND),
        ("logs-attempt-unknown", ("logs", "--attempt-id", "99999"), NOT_FOUND),
        ("logs-attempt-text", ("logs", "--attempt-id", "last"), USAGE),
        ("explain-task-unknown", ("explain", P, "customer_orders", "--run-id", "2", T, "nope"), NOT_FOUND),
        ("explain-run-unknown", ("explain", P, "customer_orders", "--run-id", "99999", T, "customer_totals"),
         NOT_FOUND),
        ("show-pipeline-unknown", ("show", P, "nope"), NOT_FOUND),
        ("mark-status-unknown", ("mark", P, "customer_orders", "--run-id", "2", "--status", "done", "--reason", "x"),
         USAGE),
        ("mark-run-unknown", ("mark", P, "customer_orders", "--run-id", "99999", "--status", "failed",
                              "--reason", "x"), NOT_FOUND),
        ("mark-task-unknown", ("mark", P, "customer_orders", "--run-id", "2", T, "nope", "--status", "failed",
                               "--reason", "x"), NOT_FOUND),
        ("mark-rows-negative", ("mark", P, "customer_orders", "--run-id", "2", T, "customer_totals", "--status",
                                "success", "--rows", "-1", "--reason", "x"), USAGE),
        ("mark-without-reason", ("mark", P, "customer_orders", "--run-id", "2", "--status", "failed"), USAGE),
        ("cancel-run-unknown", ("cancel", P, "customer_orders", "--run-id", "99999", "--reason", "x"), NOT_FOUND),
        ("cancel-ended-run", ("cancel", P, "customer_orders", "--run-id", "2", "--reason", "x"), STALE),
        ("cancel-without-reason", ("cancel", P, "customer_orders", "--run-id", "2"), USAGE),
        ("reopen-run-unknown", ("reopen", P, "customer_orders", "--run-key", "nope", "--reason", "x"), NOT_FOUND),
        ("pause-pipeline-unknown", ("pause", P, "nope", "--reason", "x"), NOT_FOUND),
        ("pause-without-reason", ("pause", P, "shop_ingest"), USAGE),
        ("resume-not-paused", ("resume", P, "shop_ingest"), REFUSED),
        ("resume-pipeline-unknown", ("resume", P, "nope"), NOT_FOUND),
        ("audit-since-bad", ("audit", "--since", "last week"), USAGE),
        ("audit-pipeline-unknown", ("audit", P, "nope"), NOT_FOUND),
        ("validate-pipeline-unknown", ("validate", P, "nope"), NOT_FOUND),
        ("rehash-target-unknown", ("rehash", "--target", "main.nope"), NOT_FOUND),
        ("rehash-target-not-merged", ("rehash", "--target", "raw.orders"), NOT_FOUND),
        ("project-folder-missing", ("--project", "no/such/folder", "list"), CONFIGURATION),
        ("engine-url-garbage", ("--engine-url", "not a url", "list"), CONFIGURATION),
        ("engine-url-unknown-dialect", ("--engine-url", "mysql://x@localhost/db", "list"), CONFIGURATION),
        ("engine-url-sqlite-typo", ("--engine-url", "sqlite:/stray.db", "list"), CONFIGURATION),
        ("engine-url-sqlite-missing-file", ("--engine-url", "sqlite:///no/such/engine.db", "list"), ENGINE_DB),
        ("engine-url-sqlite-folder-is-a-file", ("--engine-url", "sqlite:///warehouse.duckdb/engine.db", "init-db"),
         ENGINE_DB),
        ("engine-url-sqlite-no-folder-migrate", ("--engine-url", "sqlite:///no/such/engine.db", "migrate"), ENGINE_DB),
        ("engine-url-refused-port", ("--engine-url", "postgresql://root@127.0.0.1:1/x", "list"), ENGINE_DB),
        ("init-existing-project", ("init", "."), REFUSED),
    ]
    cases = [Case(f"cli-{name}", args, code) for name, args, code in lines]
    # A PostgreSQL warehouse where nothing listens: rehash names it and Warehouse.url, and exits WAREHOUSE.
    nobody = _replace_section("Warehouse", {"dialect": "postgresql", "url": "postgresql://analyst@127.0.0.1:1/dw"})
    cases.append(Case("cli-rehash-warehouse-refused", ("rehash", "--target", "main.orders"), WAREHOUSE, nobody))
    return cases


def all_cases() -> list[Case]:
    cases = [*config_cases(), *migration_cases(), *file_cases(), *command_cases()]
    assert len({c.id for c in cases}) == len(cases), "two cases share an id"
    return cases
