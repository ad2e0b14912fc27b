"""etl-craft engine copy --to URL, through the real CLI: the example project of `etl-craft init` runs on SQLite, its
Engine DB is copied to a new database, craft-connector.yml is pointed at it, and the next runs go on from the same
offsets, merging into the same warehouse without a rehash. Every refusal writes nothing in either database."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest

from etlcraft.engine.migrations import engine_migrations
from tests.py.support.cli import Result, etl_craft

pytestmark = pytest.mark.process
SQLITE_ENGINE = "Engine:\n  dialect: sqlite\n  path: .etl-craft/engine.db\n"
OFFSETS = ("SELECT t.TASK_CODE, o.OFFSET_TYPE, o.OFFSET_VALUE FROM {s}AUD_TASK_OFFSETS o"
           " JOIN {s}CFG_TASKS t ON t.TASK_ID = o.TASK_ID ORDER BY t.TASK_CODE")


def _ok(*args: str, cwd: Path) -> Result:
    done = etl_craft(*args, cwd=cwd)
    assert done.code == 0, (args, done.out, done.err)
    return done


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """The example project with two runs of shop_ingest and one of customer_orders on its SQLite Engine DB."""
    _ok("init", "demo", cwd=tmp_path)
    project = tmp_path / "demo"
    _ok("migrate", cwd=project)
    _ok("run", "--pipeline-code", "shop_ingest", "--run-key", "day-1", "--run-date", "2026-01-15", cwd=project)
    _ok("run", "--pipeline-code", "customer_orders", "--run-key", "day-1", "--run-date", "2026-01-15", cwd=project)
    _ok("run", "--pipeline-code", "shop_ingest", "--run-key", "day-2", "--run-date", "2026-01-16", cwd=project)
    return project


def _sqlite(path: Path, sql: str, *args: object) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return conn.execute(sql.format(s=""), args).fetchall()


def _pg(url: str, sql: str, *args: object) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return [tuple(r) for r in conn.execute(sql.format(s="etl_craft."), args).fetchall()]


def _engine_section(project: Path, section: str) -> None:
    config = project / "craft-connector.yml"
    text = config.read_text(encoding="utf-8")
    assert SQLITE_ENGINE in text
    config.write_text(text.replace(SQLITE_ENGINE, section), encoding="utf-8")


def _actions(rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    return [json.loads(r[0]) if isinstance(r[0], str) else r[0] for r in rows]


@pytest.mark.postgres
def test_engine_copy__sqlite_demo_to_new_postgresql__next_runs_go_on_from_its_offsets(
        demo: Path, empty_pg_url: str) -> None:
    source = demo / ".etl-craft" / "engine.db"
    offsets = _sqlite(source, OFFSETS)
    assert offsets[0][0::2] == ("ingest_customers", "80")
    done = _ok("engine", "copy", "--to", empty_pg_url, cwd=demo)
    latest = engine_migrations("sqlite", "")[-1].version
    assert f"  migrated   the target: engine migrations 0001 to {latest}; project migrations 0001_shop_ingest.sql, " \
           "0002_customer_orders.sql" in done.out
    assert "  copied     2 offsets (AUD_TASK_OFFSETS)\n  copied     3 target hash versions (AUD_TARGET_HASH_VERSION)" \
           "\n  copied     0 pipeline pauses (AUD_PIPELINE_PAUSES)\n  not copied run history" in done.out
    assert "engine copy: offsets 2 of 2" in done.err and "engine copy: target hash versions 3 of 3" in done.err
    assert _pg(empty_pg_url, OFFSETS) == offsets
    assert _pg(empty_pg_url, "SELECT count(*) FROM {s}aud_pipelines_run_log") == [(0,)]

    _engine_section(demo, f"Engine:\n  dialect: postgresql\n  url: {empty_pg_url}\n  schema: etl_craft\n")
    _ok("doctor", cwd=demo)
    _ok("run", "--pipeline-code", "shop_ingest", "--run-key", "day-3", "--run-date", "2026-01-17", cwd=demo)
    merged = _ok("run", "--pipeline-code", "customer_orders", "--run-key", "day-3", "--run-date", "2026-01-17",
                 cwd=demo)
    assert "run 2 ended SUCCESS" in merged.out  # the merges found their targets' hash versions: no rehash
    log = _ok("logs", "--attempt-id", "1", cwd=demo).out
    assert "loaded customer changes 81 to 120" in log  # went on from the carried offset 80
    assert _pg(empty_pg_url, OFFSETS)[0] == ("ingest_customers", "INTEGER", "120")
    copy_actions = "SELECT ARGUMENTS FROM {s}AUD_ACTIONS WHERE COMMAND = 'engine copy' ORDER BY ACTION_ID"
    assert [a.get("offsets") for a in _actions(_pg(empty_pg_url, copy_actions))] == [None, 2]
    recorded = _actions(_sqlite(source, copy_actions))
    assert [(a["offsets"], a["target_hash_versions"], a["pipeline_pauses"]) for a in recorded] == [(2, 3, 0)]


def test_engine_copy__sqlite_to_sqlite__offsets_hash_versions_and_pauses_carried(demo: Path) -> None:
    """A pause is carried too (a paused pipeline stays paused), naming who paused it where; the copy can then be used
    with --engine-url like any Engine DB."""
    _ok("pause", "--pipeline-code", "customer_orders", "--reason", "warehouse upgrade", cwd=demo)
    target = demo.parent / "moved.db"
    done = _ok("engine", "copy", "--to", f"sqlite:///{target}", "--format", "json", cwd=demo)
    copied = {c["what"]: c["count"] for c in json.loads(done.out)["copied"]}
    assert copied == {"offsets": 2, "target hash versions": 3, "pipeline pauses": 1}
    assert _sqlite(target, OFFSETS) == _sqlite(demo / ".etl-craft" / "engine.db", OFFSETS)
    identity = _sqlite(demo / ".etl-craft" / "engine.db", "SELECT VALUE FROM ENG_SETTINGS WHERE SETTING = 'ENGINE_ID'")
    reason = _sqlite(target, "SELECT PAUSE_REASON FROM AUD_PIPELINE_PAUSES")[0][0]
    assert re.fullmatch(rf"carried from Engine DB {identity[0][0]}, where tester@cli paused it at "
                        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: warehouse upgrade", reason), reason
    paused = etl_craft("--engine-url", f"sqlite:///{target}", "run", "--pipeline-code", "customer_orders",
                       "--run-key", "day-2", cwd=demo)
    assert paused.code == 24 and "paused" in paused.err


def _snapshot(path: Path) -> list[tuple[Any, ...]]:
    return [*_sqlite(path, "SELECT COUNT(*) FROM AUD_ACTIONS"), *_sqlite(path, "SELECT COUNT(*) FROM AUD_TASK_OFFSETS")]


def test_engine_copy__refusals__name_the_reason__write_nothing(demo: Path) -> None:
    source = demo / ".etl-craft" / "engine.db"
    before = _snapshot(source)
    target = demo.parent / "target.db"

    itself = etl_craft("engine", "copy", "--to", f"sqlite:///{source}", cwd=demo)
    assert itself.code == 24 and f"--to names the source Engine DB itself (sqlite:///{source})" in itself.err

    password = etl_craft("engine", "copy", "--to", "postgresql://etl:hunter2@db.example.com/etl", cwd=demo)
    assert password.code == 3 and "--to holds a password; remove it from the URL" in password.err
    assert "hunter2" not in password.err

    assert _snapshot(source) == before and not target.exists()
    _ok("engine", "copy", "--to", f"sqlite:///{target}", cwd=demo)
    copied = _snapshot(target)
    again = etl_craft("engine", "copy", "--to", f"sqlite:///{target}", cwd=demo)
    assert again.code == 24 and (f"the target Engine DB sqlite:///{target} is not fresh: it has 2 offset(s) "
                                 "(AUD_TASK_OFFSETS), 3 target hash version(s) (AUD_TARGET_HASH_VERSION)") in again.err
    _ok("--engine-url", f"sqlite:///{target}", "run", "--pipeline-code", "shop_ingest", cwd=demo)
    ran = etl_craft("engine", "copy", "--to", f"sqlite:///{target}", cwd=demo)
    assert ran.code == 24 and "is not fresh: it has 1 run(s) (AUD_PIPELINES_RUN_LOG)" in ran.err
    assert _snapshot(target)[1:] == copied[1:]

    clone = demo.parent / "clone.db"
    clone.write_bytes(source.read_bytes())
    cloned = etl_craft("engine", "copy", "--to", f"sqlite:///{clone}", cwd=demo)
    assert cloned.code == 24 and "is not fresh: it has 3 run(s)" in cloned.err

    (demo / "migrations" / "0003_later.sql").write_text(
        "UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 7 * * *' WHERE PIPELINE_CODE = 'customer_orders';\n")
    pending = etl_craft("engine", "copy", "--to", f"sqlite:///{demo.parent / 'pending.db'}", cwd=demo)
    assert pending.code == 5 and ("is not up to date with the project: project migrations 0003_later.sql are not "
                                  "applied") in pending.err
    assert not (demo.parent / "pending.db").exists() or _sqlite(
        demo.parent / "pending.db", "SELECT COUNT(*) FROM sqlite_master") == [(0,)]
    (demo / "migrations" / "0003_later.sql").unlink()

    _ok("run", "--pipeline-code", "shop_ingest", "--run-key", "day-3", "--init-only", cwd=demo)
    before = _snapshot(source)
    going = etl_craft("engine", "copy", "--to", f"sqlite:///{demo.parent / 'going.db'}", cwd=demo)
    assert going.code == 24 and "has 1 run(s) that have not ended: run 4 of shop_ingest (day-3) is" in going.err
    assert _snapshot(source) == before and not (demo.parent / "going.db").exists()
