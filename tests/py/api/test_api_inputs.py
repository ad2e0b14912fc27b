"""Text the Engine DB cannot store (a NUL character, an unpaired surrogate) is refused as bad input (422 USAGE),
in a body and in a path, instead of failing in the database (500). Found by the API fuzzing."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.py.api.conftest import Live

pytestmark = pytest.mark.process


def test_text_the_engine_db_cannot_store__422(live: Live) -> None:
    for method, path, body in (
            ("POST", "/api/v1/runs/1/cancel", {"reason": "stop\u0000now"}),
            ("POST", "/api/v1/pipelines/flow/pause", {"reason": "a\ud9aeb"}),
            ("GET", "/api/v1/pipelines/fl%00ow", None)):
        headers = {"Authorization": f"Bearer {live.tokens['operator']}", "Content-Type": "application/json"}
        # json.dumps escapes the surrogate (\\ud9ae), as a client in another language may send it
        answer = httpx.request(method, f"{live.base}{path}", headers=headers, timeout=60,
                               content=json.dumps(body) if body is not None else None)
        assert (answer.status_code, answer.json()["code"]) == (422, "USAGE"), (path, answer.text)
        assert "\\u0000" in answer.text or "unicode" in answer.text, answer.text
