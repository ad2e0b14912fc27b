"""etl-craft init: the example and blank project layouts, refusing to overwrite, and project codes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from etlcraft.config.loader import load_config
from etlcraft.core.errors import RefusedByPolicyError, UsageError
from etlcraft.services import scaffold as scaffold_module
from etlcraft.services.scaffold import project_code_for, scaffold

FILES = {
    "craft-connector.yml",
    ".env.example",
    ".gitignore",
    "migrations/0001_shop_ingest.sql",
    "migrations/0002_customer_orders.sql",
    "ingestion_scripts/ingest_customers.py",
    "ingestion_scripts/ingest_orders.py",
    "sql_files/load_customers.sql",
    "sql_files/load_orders.sql",
    "sql_files/customer_totals.sql",
    "tests/customer_orders_load_orders.test.yaml",
    "tests/fixtures/load_orders.expected.jsonl",
    "tests/fixtures/load_orders.raw_orders.jsonl",
}
FOLDERS = {"migrations", "sql_files", "ingestion_scripts", "tests"}
BLANK_FILES = {
    "craft-connector.yml",
    ".env.example",
    ".gitignore",
    "migrations/.gitkeep",
    "sql_files/README.md",
    "ingestion_scripts/README.md",
}


def tree(directory: Path) -> set[str]:
    """Every file and folder under `directory`, as posix paths relative to it."""
    return {p.relative_to(directory).as_posix() for p in directory.rglob("*")}


def snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(directory).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in directory.rglob("*")
        if p.is_file()
    }


# ------------------------------------------------------------------------------------------ fresh project


def test_scaffold_creates_the_files_and_folders(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    report = scaffold(project)
    assert report.directory == project
    assert report.project_code == "shop"
    assert set(report.created) == FILES
    assert len(report.created) == len(FILES)
    assert report.unchanged == []
    assert tree(project) == FILES | FOLDERS | {"tests/fixtures"}
    for folder in FOLDERS:
        assert (project / folder).is_dir()
    assert sorted(p.name for p in (project / "ingestion_scripts").iterdir()) == ["ingest_customers.py",
                                                                                 "ingest_orders.py"]
    assert sorted(p.name for p in (project / "tests").iterdir()) == [
        "customer_orders_load_orders.test.yaml", "fixtures"]
    assert not (project / ".env").exists()


def test_byte_compiled_scaffold_scripts_are_not_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pip byte-compiles every .py of the wheel it installs, the scaffold's scripts too: init skips __pycache__."""
    source = tmp_path / "scaffold"
    shutil.copytree(scaffold_module._SOURCE, source, ignore=shutil.ignore_patterns("__pycache__"))
    (source / "example" / "ingestion_scripts" / "__pycache__").mkdir()
    (source / "example" / "ingestion_scripts" / "__pycache__" / "ingest_orders.cpython-311.pyc").write_bytes(
        b"\xa7\r\r\n\0")
    monkeypatch.setattr(scaffold_module, "_SOURCE", source)
    project = tmp_path / "shop"
    report = scaffold(project)
    assert set(report.created) == FILES
    assert tree(project) == FILES | FOLDERS | {"tests/fixtures"}


def test_a_blank_project_has_the_configuration_and_folders_that_say_what_goes_in_them(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    report = scaffold(project, blank=True)
    assert (report.project_code, report.blank, report.unchanged) == ("shop", True, [])
    assert report.created == ["craft-connector.yml", ".env.example", ".gitignore", "ingestion_scripts/README.md",
                              "migrations/.gitkeep", "sql_files/README.md"]
    assert tree(project) == BLANK_FILES | FOLDERS
    assert (project / "migrations" / ".gitkeep").read_bytes() == b""
    assert "HANDLER = 'PYTHON'" in (project / "ingestion_scripts" / "README.md").read_text(encoding="utf-8")
    assert "HANDLER = 'SQL'" in (project / "sql_files" / "README.md").read_text(encoding="utf-8")
    for shared in ("craft-connector.yml", ".env.example", ".gitignore"):
        scaffold(tmp_path / "example")
        assert (project / shared).read_bytes() == (tmp_path / "example" / shared).read_bytes(), shared
        shutil.rmtree(tmp_path / "example")


def test_a_blank_project_has_no_migration_file_and_no_template_syntax(tmp_path: Path) -> None:
    scaffold(tmp_path, "shop", blank=True)
    assert [p.name for p in (tmp_path / "migrations").iterdir()] == [".gitkeep"]
    for relative in BLANK_FILES - {"migrations/.gitkeep"}:
        text = (tmp_path / relative).read_text(encoding="utf-8")
        assert "{{" not in text and "{%" not in text, relative
        assert text.endswith("\n"), relative


@pytest.mark.parametrize("migration", ["0001_shop_ingest.sql", "0002_customer_orders.sql"])
def test_the_example_migrations_are_rendered_with_the_project_code(tmp_path: Path, migration: str) -> None:
    scaffold(tmp_path / "p", "sales_eu")
    sql = (tmp_path / "p" / "migrations" / migration).read_text(encoding="utf-8")
    assert ("VALUES ('sales_eu', 'sales_eu')" in sql) == (migration == "0001_shop_ingest.sql")
    assert "PROJECT_CODE = 'sales_eu'" in sql
    assert "{{" not in sql and "}}" not in sql
    assert "project_code" not in sql


def test_every_scaffolded_file_is_free_of_template_syntax(tmp_path: Path) -> None:
    scaffold(tmp_path, "shop")
    for relative in FILES:
        text = (tmp_path / relative).read_text(encoding="utf-8")
        assert "{{" not in text and "{%" not in text, relative
        assert text.endswith("\n"), relative


def test_the_gitignore_keeps_secrets_and_local_state_out_of_git(tmp_path: Path) -> None:
    scaffold(tmp_path)
    ignored = (tmp_path / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".env" in ignored
    assert ".etl-craft/" in ignored


def test_the_env_example_names_the_variables_without_values(tmp_path: Path) -> None:
    scaffold(tmp_path)
    lines = (tmp_path / ".env.example").read_text(encoding="utf-8").splitlines()
    assert "# ETL_CRAFT_ENGINE_PASSWORD=" in lines
    assert "# ETL_CRAFT_WAREHOUSE_PASSWORD=" in lines
    assert all(line.startswith("#") or not line.strip() for line in lines)


def test_a_relative_directory_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    report = scaffold(Path("rel"))
    assert report.directory == tmp_path / "rel"
    assert report.directory.is_absolute()
    assert (tmp_path / "rel" / "craft-connector.yml").is_file()


def test_an_existing_empty_directory_is_filled(tmp_path: Path) -> None:
    report = scaffold(tmp_path)
    assert set(report.created) == FILES
    assert tree(tmp_path) == FILES | FOLDERS | {"tests/fixtures"}


def test_unrelated_files_in_the_directory_are_left_alone(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("mine\n", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mine.py").write_text("x = 1\n", encoding="utf-8")
    scaffold(tmp_path)
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == "mine\n"
    assert (tmp_path / "tests" / "test_mine.py").read_text(encoding="utf-8") == "x = 1\n"


# ----------------------------------------------------------------------------- the example ingestion scripts

_RECORDS = """
import runpy, sys
script = runpy.run_path(sys.argv[1])
make = script["change"] if "change" in script else script["order"]
for n in range(1, 201):
    print(repr(make(n)))
"""


@pytest.mark.parametrize("script", ["ingest_customers.py", "ingest_orders.py"])
def test_the_example_scripts_generate_the_same_records_in_every_process(tmp_path: Path, script: str) -> None:
    """The simulated shop is seeded per record, not by the hash seed or the clock: re-runs are reproducible."""
    scaffold(tmp_path, "shop")
    outputs = set()
    for seed in ("1", "2"):
        done = subprocess.run([sys.executable, "-c", _RECORDS, str(tmp_path / "ingestion_scripts" / script)],
                              env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True, check=True)
        outputs.add(done.stdout)
    assert len(outputs) == 1, "the same records whatever the hash seed"
    assert len(set(outputs.pop().splitlines())) == 200, "200 different records"


# ---------------------------------------------------------------------------- the scaffolded config loads


def test_the_scaffolded_config_loads_with_a_sqlite_engine_and_duckdb_warehouse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name != "PYTEST_CURRENT_TEST":
            monkeypatch.delenv(name)
    project = tmp_path / "proj"
    scaffold(project)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    config = load_config(project)
    assert config.engine.dialect == "sqlite"
    assert config.engine.path == project / ".etl-craft" / "engine.db"
    assert config.engine.secret is None
    assert config.warehouse.dialect == "duckdb"
    assert config.warehouse.path is not None
    assert config.warehouse.path.parent == project
    assert config.warehouse.path.suffix == ".duckdb"
    assert config.warehouse.secret is None


def test_two_scaffolded_projects_have_the_same_config_fingerprint(tmp_path: Path) -> None:
    scaffold(tmp_path / "a", "alpha")
    scaffold(tmp_path / "b", "beta")
    assert load_config(tmp_path / "a").sha256 == load_config(tmp_path / "b").sha256


# ------------------------------------------------------------------------------ refusing to overwrite


def project_message(directory: Path) -> str:
    return (
        f"{directory} is already an etl-craft project: it has craft-connector.yml; etl-craft init creates new "
        "projects and overwrites nothing: change this project with a new numbered file in migrations/ and "
        "etl-craft migrate, or give init a new or empty directory (nothing was written)"
    )


def conflict_message(directory: Path, found: str, many: bool = False) -> str:
    return (
        f"{directory} already has {found}, which etl-craft init would write; init overwrites nothing: move "
        f"{'them' if many else 'it'} away, or give init a new or empty directory (nothing was written)"
    )


@pytest.mark.parametrize("blank", [False, True], ids=["example", "blank"])
@pytest.mark.parametrize("again_blank", [False, True], ids=["then-example", "then-blank"])
def test_a_second_init_is_refused_and_changes_nothing(tmp_path: Path, blank: bool, again_blank: bool) -> None:
    scaffold(tmp_path, "shop", blank=blank)
    before = snapshot(tmp_path)
    with pytest.raises(RefusedByPolicyError) as info:
        scaffold(tmp_path, "shop", blank=again_blank)
    assert str(info.value) == project_message(tmp_path)
    assert info.value.exit_code == 24
    assert snapshot(tmp_path) == before


def test_a_project_with_files_missing_is_still_refused(tmp_path: Path) -> None:
    scaffold(tmp_path, "shop")
    (tmp_path / "sql_files" / "load_orders.sql").unlink()
    shutil.rmtree(tmp_path / "ingestion_scripts")
    before = tree(tmp_path)
    with pytest.raises(RefusedByPolicyError):
        scaffold(tmp_path, "shop")
    assert tree(tmp_path) == before


@pytest.mark.parametrize("kind", ["file", "folder", "identical"])
def test_a_craft_connector_yml_of_any_kind_is_refused(tmp_path: Path, kind: str) -> None:
    config = tmp_path / "craft-connector.yml"
    if kind == "folder":
        config.mkdir()
    else:
        config.write_text("Engine: {dialect: sqlite, path: mine.db}\n" if kind == "file" else
                          (scaffold_module._SOURCE / "common" / "craft-connector.yml").read_text(encoding="utf-8"),
                          encoding="utf-8")
    before = snapshot(tmp_path)
    with pytest.raises(RefusedByPolicyError) as info:
        scaffold(tmp_path)
    assert str(info.value) == project_message(tmp_path)
    assert tree(tmp_path) == {"craft-connector.yml"}
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "relative",
    [
        ".gitignore",
        ".env.example",
        "migrations/0001_shop_ingest.sql",
        "sql_files/load_orders.sql",
        "ingestion_scripts/ingest_orders.py",
    ],
)
@pytest.mark.parametrize("content", ["my own content\n", "same"], ids=["different", "identical"])
def test_an_existing_file_init_would_write_is_refused_before_anything_is_written(
    tmp_path: Path, relative: str, content: str
) -> None:
    target = tmp_path / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if content == "same":
        scaffold(tmp_path / "other", "shop")
        content = (tmp_path / "other" / relative).read_text(encoding="utf-8")
        shutil.rmtree(tmp_path / "other")
    target.write_text(content, encoding="utf-8")
    before = tree(tmp_path)
    with pytest.raises(RefusedByPolicyError) as info:
        scaffold(tmp_path, "shop")
    assert str(info.value) == conflict_message(tmp_path, relative)
    assert info.value.exit_code == 24
    assert tree(tmp_path) == before
    assert target.read_text(encoding="utf-8") == content


@pytest.mark.parametrize("relative", sorted(BLANK_FILES - {"craft-connector.yml"}))
def test_an_existing_file_a_blank_init_would_write_is_refused(tmp_path: Path, relative: str) -> None:
    target = tmp_path / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("mine\n", encoding="utf-8")
    before = tree(tmp_path)
    with pytest.raises(RefusedByPolicyError) as info:
        scaffold(tmp_path, blank=True)
    assert str(info.value) == conflict_message(tmp_path, relative)
    assert tree(tmp_path) == before


def test_every_conflict_is_named_up_to_five(tmp_path: Path) -> None:
    for relative in (".gitignore", ".env.example"):
        (tmp_path / relative).write_text("mine\n", encoding="utf-8")
    with pytest.raises(RefusedByPolicyError) as info:
        scaffold(tmp_path)
    assert str(info.value) == conflict_message(tmp_path, ".env.example, .gitignore", many=True)
    scaffold(tmp_path / "src", "shop")
    (tmp_path / "src" / "craft-connector.yml").unlink()
    with pytest.raises(RefusedByPolicyError) as info:
        scaffold(tmp_path / "src", "shop")
    assert str(info.value) == conflict_message(
        tmp_path / "src", ".env.example, .gitignore, ingestion_scripts/ingest_customers.py, "
        "ingestion_scripts/ingest_orders.py, migrations/0001_shop_ingest.sql and 7 more", many=True)


def test_an_existing_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    target = tmp_path / ".gitignore"
    target.write_bytes(b"\xff\xfe.env\n")
    with pytest.raises(RefusedByPolicyError) as info:
        scaffold(tmp_path)
    assert str(info.value) == conflict_message(tmp_path, ".gitignore")
    assert tree(tmp_path) == {".gitignore"}


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_a_file_where_a_folder_belongs_is_refused_before_anything_is_written(
    tmp_path: Path, folder: str
) -> None:
    (tmp_path / folder).write_text("not a folder\n", encoding="utf-8")
    with pytest.raises(RefusedByPolicyError) as info:
        scaffold(tmp_path)
    assert str(info.value) == conflict_message(tmp_path, f"{folder} (not a folder)")
    assert tree(tmp_path) == {folder}


# ------------------------------------------------------------------------------------------ project codes


@pytest.mark.parametrize(
    ("folder", "code"),
    [
        ("my-project", "my_project"),
        ("9lives", "p_9lives"),
        ("shop", "shop"),
        ("Sales_2024", "Sales_2024"),
        ("my project", "my_project"),
        ("a.b.c", "a_b_c"),
        ("café", "caf_"),
        ("_private", "p__private"),
        ("-", "p__"),
    ],
)
def test_project_code_for_derives_an_identifier_from_the_folder(
    tmp_path: Path, folder: str, code: str
) -> None:
    assert project_code_for(tmp_path / folder) == code


def test_project_code_for_a_very_long_folder_name_is_a_valid_code(tmp_path: Path) -> None:
    code = project_code_for(tmp_path / ("9" * 300))
    assert code == "p_" + "9" * 120
    scaffold(tmp_path / "p", code)


def test_project_code_for_a_relative_folder_uses_its_real_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my-project").mkdir()
    monkeypatch.chdir(tmp_path / "my-project")
    assert project_code_for(Path(".")) == "my_project"


def test_without_a_code_scaffold_uses_the_folder_name(tmp_path: Path) -> None:
    report = scaffold(tmp_path / "9-lives")
    assert report.project_code == "p_9_lives"
    sql = (tmp_path / "9-lives" / "migrations" / "0001_shop_ingest.sql").read_text(encoding="utf-8")
    assert "VALUES ('p_9_lives', 'p_9_lives')" in sql


def test_an_explicit_code_wins_over_the_folder_name(tmp_path: Path) -> None:
    assert scaffold(tmp_path / "my-project", "shop").project_code == "shop"


@pytest.mark.parametrize("code", ["a", "A1", "shop_eu_2", "x" * 128])
def test_a_valid_explicit_code_is_accepted(tmp_path: Path, code: str) -> None:
    report = scaffold(tmp_path / "p", code)
    assert report.project_code == code
    assert f"VALUES ('{code}', '{code}')" in (tmp_path / "p" / "migrations" / "0001_shop_ingest.sql").read_text(
        encoding="utf-8"
    )


@pytest.mark.parametrize(
    ("code", "shown"),
    [
        pytest.param("9lives", "'9lives'", id="starts-with-digit"),
        pytest.param("_shop", "'_shop'", id="starts-with-underscore"),
        pytest.param("my-project", "'my-project'", id="hyphen"),
        pytest.param("my project", "'my project'", id="space"),
        pytest.param("café", "'café'", id="non-ascii"),
        pytest.param(
            "x'); DROP TABLE CFG_PROJECTS; --", '"x\'); DROP TABLE CFG_PROJECTS; --"', id="sql-quote"
        ),
        pytest.param("x" * 129, "'" + "x" * 129 + "'", id="129-characters"),
        pytest.param("", "''", id="empty"),
        pytest.param("shop\n", "'shop\\n'", id="trailing-newline"),
    ],
)
def test_an_invalid_explicit_code_is_refused(tmp_path: Path, code: str, shown: str) -> None:
    project = tmp_path / "p"
    with pytest.raises(UsageError) as info:
        scaffold(project, code)
    assert str(info.value) == (
        f"the project code {shown} is not an identifier; use a letter, then letters, digits or _"
    )
    assert not project.exists()
