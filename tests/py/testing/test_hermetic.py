"""etl-craft test: manifests, fixtures, every SQL action passing and failing, the exit codes of the seed's negative
cases, deterministic ids, safe reports and atomic publication."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.py.cli.test_json_documents import check
from tests.py.testing.conftest import invoke, make_project, write_jsonl

SECRET = "s3cr3t-VALUE-4711"
SRC = [{"id": 1, "name": "ann"}, {"id": 2, "name": SECRET}]


def manifest(root: Path, name: str, body: dict[str, Any], *, raw: str | None = None) -> str:
    path = root / "tests" / f"{name}.test.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"kind": "etl-craft.test.v1", "pipeline": "actions", **body}
    path.write_text(raw if raw is not None else yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return f"tests/{name}.test.yaml"


def src(root: Path, rows: list[dict[str, Any]] = SRC) -> dict[str, Any]:
    write_jsonl(root / "tests" / "fixtures" / "src.jsonl", rows)
    return {"raw.src": {"fixture": "fixtures/src.jsonl"}}


def expected(root: Path, name: str, rows: list[dict[str, Any]]) -> str:
    write_jsonl(root / "tests" / "fixtures" / name, rows)
    return f"fixtures/{name}"


def run_json(root: Path, target: str) -> tuple[int, dict[str, Any]]:
    code, out = invoke(root, target, "--format", "json")
    return code, json.loads(out)


# -- every action: a passing and a deliberately failing test -------------------------------------------------------

def _action_case(root: Path, action: str, good: bool) -> dict[str, Any]:
    relations = src(root)
    wrong = [{"id": 1, "name": "ann"}, {"id": 3, "name": "zed"}]
    rows = SRC if good else wrong
    if action in ("create_table", "overwrite", "append", "scd1"):
        return {"relations": relations, "task": action,
                "expect": {"rows": 2, "output": expected(root, f"{action}.jsonl", rows)}}
    if action == "setup_table":
        return {"relations": relations, "task": action,
                "expect": {"rows": 0 if good else 2, "schema": {"id": "BIGINT", "name": "VARCHAR"}}}
    if action == "delete_rows":
        initial = expected(root, "initial.jsonl", [{"id": 1, "name": "a", "DELETE_FLAG": "N"},
                                                   {"id": 5, "name": "e", "DELETE_FLAG": "N"}])
        flags = [{"id": 1, "DELETE_FLAG": "Y"}, {"id": 5, "DELETE_FLAG": "N" if good else "Y"}]
        return {"relations": relations, "task": "delete_rows", "initial_target": {"fixture": initial},
                "expect": {"rows": 2, "output": expected(root, "deleted.jsonl", flags)}}
    if action == "check":
        return {"relations": src(root, [*SRC, {"id": 9, "name": ""}]), "steps": [
            {"task": "scd1"},
            {"task": "check", "expect": {"rule_flags": {"name_set": 1 if good else 0}}}]}
    raise AssertionError(action)


ACTIONS = ["create_table", "setup_table", "overwrite", "append", "scd1", "delete_rows", "check"]


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("good", [True, False], ids=["passes", "fails"])
def test_each_action_passes_and_fails(project: Path, action: str, good: bool) -> None:
    target = manifest(project, action, _action_case(project, action, good))
    code, report = run_json(project, target)
    test = report["tests"][0]
    assert test["errors"] == [], test["errors"]
    assert (code, test["status"]) == ((0, "passed") if good else (1, "failed")), test
    assert SECRET not in json.dumps(report)


def test_scd2_history_as_steps(project: Path) -> None:
    write_jsonl(project / "tests" / "fixtures" / "src.jsonl", SRC)
    write_jsonl(project / "tests" / "fixtures" / "v2.jsonl", [{"id": 1, "name": "bob"}, {"id": 2, "name": SECRET}])
    (project / "migrations" / "0004_v2.sql").write_text(
        "INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, TARGET_OBJECT)\n"
        "SELECT PIPELINE_ID, 'scd2_next', 'SQL', 'SCD2_MERGE', 'v2.sql', 'main.t_scd2' FROM CFG_PIPELINES "
        "WHERE PIPELINE_CODE = 'actions';\nINSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, "
        "PARAMETER_VALUE) SELECT TASK_ID, 'MERGE_KEY', 'id' FROM CFG_TASKS WHERE TASK_CODE = 'scd2_next';\n",
        encoding="utf-8")
    (project / "sql_files" / "v2.sql").write_text("SELECT id, name FROM raw.v2\n", encoding="utf-8")
    history = [{"id": 1, "name": "ann", "ACTIVE_FLAG": "N", "valid_from_step": 1, "valid_to_step": 2},
               {"id": 1, "name": "bob", "ACTIVE_FLAG": "Y", "valid_from_step": 2, "valid_to_step": None},
               {"id": 2, "name": SECRET, "ACTIVE_FLAG": "Y", "valid_from_step": 1, "valid_to_step": None}]
    body = {"relations": {"raw.src": {"fixture": "fixtures/src.jsonl"}, "raw.v2": {"fixture": "fixtures/v2.jsonl"}},
            "steps": [{"task": "scd2", "expect": {"rows": 2}},
                      {"task": "scd2_next", "expect": {"rows": 3, "history": expected(project, "h.jsonl", history)}}]}
    code, report = run_json(project, manifest(project, "scd2", body))
    assert code == 0, report
    history[0]["valid_to_step"] = None  # wrong: the first version was closed by step 2
    expected(project, "h.jsonl", history)
    code, report = run_json(project, "tests/scd2.test.yaml")
    finding = report["tests"][0]["expectations"][0]
    assert (code, finding["code"]) == (1, "history_rows")
    assert finding["missing"]["count"] == 1 and finding["missing"]["fixture_lines"] == [1]
    assert finding["unexpected"]["count"] == 1 and finding["unexpected"]["keys"][0]["columns"] == ["id"]
    assert "ann" not in json.dumps(report) and SECRET not in json.dumps(report)


def test_failed_output_names_counts_lines_and_key_digests_never_values(project: Path) -> None:
    body = {"relations": src(project), "task": "scd1",
            "expect": {"output": expected(project, "o.jsonl", [{"id": 1, "name": "ann"}, {"id": 2, "name": "bad"}])}}
    target = manifest(project, "scd1", body)
    for fmt in ("text", "json", "md"):
        code, out = invoke(project, target, "--format", fmt)
        assert code == 1
        assert SECRET not in out and "bad" not in out and str(project) not in out and "SELECT" not in out
    code, report = run_json(project, target)
    finding = report["tests"][0]["expectations"][0]
    assert finding["missing"]["fixture_lines"] == [2]
    assert finding["missing"]["keys"][0]["digest"] == finding["unexpected"]["keys"][0]["digest"]


# -- the seed's negative cases, with their exit codes ----------------------------------------------------------------

def _scd1(project: Path, **expect: Any) -> dict[str, Any]:
    return {"relations": src(project), "task": "scd1", "expect": expect or {"rows": 2}}


NEGATIVE: list[tuple[str, int, Any]] = [
    ("unknown_key", 2, lambda p: manifest(p, "t", {**_scd1(p), "expekt": {}})),
    ("explicit_null", 2, lambda p: manifest(p, "t", {**_scd1(p), "name": None})),
    ("wrong_type", 2, lambda p: manifest(p, "t", _scd1(p, rows="2"))),
    ("limit_raised", 2, lambda p: manifest(p, "t", {**_scd1(p), "limits": {"max_rows": 10_001}})),
    ("duplicate_yaml_key", 2, lambda p: manifest(p, "t", {}, raw=(
        "kind: etl-craft.test.v1\npipeline: actions\npipeline: actions\ntask: scd1\n"))),
    ("yaml_anchor", 2, lambda p: manifest(p, "t", {}, raw=(
        "kind: etl-craft.test.v1\npipeline: &p actions\ntask: scd1\nname: *p\n"))),
    ("unknown_pipeline", 2, lambda p: manifest(p, "t", {**_scd1(p), "pipeline": "nope"})),
    ("unknown_task", 2, lambda p: manifest(p, "t", {**_scd1(p), "task": "nope"})),
    ("python_task", 2, lambda p: manifest(p, "t", {"pipeline": "shop_ingest", "task": "ingest_orders"})),
    ("missing_fixture", 2, lambda p: manifest(p, "t", {"relations": {"raw.src": {"fixture": "fixtures/no.jsonl"}},
                                                         "task": "scd1"})),
    ("null_merge_key", 2, lambda p: manifest(p, "t", {"relations": src(p, [{"id": None, "name": "a"}]),
                                                        "task": "scd1"})),
    ("duplicate_merge_key", 2, lambda p: manifest(p, "t", {"relations": src(p, [{"id": 1, "name": "a"},
                                                                                 {"id": 1, "name": "b"}]),
                                                             "task": "scd1"})),
    ("traversal", 4, lambda p: manifest(p, "t", {"relations": {"raw.src": {"fixture": "../craft-connector.yml"}},
                                                  "task": "scd1"})),
    ("absolute_path", 4, lambda p: manifest(p, "t", {"relations": {"raw.src": {"fixture": "/etc/hostname"}},
                                                      "task": "scd1"})),
    ("byte_budget", 4, lambda p: manifest(p, "t", {**_scd1(p), "limits": {"max_bytes": 10}})),
    ("row_budget", 4, lambda p: manifest(p, "t", {**_scd1(p), "limits": {"max_rows": 1}})),
    ("line_budget", 4, lambda p: manifest(p, "t", {**_scd1(p), "limits": {"max_lines": 1}})),
    ("line_bytes_budget", 4, lambda p: manifest(p, "t", {**_scd1(p), "limits": {"max_line_bytes": 5}})),
    ("wrong_row_count", 1, lambda p: manifest(p, "t", _scd1(p, rows=3))),
    ("wrong_schema", 1, lambda p: manifest(p, "t", _scd1(p, schema={"id": "VARCHAR"}))),
    ("missing_schema_column", 1, lambda p: manifest(p, "t", _scd1(p, schema={"nope": "VARCHAR"}))),
]


@pytest.mark.parametrize(("case", "exit_code", "make"), NEGATIVE, ids=[c[0] for c in NEGATIVE])
def test_negative_case_exit_code(project: Path, case: str, exit_code: int, make: Any) -> None:
    target = make(project)
    code, out = invoke(project, target)
    assert code == exit_code, out
    assert str(project) not in out and SECRET not in out


BAD_LINES = [("blank_line", '{"id": 1, "name": "a"}\n\n'), ("non_object", '[1, 2]\n'),
             ("duplicate_json_key", '{"id": 1, "id": 2}\n'), ("nan", '{"id": NaN}\n'),
             ("infinity", '{"id": -Infinity}\n'), ("malformed", '{"id": 1\n'), ("not_utf8", None)]


@pytest.mark.parametrize(("case", "text"), BAD_LINES, ids=[c[0] for c in BAD_LINES])
def test_bad_jsonl_is_refused_naming_file_and_line(project: Path, case: str, text: str | None) -> None:
    fixture = project / "tests" / "fixtures" / "src.jsonl"
    fixture.parent.mkdir(parents=True, exist_ok=True)
    fixture.write_bytes(b'{"id": 1, "name": "\xff"}\n' if text is None else text.encode())
    target = manifest(project, "t", {"relations": {"raw.src": {"fixture": "fixtures/src.jsonl"}}, "task": "scd1"})
    code, out = invoke(project, target)
    assert code == 2, out
    line = 2 if case == "blank_line" else 1
    assert f"tests/fixtures/src.jsonl line {line}" in out


def test_symlink_fifo_and_folder_are_safety_violations(project: Path, tmp_path: Path) -> None:
    fixtures = project / "tests" / "fixtures"
    write_jsonl(tmp_path / "outside.jsonl", SRC)
    fixtures.mkdir(parents=True)
    (fixtures / "link.jsonl").symlink_to(tmp_path / "outside.jsonl")
    os.mkfifo(fixtures / "fifo.jsonl")
    (fixtures / "dir.jsonl").mkdir()
    (project / "tests" / "linked").symlink_to(fixtures)
    for name in ("fixtures/link.jsonl", "fixtures/fifo.jsonl", "fixtures/dir.jsonl", "linked/dir.jsonl"):
        target = manifest(project, "t", {"relations": {"raw.src": {"fixture": name}}, "task": "scd1"})
        code, out = invoke(project, target)
        assert code == 4, (name, out)


def test_suite_continues_and_the_most_severe_exit_wins(project: Path) -> None:
    manifest(project, "a_pass", _scd1(project))
    manifest(project, "b_fail", _scd1(project, rows=5))
    code, report = run_json(project, ".")
    assert (code, report["counts"]) == (1, {"total": 2, "passed": 1, "failed": 1, "blocked": 0})
    manifest(project, "c_blocked", {**_scd1(project), "task": "nope"})
    assert run_json(project, ".")[0] == 2
    manifest(project, "d_unsafe", {**_scd1(project), "limits": {"max_rows": 1}})
    code, report = run_json(project, "actions")  # a pipeline code: tests/actions*.test.yaml (none)
    assert code == 2 and report["errors"][0]["code"] == "no_tests"
    code, report = run_json(project, ".")
    assert code == 4 and [t["status"] for t in report["tests"]] == ["passed", "failed", "blocked", "blocked"]


def test_same_inputs_under_two_roots_give_the_same_ids_and_report(tmp_path: Path) -> None:
    reports = []
    for parent in ("one", "two/deeper"):
        root = make_project(tmp_path / parent)
        manifest(root, "a", _scd1(root))
        manifest(root, "b", _scd1(root, rows=7))
        reports.append(run_json(root, "."))
    (code_a, a), (code_b, b) = reports
    from etlcraft.testing.suite import without_durations

    assert code_a == code_b == 1
    assert without_durations(a) == without_durations(b)
    assert [t["test_id"] for t in a["tests"]] == [t["test_id"] for t in b["tests"]]
    check("test", a)  # the report is the one docs/reference/json.md documents
    changed = make_project(tmp_path / "three")
    manifest(changed, "a", _scd1(changed, rows=3))
    assert run_json(changed, "tests/a.test.yaml")[1]["tests"][0]["test_id"] != a["tests"][0]["test_id"]


def test_output_is_published_once_and_never_overwritten(project: Path) -> None:
    target = manifest(project, "a", _scd1(project))
    out = project / "report.json"
    assert invoke(project, target, "--format", "json", "--output", str(out))[0] == 0
    first = out.read_bytes()
    code, text = invoke(project, target, "--format", "json", "--output", str(out))
    assert (code, "unchanged" in text) == (0, True)  # durations differ: still the same report
    manifest(project, "a", _scd1(project, rows=9))
    code, _ = invoke(project, target, "--format", "json", "--output", str(out))
    assert code == 4 and out.read_bytes() == first
    fixture = project / "tests" / "fixtures" / "src.jsonl"
    before = fixture.read_bytes()
    assert invoke(project, target, "--output", str(fixture))[0] == 4 and fixture.read_bytes() == before
    assert [p.name for p in project.iterdir() if p.name.startswith(".report")] == []


def test_hermetic_sentinels_are_never_touched(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket
    import subprocess

    import etlcraft.config.loader as loader

    def forbidden(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("a hermetic test touched a forbidden capability")

    target = manifest(project, "a", {"relations": src(project), "steps": [
        {"task": "scd1", "expect": {"rows": 2}}, {"task": "check", "expect": {"rule_flags": {"name_set": 0}}}]})
    (project / ".env").write_text("ETL_CRAFT_ENGINE_PASSWORD=x\n", encoding="utf-8")
    monkeypatch.setattr(socket, "socket", forbidden)
    monkeypatch.setattr(socket, "create_connection", forbidden)
    monkeypatch.setattr(subprocess, "Popen", forbidden)
    monkeypatch.setattr(os, "system", forbidden)
    monkeypatch.setattr(loader, "resolve_variable", forbidden)
    monkeypatch.setattr(loader, "load_config", forbidden)
    monkeypatch.setattr(loader, "read_env_file", forbidden)
    code, out = invoke(project, target)
    assert code == 0, out
    assert not (project / ".etl-craft").exists() and not (project / "warehouse.duckdb").exists()


def test_generate_writes_a_starting_manifest_once(project: Path) -> None:
    code, out = invoke(project, "--generate", "actions.scd1")
    assert code == 0, out
    written = project / "tests" / "actions_scd1.test.yaml"
    document = yaml.safe_load(written.read_text(encoding="utf-8"))
    assert document["relations"] == {"raw.src": {"fixture": "fixtures/actions_scd1.raw_src.jsonl"}}
    assert "id, name" in written.read_text(encoding="utf-8")
    assert invoke(project, "--generate", "actions.scd1")[0] == 4
    write_jsonl(project / "tests" / "fixtures" / "actions_scd1.raw_src.jsonl", [])
    code, out = invoke(project, "tests/actions_scd1.test.yaml")
    assert code == 2 and "declares no columns" in out


def test_the_example_project_ships_a_passing_test(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from etlcraft.cli import cli

    assert CliRunner().invoke(cli, ["init", str(tmp_path / "p")]).exit_code == 0
    code, out = invoke(tmp_path / "p", ".")
    assert code == 0 and "1 passed" in out, out
