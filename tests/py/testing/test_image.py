"""The engine image of etl-craft test (etlcraft/testing/image.py): the migrated engine schema saved in the user's
cache by one run and read back by the next, trusted only when its key and digest match; and the project's Engine DB
made from it without rendering the engine's migrations again."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from etlcraft.engine import migrations
from etlcraft.testing import image, sandbox
from etlcraft.testing.runner import _read_migrations, load_project
from tests.py.testing.conftest import make_project


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty image cache of this test's own; the process's template is made again before and after."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(image.CACHE_ENV, str(folder))
    sandbox._engine_template.cache_clear()
    yield folder
    sandbox._engine_template.cache_clear()


def _built(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the times the engine's schema is migrated (not read from an image)."""
    built: list[int] = []
    real = sandbox._migrated_template

    def counting() -> sqlite3.Connection:
        built.append(1)
        return real()

    monkeypatch.setattr(sandbox, "_migrated_template", counting)
    return built


def _catalog(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    objects = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
    ledger = conn.execute("SELECT STREAM, VERSION, KIND, CHECKSUM FROM SCHEMA_MIGRATIONS ORDER BY 1, 2").fetchall()
    return objects + ledger


def _image_file(folder: Path) -> Path:
    files = list(folder.glob("engine-sqlite-*.image"))
    assert len(files) == 1, files
    return files[0]


def test_engine_template__second_process__read_from_the_image_not_migrated(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = _built(monkeypatch)
    first = _catalog(sandbox._engine_template())
    assert built == [1] and _image_file(cache).stat().st_size > 0
    sandbox._engine_template.cache_clear()  # as in a new process
    assert _catalog(sandbox._engine_template()) == first and built == [1]
    project = load_project(make_project(cache.parent))
    assert {p.code for p in project.metadata.pipelines} >= {"actions", "customer_orders"}


@pytest.mark.parametrize("damage", ["payload_byte", "truncated", "other_key", "not_an_image", "symlink"])
def test_engine_image__corrupt_or_foreign_file__ignored_and_built_again(
        cache: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    built = _built(monkeypatch)
    expected = _catalog(sandbox._engine_template())
    path = _image_file(cache)
    data = path.read_bytes()
    if damage == "payload_byte":
        path.write_bytes(data[:-100] + bytes([data[-100] ^ 0xFF]) + data[-99:])
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "other_key":
        path.write_bytes(data.replace(image.image_key().encode(), b"0" * 64, 1))
    elif damage == "not_an_image":
        path.write_bytes(b"SQLite format 3\0" + bytes(4096))
    else:
        elsewhere = cache.parent / "elsewhere.image"
        path.rename(elsewhere)
        path.symlink_to(elsewhere)
    assert image.load(image.image_key()) is None
    sandbox._engine_template.cache_clear()
    assert _catalog(sandbox._engine_template()) == expected and built == [1, 1]
    assert not path.is_symlink() and image.load(image.image_key()) is not None  # written again, sound


def test_engine_image__off__nothing_read_or_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(image.CACHE_ENV, "off")
    sandbox._engine_template.cache_clear()
    try:
        built = _built(monkeypatch)
        sandbox._engine_template()
        sandbox._engine_template.cache_clear()
        sandbox._engine_template()
    finally:
        sandbox._engine_template.cache_clear()
    assert built == [1, 1] and list(tmp_path.iterdir()) == []


def test_cache_dir__no_home_directory__no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    def homeless() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv(image.CACHE_ENV, raising=False)
    monkeypatch.setattr(Path, "home", homeless)
    assert image.cache_dir() is None and image.load(image.image_key()) is None


def test_engine_image__folder_cannot_be_made__built_and_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n", encoding="utf-8")
    monkeypatch.setenv(image.CACHE_ENV, str(blocker / "cache"))
    sandbox._engine_template.cache_clear()
    try:
        project = load_project(make_project(tmp_path))
    finally:
        sandbox._engine_template.cache_clear()
    assert "customer_orders" in {p.code for p in project.metadata.pipelines}
    assert blocker.read_text(encoding="utf-8") == "not a folder\n"


def test_image_key__a_source_changes__another_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "sql"
    shutil.copytree(image.sql_dir(), copy)
    monkeypatch.setattr(image, "sql_dir", lambda: copy)
    key = image.image_key()
    (copy / "rendered" / "note.txt").write_text("the rendered snapshot is no source\n", encoding="utf-8")
    assert image.image_key() == key
    template = sorted((copy / "functions").glob("0*.sql.j2"))[0]
    template.write_text(template.read_text(encoding="utf-8") + "\n-- one more line\n", encoding="utf-8")
    changed = image.image_key()
    assert changed != key
    (copy / "state_machine.yaml").write_text("# changed\n" + (copy / "state_machine.yaml").read_text(
        encoding="utf-8"), encoding="utf-8")
    assert image.image_key() not in (key, changed)


def test_project_engine_db__engine_migrations_not_rendered_nor_an_action_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_project(tmp_path)
    recorded = sandbox._engine_template().execute("SELECT COUNT(*) FROM AUD_ACTIONS").fetchone()

    def forbidden(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the engine's migrations were rendered again for a project")

    monkeypatch.setattr(migrations, "engine_migrations", forbidden)
    monkeypatch.setattr(migrations, "repeatable_objects", forbidden)
    with sandbox.engine_db(_read_migrations(root)[0]) as db, db.engine.connect() as conn:
        pipelines = {r[0] for r in conn.exec_driver_sql("SELECT PIPELINE_CODE FROM CFG_PIPELINES")}
        actions = conn.exec_driver_sql("SELECT COUNT(*) FROM AUD_ACTIONS").scalar()
        changes = conn.exec_driver_sql("SELECT COUNT(*) FROM AUD_METADATA_CHANGES").scalar()
    assert pipelines >= {"actions", "customer_orders"} and changes
    assert recorded is not None and actions == recorded[0]  # the engine schema's own migration only


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts the process's threads in /proc")
def test_load_driver__before_a_fork__dialect_and_settings_loaded_no_thread_left() -> None:
    script = (
        "import os, sys\n"
        "from etlcraft.testing.sandbox import load_driver\n"
        "assert 'duckdb_engine' not in sys.modules\n"
        "load_driver()\n"
        "from duckdb_engine.config import get_core_config\n"
        "info = get_core_config.cache_info()\n"
        "print(len(os.listdir('/proc/self/task')), info.misses, info.currsize)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["1", "1", "1"], done.stderr


def test_engine_image__many_keys__only_the_most_recent_kept(cache: Path) -> None:
    template = sandbox._engine_template()
    keys = [f"{n:02x}" * 32 for n in range(image.KEEP_IMAGES + 3)]
    past = time.time() - 1000
    for n, key in enumerate(keys):  # written in this order (mtimes set apart: a file system's clock may be coarse)
        image.store(key, template)
        os.utime(cache / f"engine-sqlite-{key[:32]}.image", (past + n, past + n))
    kept = list(cache.glob("engine-*.image"))
    assert len(kept) == image.KEEP_IMAGES
    assert image.load(keys[-1]) is not None and image.load(keys[0]) is None  # the oldest went, the last stays
