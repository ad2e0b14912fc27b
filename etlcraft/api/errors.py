"""One error document for every refusal: {"schema": "etl-craft/error/1", "code", "message", "remedy"}, with the HTTP
status of its kind. `code` is the error's name in sql/errors.yaml (NOT_FOUND, STALE_TRANSITION, ...); `message`
names the object, the value found, what was expected and the fix; `remedy` is the general advice for the kind."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from etlcraft.core.errors import EngineUnreachableError, EtlCraftError, error_specs
from etlcraft.services.redaction import Scrubber, scrubber

SCHEMA = "etl-craft/error/1"

#: The HTTP status of each error kind; any other kind is 500.
STATUS = {
    "TOKEN_UNKNOWN": 401, "TOKEN_EXPIRED": 401, "TOKEN_REVOKED": 401,
    "FORBIDDEN": 403,
    "NOT_FOUND": 404,
    "STALE_TRANSITION": 409, "ILLEGAL_TRANSITION": 409, "REFUSED_BY_POLICY": 409, "AMBIGUOUS": 409, "WAITING": 409,
    "USAGE": 422, "CONFIGURATION": 422,
    "ENGINE_DB": 503,
}
_log = logging.getLogger("etlcraft.api")


class ErrorBody(BaseModel):
    """etl-craft/error/1 (for the OpenAPI document; the handlers below write it)."""

    schema_: str = Field(alias="schema", description="etl-craft/error/1")
    code: str = Field(description="The error's name in sql/errors.yaml (docs/reference/exit-codes.md).")
    message: str = Field(description="The object, the value found, what was expected and the fix.")
    remedy: str = Field(description="What to do about an error of this kind in general.")


#: The refusals every endpoint may answer with, for the OpenAPI document.
RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": what} for status, what in (
        (401, "no token, or one that is unknown (TOKEN_UNKNOWN), expired (TOKEN_EXPIRED) or revoked (TOKEN_REVOKED)"),
        (403, "the token's role does not allow the request (FORBIDDEN)"),
        (404, "no such pipeline, run, task or attempt (NOT_FOUND)"),
        (409, "a refused change: STALE_TRANSITION, ILLEGAL_TRANSITION, REFUSED_BY_POLICY, AMBIGUOUS or WAITING"),
        (422, "bad input (USAGE)"),
        (503, "the Engine DB cannot be reached or refused the statement (ENGINE_DB)"))}


def error_document(kind: str, message: str) -> dict[str, Any]:
    return {"schema": SCHEMA, "code": kind, "message": message, "remedy": error_specs()[kind].remedy}


def status_of(exc: EtlCraftError) -> int:
    if isinstance(exc, EngineUnreachableError):
        return 503
    return STATUS.get(exc.kind, 500)


def _scrubbed(request: Request, message: str) -> str:
    """The message with its secrets masked (the scrubber reads the Engine DB, so an Engine DB error gets its URL
    passwords masked only)."""
    return scrubber(request.app.state.db, request.app.state.config).text(message)


def install(app: FastAPI) -> None:
    """Turn every failure into the error document."""

    @app.exception_handler(EtlCraftError)
    async def etl_craft_error(request: Request, exc: EtlCraftError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if status_of(exc) == 401 else None
        message = Scrubber(()).text(str(exc)) if status_of(exc) == 503 else _scrubbed(request, str(exc))
        return JSONResponse(error_document(exc.kind, message), status_code=status_of(exc), headers=headers)

    @app.exception_handler(RequestValidationError)
    async def bad_input(_request: Request, exc: RequestValidationError) -> JSONResponse:
        said = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        return JSONResponse(error_document("USAGE", f"the request is not valid: {said}"), status_code=422)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        kind = "NOT_FOUND" if exc.status_code == 404 else "USAGE"
        message = (f"there is no endpoint {request.method} {request.url.path}; see docs/reference/openapi.json"
                   if exc.status_code in (404, 405) else str(exc.detail))
        return JSONResponse(error_document(kind, message), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        _log.exception("unexpected error in the HTTP API")
        return JSONResponse(error_document("GENERAL", f"etl-craft failed unexpectedly ({type(exc).__name__}); the "
                                           "server's log has the trace"), status_code=500)
