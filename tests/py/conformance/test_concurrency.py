"""Races on PostgreSQL between real processes: claims are disjoint and exactly once; one run per key."""

from __future__ import annotations

import multiprocessing as mp
from datetime import date

import pytest

from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call, call_on
from tests.py.support.queue import seed_queue

pytestmark = pytest.mark.postgres
ATTEMPTS, CLAIMERS = 2000, 8
WORKER = Actor("worker@test", ActorKind.WORKER)


def _claimer(url: str, owner: str, start: mp.Barrier, out: mp.Queue) -> None:  # type: ignore[type-arg]
    db = EngineDB(url)
    claimed: list[int] = []
    with acting_as(WORKER), db.engine.connect() as conn:
        start.wait()
        while rows := call_on(db, conn, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=owner):
            claimed.extend(r.attempt_id for r in rows)
    db.dispose()
    out.put((owner, claimed))


def test_b1_eight_processes_claim_2000_attempts_each_exactly_once(pg_url: str) -> None:
    seed_queue(pg_url, ATTEMPTS)
    start, out = mp.Barrier(CLAIMERS), mp.Queue()
    workers = [mp.Process(target=_claimer, args=(pg_url, f"w{i}", start, out)) for i in range(CLAIMERS)]
    for worker in workers:
        worker.start()
    results = dict(out.get(timeout=300) for _ in workers)
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    every = [attempt for claimed in results.values() for attempt in claimed]
    assert len(every) == ATTEMPTS == len(set(every)), "every attempt claimed exactly once"
    assert sum(1 for claimed in results.values() if claimed) > 1, "the claimers shared the queue"
    db = EngineDB(pg_url)
    with db.read() as conn:
        owners = dict(conn.exec_driver_sql(
            "SELECT attempt_id, owner_id FROM etl_craft.aud_task_attempts WHERE status = 'CLAIMED'").all())
    db.dispose()
    assert owners == {attempt: owner for owner, claimed in results.items() for attempt in claimed}


def _creator(url: str, start: mp.Barrier, out: mp.Queue) -> None:  # type: ignore[type-arg]
    db = EngineDB(url)
    with acting_as(Actor("racer@test", ActorKind.HUMAN)):
        start.wait()
        row = call(db, "create_run", pipeline_id=1, run_key="orchestrator:dag_run_1", run_date=date(2026, 1, 1))[0]
    db.dispose()
    out.put((row.pipeline_run_id, row.created))


def test_b23_two_create_run_for_one_key_at_once_create_one_run(pg_url: str) -> None:
    seed_queue(pg_url, 0)
    start, out = mp.Barrier(2), mp.Queue()
    racers = [mp.Process(target=_creator, args=(pg_url, start, out)) for _ in range(2)]
    for racer in racers:
        racer.start()
    results = [out.get(timeout=60) for _ in racers]
    for racer in racers:
        racer.join(timeout=30)
    assert {run_id for run_id, _ in results} == {results[0][0]}, "both callers got the same run"
    assert sorted(created for _, created in results) == [False, True], "exactly one created it"

