"""ready_successors (sql/functions/040_ready.sql.j2): after a task ends, the decisions ready_tasks makes for that
task's successors, and only theirs, read from the successors' edges alone (issue 27), on SQLite and PostgreSQL; and
queue_attempts (045_gates) with the successors a fan-out's root made ready, each found by its key."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from etlcraft.core.errors import NotFoundError
from etlcraft.core.states import state_machine
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call, call_in
from tests.py.conformance.test_ready import EDGE_CASES
from tests.py.support import ready as rd
from tests.py.support import rows
from tests.py.support.scenario import Project


@pytest.fixture
def project(engine_db: EngineDB) -> Project:
    project = Project(engine_db)
    project.pipeline("orders")
    return project


def _successors(project: Project, task: str) -> set[int]:
    """The active tasks of the task's pipeline with an active edge on it, as the test reads the metadata."""
    found = project.rows(
        "SELECT d.TASK_ID FROM {CFG_TASK_DEPENDENCY} d JOIN {CFG_TASKS} dn ON dn.TASK_ID = d.TASK_ID"
        " JOIN {CFG_TASKS} up ON up.TASK_ID = d.DEPENDS_ON_TASK_ID"
        " WHERE d.DEPENDS_ON_TASK_ID = :t AND d.ACTIVE_FLAG = 'Y' AND dn.ACTIVE_FLAG = 'Y'"
        "   AND dn.PIPELINE_ID = up.PIPELINE_ID", t=project.tasks[task])
    return {int(r[0]) for r in found}


def _rows(result: list[Any]) -> list[tuple[int, str, str, str]]:
    return [(int(r.task_id), r.task_code, r.decision, r.reason) for r in result]


def _assert_same_for_every_task(project: Project, run: int) -> int:
    """For every task of the project, ready_successors equals ready_tasks restricted to the task's successors (the
    same rows, in the same order); returns how many of those answers held a row, so a test can tell it compared
    something."""
    whole = _rows(call(project.db, "ready_tasks", run_id=run))
    answered = 0
    for task, task_id in project.tasks.items():
        successors = _successors(project, task)
        expected = [r for r in whole if r[0] in successors]
        got = _rows(call(project.db, "ready_successors", run_id=run, task_id=task_id))
        assert got == expected, f"successors of {task}"
        answered += bool(got)
    return answered


def _settle(project: Project, task_run_id: int, *path: str) -> None:
    with project.db.write() as conn:
        for status in path:
            rows.set_status(project.db, conn, state_machine().entity("TASK_RUN"), task_run_id, status)


def test_ready_successors__every_edge_type_and_upstream_status__same_rows_as_ready_tasks(project: Project) -> None:
    run = project.run("orders")
    for n, (type_, status, written, _) in enumerate(EDGE_CASES):
        up, down = f"up{n:02d}", f"down{n:02d}"
        for code in (up, down):
            project.task("orders", code)
        project.depends(down, up, type_)
        rd.task_run(project, run, up, status, rows_written=written)
    assert _assert_same_for_every_task(project, run) == sum(1 for case in EDGE_CASES if case[3] is not None)
    reasons = {r.task_code: (r.decision, r.reason)
               for r in call(project.db, "ready_successors", run_id=run, task_id=project.tasks["up10"])}
    assert reasons == {"down10": ("SKIP", "up10 ended SUCCESS having written 0 rows; its HAS_DATA dependency can "
                                          "never be met")}


@pytest.mark.parametrize("condition", ["ALL", "ANY"])
def test_ready_successors__several_upstreams_some_ended__judges_every_edge_of_the_successor(
        project: Project, condition: str) -> None:
    """join waits on a (SUCCESS), b (FAILURE), c (HAS_DATA) and d (ALWAYS); other depends on a alone. As the
    upstreams end one by one, the successors of each ended task are judged on all their edges, ended or not."""
    for code in ("a", "b", "c", "d", "other"):
        project.task("orders", code)
    project.task("orders", "join", RUN_CONDITION=condition)
    for up, type_ in (("a", "SUCCESS"), ("b", "FAILURE"), ("c", "HAS_DATA"), ("d", "ALWAYS")):
        project.depends("join", up, type_)
    project.depends("other", "a")
    run = project.run("orders")
    a = rd.task_run(project, run, "a", "IN-PROGRESS")
    b = rd.task_run(project, run, "b", "IN-PROGRESS")
    rd.task_run(project, run, "c", "IN-PROGRESS")
    rd.task_run(project, run, "d", "IN-PROGRESS")
    _settle(project, a, "SUCCESS")
    join_after_a = [r.decision for r in call(project.db, "ready_successors", run_id=run, task_id=project.tasks["a"])
                    if r.task_code == "join"]
    assert join_after_a == (["RUN"] if condition == "ANY" else []), "ALL waits for b, c and d; ANY runs on a"
    assert _assert_same_for_every_task(project, run) >= 1
    _settle(project, b, "SUCCESS")  # b's FAILURE edge can never be met now
    decided = {r.task_code: (r.decision, r.reason)
               for r in call(project.db, "ready_successors", run_id=run, task_id=project.tasks["b"])}
    assert decided == ({"join": ("SKIP", "b ended SUCCESS; its FAILURE dependency can never be met")}
                       if condition == "ALL" else {"join": ("RUN", "dependencies met")})
    assert _assert_same_for_every_task(project, run) >= 1


def test_ready_successors__operator_and_engine_skips_paused_and_unknown_runs__as_ready_tasks(project: Project) -> None:
    for code in ("a", "b", "c", "d"):
        project.task("orders", code)
    for task in ("b", "c", "d"):
        project.depends(task, "a")
    run = project.run("orders")
    call(project.db, "skip_task_run", run_id=run, task_id=project.tasks["b"], reason="not today", by_operator=True)
    call(project.db, "skip_task_run", run_id=run, task_id=project.tasks["d"], reason="engine")
    rd.task_run(project, run, "a", "SUCCESS")
    assert [(r.task_code, r.decision) for r in
            call(project.db, "ready_successors", run_id=run, task_id=project.tasks["a"])] == [("c", "RUN"),
                                                                                               ("d", "RUN")]
    _assert_same_for_every_task(project, run)
    rd.pause(project, "orders")
    assert call(project.db, "ready_successors", run_id=run, task_id=project.tasks["a"]) == []
    with pytest.raises(NotFoundError, match="^run 999 does not exist"):
        call(project.db, "ready_successors", run_id=999, task_id=project.tasks["a"])


def _pipeline_run(project: Project, name: str, codes: list[str], upstream: Callable[[int], int | None],
                  done: range) -> tuple[int, list[int]]:
    """Pipeline `name` of the tasks `codes`, task n depending on task upstream(n) (None: on none), and a new run of it
    in which the tasks `done` (by place) ended SUCCESS; the run's id and the tasks' ids."""
    db = project.db
    pipeline = project.pipeline(name)
    add_task = sa.text(f"INSERT INTO {db.qualify('CFG_TASKS')} (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE)"
                       " VALUES (:p, :c, 'SQL', 'OVERWRITE_TABLE', 'x.sql') RETURNING TASK_ID")
    add_edge = sa.text(f"INSERT INTO {db.qualify('CFG_TASK_DEPENDENCY')} (TASK_ID, DEPENDS_ON_TASK_ID) VALUES (:t, :u)")
    ids: list[int] = []
    with db.write() as conn:
        for n, code in enumerate(codes):
            ids.append(int(conn.execute(add_task, {"p": pipeline, "c": code}).scalar_one()))
            project.tasks[code] = ids[-1]
            up = upstream(n)
            if up is not None:
                conn.execute(add_edge, {"t": ids[-1], "u": ids[up]})
    run = project.run(name)
    add_run = sa.text(f"INSERT INTO {db.qualify('AUD_TASK_RUN_LOG')} (PIPELINE_RUN_ID, TASK_ID, STATUS)"
                      " VALUES (:r, :t, 'SUCCESS')")
    with db.write() as conn:
        for n in done:
            conn.execute(add_run, {"r": run, "t": ids[n]})
    return run, ids


def _chain(project: Project, length: int) -> int:
    """A chain of `length` tasks in its own pipeline, its first half ended SUCCESS in a new run; the run's id."""
    return _pipeline_run(project, f"chain{length}", [f"c{length}_{n:05d}" for n in range(length)],
                         lambda n: n - 1 if n else None, range(length // 2))[0]


def _work(db: EngineDB, measure: Callable[[sa.Connection], int], name: str, **arguments: Any) -> tuple[list[Any], int]:
    """The rows of one call and the work it took, measured inside its transaction."""
    with db.read() as conn:
        before = measure(conn)
        result = call_in(db, conn, name, **arguments)
        return result, measure(conn) - before


def _rows_read(db: EngineDB) -> Callable[[sa.Connection], int]:
    """PostgreSQL: the rows this transaction read from the tables readiness reads, by scan or index. SQLite: the
    virtual machine steps this connection ran (a progress handler called every 100 steps)."""
    if db.is_postgres:
        def pg(conn: sa.Connection) -> int:
            return int(conn.execute(sa.text(
                "SELECT COALESCE(sum(seq_tup_read + COALESCE(idx_tup_fetch, 0)), 0) FROM pg_stat_xact_user_tables"
                " WHERE schemaname = :s AND relname IN ('cfg_tasks', 'cfg_task_dependency', 'aud_task_run_log')"),
                {"s": db.schema}).scalar_one())
        return pg
    steps = {"n": 0}

    def sqlite(conn: sa.Connection) -> int:
        dbapi = conn.connection.driver_connection

        def tick() -> int:
            steps["n"] += 1
            return 0
        dbapi.set_progress_handler(tick, 100)  # type: ignore[union-attr]
        return steps["n"]
    return sqlite


def test_ready_successors__a_chain_link__reads_as_much_at_1000_tasks_as_at_10(project: Project) -> None:
    """The link in the middle of a 10-task and of a 1,000-task chain: ready_successors reads about as much for
    both (the successor's edge, its upstream, their task runs), where ready_tasks reads every edge of the chain."""
    measure = _rows_read(project.db)
    work: dict[int | str, int] = {}
    for length in (10, 1000):
        run = _chain(project, length)
        ended = project.tasks[f"c{length}_{length // 2 - 1:05d}"]
        result, work[length] = _work(project.db, measure, "ready_successors", run_id=run, task_id=ended)
        assert [(r.task_code, r.decision) for r in result] == [(f"c{length}_{length // 2:05d}", "RUN")]
        whole, work[f"all{length}"] = _work(project.db, measure, "ready_tasks", run_id=run)
        assert [(r.task_code, r.decision) for r in whole] == [(f"c{length}_{length // 2:05d}", "RUN")]
    assert work[1000] <= 1.5 * work[10] + 20, f"ready_successors work grew with the chain: {work}"
    assert work["all1000"] > 20 * work["all10"], f"the measure must see ready_tasks' growth: {work}"


def _fan_out(project: Project, branches: int) -> tuple[int, int]:
    """A root and `branches` tasks that depend on it, in a pipeline of their own, the root ended SUCCESS in a new
    run; the run's id and the root's task id."""
    run, ids = _pipeline_run(project, f"fan{branches}", ["root"] + [f"b{n:05d}" for n in range(branches)],
                             lambda n: 0 if n else None, range(1))
    return run, ids[0]


def _dropped(plans: list[str]) -> int:
    """Rows the plans' steps read and dropped (Rows Removed by Filter or Join Filter), times the loops of the step
    that dropped them."""
    dropped, loops = 0, 1
    for plan in plans:
        for line in plan.splitlines():
            found = re.search(r"actual time=\S+ rows=\d+ loops=(\d+)", line)
            if found:
                loops = int(found.group(1))
            removed = re.search(r"Rows Removed by (?:Join )?Filter: (\d+)", line)
            if removed:
                dropped += int(removed.group(1)) * loops
    return dropped


def test_ready_successors__a_fan_out_root__judges_each_successor_once(project: Project) -> None:
    """A fan-out's root makes all its branches ready at once. Failed on PostgreSQL while ready_successors joined
    its candidates to their edges judged as one set: its plan, made once per session without knowing how many
    successors it gets, walked the whole set for each candidate (600 x 600 rows dropped by the join's filter here;
    3,000 branches took 0.9 s, now 0.05). The rows the plan's steps read and drop must stay near the number of
    branches."""
    if not project.db.is_postgres:
        pytest.skip("a PostgreSQL plan (one generic plan per session); SQLite's planner has no such plan cache")
    from tests.py.conformance.test_plans import _pg_plans

    branches = 600
    run, root = _fan_out(project, branches)
    assert len(call(project.db, "ready_successors", run_id=run, task_id=root)) == branches
    plans = _pg_plans(project.db, "ready_successors", {"run_id": run, "task_id": root})
    assert _dropped(plans) <= 2 * branches, f"to judge {branches} branches:\n" + "\n".join(plans)


def test_queue_attempts__a_fan_out_s_branches__checks_each_task_by_key(project: Project) -> None:
    """queue_attempts with a fan-out's branches. Failed on PostgreSQL while its check that each listed task is an
    active task of the run's pipeline found the task among the pipeline's active tasks (ux_tasks_code_active) in
    its plan made once per session: 600 x 600 rows read and dropped here, 0.7 of the 1.4 s for 2,400 branches.
    Linear checks drop a few rows per task (a task run that is not there yet, an edge within the pipeline)."""
    if not project.db.is_postgres:
        pytest.skip("a PostgreSQL plan (one generic plan per session); SQLite's planner has no such plan cache")
    from tests.py.conformance.test_plans import _pg_plans

    branches = 600
    run, root = _fan_out(project, branches)
    ids = ",".join(str(r.task_id) for r in call(project.db, "ready_successors", run_id=run, task_id=root))
    plans = _pg_plans(project.db, "queue_attempts", {"run_id": run, "task_ids": ids})
    assert _dropped(plans) <= 10 * branches, f"to queue {branches} branches:\n" + "\n".join(plans)
    assert {r.outcome for r in call(project.db, "queue_attempts", run_id=run, task_ids=ids)} == {"QUEUED"}
