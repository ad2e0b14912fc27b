"""Bearer tokens: each request's Authorization header is authenticated by etlcraft.services.tokens and its role
checked against what the endpoint needs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from etlcraft.core.enums import TokenRole
from etlcraft.engine.db import EngineDB
from etlcraft.services.tokens import Principal, authenticate

_bearer = HTTPBearer(auto_error=False, description="A token from etl-craft token create.")


def requires(role: TokenRole, what: str) -> Callable[..., Principal]:
    """A dependency: the request's Principal, refused (401) without a valid token and (403) below `role`."""

    def principal(request: Request,
                  credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Principal:
        db: EngineDB = request.app.state.db
        found = authenticate(db, credentials.credentials if credentials else None)
        found.require(role, what)
        return found

    return principal


VIEWER = Depends(requires(TokenRole.VIEWER, "reading"))
OPERATOR = Depends(requires(TokenRole.OPERATOR, "changing runs and pipelines"))
ADMIN = Depends(requires(TokenRole.ADMIN, "managing tokens"))
