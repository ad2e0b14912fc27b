"""SCD2_MISSING_KEYS through etl-craft test: the five-run source history of the warehouse tests
(tests/py/warehouse/test_scd2_missing_keys.py) as the steps of one manifest per mode, each step's full history as
its expectation (validity as steps), and the partial-extract guard refusing CLOSE and MARK_DELETED on a task not
declared FULL_SNAPSHOT."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.py.testing.conftest import invoke, make_project, write_jsonl
from tests.py.warehouse.conftest import T0
from tests.py.warehouse.test_scd2_missing_keys import LOADED, SOURCES, after_run_3, after_run_5

#: Pipeline `snapshots`: tasks h1 to h5, each an SCD2_MERGE on id into main.t_hist reading raw.src_vN, the
#: SELECT declared a full snapshot; the manifest sets SCD2_MISSING_KEYS.
MIGRATION = """
INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE, PIPELINE_NAME)
SELECT PROJECT_ID, 'snapshots', 'Snapshots' FROM CFG_PROJECTS WHERE ACTIVE_FLAG = 'Y';
{tasks}
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT TASK_ID, 'MERGE_KEY', 'id' FROM CFG_TASKS WHERE TASK_CODE LIKE 'h_';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT TASK_ID, 'FULL_SNAPSHOT', 'Y' FROM CFG_TASKS WHERE TASK_CODE LIKE 'h_';
"""
SOURCE_TYPES = {"id": "INTEGER", "name": "VARCHAR", "amount": "DECIMAL(10,2)"}


def _project(tmp_path: Path) -> Path:
    root = make_project(tmp_path)
    tasks = "".join(
        "INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, TARGET_OBJECT)\n"
        f"SELECT PIPELINE_ID, 'h{n}', 'SQL', 'SCD2_MERGE', 'h{n}.sql', 'main.t_hist' FROM CFG_PIPELINES "
        "WHERE PIPELINE_CODE = 'snapshots';\n" for n in SOURCES)
    (root / "migrations" / "0004_snapshots.sql").write_text(MIGRATION.format(tasks=tasks), encoding="utf-8")
    for n, rows in SOURCES.items():
        amount = "amount" if n < 3 else "CAST(amount AS DECIMAL(12,4)) AS amount"  # trailing zeros from run 3 on
        (root / "sql_files" / f"h{n}.sql").write_text(f"SELECT id, name, {amount} FROM raw.src_v{n}\n",
                                                      encoding="utf-8")
        write_jsonl(root / "tests" / "fixtures" / f"src_v{n}.jsonl",
                    [{"id": i, "name": name, "amount": amount_} for i, name, amount_ in rows])
    return root


def _step(moment: Any) -> int | None:
    """The run (= step) whose time `moment` is: the warehouse tests stamp run n with T0 + n minutes."""
    return None if moment is None else int((moment - T0).total_seconds() // 60)


def _history(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": r["id"], "name": r["name"], "amount": str(r["amount"]), "DELETE_FLAG": r["delete_flag"],
             "ACTIVE_FLAG": r["active_flag"], "valid_from_step": _step(r["valid_from"]),
             "valid_to_step": _step(r["valid_to"])} for r in rows]


def _manifest(root: Path, mode: str, full_snapshot: str | None = None) -> str:
    histories = {1: LOADED, 2: LOADED, 3: after_run_3(mode), 4: after_run_3(mode), 5: after_run_5(mode)}
    steps = []
    for n, rows in histories.items():
        write_jsonl(root / "tests" / "fixtures" / f"{mode.lower()}_h{n}.jsonl", _history(rows))
        steps.append({"task": f"h{n}", "expect": {"rows": len(rows),
                                                   "history": f"fixtures/{mode.lower()}_h{n}.jsonl"}})
    parameters = {"SCD2_MISSING_KEYS": mode, **({"FULL_SNAPSHOT": full_snapshot} if full_snapshot else {})}
    document = {"kind": "etl-craft.test.v1", "pipeline": "snapshots", "parameters": parameters,
                "relations": {f"raw.src_v{n}": {"fixture": f"fixtures/src_v{n}.jsonl", "columns": dict(SOURCE_TYPES)}
                              for n in SOURCES},
                "steps": steps}
    name = f"{mode.lower()}{'_' + full_snapshot if full_snapshot else ''}"
    (root / "tests" / f"{name}.test.yaml").write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return f"tests/{name}.test.yaml"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _project(tmp_path_factory.mktemp("snapshots"))


@pytest.mark.parametrize("mode", ["KEEP", "CLOSE", "MARK_DELETED"])
def test_missing_keys_history_as_steps(project: Path, mode: str) -> None:
    code, out = invoke(project, _manifest(project, mode), "--format", "json")
    report = json.loads(out)["tests"][0]
    assert (code, report["status"], report["errors"]) == (0, "passed", []), json.dumps(report)
    assert [s["action"] for s in report["steps"]] == ["SCD2_MERGE"] * 5
    assert report["steps"][2]["counts"]["delete"] == (0 if mode == "KEEP" else 2)


@pytest.mark.parametrize("mode", ["CLOSE", "MARK_DELETED"])
def test_missing_keys_on_a_source_not_declared_full_snapshot_is_refused(project: Path, mode: str) -> None:
    code, out = invoke(project, _manifest(project, mode, full_snapshot="N"), "--format", "json")
    report = json.loads(out)["tests"][0]
    assert code != 0 and report["status"] != "passed", report
    assert [e["code"] for e in report["errors"]] == ["task_invalid"], report
    assert f"SCD2_MISSING_KEYS is {mode}, but FULL_SNAPSHOT is not Y" in report["errors"][0]["message"], report
