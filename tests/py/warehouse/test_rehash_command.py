"""etl-craft rehash --target S.T [--dry-run], driven as a subprocess: the compare contract comes from the merge
tasks writing the target; a dry run changes nothing; a real one rewrites HASH_KEY, records version 2 and the
request."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from etlcraft.core.actor import acting_as
from tests.py.conftest import TEST_ACTOR
from tests.py.support.cli import etl_craft
from tests.py.support.scenario import Project
from tests.py.warehouse.conftest import Wh
from tests.py.warehouse.reference import digest


def _merge_task(wh: Wh, project: Project, code: str, **parameters: str) -> None:
    with acting_as(TEST_ACTOR):
        project.pipeline(f"p_{code}")
        task_id = project.task(f"p_{code}", code, ACTION="SCD1_MERGE", TARGET_OBJECT=wh.t("target"))
        with wh.engine_db.write() as conn:
            for name, value in parameters.items():
                conn.execute(sa.text("INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) "
                                     "VALUES (:t, :n, :v)"), {"t": task_id, "n": name, "v": value})


@pytest.mark.process
def test_rehash_command__dry_run_then_rehash__hashes_recomputed_and_recorded(wh: Wh) -> None:
    _merge_task(wh, Project(wh.engine_db), "load", MERGE_KEY="id", MERGE_COMPARE_COLUMNS="name")
    wh.execute("CREATE TABLE {s}.target (id INTEGER, name VARCHAR(20), note VARCHAR(20), hash_key VARCHAR(32))",
               "INSERT INTO {s}.target VALUES (1, 'a', 'x', 'old'), (2, NULL, 'y', 'old')")
    dry = etl_craft("rehash", "--target", wh.t("target"), "--dry-run", "--format", "json", cwd=wh.project)
    assert dry.code == 0, dry.err
    assert json.loads(dry.out) == {"schema": "etl-craft/rehash/1", "target": wh.t("target"), "hash_version": 2,
                                   "rows": 2, "changed": 2, "compare_columns": ["name"], "dry_run": True}
    assert wh.query("SELECT hash_key FROM {s}.target") == [("old",), ("old",)]

    done = etl_craft("rehash", "--target", wh.t("target"), cwd=wh.project)
    assert done.code == 0, done.err
    assert done.out.strip() == (f"{wh.t('target')}: 2 row(s), HASH_KEY changed on 2; compare columns name; hash "
                                "version 2 recorded")
    assert wh.query("SELECT id, hash_key FROM {s}.target ORDER BY id") == [(1, digest(("a", "text"))),
                                                                          (2, digest((None, "text")))]
    with wh.engine_db.read() as conn:
        assert conn.execute(sa.text("SELECT HASH_VERSION, RECOMPUTED_BY FROM AUD_TARGET_HASH_VERSION")).all() == [
            (2, "tester@cli")]
        assert conn.execute(sa.text("SELECT COUNT(*) FROM AUD_ACTIONS WHERE COMMAND = 'rehash'")).scalar() == 1


@pytest.mark.process
@pytest.mark.parametrize("wh", ["duckdb"], indirect=True)  # refused before the warehouse is opened
def test_rehash_command__merge_tasks_disagree__refused(wh: Wh) -> None:
    project = Project(wh.engine_db)
    _merge_task(wh, project, "one", MERGE_KEY="id")
    _merge_task(wh, project, "two", MERGE_KEY="id", MERGE_COMPARE_COLUMNS="name")
    refused = etl_craft("rehash", "--target", wh.t("target"), cwd=wh.project)
    assert refused.code == 2
    assert "the merge tasks writing" in refused.err and "disagree on MERGE_KEY or MERGE_COMPARE_COLUMNS" in refused.err
    nobody = etl_craft("rehash", "--target", f"{wh.schema}.nothing", cwd=wh.project)
    assert nobody.code == 22 and "no active SCD1_MERGE or SCD2_MERGE task writes" in nobody.err
