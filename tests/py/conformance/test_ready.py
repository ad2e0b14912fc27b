"""ready_tasks (sql/functions/040_ready.sql.j2): the ready set of a run, the same on SQLite and PostgreSQL."""

from __future__ import annotations

import time
from typing import Any

import pytest
import sqlalchemy as sa

from etlcraft.core.errors import NotFoundError
from etlcraft.core.states import state_machine
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support import ready as rd
from tests.py.support import rows
from tests.py.support.scenario import Project


@pytest.fixture
def project(engine_db: EngineDB) -> Project:
    project = Project(engine_db)
    project.pipeline("orders")
    return project


def _tasks(project: Project, *codes: str, **columns: Any) -> None:
    for code in codes:
        project.task("orders", code, **columns)


def _settle(project: Project, task_run_id: int, *path: str) -> None:
    """Move a task run along `path` (e.g. an engine-skipped task re-run: IN-PROGRESS, SUCCESS)."""
    with project.db.write() as conn:
        for status in path:
            rows.set_status(project.db, conn, state_machine().entity("TASK_RUN"), task_run_id, status)


def test_a_diamond_walks_its_run_sets_in_dependency_order(project: Project) -> None:
    _tasks(project, "a", "b", "c", "d")
    for task, on in [("b", "a"), ("c", "a"), ("d", "b"), ("d", "c")]:
        project.depends(task, on)
    run = project.run("orders")
    assert rd.ready_reasons(project, run) == {"a": ("RUN", "no dependencies")}
    a = rd.task_run(project, run, "a", "IN-PROGRESS")
    assert rd.ready(project, run) == []
    _settle(project, a, "SUCCESS")
    assert rd.ready_reasons(project, run) == {"b": ("RUN", "dependencies met"), "c": ("RUN", "dependencies met")}
    rd.task_run(project, run, "b", "SUCCESS")
    c = rd.task_run(project, run, "c", "IN-PROGRESS")
    assert rd.ready(project, run) == [], "d waits for c"
    _settle(project, c, "SUCCESS")
    assert rd.ready(project, run) == [("d", "RUN")]
    rd.task_run(project, run, "d", "SUCCESS")
    assert rd.ready(project, run) == []


def test_w2_a_task_is_ready_when_its_own_dependencies_end__a_slow_task_it_does_not_depend_on_never_holds_it(
        project: Project) -> None:
    """No barrier waves: slow and a start together, b depends on a only. Once a ends, b is ready while slow still
    runs; a wave would have kept b until slow ended too."""
    _tasks(project, "slow", "a", "b")
    project.depends("b", "a")
    run = project.run("orders")
    assert sorted(rd.ready(project, run)) == [("a", "RUN"), ("slow", "RUN")]
    rd.task_run(project, run, "slow", "IN-PROGRESS")
    a = rd.task_run(project, run, "a", "IN-PROGRESS")
    assert rd.ready(project, run) == []
    _settle(project, a, "SUCCESS")
    assert rd.ready_reasons(project, run) == {"b": ("RUN", "dependencies met")}, "slow is not b's dependency"


# (dependency type, upstream status, upstream ROWS_WRITTEN, decision: None = not returned, the edge is open)
EDGE_CASES = [
    ("SUCCESS", "SUCCESS", None, "RUN"), ("SUCCESS", "FAILED", None, "SKIP"), ("SUCCESS", "SKIPPED", None, "SKIP"),
    ("SUCCESS", "CANCELLED", None, "SKIP"), ("SUCCESS", "IN-PROGRESS", None, None),
    ("FAILURE", "FAILED", None, "RUN"), ("FAILURE", "SUCCESS", None, "SKIP"), ("FAILURE", "SKIPPED", None, "SKIP"),
    ("FAILURE", "IN-PROGRESS", None, None),
    ("HAS_DATA", "SUCCESS", 5, "RUN"), ("HAS_DATA", "SUCCESS", 0, "SKIP"), ("HAS_DATA", "SUCCESS", None, "SKIP"),
    ("HAS_DATA", "FAILED", 5, "SKIP"),
    ("ALWAYS", "SUCCESS", None, "RUN"), ("ALWAYS", "FAILED", None, "RUN"), ("ALWAYS", "SKIPPED", None, "RUN"),
    ("ALWAYS", "CANCELLED", None, "RUN"), ("ALWAYS", "IN-PROGRESS", None, None),
]


def test_each_edge_type_is_met_or_unmet_by_its_upstream_status(project: Project) -> None:
    run = project.run("orders")
    expected = {}
    for n, (type_, status, written, decision) in enumerate(EDGE_CASES):
        up, down = f"up{n:02d}", f"down{n:02d}"
        _tasks(project, up, down)
        project.depends(down, up, type_)
        rd.task_run(project, run, up, status, rows_written=written)
        if decision is not None:
            expected[down] = decision
        if status == "SKIPPED":  # skipped by the engine, and without dependencies of its own: it runs again
            expected[up] = "RUN"
    assert dict(rd.ready(project, run)) == expected
    reasons = rd.ready_reasons(project, run)
    assert reasons["down01"] == ("SKIP", "up01 ended FAILED; its SUCCESS dependency can never be met")
    assert reasons["down06"] == ("SKIP", "up06 ended SUCCESS; its FAILURE dependency can never be met")
    assert reasons["down10"] == ("SKIP", "up10 ended SUCCESS having written 0 rows; its HAS_DATA dependency can never "
                                         "be met")
    assert reasons["down05"] == ("RUN", "dependencies met")
    assert reasons["down11"] == ("SKIP", "up11 ended SUCCESS having written no rows; its HAS_DATA dependency can never "
                                         "be met")



def test_task_dependencies_shows_the_judgement_ready_tasks_decides_with(project: Project) -> None:
    """explain reads task_dependencies: each edge's state is the one ready_tasks acts on (MET edges of a task it
    runs, its reason for an UNMET one), on every edge type and upstream status."""
    run = project.run("orders")
    for n, (type_, status, written, _) in enumerate(EDGE_CASES):
        up, down = f"up{n:02d}", f"down{n:02d}"
        _tasks(project, up, down)
        project.depends(down, up, type_)
        rd.task_run(project, run, up, status, rows_written=written)
    reasons = rd.ready_reasons(project, run)
    for n, (type_, status, written, decision) in enumerate(EDGE_CASES):
        [edge] = call(project.db, "task_dependencies", run_id=run, task_id=project.tasks[f"down{n:02d}"])
        assert (edge.upstream_task_code, edge.dependency_type, edge.upstream_status, edge.upstream_rows_written) == (
            f"up{n:02d}", type_, status, written)
        expected = {"RUN": "MET", "SKIP": "UNMET", None: "OPEN"}[decision]
        assert edge.state == expected, (type_, status, written)
        assert edge.reason == (reasons[f"down{n:02d}"][1] if decision == "SKIP" else None)
    _tasks(project, "lonely")
    assert call(project.db, "task_dependencies", run_id=run, task_id=project.tasks["lonely"]) == []
    with pytest.raises(NotFoundError, match="^run 999 does not exist"):
        call(project.db, "task_dependencies", run_id=999, task_id=project.tasks["lonely"])

def test_b42_has_data_means_rows_written(project: Project) -> None:
    _tasks(project, "load_empty", "load_rows", "after_empty", "after_rows")
    project.depends("after_empty", "load_empty", "HAS_DATA")
    project.depends("after_rows", "load_rows", "HAS_DATA")
    run = project.run("orders")
    # The target of load_empty is not empty (TARGET_COUNT 1000), but this run wrote nothing into it.
    rd.task_run(project, run, "load_empty", "SUCCESS", rows_written=0, TARGET_COUNT=1000)
    rd.task_run(project, run, "load_rows", "SUCCESS", rows_written=1, TARGET_COUNT=0)
    assert rd.ready(project, run) == [("after_empty", "SKIP"), ("after_rows", "RUN")]


def test_all_waits_for_every_edge_and_skips_on_the_first_unmet_one(project: Project) -> None:
    _tasks(project, "a", "b")
    project.task("orders", "all_of", RUN_CONDITION="ALL")
    project.task("orders", "any_of", RUN_CONDITION="ANY")
    for task in ("all_of", "any_of"):
        project.depends(task, "a")
        project.depends(task, "b")
    run = project.run("orders")
    assert rd.ready(project, run) == [("a", "RUN"), ("b", "RUN")]
    a = rd.task_run(project, run, "a", "SUCCESS")
    b = rd.task_run(project, run, "b", "IN-PROGRESS")
    assert rd.ready(project, run) == [("any_of", "RUN")], "ANY runs on one met edge; ALL waits for b"
    _settle(project, a, "FAILED")
    assert rd.ready_reasons(project, run) == {
        "all_of": ("SKIP", "a ended FAILED; its SUCCESS dependency can never be met")}, "ANY still waits for b"
    _settle(project, b, "FAILED")
    assert rd.ready_reasons(project, run) == {
        "all_of": ("SKIP", "a ended FAILED; its SUCCESS dependency can never be met"),
        "any_of": ("SKIP", "a ended FAILED; its SUCCESS dependency can never be met, nor can the other 1 of this ANY "
                           "task")}
    _settle(project, b, "SUCCESS")
    assert rd.ready(project, run) == [("all_of", "SKIP"), ("any_of", "RUN")]


def test_a_failing_task_skips_its_success_dependents_and_runs_its_failure_dependents(project: Project) -> None:
    _tasks(project, "load", "publish", "report")
    project.task("orders", "alert", "EMAIL_ALERT")
    project.depends("publish", "load", "SUCCESS")
    project.depends("report", "load", "ALWAYS")
    project.depends("alert", "load", "FAILURE")
    run = project.run("orders")
    rd.task_run(project, run, "load", "FAILED", ERROR_MESSAGE="boom")
    assert rd.ready_reasons(project, run) == {
        "alert": ("RUN", "dependencies met"),
        "publish": ("SKIP", "load ended FAILED; its SUCCESS dependency can never be met"),
        "report": ("RUN", "dependencies met")}


def test_an_engine_skip_is_not_returned_again_while_it_still_qualifies_as_skip(project: Project) -> None:
    _tasks(project, "a", "b")
    project.depends("b", "a")
    run = project.run("orders")
    rd.task_run(project, run, "a", "FAILED")
    assert rd.ready(project, run) == [("b", "SKIP")]
    call(project.db, "skip_task_run", run_id=run, task_id=project.tasks["b"], reason="a failed")
    assert rd.ready(project, run) == []


def test_b25_rerun_makes_what_the_failure_skipped_ready(project: Project) -> None:
    _tasks(project, "a", "b", "c")
    project.depends("b", "a")
    project.depends("c", "b")
    run = project.run("orders")
    rd.task_run(project, run, "a", "FAILED", ERROR_MESSAGE="boom")
    for task in ("b", "c"):  # the engine's walk: skip what a's failure can never let run
        [(code, decision)] = rd.ready(project, run)
        assert (code, decision) == (task, "SKIP")
        call(project.db, "skip_task_run", run_id=run, task_id=project.tasks[task], reason="upstream failed")
    call(project.db, "mark_run", run_id=run, status="FAILED", reason="a failed")
    assert rd.ready(project, run) == [], "an ended run has no ready set"
    marked = call(project.db, "mark_task_run", run_id=run, task_id=project.tasks["a"], status="SUCCESS",
                  reason="fixed by hand")[0]
    assert marked.run_status == "IN-PROGRESS"
    assert rd.ready_reasons(project, run) == {"b": ("RUN", "dependencies met")}, "c waits for b's new outcome"
    b = project.scalar("SELECT TASK_RUN_ID FROM {AUD_TASK_RUN_LOG} WHERE TASK_ID = :t", t=project.tasks["b"])
    _settle(project, b, "IN-PROGRESS")
    assert rd.ready(project, run) == []
    _settle(project, b, "SUCCESS")
    assert rd.ready(project, run) == [("c", "RUN")]


def test_an_operator_skip_stays_skipped(project: Project) -> None:
    _tasks(project, "a", "b", "c", "d")
    for task in ("b", "c", "d"):
        project.depends(task, "a")
    run = project.run("orders")
    call(project.db, "skip_task_run", run_id=run, task_id=project.tasks["b"], reason="not today", by_operator=True)
    call(project.db, "mark_task_run", run_id=run, task_id=project.tasks["c"], status="SKIPPED", reason="not today")
    call(project.db, "skip_task_run", run_id=run, task_id=project.tasks["d"], reason="engine")
    rd.task_run(project, run, "a", "SUCCESS")
    assert rd.ready(project, run) == [("d", "RUN")], "only the engine's skip of d is undone"


def test_nothing_is_ready_in_a_paused_pipeline(project: Project) -> None:
    _tasks(project, "a")
    run = project.run("orders")
    rd.pause(project, "orders")
    assert rd.ready(project, run) == []
    with project.db.write() as conn:
        conn.execute(sa.text(f"UPDATE {project.db.qualify('AUD_PIPELINE_PAUSES')} SET RESUMED_AT = PAUSED_AT,"
                             " RESUMED_BY = 'tester@pytest', RESUMED_BY_KIND = 'HUMAN'"))
    assert rd.ready(project, run) == [("a", "RUN")], "a resumed pipeline is ready again"


def test_nothing_is_ready_in_a_run_being_cancelled_or_not_in_progress(project: Project) -> None:
    _tasks(project, "a", "b")
    queued = project.run("orders", key="manual:queued", status="QUEUED")
    assert rd.ready(project, queued) == []
    run = project.run("orders", key="manual:cancelled")
    rd.attempt(project, rd.task_run(project, run, "a", "IN-PROGRESS"), "RUNNING")
    assert call(project.db, "cancel_run", run_id=run, reason="stop")[0].status == "IN-PROGRESS"
    assert rd.ready(project, run) == [], "b is not started in a run asked to stop"
    with pytest.raises(NotFoundError, match="run 999 does not exist"):
        call(project.db, "ready_tasks", run_id=999)


def test_only_active_in_pipeline_edges_and_tasks_count(project: Project) -> None:
    project.pipeline("other")
    project.task("other", "elsewhere")
    _tasks(project, "a", "b", "gated", "switched_edge", "on_off_task")
    project.task("orders", "off", ACTIVE_FLAG="N")
    project.depends("gated", "elsewhere")  # a cross-pipeline edge: a gate, judged by queue_attempt
    project.depends("on_off_task", "off")  # its upstream is switched off
    edge = project.depends("switched_edge", "b")
    with project.db.write() as conn:
        conn.execute(sa.text(f"UPDATE {project.db.qualify('CFG_TASK_DEPENDENCY')} SET ACTIVE_FLAG = 'N'"
                             " WHERE TASK_DEPENDENCY_ID = :e"), {"e": edge})
    run = project.run("orders")
    assert rd.ready_reasons(project, run) == {
        "a": ("RUN", "no dependencies"), "b": ("RUN", "no dependencies"), "gated": ("RUN", "no dependencies"),
        "on_off_task": ("RUN", "no dependencies"), "switched_edge": ("RUN", "no dependencies")}


def test_a_500_task_pipeline_is_judged_in_one_call(project: Project) -> None:
    """Ten layers of 50 tasks; each task depends on two tasks of the layer before. Set-based: one call."""
    db = project.db
    add_task = sa.text(f"INSERT INTO {db.qualify('CFG_TASKS')} (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE)"
                       " VALUES (:p, :c, 'SQL', 'OVERWRITE_TABLE', 'x.sql') RETURNING TASK_ID")
    add_edge = sa.text(f"INSERT INTO {db.qualify('CFG_TASK_DEPENDENCY')} (TASK_ID, DEPENDS_ON_TASK_ID) VALUES (:t, :u)")
    add_task_run = sa.text(f"INSERT INTO {db.qualify('AUD_TASK_RUN_LOG')} (PIPELINE_RUN_ID, TASK_ID, STATUS)"
                           " VALUES (:r, :t, :s)")
    with db.write() as conn:
        for layer in range(10):
            for n in range(50):
                code = f"t{layer}_{n:02d}"
                project.tasks[code] = int(conn.execute(
                    add_task, {"p": project.pipelines["orders"], "c": code}).scalar_one())
                for up in ({n, (n + 1) % 50} if layer else set()):
                    conn.execute(add_edge, {"t": project.tasks[code], "u": project.tasks[f"t{layer - 1}_{up:02d}"]})
    run = project.run("orders")
    assert [code for code, _ in rd.ready(project, run)] == [f"t0_{n:02d}" for n in range(50)]
    with db.write() as conn:
        for layer in range(4):
            for n in range(50):
                status = "FAILED" if (layer, n) == (3, 7) else "SUCCESS"
                conn.execute(add_task_run, {"r": run, "t": project.tasks[f"t{layer}_{n:02d}"], "s": status})
    started = time.perf_counter()
    decided = dict(rd.ready(project, run))
    elapsed = time.perf_counter() - started
    # t3_07 failed: t4_07 and t4_06 depend on it and are skipped; the other 48 of layer 4 run.
    assert decided == {f"t4_{n:02d}": "SKIP" if n in (6, 7) else "RUN" for n in range(50)}
    assert elapsed < 1.0, f"ready_tasks took {elapsed:.2f} s for 500 tasks"
