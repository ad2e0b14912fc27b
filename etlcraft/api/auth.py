"""Bearer tokens: each request's Authorization header is authenticated by etlcraft.services.tokens and its role
checked against what the endpoint needs.

The dependency only takes the header (it runs on the event loop, with no database work); the route
(etlcraft.api.documents.DocumentRoute) authenticates it in the endpoint's own thread, inside the request's read
transaction, so that a read request costs one connection and one transaction however many reads it makes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from etlcraft.core.enums import TokenRole
from etlcraft.engine.db import EngineDB
from etlcraft.services.tokens import Principal, authenticate

_bearer = HTTPBearer(auto_error=False, description="A token from etl-craft token create.")


@dataclass(frozen=True)
class Unverified:
    """A request's bearer token (None: no header) and the role its endpoint needs, before authentication."""

    token: str | None
    role: TokenRole
    what: str

    def verify(self, db: EngineDB) -> Principal:
        """The Principal the token acts as: refused (401) without a valid token and (403) below the role."""
        found = authenticate(db, self.token)
        found.require(self.role, self.what)
        return found


def requires(role: TokenRole, what: str) -> Callable[..., Awaitable[Unverified]]:
    """A dependency: the request's token, which DocumentRoute verifies into the Principal the endpoint receives."""

    async def principal(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Unverified:
        return Unverified(credentials.credentials if credentials else None, role, what)

    return principal


VIEWER = Depends(requires(TokenRole.VIEWER, "reading"))
OPERATOR = Depends(requires(TokenRole.OPERATOR, "changing runs and pipelines"))
ADMIN = Depends(requires(TokenRole.ADMIN, "managing tokens"))
