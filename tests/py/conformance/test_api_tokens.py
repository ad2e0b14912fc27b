"""API tokens (sql/functions/037_api_tokens.sql.j2 and etlcraft/services/tokens.py), the same on SQLite and
PostgreSQL: only the hash is kept, names are unique, revoked and expired tokens are refused with their own codes."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest

from etlcraft.core.actor import Actor
from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import (
    ForbiddenError,
    NotFoundError,
    RefusedByPolicyError,
    TokenExpiredError,
    TokenRevokedError,
    TokenUnknownError,
    UsageError,
)
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.services import tokens
from tests.py.support.gates import T0
from tests.py.support.scenario import Project

ADMIN = Actor("alice@host", ActorKind.HUMAN)


@pytest.fixture
def project(engine_db: EngineDB) -> Project:
    engine_db.clock.pin(T0)
    return Project(engine_db)


def test_create__keeps_only_the_sha256__and_authenticates_the_token(project: Project) -> None:
    created = tokens.create(project.db, ADMIN, "ci", "operator", "90d")
    assert created.token.startswith("ect_") and len(created.token) > 40
    [(stored, created_by)] = project.rows("SELECT TOKEN_SHA256, CREATED_BY FROM {CFG_API_TOKENS}")
    assert stored == hashlib.sha256(created.token.encode()).hexdigest() and created.token not in repr(project.rows(
        "SELECT * FROM {CFG_API_TOKENS}"))
    assert created_by == "alice@host" and created.view.expires_at == T0 + timedelta(days=90)
    assert tokens.authenticate(project.db, created.token) == tokens.Principal("ci", tokens.Role.OPERATOR)
    assert tokens.list_tokens(project.db)[0].last_used_at == T0


def test_list_json__never_holds_the_token_or_its_hash(project: Project) -> None:
    created = tokens.create(project.db, ADMIN, "ci", "viewer")
    listed = repr(tokens.list_json(tokens.list_tokens(project.db)))
    assert created.token not in listed and tokens.sha256_hex(created.token) not in listed
    assert "'name': 'ci'" in listed and "'role': 'viewer'" in listed


def test_authenticate__unknown_expired_and_revoked_tokens__each_their_own_error(project: Project) -> None:
    with pytest.raises(TokenUnknownError, match="the request has no bearer token"):
        tokens.authenticate(project.db, None)
    with pytest.raises(TokenUnknownError, match="not one etl-craft issued"):
        tokens.authenticate(project.db, "ect_guessed")
    short = tokens.create(project.db, ADMIN, "short", "viewer", "1h")
    project.db.clock.pin(T0 + timedelta(hours=1))
    with pytest.raises(TokenExpiredError, match="token short expired at 2026-01-02 07:00:00 UTC") as expired:
        tokens.authenticate(project.db, short.token)
    assert (expired.value.kind, expired.value.exit_code) == ("TOKEN_EXPIRED", 29)
    gone = tokens.create(project.db, ADMIN, "gone", "admin")
    tokens.revoke(project.db, ADMIN, "gone")
    with pytest.raises(TokenRevokedError, match="token gone was revoked at 2026-01-02 07:00:00 UTC by alice@host"):
        tokens.authenticate(project.db, gone.token)


def test_create_and_revoke__refusals_change_nothing(project: Project) -> None:
    tokens.create(project.db, ADMIN, "ci", "viewer")
    with pytest.raises(RefusedByPolicyError, match="an API token named ci exists already \\(role viewer, created "
                                                   "2026-01-02 06:00:00 UTC by alice@host\\), expected a name"):
        tokens.create(project.db, ADMIN, "ci", "admin")
    with pytest.raises(UsageError, match="the role 'root' is not one of viewer, operator, admin"):
        tokens.create(project.db, ADMIN, "x", "root")
    with pytest.raises(UsageError, match="--expires '90' is not a duration"):
        tokens.create(project.db, ADMIN, "x", "viewer", "90")
    with pytest.raises(NotFoundError, match="there is no API token named nobody"):
        tokens.revoke(project.db, ADMIN, "nobody")
    tokens.revoke(project.db, ADMIN, "ci")
    with pytest.raises(RefusedByPolicyError, match="API token ci is revoked already \\(since 2026-01-02 06:00:00 UTC "
                                                   "by alice@host\\)"):
        tokens.revoke(project.db, ADMIN, "ci")
    assert project.rows("SELECT TOKEN_NAME, TOKEN_ROLE, REVOKED_BY FROM {CFG_API_TOKENS}") == [
        ("ci", "viewer", "alice@host")]


def test_create_api_token__refuses_an_expiry_that_is_not_in_the_future(project: Project) -> None:
    with pytest.raises(RefusedByPolicyError, match="the expiry of API token old is 2026-01-02 06:00:00 UTC, expected "
                                                   "a time after now \\(2026-01-02 06:00:00 UTC\\)"):
        call(project.db, "create_api_token", name="old", role="viewer", token_sha256="a" * 64, expires_at=T0)
    assert project.rows("SELECT COUNT(*) FROM {CFG_API_TOKENS}") == [(0,)]


def test_touch_api_token__notes_the_last_use_at_most_once_a_minute(project: Project) -> None:
    [row] = call(project.db, "create_api_token", name="ci", role="viewer", token_sha256="b" * 64)
    changes = "SELECT COUNT(*) FROM {AUD_METADATA_CHANGES} WHERE TABLE_NAME = 'CFG_API_TOKENS'"
    assert call(project.db, "touch_api_token", token_id=row.token_id)[0].last_used_at == T0
    before = project.rows(changes)
    project.db.clock.pin(T0 + timedelta(seconds=59))
    assert call(project.db, "touch_api_token", token_id=row.token_id)[0].last_used_at == T0
    assert project.rows(changes) == before
    project.db.clock.pin(T0 + timedelta(seconds=60))
    assert call(project.db, "touch_api_token", token_id=row.token_id)[0].last_used_at == T0 + timedelta(seconds=60)
    with pytest.raises(NotFoundError, match="there is no API token 999"):
        call(project.db, "touch_api_token", token_id=999)


def test_roles__each_allows_what_the_roles_below_it_allow() -> None:
    viewer, operator, admin = (tokens.Principal("t", r) for r in tokens.Role)
    viewer.require(tokens.Role.VIEWER, "reading")
    operator.require(tokens.Role.OPERATOR, "cancelling a run")
    admin.require(tokens.Role.OPERATOR, "cancelling a run")
    with pytest.raises(ForbiddenError, match="token t has the role operator, and managing tokens needs the role "
                                             "admin or higher"):
        operator.require(tokens.Role.ADMIN, "managing tokens")
