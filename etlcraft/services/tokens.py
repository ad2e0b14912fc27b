"""The HTTP API's bearer tokens: create (the token is shown once), list (never the hash), revoke, and
authenticate a presented token to the Principal that acts with it.

The Engine DB keeps only the SHA-256 of each token (CFG_API_TOKENS, written by create_api_token, revoke_api_token
and touch_api_token). A token is 32 random bytes (secrets.token_urlsafe) behind the prefix `ect_`, which lets secret
scanners recognise one. The token's name is the actor of every request made with it (etlcraft.core.actor).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from etlcraft.core.actor import Actor, acting_as, check_actor_name
from etlcraft.core.enums import ActorKind
from etlcraft.core.enums import TokenRole as Role
from etlcraft.core.errors import (
    ConfigurationError,
    ForbiddenError,
    TokenExpiredError,
    TokenRevokedError,
    TokenUnknownError,
    UsageError,
)
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.queries import fetch_all, fetch_one
from etlcraft.services.values import as_time, document, plain

PREFIX = "ect_"
#: What a token name may be (the CHECK token_name_is_a_name of CFG_API_TOKENS says the same).
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$"
_DURATION = re.compile(r"^(\d{1,5})([dhm])$")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}
#: A token used again within this time is not touched: touch_api_token would not write (it moves LAST_USED_AT at
#: most once a minute), and a busy client's requests then make no write transaction at all.
TOUCH_AFTER = timedelta(seconds=60)


#: The roles in order: each may do what the roles before it may (viewer reads; operator also triggers, backfills,
#: cancels, pauses, resumes, marks and reruns; admin also manages tokens).
ROLES = tuple(Role)


def allows(role: Role, needed: Role) -> bool:
    return ROLES.index(role) >= ROLES.index(needed)


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: the token's name and role. `touched`: authenticating it wrote the token's
    LAST_USED_AT (at most once a minute), so reads that began before it do not see that."""

    name: str
    role: Role
    touched: bool = dataclasses.field(default=False, compare=False)

    @property
    def actor(self) -> Actor:
        return Actor(self.name, ActorKind.HUMAN)

    def require(self, needed: Role, what: str) -> None:
        if not allows(self.role, needed):
            raise ForbiddenError(f"token {self.name} has the role {self.role}, and {what} needs the role {needed} "
                                 f"or higher; use a token with that role (an admin creates one with etl-craft token "
                                 f"create --name N --role {needed})")


@dataclass(frozen=True)
class TokenView:
    token_id: int
    name: str
    role: str
    created_at: datetime
    created_by: str
    expires_at: datetime | None
    revoked_at: datetime | None
    revoked_by: str | None
    last_used_at: datetime | None


@dataclass(frozen=True)
class CreatedToken:
    """A new token: `token` is shown this once and is kept nowhere."""

    token: str
    view: TokenView


def sha256_hex(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_role(text: str) -> Role:
    try:
        return Role(text.lower())
    except ValueError:
        raise UsageError(f"the role {text!r} is not one of {', '.join(Role)}") from None


def parse_expiry(text: str | None, now: datetime) -> datetime | None:
    """--expires 90d (days), 12h (hours) or 30m (minutes) as the moment it ends; None never."""
    if text is None:
        return None
    found = _DURATION.match(text.strip())
    if not found or int(found.group(1)) == 0:
        raise UsageError(f"--expires {text!r} is not a duration such as 90d, 12h or 30m (days, hours, minutes)")
    return now + timedelta(**{_UNITS[found.group(2)]: int(found.group(1))})


def check_token_name(name: str) -> None:
    """Refuse a name the Engine DB would refuse, before it is sent."""
    try:
        check_actor_name(name, source=f"the token name {name[:40]!r}")
    except ConfigurationError as exc:
        raise UsageError(str(exc)) from None
    if not re.fullmatch(NAME_PATTERN, name):
        raise UsageError(f"the token name {name[:40]!r} is not a name etl-craft accepts: expected a letter or digit "
                         "first, then up to 127 letters, digits or _ . : @ -; choose a name such as ci or "
                         "deploy@host")


def create(db: EngineDB, actor: Actor, name: str, role: str, expires: str | None = None) -> CreatedToken:
    """Make a token for `name` with `role`, store its SHA-256, and return it with its row."""
    check_token_name(name)
    checked = parse_role(role)
    expires_at = parse_expiry(expires, db.clock.now())
    token = PREFIX + secrets.token_urlsafe(32)
    with acting_as(actor):
        call(db, "create_api_token", name=name, role=str(checked), token_sha256=sha256_hex(token),
             expires_at=expires_at)
    return CreatedToken(token, _view(db, name))


def list_tokens(db: EngineDB) -> tuple[TokenView, ...]:
    with db.read() as conn:
        return tuple(_token_view(row) for row in fetch_all(db, conn, "token_list"))


def revoke(db: EngineDB, actor: Actor, name: str) -> TokenView:
    with acting_as(actor):
        call(db, "revoke_api_token", name=name)
    return _view(db, name)


def authenticate(db: EngineDB, raw_token: str | None) -> Principal:
    """The Principal a presented token acts as; refused when there is none, or it is unknown, expired or
    revoked. The stored hash is compared with the presented token's in constant time."""
    if not raw_token:
        raise TokenUnknownError("the request has no bearer token; send the header Authorization: Bearer <token>")
    presented = sha256_hex(raw_token)
    with db.read() as conn:
        row = fetch_one(db, conn, "token_by_sha256", token_sha256=presented)
    if row is None or not hmac.compare_digest(str(row["token_sha256"]), presented):
        raise TokenUnknownError("the bearer token is not one etl-craft issued (or it was mistyped); use a token "
                                "from etl-craft token create")
    name = str(row["token_name"])
    revoked_at = as_time(row["revoked_at"])
    if revoked_at is not None:
        raise TokenRevokedError(f"token {name} was revoked at {revoked_at:%Y-%m-%d %H:%M:%S} UTC by "
                                f"{row['revoked_by']}, expected a token in use; ask an admin for a new token")
    expires_at = as_time(row["expires_at"])
    if expires_at is not None and expires_at <= db.clock.now():
        raise TokenExpiredError(f"token {name} expired at {expires_at:%Y-%m-%d %H:%M:%S} UTC; ask an admin for a "
                                "new token (etl-craft token create)")
    principal = Principal(name, Role(row["token_role"]))
    last_used = as_time(row["last_used_at"])
    if last_used is None or db.clock.now() - last_used >= TOUCH_AFTER:
        with acting_as(principal.actor):
            call(db, "touch_api_token", token_id=int(row["token_id"]))
        return dataclasses.replace(principal, touched=True)
    return principal


def _view(db: EngineDB, name: str) -> TokenView:
    return next(t for t in list_tokens(db) if t.name == name)


def _token_view(row: dict[str, Any]) -> TokenView:
    created = as_time(row["created_date"])
    assert created is not None
    return TokenView(int(row["token_id"]), row["token_name"], row["token_role"], created, row["created_by"],
                     as_time(row["expires_at"]), as_time(row["revoked_at"]), row["revoked_by"],
                     as_time(row["last_used_at"]))


# --- JSON documents: the one serializer of each token operation ----------------------------------------------------

def created_json(created: CreatedToken) -> dict[str, Any]:
    """`etl-craft token create`: etl-craft/token-created/1; the only document that holds the token."""
    return {**document("etl-craft/token-created/1", created.view), "token": created.token}


def list_json(tokens: tuple[TokenView, ...]) -> dict[str, Any]:
    """`etl-craft token list`: etl-craft/tokens/1 (no token, no hash)."""
    return {"schema": "etl-craft/tokens/1", "tokens": [plain(dataclasses.asdict(t)) for t in tokens]}


def revoked_json(view: TokenView) -> dict[str, Any]:
    """`etl-craft token revoke`: etl-craft/token/1."""
    return document("etl-craft/token/1", view)
