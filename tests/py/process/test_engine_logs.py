"""Task logs are kept per Engine DB: two Engine DBs of one project (run and attempt ids start at 1 in each) write
their attempts' logs into folders of their own, and `etl-craft logs` on each shows that database's attempt only. A
log written before the folders existed is still shown where its attempt recorded it, with a note."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support.attempts import OWNER, Attempts
from tests.py.support.cli import Result, etl_craft
from tests.py.support.project import Task, write_project

pytestmark = pytest.mark.process
SAYS = '''
import os

from etlcraft.scripting import ScriptResult, ScriptTask


def run(task: ScriptTask) -> ScriptResult:
    print(f"attempt {task.attempt_id} ran in Engine DB {os.environ['WHICH_DB']}", flush=True)
    return ScriptResult(row_count=1)
'''


def _ok(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Result:
    done = etl_craft(*args, cwd=cwd, env=env)
    assert done.code == 0, (args, done.out, done.err)
    return done


def _identity(url: str) -> str:
    db = EngineDB(url)
    try:
        with db.read() as conn:
            return str(conn.exec_driver_sql("SELECT VALUE FROM ENG_SETTINGS WHERE SETTING = 'ENGINE_ID'").scalar())
    finally:
        db.dispose()


def test_two_engine_dbs_of_one_project__each_attempt_log_holds_its_own_lines(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, {"pl": [Task("say", script="says.py")]}, [],
                            scripts={"says.py": SAYS})
    other = f"sqlite:///{tmp_path / 'other.db'}"
    _ok("migrate", cwd=project)
    _ok("--engine-url", other, "migrate", cwd=project)
    _ok("run", "--pipeline-code", "pl", cwd=project, env={"WHICH_DB": "first"})
    _ok("--engine-url", other, "run", "--pipeline-code", "pl", cwd=project, env={"WHICH_DB": "other"})

    first = _ok("logs", "--attempt-id", "1", cwd=project)
    second = _ok("--engine-url", other, "logs", "--attempt-id", "1", cwd=project)
    assert "attempt 1 ran in Engine DB first" in first.out and "Engine DB other" not in first.out
    assert "attempt 1 ran in Engine DB other" in second.out and "Engine DB first" not in second.out
    assert first.err == second.err == ""  # no note: both logs are in their Engine DB's own folder
    logs = project / ".etl-craft" / "logs"
    identities = {_identity(f"sqlite:///{project / '.etl-craft' / 'engine.db'}"), _identity(other)}
    assert len(identities) == 2
    assert sorted(p.relative_to(logs).as_posix() for p in logs.rglob("*.log")) == sorted(
        f"{identity}/pl/1/say.1.log" for identity in identities)
    for path in logs.rglob("*.log"):
        assert path.read_text().count("etl-craft: attempt 1 of task say (run 1) started") == 1, path


def test_log_of_the_layout_before_engine_db_folders__shown_with_a_note(tmp_path: Path) -> None:
    """An attempt that recorded a log in .etl-craft/logs/<pipeline>/<run>/ (before 0014) still has it shown, with a
    note that another Engine DB's attempt of the same id may have written to the same file."""
    project = write_project(tmp_path / "p", None, {"pl": [Task("say", script="says.py")]}, [],
                            scripts={"says.py": SAYS})
    _ok("migrate", cwd=project)
    old = project / ".etl-craft" / "logs" / "pl" / "1" / "ingest.1.log"
    old.parent.mkdir(parents=True)
    old.write_text("etl-craft: attempt 1 of task ingest (run 1) started\nolder lines\n")
    db = EngineDB(f"sqlite:///{project / '.etl-craft' / 'engine.db'}")
    try:
        with acting_as(Actor("tester@pytest", ActorKind.HUMAN)):
            attempts = Attempts(db)
            attempt = attempts.claimed("ingest")
            call(db, "start_attempt", attempt_id=attempt.attempt_id, owner_id=OWNER, host="h", pid=1,
                 process_start="1", log_path=str(old))
            call(db, "finish_attempt", attempt_id=attempt.attempt_id, owner_id=OWNER, status="SUCCESS",
                 task_log="older lines\n", log_path=str(old))
    finally:
        db.dispose()
    shown = _ok("logs", "--attempt-id", str(attempt.attempt_id), cwd=project)
    assert shown.out == "etl-craft: attempt 1 of task ingest (run 1) started\nolder lines\n"
    assert shown.err == (
        f"note: the log of attempt {attempt.attempt_id}, {old}, was written before etl-craft kept each Engine DB's "
        f"logs in a folder of its own: if another Engine DB of this project also ran an attempt {attempt.attempt_id} "
        f"of run {attempt.run_id}, its lines were appended to this file too; this attempt's own last lines are kept "
        f"in the Engine DB (etl-craft logs --attempt-id {attempt.attempt_id} --format json, attempt.task_log)\n")
    as_json = _ok("logs", "--attempt-id", str(attempt.attempt_id), "--format", "json", cwd=project)
    assert json.loads(as_json.out)["attempt"]["task_log"] == "older lines\n"
