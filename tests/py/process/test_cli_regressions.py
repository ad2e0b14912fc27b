"""Regressions through the real `etl-craft` command line:

- B10: mark and `run --rerun` of a task run that a downstream task gate consumed (AUD_DEPENDENCY_CONSUMPTION names
  it in CONSUMED_TASK_RUN_ID) never fail on a foreign key, and the consumption row is kept as it was.
- W11: every command that addresses a run acts on the run --run-id or --run-key names, never "the latest"; with
  no name, on the pipeline's single run that has not ended, and with several it refuses, listing them.
- B29: a run that ended SKIPPED has ended: a new run is created rather than it resumed, and mark and cancel treat
  it as ended.

B13 (an SLA decided once) is not here: the CLI cannot pin the Engine DB's clock (each write transaction sets its
own clock setting, and SQLite's clock lives in the etl-craft process), and no etl-craft function moves a run's
START_DATE, so a breach would need a real wait of more than a minute. tests/py/conformance/test_finalize.py pins
the clock and proves it on both dialects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.py.support.cli import Result, etl_craft
from tests.py.support.engine_state import engine_db, rows
from tests.py.support.project import Task, write_project

pytestmark = pytest.mark.process

FLOW = {"flow": [Task("load"), Task("report")]}
EDGES = [("report", "load", "SUCCESS")]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine_url(request: pytest.FixtureRequest) -> str | None:
    return None if request.param == "sqlite" else request.getfixturevalue("empty_pg_url")


def _ok(result: Result, code: int = 0) -> Result:
    assert result.code == code, (result.code, result.out, result.err)
    return result


def _json(project: Path, *args: str) -> dict[str, Any]:
    return dict(json.loads(_ok(etl_craft(*args, "--format", "json", cwd=project)).out))


def _status(project: Path, run_id: int, pipeline: str = "flow") -> dict[str, Any]:
    return _json(project, "status", "--pipeline-code", pipeline, "--run-id", str(run_id))


def _tasks(doc: dict[str, Any]) -> dict[str, tuple[str, int]]:
    return {t["task_code"]: (t["status"], t["attempts"]) for t in doc["tasks"]}


def _history(project: Path) -> list[tuple[int, str, str]]:
    runs = _json(project, "history", "--pipeline-code", "flow")["runs"]
    return sorted((r["pipeline_run_id"], r["run_key"], r["status"]) for r in runs)


def _project(tmp_path: Path, engine_url: str | None, pipelines: dict[str, list[Task]] = FLOW,
             edges: list[tuple[str, str, str]] = EDGES) -> Path:
    project = write_project(tmp_path / "p", engine_url, pipelines, edges)
    _ok(etl_craft("migrate", cwd=project))
    return project


# --- B10 ---------------------------------------------------------------------------------------------------------

def _consumption(project: Path) -> list[dict[str, Any]]:
    with engine_db(project) as db:
        return rows(db, "SELECT * FROM {AUD_DEPENDENCY_CONSUMPTION} ORDER BY CONSUMPTION_ID")


def test_b10_mark_and_rerun_of_a_consumed_task_run_keep_the_consumption_and_never_fail_on_a_foreign_key(
        tmp_path: Path, engine_url: str | None) -> None:
    """report (pipeline down) depends on extract (pipeline up) by a task edge: its SUCCESS consumes extract's task
    run. Marking that task run, rerunning it, and marking and rerunning the consuming task run change statuses and
    attempts, never the consumption."""
    project = _project(tmp_path, engine_url, {"up": [Task("extract")], "down": [Task("report")]},
                       [("report", "extract", "SUCCESS")])
    _ok(etl_craft("run", "--pipeline-code", "up", cwd=project))
    _ok(etl_craft("run", "--pipeline-code", "down", cwd=project))
    [consumed] = _consumption(project)
    with engine_db(project) as db:
        [extract_run] = rows(db, "SELECT TASK_RUN_ID FROM {AUD_TASK_RUN_LOG} WHERE PIPELINE_RUN_ID = 1")
    assert (consumed["pipeline_run_id"], consumed["consumed_pipeline_run_id"], consumed["consumed_task_run_id"]) == (
        2, 1, extract_run["task_run_id"]), "report's run consumed extract's task run in run 1"

    # (arguments, what the command's JSON must say: (task status) for mark, (run status) for run --rerun)
    steps: list[tuple[tuple[str, ...], str]] = [
        (("mark", "--pipeline-code", "up", "--run-id", "1", "--task-code", "extract", "--status", "FAILED",
          "--reason", "the extract was wrong"), "FAILED"),
        (("run", "--pipeline-code", "up", "--run-id", "1", "--rerun", "extract", "--reason", "source fixed"),
         "SUCCESS"),
        (("mark", "--pipeline-code", "up", "--run-id", "1", "--task-code", "extract", "--status", "SUCCESS",
          "--rows", "7", "--reason", "checked by hand"), "SUCCESS"),
        (("mark", "--pipeline-code", "down", "--run-id", "2", "--task-code", "report", "--status", "FAILED",
          "--reason", "report was wrong"), "FAILED"),
        (("run", "--pipeline-code", "down", "--run-id", "2", "--rerun", "report", "--reason", "report fixed"),
         "SUCCESS"),
    ]
    for args, said in steps:
        done = etl_craft(*args, "--format", "json", cwd=project)
        assert done.code == 0, (args, done.err)
        doc = json.loads(done.out)
        assert (doc["task"]["status"] if args[0] == "mark" else doc["status"]) == said, (args, doc)
        assert _consumption(project)[0] == consumed, f"the consumption row is kept after {args[0]}"
    up, down = _status(project, 1, "up"), _status(project, 2, "down")
    assert (up["run"]["status"], _tasks(up), up["tasks"][0]["rows_written"]) == (
        "IN-PROGRESS", {"extract": ("SUCCESS", 2)}, 7), "the last mark reopened run 1 after its rerun ended it"
    assert (down["run"]["status"], _tasks(down)) == ("SUCCESS", {"report": ("SUCCESS", 2)})


# --- W11 ---------------------------------------------------------------------------------------------------------

def _explained(project: Path, *args: str) -> tuple[int, str]:
    doc = _json(project, "explain", "--pipeline-code", "flow", "--task-code", "report", *args)
    return doc["run_id"], doc["run_status"]


def test_w11_each_command_acts_on_the_run_it_names__unnamed_it_takes_the_one_not_ended_or_refuses(
        tmp_path: Path) -> None:
    project = _project(tmp_path, None)
    _ok(etl_craft("run", "--pipeline-code", "flow", "--run-key", "day-1", cwd=project))
    _ok(etl_craft("run", "--pipeline-code", "flow", "--run-key", "day-2", "--init-only", cwd=project))
    ended = _status(project, 1)

    # status and explain: the run named, else the one run that has not ended (run 2), never the other.
    assert (ended["run"]["status"], _tasks(ended)) == ("SUCCESS", {"load": ("SUCCESS", 1), "report": ("SUCCESS", 1)})
    unnamed = _json(project, "status", "--pipeline-code", "flow")
    assert (unnamed["run"]["pipeline_run_id"], _tasks(unnamed)) == (2, {"load": ("NOT RUN", 0),
                                                                        "report": ("NOT RUN", 0)})
    assert _explained(project, "--run-id", "1") == (1, "SUCCESS")
    assert _explained(project) == (2, "IN-PROGRESS")

    # mark and run --task-code: on run 2 by name; run 1 (which has ended) keeps everything.
    marked = _json(project, "mark", "--pipeline-code", "flow", "--run-key", "day-2", "--task-code", "load",
                   "--status", "SUCCESS", "--rows", "4", "--reason", "loaded by hand")
    assert (marked["run"]["pipeline_run_id"], marked["task"]["status"]) == (2, "SUCCESS")
    refused = _ok(etl_craft("mark", "--pipeline-code", "flow", "--run-key", "day-1", "--task-code", "report",
                            "--status", "FAILED", "--reason", "x", cwd=project), 24)
    assert ("run 1 has ended SUCCESS and marking a task reopens it, which is refused while run 2 (day-2) of the same "
            "pipeline is IN-PROGRESS") in refused.err, refused.err
    _ok(etl_craft("run", "--pipeline-code", "flow", "--run-id", "2", "--task-code", "report", cwd=project))
    second = _status(project, 2)
    assert (second["run"]["status"], _tasks(second)) == ("SUCCESS", {"load": ("SUCCESS", 0), "report": ("SUCCESS", 1)})
    assert _status(project, 1) == ended, "run 1 was never touched"

    # reopen and cancel: both runs have ended now; each acts on the one named.
    reopened = _json(project, "reopen", "--pipeline-code", "flow", "--run-key", "day-1", "--reason", "repair")
    assert (reopened["run"]["pipeline_run_id"], reopened["run"]["status"]) == (1, "IN-PROGRESS")
    cancelled = _json(project, "cancel", "--pipeline-code", "flow", "--run-key", "day-1", "--reason", "not needed")
    assert (cancelled["run"]["pipeline_run_id"], cancelled["run"]["status"]) == (1, "CANCELLED")
    assert _status(project, 2) == second, "run 2, the latest, was never touched"

    # two runs that have not ended: every command that names no run refuses, listing both.
    _ok(etl_craft("run", "--pipeline-code", "flow", "--run-key", "day-3", "--init-only", cwd=project))
    _ok(etl_craft("run", "--pipeline-code", "flow", "--run-key", "day-4", "--init-only", cwd=project), 24)
    for args in (("status",), ("explain", "--task-code", "report"),
                 ("mark", "--status", "FAILED", "--reason", "x"), ("cancel", "--reason", "x"),
                 ("run", "--task-code", "load")):
        done = etl_craft(args[0], "--pipeline-code", "flow", *args[1:], cwd=project)
        assert done.code == 23, (args, done.code, done.err)
        listed = ("3 (IN-PROGRESS)", "4 (QUEUED)") if args[0] == "status" else ("run 3 (", "run 4 (")
        assert all(candidate in done.err for candidate in listed), (args, done.err)
    assert _history(project) == [(1, "day-1", "CANCELLED"), (2, "day-2", "SUCCESS"), (3, "day-3", "IN-PROGRESS"),
                                 (4, "day-4", "QUEUED")], "the refused commands changed nothing"


def test_w11_after_a_backfill__commands_act_on_the_run_its_key_names__not_the_latest_date(tmp_path: Path) -> None:
    project = _project(tmp_path, None)
    _ok(etl_craft("run", "--pipeline-code", "flow", "--backfill", "2026-11-01:2026-11-02", "--reason", "reload",
                  cwd=project))
    first_key, latest = "backfill:2026-11-01", _status(project, 2)
    assert (latest["run"]["run_key"], latest["run"]["status"]) == ("backfill:2026-11-02", "SUCCESS")

    # No run is left that has not ended: a command that names none refuses; none picks run 2, the latest.
    for args, code in ((("status",), 22), (("explain", "--task-code", "report"), 22),
                       (("mark", "--status", "FAILED", "--reason", "x"), 22), (("cancel", "--reason", "x"), 22),
                       (("run", "--task-code", "load", "--force"), 22)):
        done = etl_craft(args[0], "--pipeline-code", "flow", *args[1:], cwd=project)
        assert done.code == code, (args, done.code, done.err)
    assert _explained(project, "--run-key", first_key) == (1, "SUCCESS")

    marked = _json(project, "mark", "--pipeline-code", "flow", "--run-key", first_key, "--task-code", "report",
                   "--status", "SKIPPED", "--reason", "no report that day")
    assert (marked["run"]["pipeline_run_id"], marked["run"]["status"], marked["task"]["status"]) == (
        1, "IN-PROGRESS", "SKIPPED"), "the mark reopened run 1, the run its key names"
    assert _explained(project) == (1, "IN-PROGRESS"), "unnamed: the one run that has not ended, not the latest"
    forced = _ok(etl_craft("run", "--pipeline-code", "flow", "--run-key", first_key, "--task-code", "load", "--force",
                           cwd=project))
    assert "SUCCESS" in forced.out
    first = _status(project, 1)
    assert (first["run"]["status"], _tasks(first)) == ("SUCCESS", {"load": ("SUCCESS", 2), "report": ("SKIPPED", 1)})
    assert _status(project, 2) == latest, "the latest run was never touched"


# --- B29 ---------------------------------------------------------------------------------------------------------

def test_b29_a_run_ended_skipped_has_ended__a_new_run_is_created__mark_and_cancel_treat_it_as_ended(
        tmp_path: Path) -> None:
    project = _project(tmp_path, None)
    _ok(etl_craft("run", "--pipeline-code", "flow", "--run-key", "k", "--init-only", cwd=project))
    for task in ("load", "report"):
        _ok(etl_craft("run", "--pipeline-code", "flow", "--run-key", "k", "--skip", task, "--reason", "holiday",
                      cwd=project))
    ended = _ok(etl_craft("run", "--pipeline-code", "flow", "--run-key", "k", cwd=project))
    assert "run 1 ended SKIPPED" in ended.out
    skipped = _status(project, 1)
    assert (skipped["run"]["status"], _tasks(skipped)) == ("SKIPPED", {"load": ("SKIPPED", 0),
                                                                       "report": ("SKIPPED", 0)})

    for args, code, said in (
            (("mark", "--status", "FAILED", "--reason", "x"), 22, "has no run that has not ended"),
            (("cancel", "--reason", "x"), 22, "has no run that has not ended"),
            (("cancel", "--run-id", "1", "--reason", "x"), 20,
             "run 1 already ended SKIPPED; there is nothing to cancel"),
            (("run", "--run-id", "1", "--task-code", "load"), 24, "run 1 is SKIPPED: pass --force to reopen it"),
            (("run", "--run-id", "1"), 24, "run 1 is SKIPPED, so there is nothing to run")):
        done = etl_craft(args[0], "--pipeline-code", "flow", *args[1:], cwd=project)
        assert (done.code, said in done.err) == (code, True), (args, done.code, done.err)
    assert _status(project, 1) == skipped, "the refused commands changed nothing"

    fresh = json.loads(_ok(etl_craft("run", "--pipeline-code", "flow", "--format", "json", cwd=project)).out)
    history = _history(project)
    assert [(run_id, status) for run_id, _, status in history] == [(1, "SKIPPED"), (fresh["pipeline_run_id"],
                                                                                   "SUCCESS")]
    assert fresh["pipeline_run_id"] != 1 and history[1][1].startswith("manual:"), "a new run, not run 1 resumed"
    assert _status(project, 1) == skipped

    marked = _json(project, "mark", "--pipeline-code", "flow", "--run-id", "1", "--status", "FAILED", "--reason",
                   "the holiday was a mistake")
    assert (marked["run"]["status"], marked["run"]["ended_by"]) == ("FAILED", "tester@cli"), (
        "mark of the ended run sets how it ended")
    audit = _json(project, "audit", "--pipeline-code", "flow")["entries"]
    assert [e["what"] for e in reversed(audit) if e["kind"] == "action" and e["what"] in ("mark", "cancel")] == [
        "mark"], "the refused mark and cancels recorded nothing"
