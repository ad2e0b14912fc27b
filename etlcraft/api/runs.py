"""Endpoints of runs, task runs and attempts: /api/v1/runs/{id}[/cancel|/tasks[/{task}/explain|/mark|/rerun]],
/attempts/{id}[/log]."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import AfterValidator, BaseModel, Field

from etlcraft.api.auth import OPERATOR, VIEWER
from etlcraft.api.documents import DocumentRoute, scrubbing
from etlcraft.core.actor import acting_as
from etlcraft.services import control, explain
from etlcraft.services.control import OperationContext, RunRef
from etlcraft.services.projects import ProjectChoice, choosing
from etlcraft.services.queueing import queue_rerun, rerun_queued_json
from etlcraft.services.runs import RunRequest, TaskRequest, attempt_log, attempt_log_json, log_chunks
from etlcraft.services.status import pipeline_of_run, run_status_by_id, status_json
from etlcraft.services.tokens import Principal

router = APIRouter(route_class=DocumentRoute)
Doc = dict[str, Any]
#: Ids are 64-bit integers in the Engine DB: a larger number is refused (422) before it reaches the database.
MAX_ID = 2**63 - 1
RunId = Annotated[int, Path(ge=1, le=MAX_ID, description="The run's RUN_ID.")]
AttemptId = Annotated[int, Path(ge=1, le=MAX_ID, description="The attempt's ATTEMPT_ID.")]


def _storable(value: str) -> str:
    """Text the Engine DB can store: no NUL character, and valid UTF-8 (no unpaired surrogate)."""
    if "\x00" in value:
        raise ValueError("holds a NUL character (\\u0000), which the Engine DB cannot store; remove it")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("is not valid UTF-8 (it holds an unpaired surrogate); send valid UTF-8 text") from None
    return value


#: A text field or path segment, refused (422) when the Engine DB could not store it.
Text = Annotated[str, AfterValidator(_storable)]
#: ?project=CODE on a pipeline-scoped route: the project whose pipeline {code} names (codes are unique per project);
#: default Orchestration: Project of the server's configuration, else the Engine DB's only project.
ProjectCode = Annotated[Text | None, Query(description="The project (CFG_PROJECTS.PROJECT_CODE) of the pipeline: "
                                           "needed when the Engine DB serves several projects and the server's "
                                           "Orchestration: Project does not name it.")]


def project_scope(request: Request, project: str | None) -> AbstractContextManager[None]:
    """The project the block's services act on: `project` (?project=), else the server's Orchestration: Project,
    else the Engine DB's only one (etlcraft.services.projects)."""
    return choosing(ProjectChoice(project, request.app.state.config.orchestration.project))


@contextmanager
def run_scope(request: Request, run_id: int) -> Iterator[str]:
    """For a route that names a run by id: yields the code of its pipeline, with the run's project chosen."""
    code, project = pipeline_of_run(request.app.state.db, run_id)
    with choosing(ProjectChoice(project)):
        yield code


class CancelBody(BaseModel):
    reason: Text = Field(min_length=1, description="Why the run is cancelled (recorded).")


class MarkBody(BaseModel):
    status: Literal["SUCCESS", "FAILED", "SKIPPED"]
    reason: Text = Field(min_length=1, description="Why (recorded on the task run and in AUD_RUN_INTERVENTIONS).")
    rows_written: int | None = Field(None, ge=0, description="The rows the task wrote.")


class RerunBody(BaseModel):
    reason: Text | None = Field(None, description="Why (recorded; the reason of a reopening).")


def _context(request: Request, principal: Principal) -> OperationContext:
    return OperationContext(request.app.state.db, principal.actor, request.app.state.config.orchestration.lease_seconds)


def _status(request: Request, run_id: int) -> Doc:
    return status_json(run_status_by_id(request.app.state.db, run_id))


@router.get("/runs/{run_id}", summary="A run and its tasks (etl-craft status --run-id)")
def run_detail(request: Request, run_id: RunId, _p: Principal = VIEWER) -> Doc:
    return _status(request, run_id)


@router.get("/runs/{run_id}/tasks", summary="A run's task runs (etl-craft status --run-id: the same document)")
def run_tasks(request: Request, run_id: RunId, _p: Principal = VIEWER) -> Doc:
    return _status(request, run_id)


@router.post("/runs/{run_id}/cancel", summary="Cancel a run (etl-craft cancel)")
def cancel(request: Request, run_id: RunId, body: CancelBody, principal: Principal = OPERATOR) -> Doc:
    with run_scope(request, run_id) as code:
        done = control.cancel(_context(request, principal), control.CancelRequest(code, body.reason, RunRef(run_id)))
        return control.to_json(done)


@router.get("/runs/{run_id}/tasks/{task_code}/explain", summary="Why a task is in its state (etl-craft explain)")
def explain_task(request: Request, run_id: RunId, task_code: Text, _p: Principal = VIEWER) -> Doc:
    with run_scope(request, run_id) as code:
        found = explain.ExplainRequest(code, task_code, RunRef(run_id))
        return explain.to_json(explain.explain_task(request.app.state.db, found))


@router.post("/runs/{run_id}/tasks/{task_code}/mark", summary="Mark a task's outcome (etl-craft mark --task-code)")
def mark(request: Request, run_id: RunId, task_code: Text, body: MarkBody, principal: Principal = OPERATOR) -> Doc:
    with run_scope(request, run_id) as code:
        wanted = control.MarkRequest(code, body.status, body.reason, task_code, body.rows_written, RunRef(run_id))
        return control.to_json(control.mark(_context(request, principal), wanted))


@router.post("/runs/{run_id}/tasks/{task_code}/rerun", summary="Queue a failed or cancelled task again for the "
             "server, which then runs what becomes ready downstream (etl-craft run --rerun T --init-only)")
def rerun(request: Request, run_id: RunId, task_code: Text, body: RerunBody, principal: Principal = OPERATOR) -> Doc:
    with run_scope(request, run_id) as code, acting_as(principal.actor):
        wanted = RunRequest(code, None, run_id, None, body.reason, TaskRequest(task_code, rerun=True))
        return rerun_queued_json(queue_rerun(request.app.state.db, request.app.state.config, wanted))


@router.get("/attempts/{attempt_id}", summary="An attempt and its log (etl-craft logs --attempt-id)")
def attempt(request: Request, attempt_id: AttemptId, _p: Principal = VIEWER) -> Doc:
    return attempt_log_json(attempt_log(request.app.state.db, attempt_id))


@router.get("/attempts/{attempt_id}/log", response_class=StreamingResponse,
            summary="An attempt's log from a byte offset, streamed as it is now (also while the attempt runs)")
def attempt_log_text(request: Request, attempt_id: AttemptId, offset: int = Query(0, ge=0, le=MAX_ID),
                     _p: Principal = VIEWER) -> StreamingResponse:
    size, chunks = log_chunks(request.app.state.db, attempt_id, offset)
    return StreamingResponse(scrubbing(request).lines(chunks), media_type="text/plain; charset=utf-8",
                             headers={"X-Etl-Craft-Log-Size": str(size)})
