"""Every endpoint with no, bad, expired and revoked tokens (401) and with each role (403 below the endpoint's
role, 200 at or above it), against a live uvicorn server."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.py.api.conftest import Live
from tests.py.cli.test_json_documents import check

pytestmark = pytest.mark.process

READS: list[tuple[str, str]] = [
    ("GET", "/api/v1/pipelines"), ("GET", "/api/v1/pipelines/flow"), ("GET", "/api/v1/pipelines/flow/runs?limit=5"),
    ("GET", "/api/v1/runs/1"), ("GET", "/api/v1/runs/1/tasks"), ("GET", "/api/v1/runs/1/tasks/report/explain"),
    ("GET", "/api/v1/attempts/1"), ("GET", "/api/v1/attempts/1/log?offset=0"), ("GET", "/api/v1/audit"),
    ("GET", "/api/v1/alerts?status=PENDING"), ("GET", "/api/v1/workers"),
]
WRITES: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/api/v1/pipelines/flow/runs", {"run_key": "k"}),
    ("POST", "/api/v1/pipelines/flow/backfills", {"first": "2026-01-01", "last": "2026-01-02", "reason": "r"}),
    ("POST", "/api/v1/pipelines/flow/pause", {"reason": "r"}), ("POST", "/api/v1/pipelines/flow/resume", {}),
    ("POST", "/api/v1/projects/proc/pause", {"reason": "r"}), ("POST", "/api/v1/projects/proc/resume", {}),
    ("POST", "/api/v1/runs/1/cancel", {"reason": "r"}),
    ("POST", "/api/v1/runs/1/tasks/report/mark", {"status": "FAILED", "reason": "r"}),
    ("POST", "/api/v1/runs/1/tasks/report/rerun", {}),
]
ADMINS: list[tuple[str, str, dict[str, Any]]] = [
    ("GET", "/api/v1/tokens", {}), ("POST", "/api/v1/tokens", {"name": "new", "role": "viewer"}),
    ("POST", "/api/v1/tokens/viewer/revoke", {}),
]
EVERY = [(m, p, {}) for m, p in READS] + WRITES + ADMINS


def _refused(live: Live, token: str | None, status: int, code: str) -> None:
    for method, path, body in EVERY:
        answer = live.call(method, path, token, json=body if method == "POST" else None)
        assert answer.status_code == status, (token, method, path, answer.text)
        doc = answer.json()
        assert doc["code"] == code, (token, path, doc)
        check("api", doc)


def test_every_endpoint__no_bad_expired_or_revoked_token__401_and_nothing_changes(live: Live) -> None:
    audit_before = live.cli("audit")["entries"]
    _refused(live, None, 401, "TOKEN_UNKNOWN")
    _refused(live, "ect_not-a-token", 401, "TOKEN_UNKNOWN")
    _refused(live, "revoked", 401, "TOKEN_REVOKED")
    live.db.clock.pin(live.db.clock.now() + timedelta(minutes=2))
    try:
        _refused(live, "expired", 401, "TOKEN_EXPIRED")
    finally:
        live.db.clock.pin(None)
    assert [e for e in live.cli("audit")["entries"] if e["kind"] == "action"] == [
        e for e in audit_before if e["kind"] == "action"]


def test_every_endpoint__a_role_below_it__403(live: Live) -> None:
    for method, path, body in WRITES + ADMINS:
        answer = live.call(method, path, "viewer", json=body)
        assert (answer.status_code, answer.json()["code"]) == (403, "FORBIDDEN"), (path, answer.text)
    for method, path, body in ADMINS:
        answer = live.call(method, path, "operator", json=body or None)
        assert (answer.status_code, answer.json()["code"]) == (403, "FORBIDDEN"), (path, answer.text)


def test_reads__every_role__200(live: Live) -> None:
    for role in ("viewer", "operator", "admin"):
        for method, path in READS:
            answer = live.call(method, path, role)
            assert answer.status_code == 200, (role, path, answer.text)
    assert live.call("GET", "/api/v1/health", None).json()["status"] == "ok"


def test_writes__operator_and_admin__200_and_the_token_is_the_actor(live: Live) -> None:
    for pauser, resumer in (("operator", "admin"), ("admin", "operator")):
        paused = live.call("POST", "/api/v1/pipelines/flow/pause", pauser, json={"reason": "window"})
        assert paused.status_code == 200 and paused.json()["actor"] == pauser, paused.text
        resumed = live.call("POST", "/api/v1/pipelines/flow/resume", resumer, json={})
        assert resumed.status_code == 200 and resumed.json()["pause"]["resumed_by"] == resumer, resumed.text
    actors = [(e["actor"], e["what"]) for e in live.cli("audit", "--pipeline-code", "flow")["entries"]
              if e["kind"] == "action"]
    assert actors[:4] == [("operator", "resume"), ("admin", "pause"), ("admin", "resume"), ("operator", "pause")]
    created = live.call("POST", "/api/v1/tokens", "admin", json={"name": "ci", "role": "viewer"})
    assert created.status_code == 200 and created.json()["created_by"] == "admin"
    assert live.call("GET", "/api/v1/pipelines", created.json()["token"]).status_code == 200
    assert live.call("POST", "/api/v1/tokens/ci/revoke", "admin").json()["revoked_by"] == "admin"
    assert live.call("GET", "/api/v1/pipelines", created.json()["token"]).json()["code"] == "TOKEN_REVOKED"


def test_refusals__one_error_document_with_its_status(live: Live) -> None:
    cases = [("GET", "/api/v1/runs/999", None, 404, "NOT_FOUND"),
             ("GET", "/api/v1/pipelines/nope", None, 404, "NOT_FOUND"),
             ("POST", "/api/v1/runs/1/cancel", {"reason": "late"}, 409, "STALE_TRANSITION"),
             ("POST", "/api/v1/pipelines/flow/pause", {}, 422, "USAGE"),
             ("GET", "/api/v1/pipelines/flow/runs?limit=0", None, 422, "USAGE")]
    for method, path, body, status, code in cases:
        answer = live.call(method, path, json=body)
        assert (answer.status_code, answer.json()["code"]) == (status, code), (path, answer.text)
        check("api", answer.json())
