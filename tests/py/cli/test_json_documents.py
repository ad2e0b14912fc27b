"""docs/reference/json.md documents every command's `--format json` document; this keeps it true.

Each `## ` section whose heading is a list of code spans (`run`, `run --task-code`, ...) names the command forms it
documents; its `Schema:` line names the schema, its first table the top-level fields, and each table under a
**`path`** line (`runs[]`, `tasks[].depends_on[]`) the fields of the nested objects at that path. Every form is run
for real (`python -m etlcraft ... --format json`, on SQLite), and its document must be one JSON object on stdout
whose `schema` (first) is the documented one, whose top-level keys are exactly the documented fields, and whose
nested objects, wherever the run produced them, have exactly the documented fields, each value of its documented
JSON type. The read-only commands share one project with one real run; the commands that change state run in
order on a second project.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest

from etlcraft.cli import COMMANDS
from tests.py.support.cli import etl_craft
from tests.py.support.project import Task, write_project

pytestmark = pytest.mark.process

JSON_MD = Path(__file__).resolve().parents[3] / "docs" / "reference" / "json.md"
FLOW = {"flow": [Task("load"), Task("report")]}
EDGES = [("report", "load", "SUCCESS")]
MERGE_PIPELINE = """\
INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'merge' FROM CFG_PROJECTS;
INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, TARGET_OBJECT) SELECT PIPELINE_ID,
  'upsert', 'SQL', 'SCD1_MERGE', 'merge.sql', 'main.target' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'merge';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'MERGE_KEY', 'id'
  FROM CFG_TASKS WHERE TASK_CODE = 'upsert';
"""

#: The command forms the page documents; the read-only ones below, with their arguments on the shared project.
READS: dict[str, tuple[str, ...]] = {
    "alerts list": ("alerts", "list"),
    "audit": ("audit",),
    "doctor": ("doctor",),
    "explain": ("explain", "--pipeline-code", "flow", "--task-code", "report", "--run-id", "1"),
    "generate-docs": ("generate-docs", "--out", "site"),
    "generate-yml": ("generate-yml", "--output-dir", "generated-yml"),
    "history": ("history", "--pipeline-code", "flow"),
    "list": ("list",),
    "logs": ("logs", "--attempt-id", "1"),
    "reconcile": ("reconcile",),
    "schedule list": ("schedule", "list"),
    "server status": ("server", "status"),
    "rehash": ("rehash", "--target", "main.target", "--dry-run"),
    "show": ("show", "--pipeline-code", "flow"),
    "status": ("status", "--pipeline-code", "flow", "--run-id", "1"),
    "validate": ("validate",),
    "workers list": ("workers", "list"),
}
SETUP = ("migrate", "run")  # printed while the shared project is built
NEW_PROJECT = ("init", "init-db")
POSTGRES_ONLY = ("grant",)  # checked on a PostgreSQL Engine DB, below
STATE_CHANGING = ("run --init-only", "run --task-code", "run --skip", "run --finalize-only", "reopen", "mark",
                  "pause", "resume", "pause --project-code", "resume --project-code", "cancel", "run --backfill",
                  "engine copy", "run --backfill --init-only",
                  "run --rerun --init-only", "token create", "token list", "token revoke")
SERVED = ("api",)  # the HTTP API's error document, checked by tests/py/api
HERMETIC = ("test",)  # the test report, checked by tests/py/testing
LOGS_ONLY = {"worker",  # prints log lines while it serves a pool, no document (workers list reads what it records)
             "publish-docs"}  # serves the catalog site until stopped; prints its address and request log lines
BUNDLES = ("bundle publish", "bundle list")  # need an artifact store: checked by tests/py/process/test_bundles.py
FORMS = {*READS, *SETUP, *NEW_PROJECT, *STATE_CHANGING, *POSTGRES_ONLY, *SERVED, *HERMETIC, *BUNDLES}


# --- the page ---------------------------------------------------------------------------------------------------

@dataclass
class Section:
    forms: tuple[str, ...]
    schema: str = ""
    fields: dict[str, str] = field(default_factory=dict)  # top-level field -> its documented type
    nested: dict[str, dict[str, str]] = field(default_factory=dict)  # path -> field -> type


_FORMS_HEADING = re.compile(r"^## ((?:`[^`]+`(?:, )?)+)$")
_SCHEMA = re.compile(r"^Schema: `(etl-craft/[a-z-]+/\d+)`")
_PATH = re.compile(r"^\*\*`([a-z_\[\].]+)`\*\*")
_ROW = re.compile(r"^\|\s*`([a-z0-9_]+)`\s*\|\s*([^|]+?)\s*\|")


def _sections() -> dict[str, Section]:
    """The page's command sections by command form."""
    by_form: dict[str, Section] = {}
    section: Section | None = None
    table: dict[str, str] | None = None
    for line in JSON_MD.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section, table = None, None
            if _FORMS_HEADING.match(line):
                section = Section(tuple(re.findall(r"`([^`]+)`", line)))
                table = section.fields
                for form in section.forms:
                    assert form not in by_form, f"json.md documents {form} twice"
                    by_form[form] = section
            continue
        if section is None:
            continue
        if (schema := _SCHEMA.match(line)) and not section.schema:
            section.schema = schema.group(1)
        elif path := _PATH.match(line):
            assert path.group(1) not in section.nested, f"json.md: {section.forms[0]}: {path.group(1)} twice"
            table = section.nested.setdefault(path.group(1), {})
        elif (row := _ROW.match(line)) and table is not None:
            assert row.group(1) not in table, f"json.md: {section.forms[0]}: field {row.group(1)} twice"
            table[row.group(1)] = row.group(2)
    return by_form


SECTIONS = _sections()
_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "date": (str,), "time": (str,), "integer": (int,),
                                       "number": (int, float), "boolean": (bool,), "object": (dict,),
                                       "null": (type(None),)}


def _of_type(value: Any, documented: str) -> bool:
    for kind in documented.split(" or "):
        if kind.startswith("array"):
            if isinstance(value, list):
                return True
            continue
        allowed = _TYPES.get(kind)
        assert allowed is not None, f"json.md: unknown type {kind!r}"
        if isinstance(value, allowed) and not (isinstance(value, bool) and bool not in allowed):
            return True
    return False


def _objects(doc: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """The objects at `path` (`run`, `tasks[]`, `tasks[].depends_on[]`) in the document; nulls left out."""
    found: list[Any] = [doc]
    for part in path.split("."):
        values = [item.get(part.removesuffix("[]")) for item in found if isinstance(item, dict)]
        if part.endswith("[]"):
            values = [v for value in values if isinstance(value, list) for v in value]
        found = values
    return [item for item in found if isinstance(item, dict)]


def _problems(fields: dict[str, str], obj: dict[str, Any], where: str) -> list[str]:
    problems = []
    missing, extra = sorted(set(fields) - set(obj)), sorted(set(obj) - set(fields))
    if missing or extra:
        problems.append(f"{where}: fields documented but not printed {missing}, printed but not documented {extra}")
    problems += [f"{where}.{name} = {obj[name]!r} is not {documented}" for name, documented in fields.items()
                 if name in obj and not _of_type(obj[name], documented)]
    return problems


def check(form: str, doc: dict[str, Any]) -> None:
    """The document printed by `form` is the one json.md documents for it."""
    section = SECTIONS[form]
    assert list(doc)[:1] == ["schema"] and doc["schema"] == section.schema, (form, doc.get("schema"))
    problems = _problems(section.fields, doc, form)
    for path, fields in section.nested.items():
        for number, obj in enumerate(_objects(doc, path)):
            problems += _problems(fields, obj, f"{form}: {path} #{number}")
    assert not problems, "docs/reference/json.md disagrees with the command:\n" + "\n".join(problems)


def _json(project: Path, *args: str) -> dict[str, Any]:
    done = etl_craft(*args, "--format", "json", cwd=project)
    assert done.code == 0, (args, done.code, done.err)
    doc = json.loads(done.out)  # stdout is the document and nothing else
    assert isinstance(doc, dict), args
    return doc


# --- the page against the command line -------------------------------------------------------------------------

def test_the_page_documents_every_command_and_form_with_a_schema_and_fields() -> None:
    assert set(SECTIONS) == FORMS
    assert {form.split()[0] for form in SECTIONS} | LOGS_ONLY == set(COMMANDS), \
        "a command without a section, or the reverse"
    for form, section in SECTIONS.items():
        assert section.schema, f"json.md: {form} names no schema"
        assert section.fields.get("schema") == "string", f"json.md: {form} does not list its schema field"


# --- commands that change state, in order on a second project (first, as the longest test) ----------------

def test_state_changing_command_documents(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, FLOW, EDGES)
    assert etl_craft("migrate", cwd=project).code == 0
    flow, run_1 = ("--pipeline-code", "flow"), ("--pipeline-code", "flow", "--run-id", "1")
    steps: list[tuple[str, tuple[str, ...]]] = [
        ("run --init-only", ("run", *flow, "--init-only", "--run-key", "k1", "--run-date", "2026-03-14")),
        ("run --task-code", ("run", *run_1, "--task-code", "load")),
        ("run --skip", ("run", *run_1, "--skip", "report", "--reason", "not needed today")),
        ("run --finalize-only", ("run", *run_1, "--finalize-only")),
        ("reopen", ("reopen", *run_1, "--reason", "repair")),
        ("mark", ("mark", *run_1, "--task-code", "report", "--status", "SUCCESS", "--rows", "3", "--reason", "hand")),
        ("pause", ("pause", *flow, "--reason", "warehouse upgrade")),
        ("explain", ("explain", *run_1, "--task-code", "load")),  # while paused: its pause object
        ("resume", ("resume", *flow, "--reason", "upgrade done")),
        ("pause --project-code", ("pause", "--project-code", "proc", "--reason", "warehouse move")),
        ("resume --project-code", ("resume", "--project-code", "proc", "--reason", "moved")),
        ("cancel", ("cancel", *run_1, "--reason", "not today")),
        ("run --backfill", ("run", *flow, "--backfill", "2026-03-01:2026-03-01", "--reason", "history")),
        ("engine copy", ("engine", "copy", "--to", f"sqlite:///{tmp_path / 'moved.db'}")),
    ]
    printed = {}
    for form, arguments in steps:
        printed[form] = _json(project, *arguments)
        check(form, printed[form])
    assert printed["run --task-code"]["status"] == "IN-PROGRESS"
    assert printed["run --finalize-only"]["status"] == "SUCCESS"
    assert printed["mark"]["task"]["rows_written"] == 3
    assert printed["explain"]["pause"]["reason"] == "warehouse upgrade"
    assert [p["pipeline_code"] for p in printed["pause --project-code"]["pipelines"]] == ["flow"]
    assert printed["cancel"]["run"]["status"] == "CANCELLED"
    assert printed["run --backfill"]["complete"] is True
    queued: list[tuple[str, tuple[str, ...]]] = [
        ("mark", ("mark", *run_1, "--task-code", "report", "--status", "FAILED", "--reason", "bad rows")),
        ("run --rerun --init-only", ("run", *run_1, "--rerun", "report", "--init-only", "--reason", "fixed")),
        ("run --backfill --init-only", ("run", *flow, "--backfill", "2026-03-02:2026-03-03", "--reason", "later",
                                        "--init-only")),
        ("token create", ("token", "create", "--name", "ci", "--role", "operator", "--expires", "90d")),
        ("token list", ("token", "list")),
        ("token revoke", ("token", "revoke", "--name", "ci")),
    ]
    for form, arguments in queued:
        printed[form] = _json(project, *arguments)
        check(form, printed[form])
    assert [r["status"] for r in printed["run --backfill --init-only"]["runs"]] == ["QUEUED", "QUEUED"]
    assert printed["run --rerun --init-only"]["task_code"] == "report"
    assert printed["token list"]["tokens"][0]["name"] == "ci" and printed["token revoke"]["revoked_at"]


# --- read-only commands on one shared project ------------------------------------------------------------------

@dataclass(frozen=True)
class Shared:
    path: Path
    printed: dict[str, dict[str, Any]]  # what the commands that built it printed, by form


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Shared:
    """flow (load, then report) after one real run (run 1, attempts 1 and 2), and pipeline merge, whose SCD1 merge
    task writes the DuckDB table main.target (there, empty, for rehash). Built once per session: the xdist workers
    share it (their base temp folders have one parent), the first to come builds it under a lock."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    project, printed_file = root / "json-documents", root / "json-documents.printed"
    with (root / "json-documents.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not printed_file.exists():
            if project.exists():
                pytest.fail(f"building the shared project {project} failed in another test; see its error")
            printed_file.write_text(json.dumps(_build_shared(project)))
    return Shared(project, json.loads(printed_file.read_text()))


def _build_shared(root: Path) -> dict[str, dict[str, Any]]:
    project = write_project(root, None, FLOW, EDGES)
    (project / "sql_files").mkdir()
    (project / "sql_files" / "merge.sql").write_text("SELECT 1 AS id, 'a' AS name\n")
    (project / "migrations" / "0002_merge.sql").write_text(MERGE_PIPELINE)
    with duckdb.connect(str(project / "warehouse.duckdb")) as warehouse:
        warehouse.execute("CREATE TABLE main.target (id INTEGER, name VARCHAR, hash_key VARCHAR)")
    printed = {"migrate": _json(project, "migrate")}
    printed["run"] = _json(project, "run", "--pipeline-code", "flow", "--run-key", "nightly")
    assert printed["run"]["status"] == "SUCCESS", printed["run"]
    return printed


@pytest.mark.parametrize("form", SETUP)
def test_setup_documents(shared: Shared, form: str) -> None:
    check(form, shared.printed[form])


@pytest.mark.parametrize("form", sorted(READS))
def test_read_only_command_documents(shared: Shared, form: str) -> None:
    check(form, _json(shared.path, *READS[form]))


def test_init_and_init_db_documents(tmp_path: Path) -> None:
    check("init", _json(tmp_path, "init", "fresh"))
    check("init-db", _json(tmp_path / "fresh", "init-db"))


@pytest.mark.postgres
def test_grant_document(empty_pg_url: str, tmp_path: Path) -> None:
    """grant --print reads the catalog only: no role is created, so the test needs no role of its own."""
    assert etl_craft("--engine-url", empty_pg_url, "init-db", cwd=tmp_path).code == 0
    doc = _json(tmp_path, "--engine-url", empty_pg_url, "grant", "--print", "--prefix", "etlcraft_json_doc")
    check("grant", doc)
    assert doc["executed"] is False and doc["roles"]["reader"] == "etlcraft_json_doc_reader"
