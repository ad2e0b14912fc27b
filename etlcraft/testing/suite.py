"""A suite of hermetic tests: TARGET resolved to manifests, each run, and one report model rendered as text, JSON
or Markdown. Reports carry paths relative to the project, digests, counts, types, expectation codes and fixture
line numbers: never a row value, SQL text, an environment value or an absolute path.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import sqlglot

from etlcraft.core.sqltext import SQLGLOT_DIALECTS
from etlcraft.testing import errors
from etlcraft.testing.errors import HermeticError, InvalidTest, SafetyViolation
from etlcraft.testing.files import project_path
from etlcraft.testing.manifest import prepare as prepare_manifests
from etlcraft.testing.manifest import read_manifest
from etlcraft.testing.runner import Outcome, Project, load_project, run_manifest, test_id
from etlcraft.testing.sandbox import forget_inherited, load_driver
from etlcraft.testing.workers import run_spread, worker_count

#: A project suite runs at most this many manifests (direct tests/*.test.yaml, sorted).
MAX_SUITE_FILES = 100
SUITE_SCHEMA = "etl-craft/test-suite-report/1"
TEST_SCHEMA = "etl-craft/test-report/1"
COVERAGE = {"level": "hermetic",
            "includes": ["metadata_migrations", "select_transpiled_to_duckdb", "sql_actions", "business_rules",
                         "fixture_validation"],
            "excludes": ["warehouse", "engine_db_of_the_project", "credentials", "network", "ingestion_scripts",
                         "scheduling"]}
_MANIFEST = re.compile(r"\.test\.ya?ml$")
_CODE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")


def discover(root: Path, target: str) -> list[str]:
    """The project-relative manifests TARGET names: a manifest file, a pipeline code (tests/<code>*.test.yaml) or
    the project root (every direct tests/*.test.yaml). A path outside the project is a SafetyViolation."""
    if _MANIFEST.search(target):
        candidate = Path(target)
        if candidate.is_absolute():
            try:
                target = candidate.resolve(strict=False).relative_to(root.resolve()).as_posix()
            except ValueError:
                raise SafetyViolation("path_outside_project", "the manifest named is outside the project; run "
                                                              "etl-craft test from the project or pass --project"
                                      ) from None
        return [project_path("", target, what="the manifest named")]
    if target in (".", "./") or (Path(target).is_absolute() and Path(target).resolve() == root.resolve()):
        return _listing(root, lambda name: True)
    if _CODE.match(target):
        found = _listing(root, lambda name: name.startswith(target))
        if not found:
            raise InvalidTest("no_tests", f"no tests/{target}*.test.yaml in the project; write one (etl-craft test "
                                          f"--generate {target}.TASK) or correct the pipeline code")
        return found
    raise InvalidTest("usage", "TARGET is a manifest (tests/NAME.test.yaml), a pipeline code or the project root "
                               "(.)")


def _listing(root: Path, keep: Any) -> list[str]:
    try:
        fd = os.open(root / "tests", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return []
    except OSError:
        raise SafetyViolation("not_a_regular_file", "tests is not a folder of the project (a symbolic link is not "
                                                    "followed)") from None
    try:
        names = sorted(n for n in os.listdir(fd) if _MANIFEST.search(n) and keep(n))
    finally:
        os.close(fd)
    if len(names) > MAX_SUITE_FILES:
        raise SafetyViolation("too_many_tests", f"tests holds {len(names)} manifests; one suite runs at most "
                                                f"{MAX_SUITE_FILES}: name a pipeline code or a manifest instead")
    return [f"tests/{n}" for n in names]


def run_suite(root: Path, target: str, workers: int | None = None) -> dict[str, Any]:
    """Run every manifest TARGET names; the suite report (see module docstring). A safety violation while
    discovering aborts the suite; every other failure is reported on its test and the suite goes on. A large suite
    is spread over `workers` processes (None: one per available CPU; see etlcraft/testing/workers.py); the report
    is the same however many ran it, but for durations."""
    started = time.monotonic()
    root = root.absolute()
    try:
        paths = discover(root, target)
    except HermeticError as exc:
        return _suite([], started, error=_error(exc))
    if not paths:
        return _suite([], started)
    project: Project | HermeticError
    try:
        project = load_project(root)
    except HermeticError as exc:
        project = exc
    count = worker_count(len(paths), workers)
    if count > 1 and isinstance(project, Project):
        _prepare_workers(project)
    reports = run_spread(paths, lambda path: _run_one(root, path, project), count, forget_inherited)
    return _suite(reports, started)


def _prepare_workers(project: Project) -> None:
    """Do before forking what every process would otherwise do again on its first test: the manifest's validator,
    the warehouse's driver and sqlglot's dialects (the project's and DuckDB's) loaded. A failure here is left for
    the test that meets it to report."""
    try:
        prepare_manifests()
        load_driver()
        for dialect in {project.dialect, "duckdb"} & set(SQLGLOT_DIALECTS):
            sqlglot.Dialect.get_or_raise(SQLGLOT_DIALECTS[dialect])
    except Exception:  # each test reports what went wrong on its own
        return


def _run_one(root: Path, path: str, project: Project | HermeticError) -> dict[str, Any]:
    started = time.monotonic()
    outcome = Outcome()
    name, dialect, document = path.rsplit("/", 1)[-1], None, None
    error: dict[str, Any] | None = None
    exit_code = errors.PASSED
    try:
        manifest = read_manifest(root, path)
        name, document = manifest.name, manifest
        if isinstance(project, HermeticError):
            raise project
        dialect = manifest.dialect or project.dialect
        run_manifest(project, manifest, outcome)
        exit_code = errors.EXPECTATION_FAILED if outcome.findings else errors.PASSED
    except HermeticError as exc:
        error, exit_code = _error(exc), exc.exit_code
    except Exception as exc:  # an internal failure is reported, never its text (it may hold values)
        error, exit_code = {"code": "internal", "exit_code": errors.INTERNAL,
                            "message": f"etl-craft test failed unexpectedly ({type(exc).__name__}); please report it"
                            }, errors.INTERNAL
    identity = test_id(document, outcome.inputs, dialect or "") if document is not None else \
        "sha256:" + hashlib.sha256(path.encode("utf-8")).hexdigest()
    status = {errors.PASSED: "passed", errors.EXPECTATION_FAILED: "failed"}.get(exit_code, "blocked")
    return {
        "schema": TEST_SCHEMA, "test_id": identity, "name": name, "manifest": path, "status": status,
        "exit_code": exit_code, "warehouse_dialect": dialect, "coverage": COVERAGE,
        "temporary_target": f"memory://etl-craft-test/{identity.removeprefix('sha256:')[:16]}",
        "inputs": [{"role": role.split(":", 1)[0], "path": role.split(":", 1)[1], "sha256": digest}
                   for role, digest in outcome.inputs],
        "steps": outcome.steps,
        "expectations": [{"step": f.step, "task": f.task, "code": f.code, **f.detail} for f in outcome.findings],
        "errors": [error] if error else [],
        "duration_ms": round((time.monotonic() - started) * 1000),
    }


def _error(exc: HermeticError) -> dict[str, Any]:
    return {"code": exc.code, "exit_code": exc.exit_code, "message": str(exc)}


def _suite(reports: list[dict[str, Any]], started: float, error: dict[str, Any] | None = None) -> dict[str, Any]:
    codes = [r["exit_code"] for r in reports] + ([error["exit_code"]] if error else [])
    exit_code = errors.worst(codes)
    counts = {s: sum(1 for r in reports if r["status"] == s) for s in ("passed", "failed", "blocked")}
    return {"schema": SUITE_SCHEMA, "status": "passed" if exit_code == 0 else "failed", "exit_code": exit_code,
            "counts": {"total": len(reports), **counts}, "tests": reports, "errors": [error] if error else [],
            "duration_ms": round((time.monotonic() - started) * 1000)}


# -- rendering ----------------------------------------------------------------------------------------------------

def render(suite: dict[str, Any], output_format: str) -> str:
    if output_format == "json":
        return json.dumps(suite, indent=2, ensure_ascii=False) + "\n"
    return _markdown(suite) if output_format == "md" else _text(suite)


def _finding_text(f: dict[str, Any]) -> str:
    code = f["code"]
    if code == "row_count":
        return f"expected {f['expected']} row(s), found {f['found']}"
    if code == "schema_type":
        return f"column {f['column']} is {f['found']}, expected {f['expected']}"
    if code == "schema_column_missing":
        return f"column {f['column']} is missing (expected {f['expected']})"
    if code == "rule_flags":
        return f"rule {f['rule']}: {f['found']} key(s) flagged, expected {f['expected']}"
    if code == "rule_unknown":
        return f"rule {f['rule']} is not a rule of this task"
    if code.endswith("_rows"):
        missing, unexpected = f["missing"], f["unexpected"]
        lines = ", ".join(map(str, missing["fixture_lines"]))
        keys = "; ".join(f"{'+'.join(k['columns'])} {k['digest']}" for k in [*missing["keys"], *unexpected["keys"]])
        return (f"{missing['count']} expected row(s) missing" + (f" (fixture lines {lines})" if lines else "")
                + f", {unexpected['count']} unexpected row(s)" + (f"; keys {keys}" if keys else ""))
    if code.endswith("_column_missing"):
        return f"the target lacks column(s) {', '.join(f['columns'])}"
    return code


def _text(suite: dict[str, Any]) -> str:
    lines = []
    for test in suite["tests"]:
        lines.append(f"{test['status'].upper():8} {test['name']} ({test['manifest']}) {test['test_id'][:19]}")
        lines += [f"         step {s['step']} {s['task']} {s['action']}: " +
                  ", ".join(f"{k} {v}" for k, v in s["counts"].items()) for s in test["steps"]]
        lines += [f"         step {f['step']} {f['task']}: {f['code']}: {_finding_text(f)}"
                  for f in test["expectations"]]
        lines += [f"         {e['code']}: {e['message']}" for e in test["errors"]]
    lines += [f"error    {e['code']}: {e['message']}" for e in suite["errors"]]
    c = suite["counts"]
    lines.append(f"{c['total']} test(s): {c['passed']} passed, {c['failed']} failed, {c['blocked']} blocked; "
                 f"exit {suite['exit_code']}")
    return "\n".join(lines) + "\n"


def _markdown(suite: dict[str, Any]) -> str:
    c = suite["counts"]
    lines = ["# etl-craft test report", "",
             f"{c['total']} test(s): {c['passed']} passed, {c['failed']} failed, {c['blocked']} blocked; "
             f"exit {suite['exit_code']}", "", "| Status | Test | Manifest | Test id |", "| --- | --- | --- | --- |"]
    lines += [f"| {t['status']} | {t['name']} | `{t['manifest']}` | `{t['test_id'][:19]}` |" for t in suite["tests"]]
    details = [(t, f"step {f['step']} {f['task']}: `{f['code']}`: {_finding_text(f)}") for t in suite["tests"]
               for f in t["expectations"]]
    details += [(t, f"`{e['code']}`: {e['message']}") for t in suite["tests"] for e in t["errors"]]
    if details or suite["errors"]:
        lines += ["", "## Problems", ""]
        lines += [f"- {t['name']}: {text}" for t, text in details]
        lines += [f"- `{e['code']}`: {e['message']}" for e in suite["errors"]]
    return "\n".join(lines) + "\n"


def without_durations(suite: dict[str, Any]) -> dict[str, Any]:
    """The suite report without its volatile fields (duration_ms), for comparing two reports."""
    return {**{k: v for k, v in suite.items() if k != "duration_ms"},
            "tests": [{k: v for k, v in t.items() if k != "duration_ms"} for t in suite["tests"]]}


# -- publishing -----------------------------------------------------------------------------------------------------

def publish(path: Path, text: str, output_format: str) -> str:
    """Write the report to `path` atomically: a temporary file in the same folder, flushed and fsynced, then
    linked to `path`, which must not exist. An existing identical report (JSON: equal but for durations) is a
    verified no-op ("unchanged"); any other existing file is never touched (SafetyViolation)."""
    folder = path.parent
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise SafetyViolation("output_exists", f"--output {path.name} exists and is not a regular file; choose "
                                               "another path")
    if path.exists():
        return _same_or_refuse(path, text, output_format)
    fd, temporary = _temporary(folder, path.name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            return _same_or_refuse(path, text, output_format)
    finally:
        os.unlink(temporary)
    return "written"


def _temporary(folder: Path, name: str) -> tuple[int, str]:
    import tempfile

    try:
        return tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InvalidTest("output_unwritable", f"--output {name}: its folder cannot be written ({exc.strerror}); "
                                               "choose another path") from None


def _same_or_refuse(path: Path, text: str, output_format: str) -> str:
    existing = path.read_bytes()
    same = existing == text.encode("utf-8")
    if not same and output_format == "json":
        try:
            same = without_durations(json.loads(existing)) == without_durations(json.loads(text))
        except (ValueError, TypeError, KeyError, AttributeError):
            same = False
    if same:
        return "unchanged"
    raise SafetyViolation("output_exists", f"--output {path.name} exists and differs from this report; it is never "
                                           "overwritten: remove it after review, or choose another path")
