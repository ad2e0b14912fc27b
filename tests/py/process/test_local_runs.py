"""Pipelines of PYTHON tasks run by the real `etl-craft run`, on a SQLite and a PostgreSQL Engine DB: order and
parallelism, failures and their dependents, kill -9 of the parent or of a task process, SIGTERM, timeouts, and
two runs of one pipeline at once."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.py.support.cli import descendants_alive, etl_craft, start_etl_craft
from tests.py.support.project import Task, marks, release, wait_for, write_project

pytestmark = pytest.mark.process


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine_url(request: pytest.FixtureRequest) -> str | None:
    return None if request.param == "sqlite" else request.getfixturevalue("empty_pg_url")


def _status(project: Path, pipeline: str, run_id: int) -> dict[str, object]:
    done = etl_craft("status", "--pipeline-code", pipeline, "--run-id", str(run_id), "--format", "json", cwd=project)
    assert done.code == 0, done.err
    return json.loads(done.out)


def _tasks(project: Path, pipeline: str, run_id: int) -> dict[str, str]:
    return {t["task_code"]: t["status"] for t in _status(project, pipeline, run_id)["tasks"]}  # type: ignore[union-attr]


def test_a_diamond_runs_in_dependency_order_with_its_branches_in_parallel(
        tmp_path: Path, engine_url: str | None) -> None:
    project = write_project(tmp_path / "p", engine_url, {"diamond": [
        Task("a", {"seconds": 0.5}), Task("b", {"seconds": 1.5}), Task("c", {"seconds": 1.5}), Task("d")]},
        [("b", "a", "SUCCESS"), ("c", "a", "SUCCESS"), ("d", "b", "SUCCESS"), ("d", "c", "SUCCESS")])
    assert etl_craft("migrate", cwd=project).code == 0
    done = etl_craft("run", "--pipeline-code", "diamond", cwd=project)
    assert done.code == 0, done.out + done.err
    t = marks(project)
    assert t["a.end"] <= t["b.start"] and t["a.end"] <= t["c.start"], "b and c wait for a"
    assert t["b.start"] < t["c.end"] and t["c.start"] < t["b.end"], "b and c run at the same time"
    assert t["d.start"] >= max(t["b.end"], t["c.end"]), "d waits for both"
    assert _tasks(project, "diamond", 1) == {"a": "SUCCESS", "b": "SUCCESS", "c": "SUCCESS", "d": "SUCCESS"}


def test_w2_a_task_starts_once_its_own_dependency_ends__while_a_slow_task_it_does_not_depend_on_still_runs(
        tmp_path: Path, engine_url: str | None) -> None:
    """No barrier waves: slow and a start together and b depends on a only, so b runs and ends while slow is held."""
    project = write_project(tmp_path / "p", engine_url, {"flow": [
        Task("slow", {"hold": "slow"}), Task("a"), Task("b")]}, [("b", "a", "SUCCESS")])
    assert etl_craft("migrate", cwd=project).code == 0
    parent = start_etl_craft("run", "--pipeline-code", "flow", cwd=project, log=tmp_path / "run.log")
    try:
        wait_for(lambda: any((project / "marks").glob("b.*.end")) if (project / "marks").is_dir() else False,
                 what="b to run while slow is held")
        assert any((project / "marks").glob("slow.*.start")) and not any((project / "marks").glob("slow.*.end"))
    finally:
        release(project, "slow")
    assert parent.wait(timeout=60) == 0
    assert _tasks(project, "flow", 1) == {"slow": "SUCCESS", "a": "SUCCESS", "b": "SUCCESS"}


def test_a_failing_task_skips_its_success_dependents_and_fires_its_failure_dependents(
        tmp_path: Path, engine_url: str | None) -> None:
    project = write_project(tmp_path / "p", engine_url, {"flow": [
        Task("load", {"fail": True}), Task("transform"), Task("alert")]},
        [("transform", "load", "SUCCESS"), ("alert", "load", "FAILURE")])
    assert etl_craft("migrate", cwd=project).code == 0
    done = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert done.code == 9
    assert _tasks(project, "flow", 1) == {"alert": "SUCCESS", "load": "FAILED", "transform": "SKIPPED"}
    status = _status(project, "flow", 1)
    notes = {t["task_code"]: t["note"] for t in status["tasks"]}  # type: ignore[union-attr]
    assert notes["load"] == "RuntimeError: load was told to fail"
    assert notes["transform"] == "load ended FAILED; its SUCCESS dependency can never be met"


def test_kill_9_of_the_parent_then_a_new_run_reconciles_the_attempt_lost_and_completes(
        tmp_path: Path, engine_url: str | None) -> None:
    project = write_project(tmp_path / "p", engine_url, {"slow": [Task("work", {"seconds": 30, "once": True})]}, [],
                            lease_seconds=12)
    assert etl_craft("migrate", cwd=project).code == 0
    parent = start_etl_craft("run", "--pipeline-code", "slow", cwd=project, log=tmp_path / "first.log")
    wait_for(lambda: (project / "marks").is_dir() and any((project / "marks").glob("work.*.start")),
             what="the task to start")
    child_pid = int(next((project / "marks").glob("work.*.start")).read_text().split()[1])
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    refused = etl_craft("run", "--pipeline-code", "slow", cwd=project)
    assert refused.code == 24 and "is supervised by" in refused.err, "the dead owner's lease is still live"
    time.sleep(13)  # nobody renews the leases any more: they expire
    done = etl_craft("run", "--pipeline-code", "slow", cwd=project)
    assert done.code == 0, done.out + done.err
    assert "work: attempt 1 was lost; queued again" in done.out
    assert descendants_alive([child_pid]) == [], "the orphaned task process was stopped"
    lost = json.loads(etl_craft("logs", "--attempt-id", "1", "--format", "json", cwd=project).out)["attempt"]
    assert lost["status"] == "LOST"
    assert lost["error_message"].startswith("attempt 1 was lost: owner ")
    assert _status(project, "slow", 1)["run"]["status"] == "SUCCESS"  # type: ignore[index]


def test_an_orphaned_task_that_finishes_within_its_lease_keeps_its_outcome(
        tmp_path: Path, engine_url: str | None) -> None:
    project = write_project(tmp_path / "p", engine_url, {"slow": [Task("work", {"seconds": 2})]}, [],
                            lease_seconds=30)
    assert etl_craft("migrate", cwd=project).code == 0
    parent = start_etl_craft("run", "--pipeline-code", "slow", cwd=project, log=tmp_path / "first.log")
    wait_for(lambda: (project / "marks").is_dir() and any((project / "marks").glob("work.*.start")),
             what="the task to start")
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    wait_for(lambda: (project / "marks" / "work.1.end").exists(), what="the orphan to finish")
    time.sleep(1)
    task = _status(project, "slow", 1)["tasks"][0]  # type: ignore[index]
    assert task["status"] == "SUCCESS", "the task process records its own outcome: the parent is not needed"


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_mid_run__the_tasks_are_interrupted_not_failed__the_advised_resume_runs_them_again_and_succeeds(
        tmp_path: Path, engine_url: str | None, stop: signal.Signals) -> None:
    """A stop (SIGTERM, or Ctrl-C's SIGINT) is not the tasks' failure: their attempts are interrupted, using no
    retry, the run is left IN-PROGRESS, and the resume the message names runs them again to SUCCESS."""
    project = write_project(tmp_path / "p", engine_url, {"slow": [
        Task("work", {"hold": "go"}), Task("side", {"hold": "go"}), Task("after"), Task("last")]},
        [("after", "work", "SUCCESS"), ("last", "after", "SUCCESS"), ("last", "side", "SUCCESS")])
    assert etl_craft("migrate", cwd=project).code == 0
    parent = start_etl_craft("run", "--pipeline-code", "slow", cwd=project, log=tmp_path / "run.log")
    wait_for(lambda: len(list((project / "marks").glob("*.start"))) == 2 if (project / "marks").is_dir() else False,
             what="both tasks to start")
    children = [int(p.read_text().split()[1]) for p in (project / "marks").glob("*.start")]
    parent.send_signal(stop)
    assert parent.wait(timeout=30) == 25
    assert descendants_alive(children) == [], "no task process survives its parent"
    advice = (tmp_path / "run.log").read_text()
    assert "is left IN-PROGRESS to resume" in advice, advice
    assert "resume it with etl-craft run --pipeline-code slow --run-id 1" in advice, advice
    status = _status(project, "slow", 1)
    assert status["run"]["status"] == "IN-PROGRESS"  # type: ignore[index]
    tasks = {t["task_code"]: t for t in status["tasks"]}  # type: ignore[union-attr]
    assert (tasks["work"]["status"], tasks["side"]["status"]) == ("IN-PROGRESS", "IN-PROGRESS"), tasks
    release(project, "go")
    resumed = etl_craft("run", "--pipeline-code", "slow", cwd=project)
    assert resumed.code == 0, resumed.out + resumed.err
    assert _tasks(project, "slow", 1) == {"work": "SUCCESS", "side": "SUCCESS", "after": "SUCCESS",
                                          "last": "SUCCESS"}
    ran = sorted(p.name.split(".")[0] for p in (project / "marks").glob("*.start"))
    assert ran == ["after", "last", "side", "side", "work", "work"], "the interrupted tasks ran again, once"


def test_kill_9_of_a_task_process_records_its_attempt_failed(tmp_path: Path, engine_url: str | None) -> None:
    project = write_project(tmp_path / "p", engine_url, {"slow": [Task("work", {"seconds": 30}), Task("after")]},
                            [("after", "work", "ALWAYS")])
    assert etl_craft("migrate", cwd=project).code == 0
    parent = start_etl_craft("run", "--pipeline-code", "slow", cwd=project, log=tmp_path / "run.log")
    wait_for(lambda: any((project / "marks").glob("work.*.start")) if (project / "marks").is_dir() else False,
             what="the task to start")
    os.kill(int(next((project / "marks").glob("work.*.start")).read_text().split()[1]), signal.SIGKILL)
    assert parent.wait(timeout=60) == 9
    status = _status(project, "slow", 1)
    tasks = {t["task_code"]: t for t in status["tasks"]}  # type: ignore[union-attr]
    assert tasks["work"]["status"] == "FAILED"
    assert tasks["work"]["note"].startswith("the task process was killed by signal 9 without recording an outcome")
    assert tasks["after"]["status"] == "SUCCESS", "an ALWAYS dependent still runs"


def test_a_task_past_its_time_limit_is_timed_out(tmp_path: Path, engine_url: str | None) -> None:
    project = write_project(tmp_path / "p", engine_url, {"slow": [Task("work", {"seconds": 30}, timeout=4)]}, [])
    assert etl_craft("migrate", cwd=project).code == 0
    done = etl_craft("run", "--pipeline-code", "slow", cwd=project)
    assert done.code == 9
    task = _status(project, "slow", 1)["tasks"][0]  # type: ignore[index]
    assert task["status"] == "FAILED"
    assert task["note"].startswith("the task ran longer than its TASK_TIMEOUT_SECONDS and was stopped")
    log = etl_craft("logs", "--attempt-id", str(task["attempt_id"]), cwd=project).out
    assert "work working" in log, "what the script printed before it was stopped is kept (B54)"


def test_two_runs_of_one_pipeline_at_once_have_one_supervisor(tmp_path: Path, engine_url: str | None) -> None:
    project = write_project(tmp_path / "p", engine_url, {"slow": [Task("work", {"hold": "work"})]}, [])
    assert etl_craft("migrate", cwd=project).code == 0
    first = start_etl_craft("run", "--pipeline-code", "slow", cwd=project, log=tmp_path / "first.log")
    wait_for(lambda: any((project / "marks").glob("work.*.start")) if (project / "marks").is_dir() else False,
             what="the task to start")
    second = etl_craft("run", "--pipeline-code", "slow", cwd=project)
    assert second.code == 24
    assert "run 1 is supervised by" in second.err and "(lease until" in second.err
    release(project, "work")
    assert first.wait(timeout=60) == 0
    assert len(list((project / "marks").glob("work.*.start"))) == 1, "the task ran once"
