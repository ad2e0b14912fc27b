"""A catalog-sized Engine DB made fast: pipelines, tasks in a chain, and runs with their task runs, written with a
handful of set-based statements per round of runs (not one per row), on either dialect.

Runs are created IN-PROGRESS (one per pipeline per round, as the one-running-run index allows) and moved to their
final status by one guarded UPDATE per round: the transition triggers judge every row, as they judge a DBA's.
Used by the catalog tests and by bench/catalog.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from etlcraft.engine.db import EngineDB, format_timestamp

#: Every 7th run of a pipeline fails, every 5th is a backfill; run 3 of each pipeline is repaired (revision 2).
FAIL_EVERY, BACKFILL_EVERY, REPAIRED_RUN = 7, 5, 3
START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Shape:
    pipelines: int
    tasks: int  # per pipeline, in a chain t01 <- t02 <- ...
    runs: int  # per pipeline


def _ts(db: EngineDB, value: datetime) -> object:
    return value if db.is_postgres else format_timestamp(value)


def build(db: EngineDB, shape: Shape, project: str = "shop") -> None:
    """Write the metadata and history of `shape` (the caller acts as an actor: etlcraft.core.actor.acting_as)."""
    q = db.qualify
    with db.write() as conn:
        project_id = conn.execute(sa.text(f"INSERT INTO {q('CFG_PROJECTS')} (PROJECT_CODE) VALUES (:code) "
                                          "RETURNING PROJECT_ID"), {"code": project}).scalar_one()
        conn.execute(sa.text(f"INSERT INTO {q('CFG_PIPELINES')} (PROJECT_ID, PIPELINE_CODE, RUN_SCHEDULE) "
                             "VALUES (:project, :code, :cron)"),
                     [{"project": project_id, "code": f"p{i:04d}", "cron": f"{i % 60} 6 * * *"}
                      for i in range(shape.pipelines)])
        ids = conn.execute(sa.text(f"SELECT PIPELINE_ID, PIPELINE_CODE FROM {q('CFG_PIPELINES')} "
                                   "WHERE PROJECT_ID = :p ORDER BY PIPELINE_ID"), {"p": project_id}).all()
        conn.execute(sa.text(f"INSERT INTO {q('CFG_TASKS')} (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, "
                             "TARGET_OBJECT) VALUES (:pipeline, :code, 'SQL', 'OVERWRITE_TABLE', :file, :target)"),
                     [{"pipeline": pid, "code": f"t{j:02d}", "file": f"{code}_t{j:02d}.sql",
                       "target": f"main.{code}_t{j:02d}"} for pid, code in ids for j in range(shape.tasks)])
        conn.execute(sa.text(
            f"INSERT INTO {q('CFG_TASK_DEPENDENCY')} (TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) "
            f"SELECT t.TASK_ID, u.TASK_ID, 'SUCCESS' FROM {q('CFG_TASKS')} t "
            f"JOIN {q('CFG_PIPELINES')} p ON p.PIPELINE_ID = t.PIPELINE_ID AND p.PROJECT_ID = :project "
            f"JOIN {q('CFG_TASKS')} u ON u.PIPELINE_ID = t.PIPELINE_ID AND u.TASK_ID = "
            f"(SELECT MAX(x.TASK_ID) FROM {q('CFG_TASKS')} x WHERE x.PIPELINE_ID = t.PIPELINE_ID "
            "AND x.TASK_CODE < t.TASK_CODE)"), {"project": project_id})
        conn.execute(sa.text(f"INSERT INTO {q('CFG_TASK_PARAMETERS')} (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) "
                             f"SELECT t.TASK_ID, 'API_TOKEN', 'tok-secret-value' FROM {q('CFG_TASKS')} t "
                             f"JOIN {q('CFG_PIPELINES')} p ON p.PIPELINE_ID = t.PIPELINE_ID "
                             "WHERE p.PROJECT_ID = :project"), {"project": project_id})
    for n in range(shape.runs):
        _round(db, n, int(project_id))


def _round(db: EngineDB, n: int, project_id: int, pipeline_code: str | None = None) -> None:
    """Run number `n` of every pipeline of the project (or of `pipeline_code` only): created, its task runs
    written, ended."""
    q = db.qualify
    kind = "BACKFILL" if n % BACKFILL_EVERY == BACKFILL_EVERY - 1 else "SCHEDULE"
    failed = n % FAIL_EVERY == FAIL_EVERY - 1
    started, ended = START + timedelta(days=n), START + timedelta(days=n, minutes=5 + n % 3)
    with db.write() as conn:
        conn.execute(sa.text(
            f"INSERT INTO {q('AUD_PIPELINES_RUN_LOG')} (PIPELINE_ID, RUN_KEY, TRIGGER_KIND, RUN_DATE, STATUS, "
            "QUEUED_AT, START_DATE, STARTED_BY, STARTED_BY_KIND) "
            f"SELECT PIPELINE_ID, :key, :kind, :date, 'IN-PROGRESS', :start, :start, 'scheduler', 'SCHEDULE' "
            f"FROM {q('CFG_PIPELINES')} WHERE PROJECT_ID = :project "
            "AND PIPELINE_CODE = COALESCE(:code, PIPELINE_CODE)"),
            {"project": project_id, "code": pipeline_code, "key": f"schedule:{n:04d}", "kind": kind,
             "date": (START + timedelta(days=n)).date().isoformat(),
             "start": _ts(db, started)})
        conn.execute(sa.text(
            f"INSERT INTO {q('AUD_TASK_RUN_LOG')} (PIPELINE_RUN_ID, TASK_ID, STATUS, ATTEMPT_COUNT, START_DATE, "
            "END_DATE, ROWS_WRITTEN, ERROR_MESSAGE) "
            "SELECT r.PIPELINE_RUN_ID, t.TASK_ID, CASE WHEN :failed = 1 AND t.TASK_CODE = 't01' THEN 'FAILED' "
            "ELSE 'SUCCESS' END, 1, :start, :end, 10, CASE WHEN :failed = 1 AND t.TASK_CODE = 't01' THEN "
            "'warehouse refused the login tok-secret-value' END "
            f"FROM {q('AUD_PIPELINES_RUN_LOG')} r JOIN {q('CFG_TASKS')} t ON t.PIPELINE_ID = r.PIPELINE_ID "
            "WHERE r.STATUS = 'IN-PROGRESS'"),
            {"failed": int(failed), "start": _ts(db, started), "end": _ts(db, ended)})
        conn.execute(sa.text(
            f"UPDATE {q('AUD_PIPELINES_RUN_LOG')} SET STATUS = :status, END_DATE = :end, ENDED_BY = 'etl-craft', "
            "ENDED_BY_KIND = 'SYSTEM', OUTPUT_REVISION = :revision WHERE STATUS = 'IN-PROGRESS'"),
            {"status": "FAILED" if failed else "SUCCESS", "end": _ts(db, ended),
             "revision": 2 if n == REPAIRED_RUN else 1})
        if n == REPAIRED_RUN:
            conn.execute(sa.text(
                f"INSERT INTO {q('AUD_RUN_INTERVENTIONS')} (PIPELINE_RUN_ID, INTERVENTION, FROM_STATUS, TO_STATUS, "
                "REASON, REQUESTED_BY, REQUESTED_BY_KIND, REQUESTED_AT) "
                "SELECT PIPELINE_RUN_ID, 'REOPEN', 'FAILED', 'IN-PROGRESS', 'late orders reloaded', 'ops@example', "
                f"'HUMAN', :end FROM {q('AUD_PIPELINES_RUN_LOG')} WHERE RUN_KEY = :key"),
                {"end": _ts(db, ended), "key": f"schedule:{n:04d}"})


def next_round(db: EngineDB, n: int, pipeline_code: str, project: str = "shop") -> None:
    """One more run (number `n`) of one pipeline only."""
    q = db.qualify
    with db.write() as conn:
        project_id = conn.execute(sa.text(f"SELECT PROJECT_ID FROM {q('CFG_PROJECTS')} WHERE PROJECT_CODE = :c"),
                                  {"c": project}).scalar_one()
    _round(db, n, int(project_id), pipeline_code)
