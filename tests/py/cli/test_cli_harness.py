"""The tests' way of running etl-craft (tests.py.support.cli.etl_craft): each command in a process of its own,
forked from a warm server, with its own directory, environment, output streams and exit code, as a new
interpreter would run it; a command past its time limit is killed and the next one runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.py.support.cli import _Server, descendants_alive, etl_craft
from tests.py.support.project import Task, release, wait_for, write_project


def test_a_command_runs_in_its_own_process__its_directory__its_environment__its_streams(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, {"flow": [Task("load")]}, [])
    assert etl_craft("migrate", cwd=project).code == 0
    done = etl_craft("validate", cwd=project, env={"ETL_CRAFT_ACTOR": "harness@test"})
    assert (done.code, done.err) == (0, ""), done.err

    refused = etl_craft("validate", "--no-such-option", cwd=project)
    assert (refused.code, refused.out) == (2, "") and refused.err.startswith("Usage: python -m etlcraft validate")
    assert "No such option '--no-such-option'" in refused.err

    missing = etl_craft("status", "--pipeline-code", "flow", cwd=tmp_path)  # no project in this directory
    assert (missing.code, missing.err) == (3, f"error: {tmp_path / 'craft-connector.yml'} does not exist; create a "
                                               "project with etl-craft init DIR, or pass --project DIR\n")

    actor = etl_craft("init-db", cwd=project, env={"ETL_CRAFT_ACTOR": ""})
    assert actor.code != 0 and "ETL_CRAFT_ACTOR" in actor.err, "the environment is the request's, not the server's"
    server = _Server.get()
    assert server.process.pid != os.getpid() and server.process.poll() is None


@pytest.mark.process
def test_a_command_past_its_time_limit_is_killed__the_next_command_runs(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, {"flow": [Task("load", {"hold": "flow"})]}, [])
    assert etl_craft("migrate", cwd=project).code == 0
    with pytest.raises(subprocess.TimeoutExpired):
        etl_craft("run", "--pipeline-code", "flow", cwd=project, timeout=3)
    marks = project / "marks"
    wait_for(lambda: marks.is_dir() and any(marks.glob("load.*.start")), what="the held task to have started")
    release(project, "flow")
    status = etl_craft("status", "--pipeline-code", "flow", "--format", "json", cwd=project)
    assert status.code == 0, status.err
    pids = [int(p.read_text().split()[1]) for p in marks.glob("load.*.start")]
    wait_for(lambda: not descendants_alive(pids), what="the released task process to end")
