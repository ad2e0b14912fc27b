"""The task process's context read (etlcraft/supervisor/child.py, the attempt_context query), the same on SQLite
and PostgreSQL: its task, run, offset, every active parameter and the bundle its run pinned come back in one
statement (issue 27: the task process sent three before), and a pinned manifest comes once, not once per
parameter."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

from etlcraft.config.loader import CONFIG_FILE
from etlcraft.core.errors import StaleTransitionError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call, read_then_call
from etlcraft.engine.queries import fetch_all
from etlcraft.supervisor.child import ChildRequest, _context
from tests.py.support.attempts import OWNER, Attempts, Queued

PARAMETERS = {"since": "2026-01-01", "region": "EU", "off": None}  # "off" is switched off (ACTIVE_FLAG 'N')


def _parameters(db: EngineDB, task_id: int) -> None:
    with db.write() as conn:
        for name, value in PARAMETERS.items():
            conn.execute(sa.text(f"INSERT INTO {db.qualify('CFG_TASK_PARAMETERS')} (TASK_ID, PARAMETER_NAME, "
                                 "PARAMETER_VALUE, ACTIVE_FLAG) VALUES (:t, :n, :v, :a)"),
                         {"t": task_id, "n": name, "v": value or "x", "a": "N" if value is None else "Y"})


def _statements(db: EngineDB) -> tuple[list[str], Any]:
    """The queries sent to `db` from now on (SQLAlchemy's before_cursor_execute), and the listener to remove."""
    sent: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.strip().upper() not in ("BEGIN", "COMMIT"):  # SQLite's own, which cross no network
            sent.append(statement)

    sa.event.listen(db.engine, "before_cursor_execute", note)
    return sent, note


def _claimed_with_parameters(engine_db: EngineDB, tmp_path: Path) -> tuple[Attempts, Queued, ChildRequest]:
    """A claimed attempt of task "ingest" with PARAMETERS, a project folder in `tmp_path`, and its task process's
    request (no context handed over)."""
    attempts = Attempts(engine_db)
    claimed = attempts.claimed("ingest")
    _parameters(engine_db, attempts.task_id("ingest"))
    (tmp_path / CONFIG_FILE).write_text("Engine:\n  dialect: sqlite\n  path: engine.db\n"
                                        "Warehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n")
    request = ChildRequest(attempt_id=claimed.attempt_id, owner_id=OWNER, project_dir=str(tmp_path),
                           engine_url="", engine_schema="", engine_password=None, log_path="",
                           actor_name="test", actor_kind="USER", lease_seconds=60)
    return attempts, claimed, request


def test_task_context__parameters_and_no_bundle__one_statement(engine_db: EngineDB, tmp_path: Path) -> None:
    attempts, claimed, request = _claimed_with_parameters(engine_db, tmp_path)
    sent, note = _statements(engine_db)
    try:
        context = _context(engine_db, request)
    finally:
        sa.event.remove(engine_db.engine, "before_cursor_execute", note)
    assert len(sent) == 1, f"the task process read its context in {len(sent)} statements, expected 1: {sent}"
    assert (context.task_id, context.pipeline_run_id, context.parameters, context.project_dir) == (
        attempts.task_id("ingest"), claimed.run_id, {"since": "2026-01-01", "region": "EU"}, tmp_path)


def test_attempt_context__pinned_bundle__its_manifest_on_one_row_only(engine_db: EngineDB) -> None:
    attempts = Attempts(engine_db)
    attempts.pipeline()
    manifest = json.dumps({"ingestion_scripts/ingest.py": "1" * 64})
    call(engine_db, "record_bundle", project_code="proj", manifest=manifest,
         manifest_sha256=hashlib.sha256(manifest.encode()).hexdigest(), file_count=1, total_bytes=10,
         store_url="file:///srv/artifacts")
    claimed = attempts.claimed("ingest")  # its run pins the project's latest bundle
    _parameters(engine_db, attempts.task_id("ingest"))
    with engine_db.read() as conn:
        rows = fetch_all(engine_db, conn, "attempt_context", attempt_id=claimed.attempt_id)
    assert [(r["parameter_name"], r["manifest"], r["bundle_id"] is not None) for r in rows] == [
        ("region", manifest, True), ("since", None, True)]


def test_task_context__read_by_the_supervisor__the_task_process_sends_no_statement(
        engine_db: EngineDB, tmp_path: Path) -> None:
    """The supervisor reads the context on its own connection as it hands the attempt over (ChildRequest.context),
    so a task process, whose Engine DB session is new, neither plans nor sends the read."""
    from dataclasses import replace

    from etlcraft.supervisor.local import LocalSupervisor

    _, claimed, request = _claimed_with_parameters(engine_db, tmp_path)
    supervisor = object.__new__(LocalSupervisor)  # its context read only: no fork server, no spare
    supervisor.db = engine_db
    rows = supervisor._context(claimed.attempt_id)
    assert rows is not None
    sent, note = _statements(engine_db)
    try:
        handed = _context(engine_db, replace(request, context=rows))
    finally:
        sa.event.remove(engine_db.engine, "before_cursor_execute", note)
    assert sent == []
    assert handed == _context(engine_db, request)


def test_read_then_call__the_context_read_and_the_start_in_one_transaction__one_round_trip_on_postgresql(
        engine_db: EngineDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """How a supervisor hands an attempt to its spare task process: the attempt's context and its start_attempt
    together; on PostgreSQL one pipeline (both statements sent before either answer is read), else one write
    transaction. A refused start raises as call() does, and changes nothing."""
    attempts, claimed, _ = _claimed_with_parameters(engine_db, tmp_path)
    pipelines: list[object] = []
    if engine_db.is_postgres:
        original = psycopg.Connection.pipeline

        def counted(self: psycopg.Connection[Any]) -> Any:
            pipelines.append(self)
            return original(self)

        monkeypatch.setattr(psycopg.Connection, "pipeline", counted)
    with pytest.raises(StaleTransitionError):
        read_then_call(engine_db, "attempt_context", {"attempt_id": claimed.attempt_id}, "start_attempt",
                       attempt_id=claimed.attempt_id, owner_id="someone-else", host="h", pid=7, process_start="0")
    assert attempts.attempt(claimed.attempt_id)["STATUS"] == "CLAIMED"
    rows, started = read_then_call(engine_db, "attempt_context", {"attempt_id": claimed.attempt_id}, "start_attempt",
                                   attempt_id=claimed.attempt_id, owner_id=OWNER, host="h", pid=7,
                                   process_start="0")
    assert {r["parameter_name"]: r["parameter_value"] for r in rows} == {"region": "EU", "since": "2026-01-01"}
    assert {r["task_code"] for r in rows} == {"ingest"}
    assert [(s.attempt_id, s.status) for s in started] == [(claimed.attempt_id, "RUNNING")]
    assert attempts.attempt(claimed.attempt_id)["STATUS"] == "RUNNING"
    assert len(pipelines) == (2 if engine_db.is_postgres else 0)
