"""`etl-craft server` through real processes, on SQLite and PostgreSQL: one server leads and a second exits naming
it; after kill -9 a successor takes over, closes the dead server's record and finishes its run; runs started
elsewhere (run --init-only, the SQL API) are finished by the server; a plain `run` hands its run over and follows
it; missed schedule ticks are caught up by themselves; SIGTERM stops it within its grace, its running task recorded
interrupted and run again by the next server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa

from etlcraft.cli.context import CliContext
from etlcraft.core.actor import acting_as
from etlcraft.core.cron import parse, tick_of, ticks_between
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.overseer.schedules import MISSED
from tests.py.conftest import TEST_ACTOR, PgServer
from tests.py.support.cli import etl_craft, start_etl_craft
from tests.py.support.project import Task, release, wait_for, write_project

pytestmark = pytest.mark.process

LEASE_SECONDS = 6  # heartbeats every second: a killed server's runs are taken over within seconds
FLOW = {"flow": [Task("a", {"hold": "a"}), Task("b")], "other": [Task("c")]}
EDGES = [("b", "a", "SUCCESS")]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    url = None
    if request.param == "postgresql":
        pg: PgServer = request.getfixturevalue("pg_server")
        name = pg.create()
        request.addfinalizer(lambda: pg.drop(name))
        url = pg.url_for(name)
    root = write_project(tmp_path / "p", url, FLOW, EDGES, lease_seconds=LEASE_SECONDS)
    with (root / "craft-connector.yml").open("a") as config:
        config.write("  Shutdown_grace_seconds: 2\n")
    done = etl_craft("migrate", cwd=root)
    assert done.code == 0, done.err
    servers: list[subprocess.Popen[bytes]] = []
    request.node.servers = servers
    yield root
    for server in servers:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)


def start_server(root: Path, request: pytest.FixtureRequest, name: str, *args: str) -> subprocess.Popen[bytes]:
    log = root / f"{name}.log"
    server = start_etl_craft("server", "--log-format", "json", *args, cwd=root, log=log)
    request.node.servers.append(server)
    wait_for(lambda: "leading as overseer" in log.read_text() or server.poll() is not None, what=f"{name} to lead")
    assert server.poll() is None, log.read_text()
    return server


def engine(root: Path) -> EngineDB:
    """The project's Engine DB, as its commands open it."""
    return CliContext.create(str(root), None, None).engine_db()


def runs(root: Path, pipeline: str) -> list[dict[str, Any]]:
    done = etl_craft("history", "--pipeline-code", pipeline, "--limit", "1000", "--format", "json", cwd=root)
    assert done.code == 0, done.err
    return sorted(json.loads(done.out)["runs"], key=lambda r: r["pipeline_run_id"])


def status(root: Path, pipeline: str, run_id: int) -> dict[str, Any]:
    done = etl_craft("status", "--pipeline-code", pipeline, "--run-id", str(run_id), "--format", "json", cwd=root)
    assert done.code == 0, done.err
    return dict(json.loads(done.out))


def ended(root: Path, pipeline: str, run_id: int) -> bool:
    return status(root, pipeline, run_id)["run"]["status"] not in ("QUEUED", "IN-PROGRESS")


def server_status(root: Path) -> dict[str, Any]:
    done = etl_craft("server", "status", "--format", "json", cwd=root)
    assert done.code == 0, done.err
    return dict(json.loads(done.out))


def test_one_server_leads__a_second_exits_naming_it__after_kill_9_a_successor_finishes_the_run(
        project: Path, request: pytest.FixtureRequest) -> None:
    first = start_server(project, request, "first")
    second = etl_craft("server", cwd=project, timeout=30)
    assert second.code == 24, second.err
    assert f"pid {first.pid}" in second.err and "a server is already active" in second.err
    leader = server_status(project)["leader"]
    assert leader["pid"] == first.pid

    created = etl_craft("run", "--pipeline-code", "flow", "--init-only", "--format", "json", cwd=project)
    run_id = json.loads(created.out)["pipeline_run_id"]
    wait_for(lambda: any((project / "marks").glob("a.*.start")), what="a to start under the first server")
    os.kill(first.pid, signal.SIGKILL)  # its task process, held, goes on without it
    first.wait(timeout=10)

    start_server(project, request, "successor")
    release(project, "a")
    wait_for(lambda: ended(project, "flow", run_id), timeout=90, what="the successor to finish the run")
    done = status(project, "flow", run_id)
    assert done["run"]["status"] == "SUCCESS", done
    servers = server_status(project)
    assert servers["leader"]["pid"] != first.pid
    dead = next(s for s in servers["recent_servers"] if s["pid"] == first.pid)
    assert dead["stopped_at"] is not None and "ended without stopping" in dead["stop_reason"]


def test_runs_started_elsewhere_are_finished_and_a_plain_run_hands_over(
        project: Path, request: pytest.FixtureRequest) -> None:
    start_server(project, request, "server")
    release(project, "a")
    created = etl_craft("run", "--pipeline-code", "flow", "--init-only", "--format", "json", cwd=project)
    by_cli = json.loads(created.out)["pipeline_run_id"]
    db = engine(project)
    try:  # the SQL API: a run created QUEUED, as a DBA would with create_run
        with db.read() as conn:
            pipeline_id = conn.execute(sa.text(f"SELECT PIPELINE_ID FROM {db.qualify('CFG_PIPELINES')} "
                                               "WHERE PIPELINE_CODE = 'other'")).scalar_one()
        with acting_as(TEST_ACTOR):
            by_sql = int(call(db, "create_run", pipeline_id=pipeline_id, run_key="sql:1",
                              run_date=date(2026, 12, 1), status="QUEUED")[0].pipeline_run_id)
    finally:
        db.dispose()
    wait_for(lambda: ended(project, "flow", by_cli) and ended(project, "other", by_sql), timeout=60,
             what="the server to finish both runs")
    assert status(project, "flow", by_cli)["run"]["status"] == "SUCCESS"
    assert status(project, "other", by_sql)["run"]["status"] == "SUCCESS"

    handed = etl_craft("run", "--pipeline-code", "other", "--run-key", "handed", cwd=project, timeout=60)
    assert handed.code == 0, handed.err
    assert "is run by the server" in handed.out and "ended SUCCESS" in handed.out
    assert [r["run_key"] for r in runs(project, "other")] == ["sql:1", "handed"]


def test_missed_ticks_are_caught_up_by_themselves(project: Path, request: pytest.FixtureRequest) -> None:
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    db = engine(project)
    try:
        with acting_as(TEST_ACTOR), db.write() as conn:
            conn.exec_driver_sql(
                f"UPDATE {db.qualify('CFG_PIPELINES')} SET RUN_SCHEDULE = '0 * * * *', CATCHUP = 'Y', "
                f"MAX_CATCHUP_RUNS = 1, SCHEDULE_START_DATE = '{yesterday}' WHERE PIPELINE_CODE = 'other'")
    finally:
        db.dispose()
    started = datetime.now(UTC)
    start_server(project, request, "server")
    expected = [f"schedule:{tick_of(t)}" for t in ticks_between(
        parse("0 * * * *"), datetime.combine(yesterday, datetime.min.time(), UTC) - timedelta(seconds=1), started,
        ZoneInfo("UTC"))]
    wait_for(lambda: len(runs(project, "other")) >= min(len(expected), 101) and all(
        r["status"] not in ("QUEUED", "IN-PROGRESS") for r in runs(project, "other")), timeout=60,
        what="the caught-up run to end")
    found = runs(project, "other")
    assert [r["run_key"] for r in found] == expected[-101:]  # the newest missed ticks recorded, none repeated
    assert [r["status"] for r in found] == ["SKIPPED"] * (len(found) - 1) + ["SUCCESS"]
    assert {r["trigger_kind"] for r in found} == {"SCHEDULE"}
    skipped = status(project, "other", found[0]["pipeline_run_id"])["run"]
    assert skipped["message"] == MISSED


def test_sigterm_stops_within_the_grace__the_task_is_interrupted_and_the_next_server_runs_it(
        project: Path, request: pytest.FixtureRequest) -> None:
    server = start_server(project, request, "server")
    created = etl_craft("run", "--pipeline-code", "flow", "--init-only", "--format", "json", cwd=project)
    run_id = json.loads(created.out)["pipeline_run_id"]
    wait_for(lambda: any((project / "marks").glob("a.*.start")), what="a to start")
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=30) == 0, (project / "server.log").read_text()
    log = (project / "server.log").read_text()
    assert "get up to 2 s to end" in log and "stopped by a signal" in log
    assert status(project, "flow", run_id)["run"]["status"] == "IN-PROGRESS"
    assert server_status(project)["leader"] is None

    release(project, "a")
    start_server(project, request, "next")
    wait_for(lambda: ended(project, "flow", run_id), timeout=60, what="the next server to finish the run")
    done = status(project, "flow", run_id)
    assert done["run"]["status"] == "SUCCESS"
    assert len(list((project / "marks").glob("a.*.start"))) == 2  # interrupted once, run again once


def test_runs_that_wait_for_a_slot_other_runs_hold_all_finish(project: Path, request: pytest.FixtureRequest) -> None:
    release(project, "a")
    created = [json.loads(etl_craft("run", "--pipeline-code", code, "--init-only", "--format", "json",
                                    cwd=project).out)["pipeline_run_id"] for code in ("flow", "other")]
    start_server(project, request, "server", "--slots", "1")
    wait_for(lambda: ended(project, "flow", created[0]) and ended(project, "other", created[1]), timeout=60,
             what="both runs to end with one slot between them")
    assert [status(project, code, run)["run"]["status"] for code, run in zip(("flow", "other"), created,
                                                                              strict=True)] == ["SUCCESS"] * 2


def test_a_run_that_cannot_be_finalized_is_tried_again__the_server_goes_on(
        project: Path, request: pytest.FixtureRequest) -> None:
    release(project, "a")
    created = json.loads(etl_craft("run", "--pipeline-code", "other", "--init-only", "--format", "json",
                                   cwd=project).out)["pipeline_run_id"]
    log = project / "faulty.log"
    faulty = start_etl_craft("server", "--log-format", "json", cwd=project, log=log,
                             env={"ETL_CRAFT_FAULT": "before_finalize"})
    request.node.servers.append(faulty)
    wait_for(lambda: log.read_text().count(f"run {created}: ") >= 2 or faulty.poll() is not None, timeout=60,
             what="the server to try twice to finalize the run")
    assert faulty.poll() is None, log.read_text()
    assert "trying again" in log.read_text() and not ended(project, "other", created)
    faulty.send_signal(signal.SIGTERM)
    assert faulty.wait(timeout=30) == 0, log.read_text()
    start_server(project, request, "server")  # without the fault: it takes the run over and ends it
    wait_for(lambda: ended(project, "other", created), timeout=60, what="the next server to finalize the run")
    assert status(project, "other", created)["run"]["status"] == "SUCCESS"


@pytest.mark.postgres
def test_a_server_whose_lock_connection_drops_stops_at_once(project: Path, request: pytest.FixtureRequest) -> None:
    if "postgresql" not in request.node.callspec.id:
        pytest.skip("the leader lock is a session of its own on PostgreSQL only; SQLite's is a file lock")
    server = start_server(project, request, "server")
    created = etl_craft("run", "--pipeline-code", "flow", "--init-only", "--format", "json", cwd=project)
    run_id = json.loads(created.out)["pipeline_run_id"]
    wait_for(lambda: any((project / "marks").glob("a.*.start")), what="a to start")
    db = engine(project)
    try:  # end the session that holds the leader lock, as a network cut or a DBA would
        with db.read() as conn:
            holder = conn.execute(sa.text("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND "
                                          "database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                                          )).scalar_one()
            conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": holder})
    finally:
        db.dispose()
    assert server.wait(timeout=30) == 4, (project / "server.log").read_text()
    log = (project / "server.log").read_text()
    assert "leader lock connection to the Engine DB was lost" in log
    assert status(project, "flow", run_id)["run"]["status"] == "IN-PROGRESS"  # left for the next server


def test_run_init_only_while_a_server_runs_succeeds_even_when_the_server_admits_the_run_first(
        project: Path, request: pytest.FixtureRequest) -> None:
    # create_run wakes the server (NOTIFY on PostgreSQL), which may admit the run before the command's own
    # admit_run: the command then finds the run IN-PROGRESS, which is what it asked for.
    start_server(project, request, "server")
    for number in range(8):
        created = etl_craft("run", "--pipeline-code", "other", "--init-only", "--run-key", f"race:{number}",
                            "--format", "json", cwd=project)
        assert created.code == 0, created.err
        run_id = json.loads(created.out)["pipeline_run_id"]
        wait_for(lambda run=run_id: ended(project, "other", run), timeout=60, what=f"run {run_id} to end")
