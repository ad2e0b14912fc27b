"""Endpoints of pipelines, projects, tokens, audit, alerts and health: /api/v1/health, /pipelines[/{code}[/runs|
/backfills|/pause|/resume]], /projects/{code}/pause|resume, /audit, /alerts, /workers, /tokens."""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from etlcraft.api.auth import ADMIN, OPERATOR, VIEWER
from etlcraft.api.documents import DocumentRoute
from etlcraft.api.runs import MAX_ID, ProjectCode, Text, project_scope
from etlcraft.core.actor import acting_as
from etlcraft.core.enums import TokenRole
from etlcraft.services import alerts, audit, control, tokens, workers
from etlcraft.services.control import OperationContext
from etlcraft.services.pipelines import list_document, pipeline_document, pipeline_page
from etlcraft.services.queueing import backfill_queued_json, queue_backfill
from etlcraft.services.runs import RunRequest, init_json, init_run
from etlcraft.services.server import health_json
from etlcraft.services.status import history_json, run_history
from etlcraft.services.tokens import Principal

router = APIRouter(route_class=DocumentRoute)
Doc = dict[str, Any]


class TriggerBody(BaseModel):
    run_date: date | None = Field(None, description="The run's date (default: today in the project's zone).")
    run_key: Text | None = Field(None, description="The run's key: an existing run of that key is used.")
    reason: Text | None = Field(None, description="Why the run is started (recorded).")


class BackfillBody(BaseModel):
    first: date = Field(description="The first date.")
    last: date = Field(description="The last date (at most 366 dates in all).")
    reason: Text | None = Field(None, description="Why (recorded on every run); required, as the service checks, so "
                               "a missing reason is refused with the message etl-craft run --backfill gives.")


class ReasonBody(BaseModel):
    reason: Text = Field(min_length=1, description="Why (recorded).")


class ResumeBody(BaseModel):
    reason: Text | None = Field(None, description="Why (recorded).")


class TokenBody(BaseModel):
    name: str = Field(pattern=tokens.NAME_PATTERN,
                      description="The token's name: the actor of every request made with it.")
    role: TokenRole
    expires: str | None = Field(None, description="Expire after 90d, 12h or 30m (default: never).")


def _config_zone(request: Request) -> str | None:
    zone: str | None = request.app.state.config.orchestration.timezone
    return zone


def _context(request: Request, principal: Principal) -> OperationContext:
    return OperationContext(request.app.state.db, principal.actor, request.app.state.config.orchestration.lease_seconds)


@router.get("/health", summary="Whether the API answers and reaches its Engine DB (no token needed)")
def health(request: Request) -> Doc:
    return health_json(request.app.state.db)


@router.get("/pipelines", summary="The active pipelines: every project's, or with ?project= that project's only "
            "(etl-craft list)")
def pipelines(request: Request, project: ProjectCode = None, _p: Principal = VIEWER) -> Doc:
    return list_document(request.app.state.db, _config_zone(request), project)[1]


@router.get("/pipelines/{code}", summary="One pipeline: tasks, graph, schedule, next ticks, pause, last run "
            "(etl-craft show)")
def pipeline(request: Request, code: Text, project: ProjectCode = None, _p: Principal = VIEWER) -> Doc:
    with project_scope(request, project):
        return pipeline_document(pipeline_page(request.app.state.db, code, _config_zone(request)))


@router.get("/pipelines/{code}/runs", summary="A pipeline's runs, newest first (etl-craft history)")
def pipeline_runs(request: Request, code: Text, limit: int = Query(20, ge=1, le=1000),
                  before: int | None = Query(None, ge=1, le=MAX_ID, description="Only runs older than this run id."),
                  project: ProjectCode = None, _p: Principal = VIEWER) -> Doc:
    with project_scope(request, project):
        return history_json(code, run_history(request.app.state.db, code, limit, before))


@router.post("/pipelines/{code}/runs", summary="Trigger a run, created and admitted for the server to drive "
             "(etl-craft run --init-only)")
def trigger(request: Request, code: Text, body: TriggerBody, project: ProjectCode = None,
            principal: Principal = OPERATOR) -> Doc:
    run = RunRequest(code, body.run_key, None, body.run_date, body.reason)
    with project_scope(request, project), acting_as(principal.actor):
        return init_json(init_run(request.app.state.db, request.app.state.config, run), code)


@router.post("/pipelines/{code}/backfills", summary="Queue one BACKFILL run per date for the server "
             "(etl-craft run --backfill FROM:TO --init-only)")
def backfill(request: Request, code: Text, body: BackfillBody, project: ProjectCode = None,
             principal: Principal = OPERATOR) -> Doc:
    run = RunRequest(code, reason=body.reason)
    with project_scope(request, project), acting_as(principal.actor):
        return backfill_queued_json(queue_backfill(request.app.state.db, request.app.state.config, run, body.first,
                                                   body.last))


@router.post("/pipelines/{code}/pause", summary="Pause a pipeline (etl-craft pause)")
def pause(request: Request, code: Text, body: ReasonBody, project: ProjectCode = None,
          principal: Principal = OPERATOR) -> Doc:
    with project_scope(request, project):
        return control.to_json(control.pause(_context(request, principal), control.PauseRequest(code, body.reason)))


@router.post("/pipelines/{code}/resume", summary="Resume a paused pipeline (etl-craft resume)")
def resume(request: Request, code: Text, body: ResumeBody, project: ProjectCode = None,
           principal: Principal = OPERATOR) -> Doc:
    with project_scope(request, project):
        return control.to_json(control.resume(_context(request, principal),
                                              control.ResumeRequest(code, body.reason)))


@router.post("/projects/{code}/pause", summary="Pause every active pipeline of a project "
             "(etl-craft pause --project-code CODE)")
def project_pause(request: Request, code: Text, body: ReasonBody, principal: Principal = OPERATOR) -> Doc:
    """One pause per active pipeline of project {code} not already paused, recorded with the token's actor and the
    reason; the other projects are not touched."""
    done = control.pause_project(_context(request, principal), control.ProjectPauseRequest("pause", code, body.reason))
    return control.project_pause_json(done)


@router.post("/projects/{code}/resume", summary="Resume every paused pipeline of a project "
             "(etl-craft resume --project-code CODE)")
def project_resume(request: Request, code: Text, body: ResumeBody, principal: Principal = OPERATOR) -> Doc:
    """Closes the open pauses of project {code}'s active pipelines, recorded with the token's actor."""
    done = control.pause_project(_context(request, principal), control.ProjectPauseRequest("resume", code, body.reason))
    return control.project_pause_json(done)


@router.get("/audit", summary="Who asked for what, and who changed which metadata, newest first (etl-craft audit)")
def audit_log(request: Request, pipeline_code: Text | None = None, since: date | None = None,
              project: ProjectCode = None, _p: Principal = VIEWER) -> Doc:
    with project_scope(request, project):
        return audit.to_json(audit.audit(request.app.state.db, audit.AuditRequest(pipeline_code, since)))


@router.get("/alerts", summary="Alerts raised and where each delivery stands, newest first (etl-craft alerts list)")
def alert_list(request: Request, pipeline_code: Text | None = None,
               status: Literal["PENDING", "DELIVERED", "FAILED"] | None = None, project: ProjectCode = None,
               _p: Principal = VIEWER) -> Doc:
    with project_scope(request, project):
        return alerts.list_alerts(request.app.state.db, pipeline_code, status)


@router.get("/workers", summary="The workers serving QUEUE pools, their slots in use and the queue of each pool "
            "(etl-craft workers list)")
def worker_list(request: Request, _p: Principal = VIEWER) -> Doc:
    return workers.list_workers(request.app.state.db)


@router.get("/tokens", summary="The API tokens, never a token or its hash (etl-craft token list)")
def token_list(request: Request, _p: Principal = ADMIN) -> Doc:
    return tokens.list_json(tokens.list_tokens(request.app.state.db))


@router.post("/tokens", summary="Create a token, returned this once (etl-craft token create)")
def token_create(request: Request, body: TokenBody, principal: Principal = ADMIN) -> Doc:
    return tokens.created_json(tokens.create(request.app.state.db, principal.actor, body.name, body.role,
                                             body.expires))


@router.post("/tokens/{name}/revoke", summary="Revoke a token (etl-craft token revoke)")
def token_revoke(request: Request, name: str, principal: Principal = ADMIN) -> Doc:
    return tokens.revoked_json(tokens.revoke(request.app.state.db, principal.actor, name))
