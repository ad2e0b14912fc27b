"""`etl-craft --server URL` (ETL_CRAFT_SERVER, token in ETL_CRAFT_TOKEN) asks a live HTTP API instead of the Engine
DB. Every remote command runs in a folder with no project, so it has no craft-connector.yml and no Engine DB to open.
For each operation its --format json document equals the local command's (writes compared after a second request
of the same kind, normalising only what test_api_parity normalises), its text equals the local text, and a refusal
gives the local command's message and exit code."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from etlcraft.core.errors import error_specs
from tests.py.api.conftest import Live
from tests.py.api.test_api_parity import RUN_IDENTITY, VOLATILE, _normal
from tests.py.support.cli import Result, etl_craft

pytestmark = pytest.mark.process


def remote(live: Live, where: Path, *args: str, token: str | None = "operator") -> Result:
    """`etl-craft ARGS` with ETL_CRAFT_SERVER set to the live API, run in `where` (a folder with no project)."""
    env = {"ETL_CRAFT_SERVER": live.base, **({"ETL_CRAFT_TOKEN": live.tokens.get(token, token)} if token else {})}
    return etl_craft(*args, cwd=where, env=env)


def remote_json(live: Live, where: Path, *args: str, token: str = "operator") -> dict[str, Any]:
    done = remote(live, where, *args, "--format", "json", token=token)
    assert done.code == 0, (args, done.code, done.err)
    doc = json.loads(done.out)
    assert isinstance(doc, dict)
    return doc


@pytest.fixture
def nowhere(tmp_path: Path) -> Path:
    """A folder with no craft-connector.yml: a command that needed the project or its Engine DB would fail here."""
    folder = tmp_path / "operator-laptop"
    folder.mkdir()
    return folder


def _exit(kind: str) -> int:
    return error_specs()[kind].exit


READS: list[tuple[str, ...]] = [
    ("list",), ("show", "--pipeline-code", "flow"), ("history", "--pipeline-code", "flow", "--limit", "5"),
    ("status", "--pipeline-code", "flow", "--run-id", "1"),
    ("explain", "--pipeline-code", "flow", "--run-id", "1", "--task-code", "report"),
    ("logs", "--attempt-id", "1"), ("audit", "--pipeline-code", "flow"),
    ("alerts", "list", "--pipeline-code", "flow", "--status", "pending"),
]


def test_reads__remote_json_and_text_equal_local(live: Live, nowhere: Path) -> None:
    assert not (nowhere / "craft-connector.yml").exists()
    for args in READS:
        assert remote_json(live, nowhere, *args, token="viewer") == live.cli(*args), args
        local, far = etl_craft(*args, cwd=live.project), remote(live, nowhere, *args, token="viewer")
        assert (far.code, far.out) == (local.code, local.out) == (0, local.out), (args, far.err)


def test_writes__remote_json_equals_local_json(live: Live, nowhere: Path) -> None:
    # pause and resume: the token is the actor
    local_pause = live.cli("pause", "--pipeline-code", "flow", "--reason", "window")
    local_resume = live.cli("resume", "--pipeline-code", "flow", "--reason", "done")
    far_pause = remote_json(live, nowhere, "pause", "--pipeline-code", "flow", "--reason", "window")
    far_resume = remote_json(live, nowhere, "resume", "--pipeline-code", "flow", "--reason", "done")
    assert _normal(far_pause, VOLATILE) == _normal(local_pause, VOLATILE)
    assert _normal(far_resume, VOLATILE | {"message"}) == _normal(local_resume, VOLATILE | {"message"})
    assert (local_pause["actor"], far_pause["actor"]) == ("tester@cli", "operator")

    # trigger (the same key: the same run), then cancel one run each way
    trigger = ("run", "--pipeline-code", "flow", "--init-only", "--run-key", "k1", "--run-date", "2026-03-01")
    local_trigger = live.cli(*trigger)
    assert remote_json(live, nowhere, *trigger) == local_trigger
    local_cancel = live.cli("cancel", "--pipeline-code", "flow", "--run-id", str(local_trigger["pipeline_run_id"]),
                            "--reason", "not today")
    run_2 = remote_json(live, nowhere, "run", "--pipeline-code", "flow", "--init-only", "--run-key", "k2",
                        "--run-date", "2026-03-01")["pipeline_run_id"]
    far_cancel = remote_json(live, nowhere, "cancel", "--pipeline-code", "flow", "--run-id", str(run_2), "--reason",
                             "not today")
    assert _normal(far_cancel, VOLATILE | RUN_IDENTITY) == _normal(local_cancel, VOLATILE | RUN_IDENTITY)

    # mark a task, then queue its rerun (the second rerun finds the attempt the first queued)
    mark = ("mark", "--pipeline-code", "flow", "--run-id", "1", "--task-code", "report", "--status", "failed",
            "--reason", "bad rows", "--rows", "3")
    assert _normal(remote_json(live, nowhere, *mark), VOLATILE) == _normal(live.cli(*mark), VOLATILE)
    rerun = ("run", "--pipeline-code", "flow", "--run-id", "1", "--rerun", "report", "--init-only")
    local_rerun = live.cli(*rerun)
    assert remote_json(live, nowhere, *rerun) == local_rerun and local_rerun["schema"] == "etl-craft/rerun-queued/1"

    # backfill: the same dates find the runs the first request queued
    backfill = ("run", "--pipeline-code", "flow", "--backfill", "2026-02-01:2026-02-02", "--reason", "history",
                "--init-only")
    local_backfill = live.cli(*backfill)
    assert remote_json(live, nowhere, *backfill) == local_backfill
    assert [r["status"] for r in local_backfill["runs"]] == ["QUEUED", "QUEUED"]

    # the audit names the token as the actor of the remote requests
    actors = {(e["actor"], e["what"]) for e in live.cli("audit", "--pipeline-code", "flow")["entries"]}
    assert {("operator", "pause"), ("operator", "cancel"), ("operator", "mark")} <= actors, actors


def test_writes__remote_text_equals_local_text(live: Live, nowhere: Path) -> None:
    trigger = ("run", "--pipeline-code", "flow", "--init-only", "--run-key", "k1", "--run-date", "2026-03-01")
    local = etl_craft(*trigger, cwd=live.project)
    far = remote(live, nowhere, *trigger)
    assert (far.code, far.out) == (local.code, local.out) == (0, local.out), far.err
    assert "is IN-PROGRESS; run its tasks with etl-craft run --pipeline-code flow" in far.out


def test_refusals__same_message_and_exit_code_as_local(live: Live, nowhere: Path) -> None:
    cases = [("show", "--pipeline-code", "nope"),  # NOT_FOUND
             ("cancel", "--pipeline-code", "flow", "--run-id", "1", "--reason", "late"),  # STALE_TRANSITION: ended
             ("history", "--pipeline-code", "nope"),
             ("status", "--pipeline-code", "flow", "--run-id", "999"),  # NOT_FOUND: no such run
             ("explain", "--pipeline-code", "flow", "--run-id", "999", "--task-code", "load"),
             ("cancel", "--pipeline-code", "nope", "--run-id", "1", "--reason", "late"),  # the pipeline first
             ("run", "--pipeline-code", "flow", "--backfill", "2026-02-01:2026-02-02", "--init-only")]  # no reason
    for args in cases:
        local, far = etl_craft(*args, cwd=live.project), remote(live, nowhere, *args)
        assert local.code != 0 and (far.code, far.err) == (local.code, local.err), (args, local.err, far.err)


def test_tokens__missing_bad_revoked_or_role_too_low__documented_exit_and_message(live: Live, nowhere: Path) -> None:
    missing = remote(live, nowhere, "list", token=None)
    assert missing.code == _exit("TOKEN_UNKNOWN") and "set ETL_CRAFT_TOKEN" in missing.err, missing.err
    bad = remote(live, nowhere, "list", token="ect_not-a-token")
    said = live.call("GET", "/api/v1/pipelines", "ect_not-a-token").json()["message"]
    assert (bad.code, bad.err) == (_exit("TOKEN_UNKNOWN"), f"error: {said}\n")
    assert remote(live, nowhere, "list", token="revoked").code == _exit("TOKEN_REVOKED")
    low = remote(live, nowhere, "pause", "--pipeline-code", "flow", "--reason", "r", token="viewer")
    said = live.call("POST", "/api/v1/pipelines/flow/pause", "viewer", json={"reason": "r"}).json()["message"]
    assert (low.code, low.err) == (_exit("FORBIDDEN"), f"error: {said}\n")
    assert live.cli("list")["pipelines"][0]["paused"] is False


def test_no_server_answers__names_the_url_and_the_remedy(nowhere: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"  # bound, not listening: the connection is refused
        done = etl_craft("list", cwd=nowhere, env={"ETL_CRAFT_SERVER": url, "ETL_CRAFT_TOKEN": "x"})
    assert done.code == _exit("SERVER_UNREACHABLE"), done.err
    assert f"cannot reach the etl-craft server at {url}" in done.err and "etl-craft server" in done.err
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{other.server_address[1]}"
        not_api = etl_craft("--server", url, "list", cwd=nowhere, env={"ETL_CRAFT_TOKEN": "x"})
    finally:
        other.shutdown()
        other.server_close()
    assert not_api.code == _exit("SERVER_UNREACHABLE") and "HTTP 404 and no etl-craft document" in not_api.err, \
        not_api.err


def test_commands_that_need_the_engine_db__refuse_server(live: Live, nowhere: Path) -> None:
    for args in (("migrate",), ("reopen", "--pipeline-code", "flow", "--run-id", "1", "--reason", "r"),
                 ("schedule", "list"), ("engine", "copy", "--to", "sqlite:///x.db")):
        done = remote(live, nowhere, *args)
        assert done.code == _exit("USAGE") and f"etl-craft {args[0]} works on the Engine DB" in done.err, done.err
    foreground = remote(live, nowhere, "run", "--pipeline-code", "flow")
    assert foreground.code == _exit("USAGE") and "give --init-only" in foreground.err, foreground.err
    by_key = remote(live, nowhere, "status", "--pipeline-code", "flow", "--run-key", "first")
    assert by_key.code == _exit("USAGE") and "--run-id" in by_key.err, by_key.err
    other = remote(live, nowhere, "mark", "--pipeline-code", "flow", "--status", "SUCCESS", "--reason", "r",
                   "--run-id", "1")
    assert other.code == _exit("USAGE") and "--task-code" in other.err, other.err


def test_token_commands__remote_equal_local__admin_only(live: Live, nowhere: Path) -> None:
    far_list = remote_json(live, nowhere, "token", "list", token="admin")  # notes the admin token's use first
    assert far_list == live.cli("token", "list")
    far_text = remote(live, nowhere, "token", "list", token="admin")
    assert (far_text.code, far_text.out) == (0, etl_craft("token", "list", cwd=live.project).out)

    made = remote_json(live, nowhere, "token", "create", "--name", "ci-remote", "--role", "VIEWER", token="admin")
    local = live.cli("token", "create", "--name", "ci-local", "--role", "viewer")
    own = {"token", "token_id", "name", "created_at", "created_by"}
    assert _normal(made, own) == _normal(local, own) and made["created_by"] == "admin"
    assert live.call("GET", "/api/v1/pipelines", made["token"]).status_code == 200
    revoked = remote_json(live, nowhere, "token", "revoke", "--name", "ci-remote", token="admin")
    assert _normal(revoked, own | {"revoked_at", "revoked_by", "last_used_at"}) == _normal(
        live.cli("token", "revoke", "--name", "ci-local"), own | {"revoked_at", "revoked_by", "last_used_at"})
    assert revoked["revoked_by"] == "admin"
    low = remote(live, nowhere, "token", "list", token="operator")
    assert low.code == _exit("FORBIDDEN"), low.err
