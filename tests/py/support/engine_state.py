"""The Engine DB of a test project, read directly (reads only) for assertions: its runs, task runs, attempts and
offsets by pipeline, a snapshot of every row an attempt may write, and the consistency rules that any state
etl-craft leaves behind must satisfy once a run has been driven to its end."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from etlcraft.config.loader import load_config
from etlcraft.engine.db import DEFAULT_SCHEMA, EngineDB
from tests.py.support.attempts import WRITTEN

LIVE_ATTEMPT = ("QUEUED", "CLAIMED", "RUNNING")
ENDED_TASK_RUN = ("SUCCESS", "FAILED", "SKIPPED", "CANCELLED")
ENDED_RUN = ("SUCCESS", "FAILED", "SKIPPED", "CANCELLED")
#: The task-run status an ended attempt reads as (sql/state_machine.yaml, ATTEMPT summary).
SUMMARY = {"SUCCESS": "SUCCESS", "FAILED": "FAILED", "TIMED_OUT": "FAILED", "LOST": "FAILED", "CANCELLED": "CANCELLED"}


@contextmanager
def engine_db(project: Path) -> Iterator[EngineDB]:
    """The project's Engine DB, as its craft-connector.yml names it; disposed afterwards."""
    config = load_config(project.absolute())
    db = EngineDB(config.engine.url, schema=config.engine.schema or DEFAULT_SCHEMA,
                  password=config.secret_value(config.engine))
    try:
        yield db
    finally:
        db.dispose()


def rows(db: EngineDB, sql: str, **params: Any) -> list[dict[str, Any]]:
    """The rows of `sql` (tables written {AUD_TASK_ATTEMPTS}, qualified for the dialect) as lower-case dicts."""
    text = sql.format(**{name: db.qualify(name) for name in (*WRITTEN, "CFG_TASKS", "CFG_PIPELINES", "AUD_GATE_WAITS",
                                                               "AUD_GATE_DECISIONS")})
    with db.read() as conn:
        return [{k.lower(): v for k, v in r._mapping.items()} for r in conn.execute(sa.text(text), params)]


def runs(db: EngineDB, pipeline: str) -> list[dict[str, Any]]:
    return rows(db, "SELECT r.* FROM {AUD_PIPELINES_RUN_LOG} r JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID"
                    " WHERE p.PIPELINE_CODE = :code ORDER BY r.PIPELINE_RUN_ID", code=pipeline)


def task_runs(db: EngineDB, pipeline: str) -> list[dict[str, Any]]:
    return rows(db, "SELECT tr.*, t.TASK_CODE FROM {AUD_TASK_RUN_LOG} tr JOIN {CFG_TASKS} t ON t.TASK_ID = tr.TASK_ID"
                    " JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = t.PIPELINE_ID WHERE p.PIPELINE_CODE = :code"
                    " ORDER BY tr.TASK_RUN_ID", code=pipeline)


def attempts(db: EngineDB, pipeline: str) -> list[dict[str, Any]]:
    return rows(db, "SELECT a.*, t.TASK_CODE, tr.TASK_ID, tr.PIPELINE_RUN_ID FROM {AUD_TASK_ATTEMPTS} a"
                    " JOIN {AUD_TASK_RUN_LOG} tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID"
                    " JOIN {CFG_TASKS} t ON t.TASK_ID = tr.TASK_ID JOIN {CFG_PIPELINES} p"
                    " ON p.PIPELINE_ID = t.PIPELINE_ID WHERE p.PIPELINE_CODE = :code ORDER BY a.ATTEMPT_ID",
                code=pipeline)


def offsets(db: EngineDB, pipeline: str) -> list[dict[str, Any]]:
    return rows(db, "SELECT o.*, t.TASK_CODE FROM {AUD_TASK_OFFSETS} o JOIN {CFG_TASKS} t ON t.TASK_ID = o.TASK_ID"
                    " JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = t.PIPELINE_ID WHERE p.PIPELINE_CODE = :code"
                    " ORDER BY o.TASK_ID", code=pipeline)


def attempt(db: EngineDB, attempt_id: int) -> dict[str, Any]:
    found = rows(db, "SELECT * FROM {AUD_TASK_ATTEMPTS} WHERE ATTEMPT_ID = :id", id=attempt_id)
    assert found, f"attempt {attempt_id} does not exist"
    return found[0]


def snapshot(db: EngineDB) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table an attempt's path writes, in a stable order: equal snapshots, nothing changed."""
    return {table: rows(db, f"SELECT * FROM {{{table}}} ORDER BY {key}") for table, key in WRITTEN.items()}


def inconsistencies(db: EngineDB, pipeline: str) -> list[str]:
    """What breaks the rules of a pipeline whose runs have all been driven to their end: every run ended, no
    attempt left live, every task run ended and reading as its latest attempt, and an offset only where the
    task's latest SUCCESS attempt stored it. Empty when consistent."""
    found: list[str] = []
    found += [f"run {r['pipeline_run_id']} is {r['status']}, expected one of {ENDED_RUN}"
              for r in runs(db, pipeline) if r["status"] not in ENDED_RUN]
    tries = attempts(db, pipeline)
    found += [f"attempt {a['attempt_id']} of {a['task_code']} is {a['status']} (owner {a['owner_id']}), expected "
              "ended" for a in tries if a["status"] in LIVE_ATTEMPT]
    latest = {a["task_run_id"]: a for a in tries}
    for tr in task_runs(db, pipeline):
        last = latest.get(tr["task_run_id"])
        if tr["status"] not in ENDED_TASK_RUN:
            found.append(f"task run {tr['task_run_id']} of {tr['task_code']} is {tr['status']}, expected ended")
        elif last is not None and SUMMARY.get(last["status"]) != tr["status"]:
            found.append(f"task run {tr['task_run_id']} of {tr['task_code']} is {tr['status']} but its latest attempt "
                         f"{last['attempt_id']} is {last['status']}")
    succeeded = {a["task_id"]: a for a in tries if a["status"] == "SUCCESS"}  # the latest SUCCESS per task
    for o in offsets(db, pipeline):
        best = succeeded.get(o["task_id"])
        if best is None or int(o["attempt_id"]) != int(best["attempt_id"]):
            found.append(f"the offset of {o['task_code']} came from attempt {o['attempt_id']}, expected the task's "
                         f"latest SUCCESS attempt {best and best['attempt_id']}")
    return found
