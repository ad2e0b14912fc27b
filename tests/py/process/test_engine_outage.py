"""B27: an Engine DB outage shorter than the lease neither aborts a run nor makes any work run twice. The Engine DB
is a PostgreSQL cluster of the test's own (tests.py.support.private_pg), stopped for 2 s and for 10 s while tasks
run and finish; the same `etl-craft run` carries on and ends SUCCESS, and each task ran exactly once: every
execution of the task script leaves one mark (marks/<task>.<attempt>.start), so a task whose work was done again
would leave two."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.py.support.cli import etl_craft, start_etl_craft
from tests.py.support.private_pg import PrivateCluster, private_cluster
from tests.py.support.project import Task, release, run_logs, wait_for, write_project

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def cluster() -> Iterator[PrivateCluster]:
    with private_cluster() as made:
        yield made


def _executions(project: Path) -> Counter[str]:
    return Counter(p.name.split(".")[0] for p in (project / "marks").glob("*.start"))


@pytest.mark.parametrize("outage_seconds", [2, 10])
def test_b27_an_engine_db_outage_shorter_than_the_lease_does_not_abort_the_run_or_run_work_twice(
        tmp_path: Path, cluster: PrivateCluster, outage_seconds: int) -> None:
    # Three tasks hold until released, then finish while the Engine DB is down; three more run after them.
    project = write_project(tmp_path / "p", cluster.create_database(), {"flow": [
        Task("load_a", {"hold": "go"}), Task("load_b", {"hold": "go"}), Task("load_c", {"hold": "go"}),
        Task("join_ab"), Task("join_bc"), Task("report")]},
        [("join_ab", "load_a", "SUCCESS"), ("join_ab", "load_b", "SUCCESS"), ("join_bc", "load_b", "SUCCESS"),
         ("join_bc", "load_c", "SUCCESS"), ("report", "join_ab", "SUCCESS"), ("report", "join_bc", "SUCCESS")],
        lease_seconds=60)
    assert etl_craft("migrate", cwd=project).code == 0
    log = tmp_path / "run.log"
    parent = start_etl_craft("run", "--pipeline-code", "flow", cwd=project, log=log)
    try:
        wait_for(lambda: (project / "marks").is_dir() and len(list((project / "marks").glob("load_*.start"))) == 3,
                 what="the three loads to start")
        cluster.stop()
        release(project, "go")  # the loads finish while the Engine DB is down
        wait_for(lambda: len(list((project / "marks").glob("load_*.end"))) == 3, what="the loads' work to end")
        time.sleep(outage_seconds)
        cluster.start()
        assert parent.wait(timeout=120) == 0, log.read_text()
    finally:
        if parent.poll() is None:
            parent.kill()
    status = etl_craft("status", "--pipeline-code", "flow", "--run-id", "1", "--format", "json", cwd=project)
    assert status.code == 0, status.err
    document = json.loads(status.out)
    assert document["run"]["status"] == "SUCCESS", (document, log.read_text())
    assert {t["task_code"]: (t["status"], t["attempts"]) for t in document["tasks"]} == {
        code: ("SUCCESS", 1) for code in ("load_a", "load_b", "load_c", "join_ab", "join_bc", "report")}
    rode_out = [p.name for p in run_logs(project, "flow", 1).glob("load_*.log")
                if "finish_attempt: cannot reach the Engine DB" in p.read_text()]
    assert len(rode_out) == 3, "each load finished while the Engine DB was down and recorded its outcome once back"
    assert _executions(project) == {code: 1 for code in ("load_a", "load_b", "load_c", "join_ab", "join_bc",
                                                         "report")}, "no work ran twice"
