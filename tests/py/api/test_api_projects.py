"""POST /api/v1/projects/{code}/pause and /resume: every active pipeline of a project paused or resumed in one
request, as `etl-craft pause|resume --project-code CODE` does where the Engine DB is: the operator role, a reason,
the token as the actor, one AUD_ACTIONS entry per pipeline, and the document the local command prints. With
--server, the command asks these routes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.py.api.conftest import Live
from tests.py.api.test_api_parity import VOLATILE, _normal
from tests.py.api.test_cli_remote import remote, remote_json
from tests.py.cli.test_json_documents import check
from tests.py.support.cli import etl_craft

pytestmark = pytest.mark.process

PROJECT = "proc"  # the project of tests.py.support.project.write_project, with pipeline flow


def _paused(live: Live) -> bool:
    return bool(live.cli("list")["pipelines"][0]["paused"])


def test_project_pause_and_resume__the_local_document__the_token_is_the_actor(live: Live) -> None:
    local_pause = live.cli("pause", "--project-code", PROJECT, "--reason", "window")
    local_resume = live.cli("resume", "--project-code", PROJECT, "--reason", "done")
    paused = live.call("POST", f"/api/v1/projects/{PROJECT}/pause", "operator", json={"reason": "window"})
    assert paused.status_code == 200, paused.text
    check("pause --project-code", paused.json())
    assert _normal(paused.json(), VOLATILE) == _normal(local_pause, VOLATILE)
    assert (paused.json()["actor"], paused.json()["pipelines"][0]["pipeline_code"]) == ("operator", "flow")
    assert _paused(live) is True
    resumed = live.call("POST", f"/api/v1/projects/{PROJECT}/resume", "admin", json={})
    assert resumed.status_code == 200, resumed.text
    check("resume --project-code", resumed.json())
    assert _normal(resumed.json(), VOLATILE) == _normal(local_resume, VOLATILE)
    assert resumed.json()["message"] == f"project {PROJECT}: 1 pipeline(s) resumed: flow"
    assert _paused(live) is False
    actions = [(e["actor"], e["what"]) for e in live.cli("audit", "--pipeline-code", "flow")["entries"]
               if e["kind"] == "action"]
    assert actions[:2] == [("admin", "resume"), ("operator", "pause")], actions


def test_project_pause__refusals__status_and_code__nothing_paused(live: Live) -> None:
    cases = [(None, "pause", {"reason": "r"}, 401, "TOKEN_UNKNOWN"),
             ("viewer", "pause", {"reason": "r"}, 403, "FORBIDDEN"),
             ("viewer", "resume", {}, 403, "FORBIDDEN"),
             ("operator", "pause", {}, 422, "USAGE"),  # a pause needs its reason
             ("operator", "resume", {}, 409, "REFUSED_BY_POLICY")]  # nothing is paused
    for token, verb, body, status, code in cases:
        answer = live.call("POST", f"/api/v1/projects/{PROJECT}/{verb}", token, json=body)
        assert (answer.status_code, answer.json()["code"]) == (status, code), (token, verb, answer.text)
        check("api", answer.json())
    unknown = live.call("POST", "/api/v1/projects/nope/pause", json={"reason": "r"})
    assert (unknown.status_code, unknown.json()["code"]) == (404, "NOT_FOUND"), unknown.text
    assert unknown.json()["message"].startswith("project nope is not an active project of this Engine DB")
    assert _paused(live) is False
    twice = [live.call("POST", f"/api/v1/projects/{PROJECT}/pause", json={"reason": "r"}) for _ in range(2)]
    assert [a.status_code for a in twice] == [200, 409], twice[1].text
    assert "project proc has no active pipeline that is not paused" in twice[1].json()["message"]


def test_server__pause_and_resume_project_code__remote_equals_local(live: Live, tmp_path: Path) -> None:
    nowhere = tmp_path / "operator-laptop"  # no craft-connector.yml: only the API can answer
    nowhere.mkdir()
    pause = ("pause", "--project-code", PROJECT, "--reason", "window")
    resume = ("resume", "--project-code", PROJECT, "--reason", "done")
    far_pause = remote_json(live, nowhere, *pause)
    assert _paused(live) is True
    far_resume = remote_json(live, nowhere, *resume)
    assert _paused(live) is False
    local_pause, local_resume = live.cli(*pause), live.cli(*resume)
    assert _normal(far_pause, VOLATILE) == _normal(local_pause, VOLATILE)
    assert _normal(far_resume, VOLATILE) == _normal(local_resume, VOLATILE)
    assert (far_pause["actor"], far_resume["actor"], local_pause["actor"]) == ("operator", "operator", "tester@cli")
    far_text = remote(live, nowhere, *pause)
    assert (far_text.code, far_text.out) == (0, f"project {PROJECT}: 1 pipeline(s) paused: flow\n"), far_text.err
    far_again, local_again = remote(live, nowhere, *pause), etl_craft(*pause, cwd=live.project)
    assert far_again.code == 24 and (far_again.code, far_again.err) == (local_again.code, local_again.err)
