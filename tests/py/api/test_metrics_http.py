"""GET /metrics on a live uvicorn server: a viewer token reads the Prometheus text, which parses and moves as runs
are triggered; no token is refused like every other endpoint."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.py.api.conftest import Live

pytestmark = pytest.mark.process


def _created(live: Live) -> float:
    answer = live.call("GET", "/metrics", "viewer")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(answer.text)}
    return sum(s.value for s in families["etl_craft_runs_created"].samples
               if s.name == "etl_craft_runs_created_total" and s.labels.get("pipeline") == "flow")


def test_metrics__viewer_reads_them__they_move_as_runs_are_created(live: Live) -> None:
    before = _created(live)
    triggered = live.call("POST", "/api/v1/pipelines/flow/runs", "operator", json={"run_key": "metrics:1"})
    assert triggered.status_code in (200, 409), triggered.text
    assert _created(live) == before + 1


def test_metrics__no_token__401(live: Live) -> None:
    answer = live.call("GET", "/metrics", None)
    assert (answer.status_code, answer.json()["code"]) == (401, "TOKEN_UNKNOWN")
