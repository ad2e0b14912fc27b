"""claim_attempt's limits (issue 25) on both dialects: a pipeline's MAX_PARALLEL_TASKS, a project's
MAX_RUNNING_TASKS and its MAX_WAREHOUSE_QUERIES count CLAIMED and RUNNING attempts, hold within one batch, skip what
is at its limit without blocking anything else, keep the claim order, and hold under concurrent claimers on
PostgreSQL."""

from __future__ import annotations

import random
import threading
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from etlcraft.core.actor import acting_as
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.conftest import TEST_ACTOR
from tests.py.support.attempts import stamp
from tests.py.support.scenario import Project

OWNER = "claimer-a"


def _insert(db: EngineDB, conn: sa.Connection, table: str, key: str, **values: Any) -> int:
    columns, binds = ", ".join(values), ", ".join(f":{k}" for k in values)
    sql = f"INSERT INTO {db.qualify(table)} ({columns}) VALUES ({binds}) RETURNING {key}"
    return int(conn.execute(sa.text(sql), values).scalar_one())


class Queue:
    """Projects, each pipeline with a run IN-PROGRESS whose tasks get one QUEUED attempt each."""

    def __init__(self, db: EngineDB) -> None:
        self.db = db
        self.projects: dict[str, Project] = {}
        self.runs: dict[str, int] = {}
        self.project_of: dict[str, str] = {}

    def project(self, code: str, **limits: Any) -> Project:
        if code not in self.projects:
            project = Project(self.db)
            with self.db.write() as conn:
                project.project_id = _insert(self.db, conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE=code, **limits)
            self.projects[code] = project
        return self.projects[code]

    def pipeline(self, project: str, code: str, **limits: Any) -> None:
        self.projects[project].pipeline(code, **limits)
        self.project_of[code] = project

    def queue(self, pipeline: str, count: int, *, kind: str = "ingestion", priority: int = 0,
              seconds_ago: int = 0) -> list[int]:
        """`count` new tasks of `pipeline`, each with one QUEUED attempt in pool default: their attempt ids."""
        project = self.projects[self.project_of[pipeline]]
        if pipeline not in self.runs:
            self.runs[pipeline] = project.run(pipeline, key=f"manual:{pipeline}")
        ids = []
        for _ in range(count):
            task_id = project.task(pipeline, f"t{len(project.tasks) + 1}", handler="PYTHON")
            with self.db.write() as conn:
                task_run = _insert(self.db, conn, "AUD_TASK_RUN_LOG", "TASK_RUN_ID",
                                   PIPELINE_RUN_ID=self.runs[pipeline], TASK_ID=task_id, STATUS="IN-PROGRESS",
                                   ATTEMPT_COUNT=1)
                ids.append(_insert(
                    self.db, conn, "AUD_TASK_ATTEMPTS", "ATTEMPT_ID", TASK_RUN_ID=task_run, ATTEMPT_NUMBER=1,
                    STATUS="QUEUED", POOL="default", SLOT_KIND=kind, PRIORITY=priority,
                    QUEUED_AT=stamp(self.db, self.db.clock.now() - timedelta(seconds=seconds_ago)),
                    REQUESTED_BY="tester@pytest", REQUESTED_BY_KIND="HUMAN"))
        return ids

    def claim(self, kinds: str = "ingestion,warehouse", max_attempts: int = 32, owner: str = OWNER) -> list[int]:
        rows = call(self.db, "claim_attempt", pool="default", slot_kinds=kinds, owner_id=owner,
                    max_attempts=max_attempts)
        return [int(r.attempt_id) for r in rows]

    def live(self, where: str = "1 = 1", **params: Any) -> int:
        sql = (f"SELECT COUNT(*) FROM {self.db.qualify('AUD_TASK_ATTEMPTS')} a"
               f" JOIN {self.db.qualify('AUD_PIPELINES_RUN_LOG')} r ON r.PIPELINE_RUN_ID = a.PIPELINE_RUN_ID"
               f" JOIN {self.db.qualify('CFG_PIPELINES')} p ON p.PIPELINE_ID = r.PIPELINE_ID"
               f" WHERE a.STATUS IN ('CLAIMED', 'RUNNING') AND {where}")
        with self.db.read() as conn:
            return int(conn.execute(sa.text(sql), params).scalar_one())


def finish(db: EngineDB, attempt_id: int, owner: str = OWNER) -> None:
    call(db, "finish_attempt", attempt_id=attempt_id, owner_id=owner, status="SUCCESS")


def test_a_pipeline_limit_holds_within_one_batch_and_frees_as_attempts_end(engine_db: EngineDB) -> None:
    q = Queue(engine_db)
    q.project("alpha")
    q.pipeline("alpha", "limited", MAX_PARALLEL_TASKS=3)
    queued = q.queue("limited", 10)
    claimed = q.claim(max_attempts=32)
    assert claimed == queued[:3]
    assert q.claim() == []
    finish(engine_db, claimed[0])
    assert q.claim() == [queued[3]]
    assert q.live() == 3


def test_a_project_at_its_limit_does_not_stop_another_project_being_claimed(engine_db: EngineDB) -> None:
    q = Queue(engine_db)
    q.project("alpha", MAX_RUNNING_TASKS=2)
    q.pipeline("alpha", "a1")
    q.pipeline("alpha", "a2")
    q.project("beta")
    q.pipeline("beta", "b1")
    first = q.queue("a1", 3, priority=9)
    second = q.queue("a2", 3, priority=8)
    other = q.queue("b1", 3, priority=1)
    # alpha's attempts come first in claim order; only two of them may run, and beta's are claimed past them
    assert q.claim(max_attempts=4) == first[:2] + other[:2]
    assert q.claim(max_attempts=1) == [other[2]]
    assert q.claim() == []
    finish(engine_db, first[0])
    assert q.claim() == [first[2]]
    assert q.live("p.PROJECT_ID = :p", p=q.projects["alpha"].project_id) == 2
    assert second  # queued behind, never over the limit


def test_a_project_warehouse_limit_counts_warehouse_attempts_only(engine_db: EngineDB) -> None:
    q = Queue(engine_db)
    q.project("alpha", MAX_WAREHOUSE_QUERIES=1)
    q.pipeline("alpha", "a1")
    warehouse = q.queue("a1", 3, kind="warehouse", priority=5)
    ingestion = q.queue("a1", 3, kind="ingestion")
    assert q.claim(max_attempts=32) == [warehouse[0], *ingestion]
    assert q.claim(kinds="warehouse") == []
    finish(engine_db, warehouse[0])
    assert q.claim(kinds="warehouse") == [warehouse[1]]


def test_limited_claims_keep_the_order_priority_then_oldest(engine_db: EngineDB) -> None:
    q = Queue(engine_db)
    q.project("alpha")
    q.pipeline("alpha", "a1", MAX_PARALLEL_TASKS=2)
    late_low = q.queue("a1", 1, priority=0, seconds_ago=0)
    old_low = q.queue("a1", 1, priority=0, seconds_ago=60)
    high = q.queue("a1", 1, priority=3, seconds_ago=0)
    assert q.claim() == [high[0], old_low[0]]
    assert late_low


def test_limits_hold_under_concurrent_claimers(engine_db: EngineDB) -> None:
    if not engine_db.is_postgres:
        pytest.skip("concurrent claimers: SQLite admits one writer at a time (BEGIN IMMEDIATE)")
    db = engine_db
    with acting_as(TEST_ACTOR):
        q = Queue(db)
        q.project("alpha", MAX_RUNNING_TASKS=5, MAX_WAREHOUSE_QUERIES=2)
        q.pipeline("alpha", "a1", MAX_PARALLEL_TASKS=3)
        q.pipeline("alpha", "a2")
        q.project("beta")
        q.pipeline("beta", "b1", MAX_PARALLEL_TASKS=4)
        q.pipeline("beta", "free")
        q.queue("a1", 12, kind="warehouse", priority=2)
        q.queue("a1", 12)
        q.queue("a2", 12, kind="warehouse", priority=1)
        q.queue("b1", 16)
        q.queue("free", 16)
        alpha, pipe_a1, pipe_b1 = q.projects["alpha"].project_id, q.projects["alpha"].pipelines["a1"], \
            q.projects["beta"].pipelines["b1"]
        worst = {"alpha": 0, "alpha_wh": 0, "a1": 0, "b1": 0}
        errors: list[BaseException] = []
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                worst["alpha"] = max(worst["alpha"], q.live("p.PROJECT_ID = :p", p=alpha))
                worst["alpha_wh"] = max(worst["alpha_wh"],
                                        q.live("p.PROJECT_ID = :p AND a.SLOT_KIND = 'warehouse'", p=alpha))
                worst["a1"] = max(worst["a1"], q.live("p.PIPELINE_ID = :p", p=pipe_a1))
                worst["b1"] = max(worst["b1"], q.live("p.PIPELINE_ID = :p", p=pipe_b1))

        def claimer(number: int) -> None:
            owner, rng = f"claimer-{number}", random.Random(number)
            try:
                with acting_as(TEST_ACTOR):
                    for _ in range(25):
                        for attempt_id in q.claim(max_attempts=rng.randint(1, 8), owner=owner):
                            if rng.random() < 0.7:
                                finish(db, attempt_id, owner)
            except BaseException as exc:
                errors.append(exc)

        watcher = threading.Thread(target=watch)
        watcher.start()
        threads = [threading.Thread(target=claimer, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        watcher.join()
        assert not errors, errors
        assert worst["alpha"] <= 5 and worst["alpha_wh"] <= 2 and worst["a1"] <= 3 and worst["b1"] <= 4, worst
        assert worst["alpha"] >= 1 and worst["b1"] >= 1  # the claimers did claim limited work
        assert q.live("p.PROJECT_ID = :p", p=alpha) <= 5
