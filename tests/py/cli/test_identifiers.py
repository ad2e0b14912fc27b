"""The names a user types and reads are spelled one way: kebab-case options (the underscore spellings of earlier
releases still work, unlisted), one environment prefix (ETL_CRAFT_; ETLCRAFT_ still read, with a warning), one
attempt identifier in status, explain and logs, and a run named by key wherever it can be named by id. An error
etl-craft did not expect reaches the user as one line that says where the trace went."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import etlcraft.cli
from etlcraft.cli.context import CliContext
from tests.py.support.cli import etl_craft
from tests.py.support.project import Task, write_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = write_project(tmp_path / "p", None, {"flow": [Task("load")]}, [])
    assert etl_craft("migrate", cwd=root).code == 0
    done = etl_craft("run", "--pipeline-code", "flow", "--run-key", "nightly-1", cwd=root)
    assert done.code == 0, done.err
    return root


def test_underscore_option_spellings_still_work_but_help_lists_only_the_kebab_ones(project: Path) -> None:
    kebab = etl_craft("status", "--pipeline-code", "flow", "--run-key", "nightly-1", cwd=project)
    underscore = etl_craft("status", "--pipeline_code", "flow", "--run-key", "nightly-1", cwd=project)
    assigned = etl_craft("status", "--pipeline_code=flow", "--run-key", "nightly-1", cwd=project)
    assert kebab.code == underscore.code == assigned.code == 0, underscore.err + assigned.err
    assert kebab.out == underscore.out == assigned.out

    explained = etl_craft("explain", "--pipeline_code", "flow", "--run-key", "nightly-1", "--task_code", "load",
                          cwd=project)
    assert explained.code == 0, explained.err

    shown = etl_craft("run", "--help", cwd=project)
    assert "--pipeline-code" in shown.out and "--task-code" in shown.out
    assert "--pipeline_code" not in shown.out and "--task_code" not in shown.out


def test_the_old_variable_prefix_is_read_with_a_warning__the_new_one_wins(project: Path, tmp_path: Path) -> None:
    old = etl_craft("list", cwd=tmp_path, env={"ETLCRAFT_PROJECT": str(project)})
    assert old.code == 0, old.err
    assert "flow" in old.out
    assert old.err == "warning: ETLCRAFT_PROJECT is deprecated and will stop working in 1.0.0; rename it " \
                      "ETL_CRAFT_PROJECT\n"

    new = etl_craft("list", cwd=tmp_path, env={"ETL_CRAFT_PROJECT": str(project)})
    assert (new.code, new.err) == (0, "") and "flow" in new.out

    both = etl_craft("list", cwd=tmp_path, env={"ETL_CRAFT_PROJECT": str(project),
                                                "ETLCRAFT_PROJECT": str(tmp_path / "elsewhere")})
    assert both.code == 0 and "flow" in both.out
    assert both.err == "warning: ETLCRAFT_PROJECT is ignored because ETL_CRAFT_PROJECT is set; remove " \
                       "ETLCRAFT_PROJECT\n"


def test_status_explain_and_logs_name_an_attempt_by_the_same_id(project: Path) -> None:
    status = etl_craft("status", "--pipeline-code", "flow", "--run-key", "nightly-1", "--format", "json",
                       cwd=project)
    assert status.code == 0, status.err
    attempt_id = json.loads(status.out)["tasks"][0]["attempt_id"]
    # A second run, so that attempt ids and try numbers part ways.
    assert etl_craft("run", "--pipeline-code", "flow", "--run-key", "nightly-2", cwd=project).code == 0
    second = json.loads(etl_craft("status", "--pipeline-code", "flow", "--run-key", "nightly-2", "--format", "json",
                                  cwd=project).out)["tasks"][0]["attempt_id"]
    assert second != 1 and second != attempt_id

    explained = etl_craft("explain", "--pipeline-code", "flow", "--run-key", "nightly-2", "--task-code", "load",
                          cwd=project)
    assert explained.code == 0, explained.err
    assert re.search(rf"^  attempt {second} \(try 1\): SUCCESS", explained.out, re.M), explained.out
    assert f"it succeeded in attempt {second}," in explained.out

    logs = etl_craft("logs", "--attempt-id", str(second), cwd=project)
    assert logs.code == 0, logs.err
    assert f"load working (attempt {second}," in logs.out


def test_status_names_a_run_by_key(project: Path) -> None:
    by_key = etl_craft("status", "--pipeline-code", "flow", "--run-key", "nightly-1", cwd=project)
    assert by_key.code == 0, by_key.err
    assert by_key.out.startswith("run 1 of flow (nightly-1, ")

    unknown = etl_craft("status", "--pipeline-code", "flow", "--run-key", "nightly-9", cwd=project)
    assert unknown.code == 22
    assert unknown.err == "error: pipeline flow has no run keyed 'nightly-9'; see etl-craft history " \
                          "--pipeline-code flow\n"

    both = etl_craft("status", "--pipeline-code", "flow", "--run-key", "nightly-1", "--run-id", "1", cwd=project)
    assert (both.code, both.err) == (2, "error: name the run by --run-id or by --run-key, not both\n")


def test_an_unexpected_error_is_one_line_and_its_trace_is_written_to_a_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def broken(*args: object) -> CliContext:
        raise RuntimeError("the disk said no")

    monkeypatch.setattr(CliContext, "create", broken)
    monkeypatch.setattr(sys, "argv", ["etl-craft", "--engine-url", "postgresql://bob:s3cret@db/x", "list"])
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    with pytest.raises(SystemExit) as exited:
        etlcraft.cli.main()
    assert exited.value.code == 1
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "Traceback" not in said, said
    found = re.fullmatch(r"error: etl-craft failed unexpectedly \(RuntimeError: the disk said no\); the full trace "
                         r"is in (\S+); please attach it to a bug report\n", said)
    assert found, said
    report = Path(found.group(1))
    assert report.parent == tmp_path
    text = report.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in text and "RuntimeError: the disk said no" in text
    assert "s3cret" not in text and "postgresql://bob:***@db/x list" in text
