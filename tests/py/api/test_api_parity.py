"""For each operation, the document the CLI prints with --format json equals the one the API returns (the same
service and serializer). Reads are compared exactly. A write is compared after a second request of the same kind,
and only these fields are normalised where a second request must differ: action_id, actor, pause_id,
paused_at/paused_by, resumed_at/resumed_by, ended_at/ended_by, cancel_requested_at (ids, times and who), and a
cancel's run identity (pipeline_run_id, run_key, message naming it). A secret planted in a task parameter appears
in no response."""

from __future__ import annotations

from typing import Any

import pytest

from tests.py.api.conftest import SECRET, Live

pytestmark = pytest.mark.process

VOLATILE = {"action_id", "actor", "pause_id", "paused_at", "paused_by", "resumed_at", "resumed_by", "ended_at",
            "ended_by", "cancel_requested_at"}
RUN_IDENTITY = {"pipeline_run_id", "run_key", "message"}


def _normal(doc: Any, volatile: set[str]) -> Any:
    if isinstance(doc, dict):
        return {k: "<volatile>" if k in volatile else _normal(v, volatile) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_normal(v, volatile) for v in doc]
    return doc


def _api(live: Live, method: str, path: str, bodies: list[str], body: dict[str, Any] | None = None,
         token: str = "operator") -> dict[str, Any]:
    answer = live.call(method, path, token, json=body)
    bodies.append(answer.text)
    assert answer.status_code == 200, (path, answer.text)
    doc = answer.json()
    assert isinstance(doc, dict)
    return doc


def test_every_operation__cli_json_equals_api_json__and_no_secret_leaves(live: Live) -> None:
    bodies: list[str] = []
    reads = [
        (("list",), "/api/v1/pipelines"),
        (("show", "--pipeline-code", "flow"), "/api/v1/pipelines/flow"),
        (("history", "--pipeline-code", "flow", "--limit", "5"), "/api/v1/pipelines/flow/runs?limit=5"),
        (("status", "--pipeline-code", "flow", "--run-id", "1"), "/api/v1/runs/1"),
        (("status", "--pipeline-code", "flow", "--run-id", "1"), "/api/v1/runs/1/tasks"),
        (("explain", "--pipeline-code", "flow", "--run-id", "1", "--task-code", "report"),
         "/api/v1/runs/1/tasks/report/explain"),
        (("logs", "--attempt-id", "1"), "/api/v1/attempts/1"),
        (("token", "list"), "/api/v1/tokens"),
        (("workers", "list"), "/api/v1/workers"),
    ]
    for args, path in reads:
        token = "admin" if args[0] == "token" else "viewer"
        assert _api(live, "GET", path, bodies, token=token) == live.cli(*args), path
    show = _api(live, "GET", "/api/v1/pipelines/flow", bodies)
    assert [t["parameters"] for t in show["tasks"] if t["code"] == "load"] == [{"Api_Token": "***"}]

    # pause and resume
    cli_pause = live.cli("pause", "--pipeline-code", "flow", "--reason", "window")
    cli_resume = live.cli("resume", "--pipeline-code", "flow", "--reason", "done")
    api_pause = _api(live, "POST", "/api/v1/pipelines/flow/pause", bodies, {"reason": "window"})
    api_resume = _api(live, "POST", "/api/v1/pipelines/flow/resume", bodies, {"reason": "done"})
    assert _normal(api_pause, VOLATILE) == _normal(cli_pause, VOLATILE)
    assert (_normal(api_resume, VOLATILE | {"message"}) == _normal(cli_resume, VOLATILE | {"message"}))
    assert (cli_pause["actor"], api_pause["actor"]) == ("tester@cli", "operator")

    # trigger (the same key: the same run) and cancel (two runs)
    trigger = ("run", "--pipeline-code", "flow", "--init-only", "--run-key", "k1", "--run-date", "2026-03-01")
    cli_trigger = live.cli(*trigger)
    body = {"run_key": "k1", "run_date": "2026-03-01"}
    assert _api(live, "POST", "/api/v1/pipelines/flow/runs", bodies, body) == cli_trigger
    run_1 = cli_trigger["pipeline_run_id"]
    cli_cancel = live.cli("cancel", "--pipeline-code", "flow", "--run-id", str(run_1), "--reason", "not today")
    run_2 = _api(live, "POST", "/api/v1/pipelines/flow/runs", bodies, {"run_key": "k2",
                                                                       "run_date": "2026-03-01"})["pipeline_run_id"]
    api_cancel = _api(live, "POST", f"/api/v1/runs/{run_2}/cancel", bodies, {"reason": "not today"})
    assert _normal(api_cancel, VOLATILE | RUN_IDENTITY) == _normal(cli_cancel, VOLATILE | RUN_IDENTITY)

    # mark a task, then queue its rerun for the server (the second rerun finds the attempt the first queued)
    mark = ("mark", "--pipeline-code", "flow", "--run-id", "1", "--task-code", "report", "--status", "FAILED",
            "--reason", "bad rows")
    cli_mark = live.cli(*mark)
    api_mark = _api(live, "POST", "/api/v1/runs/1/tasks/report/mark", bodies, {"status": "FAILED",
                                                                             "reason": "bad rows"})
    assert _normal(api_mark, VOLATILE) == _normal(cli_mark, VOLATILE)
    cli_rerun = live.cli("run", "--pipeline-code", "flow", "--run-id", "1", "--rerun", "report", "--init-only")
    assert _api(live, "POST", "/api/v1/runs/1/tasks/report/rerun", bodies, {}) == cli_rerun
    assert cli_rerun["schema"] == "etl-craft/rerun-queued/1" and cli_rerun["task_code"] == "report"

    # backfill: the same dates find the runs the first request queued
    cli_backfill = live.cli("run", "--pipeline-code", "flow", "--backfill", "2026-02-01:2026-02-02", "--reason",
                            "history", "--init-only")
    api_backfill = _api(live, "POST", "/api/v1/pipelines/flow/backfills", bodies,
                        {"first": "2026-02-01", "last": "2026-02-02", "reason": "history"})
    assert api_backfill == cli_backfill
    assert [(r["run_date"], r["status"]) for r in api_backfill["runs"]] == [("2026-02-01", "QUEUED"),
                                                                         ("2026-02-02", "QUEUED")]

    # the audit, filtered, once nothing changes any more
    assert _api(live, "GET", "/api/v1/audit?pipeline_code=flow", bodies) == live.cli("audit", "--pipeline-code",
                                                                                       "flow")
    assert _api(live, "GET", "/api/v1/alerts?pipeline_code=flow", bodies) == live.cli("alerts", "list",
                                                                                        "--pipeline-code", "flow")
    log = live.call("GET", "/api/v1/attempts/1/log?offset=5", "viewer")
    whole = live.cli("logs", "--attempt-id", "1")["log"].encode()
    assert log.content == whole[5:] and int(log.headers["x-etl-craft-log-size"]) == len(whole)
    bodies.append(log.text)
    assert not [b for b in bodies if SECRET in b]
