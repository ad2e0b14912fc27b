"""carry_offset (sql/functions/076_carried_offsets.sql.j2), the same on SQLite and PostgreSQL: an Engine DB where
nothing has run yet takes each task's last offset from another Engine DB once, naming where it came from; the
task's next SUCCESS replaces it with its own. Every refusal changes nothing. And engine copy (etlcraft.services.
engine_copy), which calls it, keeps an offset's first source through copies and reports a long copy's progress."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from etlcraft.core.actor import acting_as
from etlcraft.core.errors import NotFoundError, RefusedByPolicyError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call, call_in
from etlcraft.engine.migrations import migrate
from etlcraft.engine.settings import engine_id
from etlcraft.services.engine_copy import copy_engine
from tests.py.conftest import TEST_ACTOR
from tests.py.support.attempts import OWNER, T0, Attempts, later

SOURCE = "5a" * 16
OFFSETS = ("SELECT TASK_ID, OFFSET_TYPE, OFFSET_VALUE, TASK_RUN_ID, ATTEMPT_ID, SOURCE_ENGINE_ID, SOURCE_ATTEMPT_ID"
           " FROM {AUD_TASK_OFFSETS}")


@pytest.fixture
def acting() -> Iterator[None]:
    with acting_as(TEST_ACTOR):
        yield


@pytest.fixture
def att(engine_db: EngineDB) -> Attempts:
    engine_db.clock.pin(T0)
    return Attempts(engine_db)


def _carry(att: Attempts, task: int, **changes: object) -> list[object]:
    arguments = {"task_id": task, "offset_type": "INTEGER", "offset_value": "80", "stored_at": later(-3600),
                 "source_engine_id": SOURCE, "source_attempt_id": 7, **changes}
    return call(att.db, "carry_offset", **arguments)


def test_carry_offset__fresh_engine_db__taken_once__named_by_its_source(att: Attempts) -> None:
    ingest = att.task_id("ingest")
    rows = _carry(att, ingest)
    assert [(r.task_id, r.offset_type, r.offset_value, r.stored_at) for r in rows] == [
        (ingest, "INTEGER", "80", later(-3600))]
    assert att.project.rows(OFFSETS) == [(ingest, "INTEGER", "80", None, None, SOURCE, 7)]
    before = att.snapshot()
    refusals: list[tuple[type[Exception], str, dict[str, object]]] = [
        (RefusedByPolicyError, rf"task {ingest} has an offset already \(80, stored 2026-03-01 11:00:00 UTC\): a task "
                               "takes a carried offset only once", {}),
        (RefusedByPolicyError, f"the offset of task {att.task_id('load')} comes from Engine DB "
                               f"{engine_id(att.db)}, which is this one",
         {"task_id": att.task_id("load"), "source_engine_id": engine_id(att.db)}),
        (RefusedByPolicyError, r"the source laptop is not an Engine DB identity \(ENG_SETTINGS ENGINE_ID: 32 hex",
         {"task_id": att.task_id("load"), "source_engine_id": "laptop"}),
        (RefusedByPolicyError, "the offset 80 needs an offset_type of INTEGER, DECIMAL, TEXT, DATE, TIMESTAMP, not "
                               "FLOAT", {"task_id": att.task_id("load"), "offset_type": "FLOAT"}),
        (NotFoundError, "task 999999 does not exist in this Engine DB", {"task_id": 999999}),
    ]
    for error, message, changes in refusals:
        with pytest.raises(error, match=message):
            _carry(att, ingest, **changes)
    assert att.snapshot() == before


def test_carry_offset__engine_db_that_has_run__refused__the_tasks_next_success_replaces_a_carried_one(
        att: Attempts) -> None:
    ingest = att.task_id("ingest")
    _carry(att, ingest)
    ok = att.running("ingest")  # the first run of this Engine DB
    before = att.snapshot()
    with pytest.raises(RefusedByPolicyError, match=r"carry_offset writes only into an Engine DB where nothing has run "
                                                   r"yet; this one has 1 run\(s\)"):
        _carry(att, att.task_id("load"))
    assert att.snapshot() == before
    call(att.db, "finish_attempt", attempt_id=ok.attempt_id, owner_id=OWNER, status="SUCCESS", offset_value="120",
         offset_type="INTEGER")
    assert att.project.rows(OFFSETS) == [(ingest, "INTEGER", "120", ok.task_run_id, ok.attempt_id, None, None)]


@pytest.mark.usefixtures("acting")
def test_engine_copy__copy_of_a_copy__keeps_the_first_source__reports_progress_every_100(tmp_path: Path) -> None:
    """An offset carried twice still names the Engine DB and attempt that stored it; a long copy reports its
    progress every PROGRESS_EVERY rows and at its end."""
    project = tmp_path / "project"
    (project / "migrations").mkdir(parents=True)
    (project / "migrations" / "0001_many.sql").write_text(
        "INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('p');\n"
        "INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'many' FROM CFG_PROJECTS;\n"
        + "".join(f"INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE) SELECT PIPELINE_ID, "
                  f"'t{n:03}', 'PYTHON', 't.py' FROM CFG_PIPELINES;\n" for n in range(250)))
    source, target = (EngineDB(f"sqlite:///{tmp_path / name}") for name in ("source.db", "target.db"))
    progress: list[tuple[str, int, int]] = []
    try:
        migrate(source, project_dir=project)
        with source.write() as conn:
            for task_id in range(1, 251):
                call_in(source, conn, "carry_offset", task_id=task_id, offset_type="INTEGER",
                        offset_value=str(task_id * 10), stored_at=T0, source_engine_id=SOURCE,
                        source_attempt_id=task_id + 1000)
        outcome = copy_engine(source, target, project, lambda *report: progress.append(report))
        with target.read() as conn:
            carried = conn.execute(sa.text("SELECT COUNT(*), MIN(SOURCE_ENGINE_ID), MAX(SOURCE_ENGINE_ID),"
                                           " SUM(SOURCE_ATTEMPT_ID - TASK_ID) FROM AUD_TASK_OFFSETS")).one()
    finally:
        source.dispose()
        target.dispose()
    assert [(c.what, c.count) for c in outcome.carried] == [("offsets", 250), ("target hash versions", 0),
                                                              ("pipeline pauses", 0)]
    assert progress == [("offsets", 100, 250), ("offsets", 200, 250), ("offsets", 250, 250)]
    assert tuple(carried) == (250, SOURCE, SOURCE, 250 * 1000)
