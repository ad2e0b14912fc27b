"""Control functions (sql/functions/060_control.sql.j2): pauses and actions, the same on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import EngineDbError, NotFoundError, RefusedByPolicyError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support.gates import T0, as_utc
from tests.py.support.scenario import RUN_DATE, Project

OVERSEER = Actor("overseer:1", ActorKind("SCHEDULE"))


@pytest.fixture
def project(engine_db: EngineDB) -> Project:
    engine_db.clock.pin(T0)
    project = Project(engine_db)
    project.pipeline("orders")
    project.task("orders", "load")
    return project


def pauses(project: Project) -> list[tuple[object, ...]]:
    return project.rows("SELECT PAUSE_ID, PIPELINE_ID, PAUSED_BY, PAUSED_BY_KIND, PAUSE_REASON, RESUMED_BY,"
                        " RESUMED_BY_KIND, RESUME_REASON FROM {AUD_PIPELINE_PAUSES} ORDER BY PAUSE_ID")


def test_pause_and_resume_are_recorded_with_their_actors(project: Project) -> None:
    pipeline = project.pipelines["orders"]
    paused = call(project.db, "pause_pipeline", pipeline_id=pipeline, reason="warehouse upgrade")[0]
    assert paused.paused_at == T0
    project.db.clock.pin(T0 + timedelta(hours=2))
    with acting_as(OVERSEER):
        resumed = call(project.db, "resume_pipeline", pipeline_id=pipeline, reason="upgrade done")[0]
    assert (resumed.pause_id, resumed.resumed_at) == (paused.pause_id, T0 + timedelta(hours=2))
    assert pauses(project) == [(paused.pause_id, pipeline, "tester@pytest", "HUMAN", "warehouse upgrade",
                                "overseer:1", "SCHEDULE", "upgrade done")]
    [(paused_at, resumed_at)] = project.rows("SELECT PAUSED_AT, RESUMED_AT FROM {AUD_PIPELINE_PAUSES}")
    assert (as_utc(paused_at), as_utc(resumed_at)) == (T0, T0 + timedelta(hours=2))
    again = call(project.db, "pause_pipeline", pipeline_id=pipeline, reason="again")[0]
    assert again.pause_id != paused.pause_id and len(pauses(project)) == 2


def test_pause_pipeline__refuses_a_paused_or_unknown_pipeline(project: Project) -> None:
    pipeline = project.pipelines["orders"]
    with pytest.raises(NotFoundError, match="pipeline 999 does not exist; list pipelines with etl-craft list"):
        call(project.db, "pause_pipeline", pipeline_id=999, reason="x")
    call(project.db, "pause_pipeline", pipeline_id=pipeline, reason="warehouse upgrade")
    project.db.clock.pin(T0 + timedelta(minutes=5))
    with pytest.raises(RefusedByPolicyError, match=(
            "pipeline orders is already paused since 2026-01-02 06:00:00 UTC by tester@pytest \\(warehouse upgrade\\),"
            " expected not paused; resume it first with etl-craft resume --pipeline-code orders")):
        call(project.db, "pause_pipeline", pipeline_id=pipeline, reason="second")
    assert len(pauses(project)) == 1


def test_resume_pipeline__refuses_a_pipeline_that_is_not_paused(project: Project) -> None:
    pipeline = project.pipelines["orders"]
    with pytest.raises(NotFoundError, match="pipeline 999 does not exist"):
        call(project.db, "resume_pipeline", pipeline_id=999, reason="x")
    with pytest.raises(RefusedByPolicyError, match="pipeline orders is not paused, expected paused; there is nothing"
                                                   " to resume"):
        call(project.db, "resume_pipeline", pipeline_id=pipeline, reason="x")
    call(project.db, "pause_pipeline", pipeline_id=pipeline, reason="p")
    call(project.db, "resume_pipeline", pipeline_id=pipeline, reason="r")
    before = pauses(project)
    with pytest.raises(RefusedByPolicyError, match=(
            "pipeline orders is not paused \\(it was resumed 2026-01-02 06:00:00 UTC by tester@pytest\\)")):
        call(project.db, "resume_pipeline", pipeline_id=pipeline, reason="again")
    assert pauses(project) == before


def test_a_paused_pipeline_starts_no_run_until_resumed(project: Project) -> None:
    pipeline = project.pipelines["orders"]
    call(project.db, "pause_pipeline", pipeline_id=pipeline, reason="freeze")
    with pytest.raises(RefusedByPolicyError, match="a paused pipeline starts no run"):
        call(project.db, "create_run", pipeline_id=pipeline, run_key="manual:1", run_date=RUN_DATE)
    call(project.db, "resume_pipeline", pipeline_id=pipeline, reason="thaw")
    assert call(project.db, "create_run", pipeline_id=pipeline, run_key="manual:1", run_date=RUN_DATE)[0].created


def test_record_action_records_the_request_once_with_its_actor(project: Project) -> None:
    run = project.run("orders")
    arguments = {"pipeline_code": "orders", "run_id": run, "reason": "rerun after fix", "secret": "***"}
    with acting_as(OVERSEER):
        [row] = call(project.db, "record_action", command="rerun", arguments=json.dumps(arguments),
                     pipeline_id=project.pipelines["orders"], run_id=run, task_id=project.tasks["load"],
                     host="worker-7")
    [(started, ended, actor, kind, host, command, stored, pipeline, run_id, task, outcome, exit_code)] = project.rows(
        "SELECT STARTED_AT, ENDED_AT, ACTOR, ACTOR_KIND, HOST, COMMAND, ARGUMENTS, PIPELINE_ID, PIPELINE_RUN_ID,"
        " TASK_ID, OUTCOME, EXIT_CODE FROM {AUD_ACTIONS} WHERE ACTION_ID = :a", a=row.action_id)
    assert (as_utc(started), as_utc(ended), actor, kind, host, command, pipeline, run_id, task, outcome,
            exit_code) == (T0, T0, "overseer:1", "SCHEDULE", "worker-7", "rerun", project.pipelines["orders"], run,
                           project.tasks["load"], "REQUESTED", None)
    assert (json.loads(stored) if isinstance(stored, str) else stored) == arguments


def test_record_action_refuses_arguments_that_are_not_json(project: Project) -> None:
    before = project.scalar("SELECT COUNT(*) FROM {AUD_ACTIONS}")
    with pytest.raises(EngineDbError, match="(?i)json"):
        call(project.db, "record_action", command="run", arguments="{not json")
    assert call(project.db, "record_action", command="pause", arguments="{}")[0].action_id > 0
    assert project.scalar("SELECT COUNT(*) FROM {AUD_ACTIONS}") == before + 1
