"""Gates that wait without holding anything (S4.D): a task gate or a pipeline gate whose upstream is still running
waits as a row of AUD_GATE_WAITS with its next look, so the tasks that can run do, a stopped supervisor's successor
resumes the wait with the same deadline, and once the upstream succeeds the waiting tasks run and consume it."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.py.support.cli import etl_craft, start_etl_craft
from tests.py.support.engine_state import engine_db, rows
from tests.py.support.project import Task, release, wait_for, write_project

pytestmark = pytest.mark.process

WAITERS = [f"w{n:03d}" for n in range(100)]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine_url(request: pytest.FixtureRequest) -> str | None:
    return None if request.param == "sqlite" else request.getfixturevalue("empty_pg_url")


def _waits(project: Path) -> list[dict[str, Any]]:
    with engine_db(project) as db:
        return rows(db, "SELECT * FROM {AUD_GATE_WAITS} ORDER BY GATE_WAIT_ID")


def _tasks(project: Path, pipeline: str, run_id: int) -> dict[str, tuple[str, int]]:
    done = etl_craft("status", "--pipeline-code", pipeline, "--run-id", str(run_id), "--format", "json", cwd=project)
    assert done.code == 0, done.err
    return {t["task_code"]: (t["status"], t["attempts"]) for t in json.loads(done.out)["tasks"]}


def _upstream_with_a_history(project: Path, ends: int = 0) -> None:
    """Run `up` once to the end, ending with exit code `ends` (its task's duration gives the gate its average), then
    hold it from now on."""
    assert etl_craft("migrate", cwd=project).code == 0
    release(project, "up")
    first = etl_craft("run", "--pipeline-code", "up", cwd=project)
    assert first.code == ends, first.err
    (project / "holds" / "up").unlink()


def _started(project: Path, task: str, times: int) -> bool:
    marks = project / "marks"
    return marks.is_dir() and len(list(marks.glob(f"{task}.*.start"))) >= times


def test_100_tasks_waiting_on_an_upstream_hold_no_slot__a_restart_resumes_their_waits__they_run_once_it_succeeds(
        tmp_path: Path, engine_url: str | None) -> None:
    project = write_project(tmp_path / "p", engine_url,
                            {"up": [Task("u", {"hold": "up", "fail_times": 1})],
                             "down": [Task("free")] + [Task(w) for w in WAITERS]},
                            [(w, "u", "SUCCESS") for w in WAITERS], slots=1)
    _upstream_with_a_history(project, ends=9)  # u failed: no SUCCESS of it yet
    upstream = start_etl_craft("run", "--pipeline-code", "up", cwd=project, log=tmp_path / "up.log")
    wait_for(lambda: _started(project, "u", 2), what="the upstream's second run to start")

    down = start_etl_craft("run", "--pipeline-code", "down", cwd=project, log=tmp_path / "down.log")
    wait_for(lambda: len([w for w in _waits(project) if w["ended_at"] is None]) == 100, timeout=60,
             what="every task gate to wait")
    wait_for(lambda: _tasks(project, "down", 3)["free"] == ("SUCCESS", 1), timeout=60,
             what="the task without a gate to run in the only slot")
    tasks = _tasks(project, "down", 3)
    assert {tasks[w] for w in WAITERS} == {("NOT RUN", 0)}, "a waiting task has no attempt and holds no slot"
    waits = _waits(project)
    assert {w["pipeline_run_id"] for w in waits} == {3} and all(w["task_id"] for w in waits)
    assert "up.u has no SUCCESS task run that is not a backfill" in waits[0]["waiting_for"]
    explained = etl_craft("explain", "--pipeline-code", "down", "--task-code", "w042", "--run-id", "3", cwd=project)
    assert explained.code == 0, explained.err
    assert "=> w042 runs once its task gate is met: it waits, holding no slot, because up.u has no SUCCESS" in (
        explained.out)
    status = etl_craft("status", "--pipeline-code", "down", "--run-id", "3", cwd=project)
    assert status.code == 0, status.err
    line = next(x for x in status.out.splitlines() if x.strip().startswith("w042 "))
    assert "NOT RUN" in line and "waiting on its gate (look " in line and ": up.u has no SUCCESS task run" in line

    down.send_signal(signal.SIGTERM)
    down.wait(timeout=60)
    before = {w["gate_wait_id"]: w for w in _waits(project)}
    assert all(w["ended_at"] is None for w in before.values()), "a stopped supervisor leaves the waits open"

    down = start_etl_craft("run", "--pipeline-code", "down", cwd=project, log=tmp_path / "down2.log")
    wait_for(lambda: all(w["looks"] > before[w["gate_wait_id"]]["looks"] for w in _waits(project)), timeout=60,
             what="the next supervisor to look at every waiting gate again")
    after = {w["gate_wait_id"]: w for w in _waits(project)}
    assert after.keys() == before.keys(), "the same waits go on: none was closed and opened again"
    assert all((after[i]["first_check_at"], after[i]["wait_until"]) == (w["first_check_at"], w["wait_until"])
               for i, w in before.items()), "a resumed wait keeps its first look and its deadline"

    release(project, "up")
    assert upstream.wait(timeout=60) == 0
    assert down.wait(timeout=180) == 0, (tmp_path / "down2.log").read_text()[-3000:]
    assert set(_tasks(project, "down", 3).values()) == {("SUCCESS", 1)}
    assert {w["outcome"] for w in _waits(project)} == {"SATISFIED"}
    with engine_db(project) as db:
        decisions = rows(db, "SELECT RESULT, SELECTED_PIPELINE_RUN_ID FROM {AUD_GATE_DECISIONS}"
                             " WHERE PIPELINE_RUN_ID = 3")
    assert len(decisions) == 100 and {(d["result"], d["selected_pipeline_run_id"]) for d in decisions} == {
        ("SATISFIED", 2)}, "each waiting task decided once, when its gate was met, on the run it waited for"


def test_a_pipeline_gate_waits_for_its_running_upstream__the_run_is_admitted_once_the_upstream_succeeds(
        tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, {"up": [Task("u", {"hold": "up"})], "down": [Task("report")]}, [])
    (project / "migrations" / "0002_gate.sql").write_text(
        "INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE)"
        " SELECT d.PIPELINE_ID, u.PIPELINE_ID, 'SUCCESS' FROM CFG_PIPELINES d, CFG_PIPELINES u"
        " WHERE d.PIPELINE_CODE = 'down' AND u.PIPELINE_CODE = 'up';\n")
    _upstream_with_a_history(project)
    assert etl_craft("run", "--pipeline-code", "down", cwd=project).code == 0, "the first run consumes up's run 1"

    upstream = start_etl_craft("run", "--pipeline-code", "up", cwd=project, log=tmp_path / "up.log")
    wait_for(lambda: _started(project, "u", 2), what="the upstream's second run to start")
    down = start_etl_craft("run", "--pipeline-code", "down", cwd=project, log=tmp_path / "down.log")
    wait_for(lambda: any(w["ended_at"] is None for w in _waits(project)), what="the pipeline gate to wait")
    (wait,) = _waits(project)
    assert wait["task_id"] is None and wait["pipeline_run_id"] == 4
    status = etl_craft("status", "--pipeline-code", "down", "--run-id", "4", cwd=project)
    assert "pipeline gate: waiting on its gate (look " in status.out, status.out + status.err
    assert "up run 1 revision 1 was already consumed by run 2" in wait["waiting_for"]

    release(project, "up")
    assert upstream.wait(timeout=60) == 0
    assert down.wait(timeout=60) == 0, (tmp_path / "down.log").read_text()
    said = (tmp_path / "down.log").read_text()
    assert "run 4 (manual:" in said
    assert "waiting for its pipeline gate: up run 1 revision 1 was already consumed" in said
    (wait,) = _waits(project)
    assert wait["outcome"] == "SATISFIED" and wait["next_check_at"] is None
    assert _tasks(project, "down", 4) == {"report": ("SUCCESS", 1)}


def test_an_upstream_repaired_while_the_downstream_gate_waits__the_downstream_consumes_the_repaired_revision(
        tmp_path: Path, engine_url: str | None) -> None:
    project = write_project(tmp_path / "p", engine_url,
                            {"up": [Task("u", {"hold": "up"})], "down": [Task("report")]}, [])
    (project / "migrations" / "0002_gate.sql").write_text(
        "INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE, CONSUME_REPAIRS)"
        " SELECT d.PIPELINE_ID, u.PIPELINE_ID, 'SUCCESS', 'Y' FROM CFG_PIPELINES d, CFG_PIPELINES u"
        " WHERE d.PIPELINE_CODE = 'down' AND u.PIPELINE_CODE = 'up';\n")
    with (project / "craft-connector.yml").open("a") as config:  # up's only run is under repair: no average, so the
        config.write("  Gate_wait_minutes: 1\n")  # looks are the minute spread over ten, 6 s apart
    _upstream_with_a_history(project)
    assert etl_craft("run", "--pipeline-code", "down", cwd=project).code == 0, "run 2 consumes up's run 1, revision 1"

    repair = start_etl_craft("run", "--pipeline-code", "up", "--run-id", "1", "--task-code", "u", "--force",
                             "--reason", "late rows", cwd=project, log=tmp_path / "repair.log")
    wait_for(lambda: _started(project, "u", 2), what="the repair of up's run 1 to start")
    down = start_etl_craft("run", "--pipeline-code", "down", cwd=project, log=tmp_path / "down.log")
    wait_for(lambda: any(w["ended_at"] is None for w in _waits(project)), what="down's pipeline gate to wait")
    assert "up has no SUCCESS run" in _waits(project)[0]["waiting_for"], "its only run is being repaired"

    release(project, "up")
    assert repair.wait(timeout=60) == 0, (tmp_path / "repair.log").read_text()
    assert down.wait(timeout=60) == 0, (tmp_path / "down.log").read_text()
    with engine_db(project) as db:
        consumed = rows(db, "SELECT c.PIPELINE_RUN_ID, c.CONSUMED_PIPELINE_RUN_ID, c.CONSUMED_REVISION"
                            " FROM " + db.qualify("AUD_DEPENDENCY_CONSUMPTION") + " c ORDER BY c.CONSUMPTION_ID")
    assert [(c["pipeline_run_id"], c["consumed_pipeline_run_id"], c["consumed_revision"]) for c in consumed] == [
        (2, 1, 1), (3, 1, 2)], "the waiting run consumed the revision the repair published, the one its gate admitted"
