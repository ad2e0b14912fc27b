"""etlcraft.engine.bundles: the manifest of a project's files, the file:// artifact store, the verified cache, and
the imports of ingestion scripts an interpreter cannot find (parsed, never imported)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from etlcraft.core.errors import ConfigurationError
from etlcraft.engine.bundles import (
    CACHE_ENV,
    BundleIntegrityError,
    Manifest,
    build_manifest,
    cache_root,
    materialize,
    missing_imports,
    open_store,
)

CONFIG = "Engine:\n  dialect: sqlite\n  path: e.db\nWarehouse:\n  dialect: duckdb\n  path: w.duckdb\n"


def _project(root: Path) -> Path:
    (root / "sql_files" / "sub").mkdir(parents=True)
    (root / "ingestion_scripts" / "__pycache__").mkdir(parents=True)
    (root / "craft-connector.yml").write_text(CONFIG + "Engine_secret_is: ${NOT_RESOLVED}\n")
    (root / "sql_files" / "a.sql").write_text("SELECT 1 AS v")
    (root / "sql_files" / "sub" / "b.sql").write_text("SELECT 2 AS v")
    (root / "sql_files" / ".hidden.sql").write_text("SELECT 3")
    (root / "ingestion_scripts" / "load.py").write_text("import json\n")
    (root / "ingestion_scripts" / "__pycache__" / "load.cpython-311.pyc").write_bytes(b"\0")
    (root / "migrations").mkdir()
    (root / "migrations" / "0001_x.sql").write_text("-- not in a bundle")
    return root


def test_build_manifest__sql_scripts_and_config_as_written__without_hidden_caches_or_migrations(
        tmp_path: Path) -> None:
    manifest = build_manifest(_project(tmp_path / "p"))
    assert sorted(manifest.files) == ["craft-connector.yml", "ingestion_scripts/load.py", "sql_files/a.sql",
                                      "sql_files/sub/b.sql"]
    assert manifest.files["sql_files/a.sql"] == hashlib.sha256(b"SELECT 1 AS v").hexdigest()
    assert manifest.files["craft-connector.yml"] == hashlib.sha256(
        (tmp_path / "p" / "craft-connector.yml").read_bytes()).hexdigest(), "the config is kept as written"
    assert json.loads(manifest.text) == manifest.files and manifest.sha256 == hashlib.sha256(
        manifest.text.encode()).hexdigest()
    assert manifest.total_bytes == sum((tmp_path / "p" / f).stat().st_size for f in manifest.files)


def _published(tmp_path: Path) -> tuple[Manifest, Path]:
    project = _project(tmp_path / "p")
    store = open_store(f"file://{tmp_path / 'store'}")
    manifest = build_manifest(project)
    assert all(store.put(d, project / f) for f, d in manifest.files.items())
    assert not any(store.put(d, project / f) for f, d in manifest.files.items()), "each file is uploaded once"
    return manifest, tmp_path / "store"


def test_materialize__a_corrupted_or_missing_cached_file__is_fetched_again_and_verified(tmp_path: Path) -> None:
    manifest, store_dir = _published(tmp_path)
    store = open_store(f"file://{store_dir}")
    first = materialize(7, manifest, store, tmp_path / "cache")
    assert first.path == tmp_path / "cache" / "7" and first.refetched == ()
    assert (first.path / "sql_files" / "sub" / "b.sql").read_text() == "SELECT 2 AS v"
    (first.path / "sql_files" / "a.sql").write_text("SELECT 666 AS v")
    (first.path / "sql_files" / "sub" / "b.sql").unlink()
    again = materialize(7, manifest, store, tmp_path / "cache")
    assert [r.split(" ")[0] for r in again.refetched] == ["sql_files/a.sql", "sql_files/sub/b.sql"]
    assert "expected " + manifest.files["sql_files/a.sql"] in again.refetched[0]
    assert (again.path / "sql_files" / "a.sql").read_text() == "SELECT 1 AS v"
    assert (again.path / "sql_files" / "sub" / "b.sql").read_text() == "SELECT 2 AS v"


def test_materialize__a_store_file_whose_hash_differs__is_refused(tmp_path: Path) -> None:
    manifest, store_dir = _published(tmp_path)
    digest = manifest.files["sql_files/a.sql"]
    (store_dir / "sha256" / digest[:2] / digest).write_text("SELECT 'tampered'")
    with pytest.raises(BundleIntegrityError, match=f"bundle 3, file sql_files/a.sql: .* expected {digest}"):
        materialize(3, manifest, open_store(f"file://{store_dir}"), tmp_path / "cache")
    assert not (tmp_path / "cache" / "3" / "sql_files" / "a.sql").exists(), "nothing unverified is left to run"


def test_open_store__relative_urls_and_other_schemes__refused_with_the_remedy() -> None:
    with pytest.raises(ConfigurationError, match="expected file:// and the absolute path of a folder"):
        open_store("file://relative/folder")
    with pytest.raises(ConfigurationError, match="or s3://BUCKET/PREFIX: correct it in craft-connector.yml"):
        open_store("gs://bucket/prefix")


def test_manifest_parse__paths_leaving_the_bundle__refused() -> None:
    with pytest.raises(BundleIntegrityError, match="bundle 4: its MANIFEST"):
        Manifest.parse(json.dumps({"../../etc/passwd": "1" * 64}), 4)
    assert Manifest.parse(json.dumps({"sql_files/a.sql": "1" * 64}), 4).files == {"sql_files/a.sql": "1" * 64}


def test_cache_root__setting_then_environment_then_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env"))
    assert cache_root(None) == tmp_path / "env"
    monkeypatch.delenv(CACHE_ENV)
    assert cache_root(None) == Path.home() / ".cache" / "etl-craft" / "bundles"


def test_missing_imports__lists_what_cannot_be_found__never_runs_the_script(tmp_path: Path) -> None:
    scripts = tmp_path / "ingestion_scripts"
    scripts.mkdir()
    (scripts / "load.py").write_text(
        "import json, os.path\nimport no_such_module_xyz.sub\nfrom etlcraft.scripting import ScriptTask\n"
        "from . import sibling\nfrom another_missing_pkg import thing\n"
        "raise SystemExit('the script was run')\n")
    found = [(m.script, m.line, m.module) for m in missing_imports(scripts)]
    assert found == [("load.py", 2, "no_such_module_xyz"), ("load.py", 5, "another_missing_pkg")]


def test_budget_verdict__warns_above_80_percent_of_max_connections() -> None:
    from etlcraft.services.doctor_cluster import budget_verdict, worker_pool

    assert [worker_pool(4, 16), worker_pool(1, 0), worker_pool(8, 8)] == [5, 3, 4]
    ok = budget_verdict(10, [5, 3], 62, 100)  # a spare task process holds no connection
    assert ok.status == "ok" and ok.detail.startswith("80 of max_connections 100 (80%)")
    assert ok.detail.endswith("+ 62 task attempt(s) claimed or running")
    warned = budget_verdict(10, [5, 3], 63, 100)
    assert warned.status == "warn" and "above 80%" in warned.detail and "PgBouncer" in (warned.remedy or "")


def test_artifacts_section__read__and_a_bundled_config_keeps_the_working_folder_paths(tmp_path: Path) -> None:
    from etlcraft.config.loader import load_config

    working, bundle = tmp_path / "work", tmp_path / "bundle"
    working.mkdir()
    bundle.mkdir()
    (working / "craft-connector.yml").write_text(CONFIG)
    (bundle / "craft-connector.yml").write_text(
        CONFIG + "Artifacts:\n  Store: file:///srv/artifacts\n  Cache_dir: cache\n")
    assert load_config(working).artifacts is None
    config = load_config(working, bundle / "craft-connector.yml")
    assert config.artifacts is not None and config.artifacts.store == "file:///srv/artifacts"
    assert config.artifacts.cache_dir == working / "cache" and cache_root(config) == working / "cache"
    assert config.project_dir == working and config.warehouse.path == working / "w.duckdb"
