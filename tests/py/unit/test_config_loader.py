"""craft-connector.yml and .env: strict loading, secrets by name only, and the defects B48, B55, B56, B58."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from etlcraft.config.loader import (
    CONFIG_FILE,
    SECRET_QUERY_KEYS,
    load_config,
    read_env_file,
    resolve_variable,
)
from etlcraft.core.errors import ConfigurationError

ENGINE_SQLITE = "Engine:\n  dialect: sqlite\n  path: engine.db\n"
TIMEOUT_KEYS = ", connect_timeout_seconds, statement_timeout_seconds, busy_timeout_seconds"
WAREHOUSE_DUCKDB = "Warehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n"
ENGINE_PG = (
    "Engine:\n"
    "  dialect: postgresql\n"
    "  url: postgresql://etl_craft@db.example.com:5432/etl\n"
    "  secret: ETL_CRAFT_ENGINE_PASSWORD\n"
    "  schema: etl_craft\n"
)
WAREHOUSE_PG = (
    "Warehouse:\n"
    "  dialect: postgresql\n"
    "  url: postgresql://analyst@dw.example.com/dw\n"
    "  secret: ETL_CRAFT_WAREHOUSE_PASSWORD\n"
)
SECRET_VALUE = "s3cr3t-Value-never-printed"


@pytest.fixture(autouse=True)
def _hermetic_environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test here sees the real environment's variables (they would change near-miss hints and lookups)."""
    for name in list(os.environ):
        if name != "PYTEST_CURRENT_TEST":
            monkeypatch.delenv(name)


def write_project(directory: Path, text: str, env: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / CONFIG_FILE).write_text(text, encoding="utf-8")
    if env is not None:
        (directory / ".env").write_text(env, encoding="utf-8")
    return directory


def load_error(directory: Path) -> str:
    with pytest.raises(ConfigurationError) as info:
        load_config(directory)
    return str(info.value)


# --------------------------------------------------------------------------------------------- valid files


def test_sqlite_engine_and_duckdb_warehouse_load_as_files_in_the_project(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", ENGINE_SQLITE + WAREHOUSE_DUCKDB)
    config = load_config(project)
    assert config.project_dir == project
    assert config.engine.dialect == "sqlite"
    assert config.engine.path == project / "engine.db"
    assert config.engine.url == f"sqlite:///{project / 'engine.db'}"
    assert config.engine.secret is None and config.engine.schema is None
    assert config.warehouse.dialect == "duckdb"
    assert config.warehouse.path == project / "warehouse.duckdb"
    assert config.warehouse.url == f"duckdb:///{project / 'warehouse.duckdb'}"
    assert re.fullmatch(r"[0-9a-f]{64}", config.sha256)


def test_postgresql_connections_keep_url_schema_and_secret_name(tmp_path: Path) -> None:
    config = load_config(write_project(tmp_path, ENGINE_PG + WAREHOUSE_PG))
    assert config.engine.dialect == "postgresql"
    assert config.engine.url == "postgresql://etl_craft@db.example.com:5432/etl"
    assert config.engine.secret == "ETL_CRAFT_ENGINE_PASSWORD"
    assert config.engine.schema == "etl_craft"
    assert config.engine.path is None
    assert config.warehouse.url == "postgresql://analyst@dw.example.com/dw"
    assert config.warehouse.secret == "ETL_CRAFT_WAREHOUSE_PASSWORD"


def test_postgres_scheme_alias_and_harmless_query_keys_are_accepted(tmp_path: Path) -> None:
    text = (
        "Engine:\n  dialect: postgresql\n"
        "  url: postgres://etl@db/etl?sslmode=require&application_name=etl-craft&connect_timeout=5\n"
        + WAREHOUSE_DUCKDB
    )
    config = load_config(write_project(tmp_path, text))
    assert (
        config.engine.url
        == "postgresql://etl@db/etl?sslmode=require&application_name=etl-craft&connect_timeout=5"
    )


def test_a_byte_order_mark_in_the_config_file_is_tolerated(tmp_path: Path) -> None:
    tmp_path.joinpath(CONFIG_FILE).write_bytes(b"\xef\xbb\xbf" + (ENGINE_SQLITE + WAREHOUSE_DUCKDB).encode())
    assert load_config(tmp_path).engine.dialect == "sqlite"


def test_values_are_stripped_of_surrounding_blanks(tmp_path: Path) -> None:
    text = 'Engine:\n  dialect: " sqlite "\n  path: "  engine.db  "\n' + WAREHOUSE_DUCKDB
    config = load_config(write_project(tmp_path, text))
    assert config.engine.dialect == "sqlite"
    assert config.engine.path == tmp_path / "engine.db"


def test_an_absolute_path_is_kept_as_given(tmp_path: Path) -> None:
    elsewhere = tmp_path / "data" / "engine.db"
    text = f"Engine:\n  dialect: sqlite\n  path: {elsewhere}\n" + WAREHOUSE_DUCKDB
    assert load_config(write_project(tmp_path / "p", text)).engine.path == elsewhere


# ------------------------------------------------------------------------------------- broken configurations

BROKEN = [
    pytest.param(
        ENGINE_SQLITE + WAREHOUSE_DUCKDB + "Source:\n  dialect: duckdb\n",
        "craft-connector.yml: unknown section 'Source'; the sections are Engine, Warehouse, Email, Orchestration, "
        "Alerts, Artifacts",
        id="unknown-section",
    ),
    pytest.param(
        "engine:\n  dialect: sqlite\n  path: e.db\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: unknown section 'engine'; the sections are Engine, Warehouse, Email, Orchestration, "
        "Alerts, Artifacts; "
        "did you mean Engine? (names are case-sensitive)",
        id="section-name-is-case-sensitive",
    ),
    pytest.param(
        WAREHOUSE_DUCKDB,
        "craft-connector.yml: the section Engine is missing",
        id="engine-missing",
    ),
    pytest.param(
        ENGINE_SQLITE,
        "craft-connector.yml: the section Warehouse is missing",
        id="warehouse-missing",
    ),
    pytest.param(
        "Engine:\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine must be a mapping of dialect, path, url, secret, schema"
        + TIMEOUT_KEYS,
        id="engine-empty",
    ),
    pytest.param(
        "Engine:\n  - sqlite\n  - engine.db\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine must be a mapping of dialect, path, url, secret, schema"
        + TIMEOUT_KEYS,
        id="engine-is-a-list",
    ),
    pytest.param(
        ENGINE_SQLITE + "Warehouse: duckdb\n",
        "craft-connector.yml: Warehouse must be a mapping of dialect, path, url, secret"
        + TIMEOUT_KEYS,
        id="warehouse-is-a-scalar",
    ),
    pytest.param(
        ENGINE_SQLITE + "  host: localhost\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: unknown key Engine.host; "
        "the keys of Engine are dialect, path, url, secret, schema"
        + TIMEOUT_KEYS,
        id="unknown-engine-key",
    ),
    pytest.param(
        ENGINE_SQLITE + "  password: hunter2\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: unknown key Engine.password; "
        "the keys of Engine are dialect, path, url, secret, schema"
        + TIMEOUT_KEYS,
        id="password-key-is-unknown",
    ),
    pytest.param(
        ENGINE_SQLITE + WAREHOUSE_PG + "  schema: dw\n",
        "craft-connector.yml: unknown key Warehouse.schema; "
        "the keys of Warehouse are dialect, path, url, secret"
        + TIMEOUT_KEYS,
        id="warehouse-has-no-schema",
    ),
    pytest.param(
        "Engine:\n  path: engine.db\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.dialect is None; supported: sqlite, postgresql",
        id="dialect-missing",
    ),
    pytest.param(
        "Engine:\n  dialect: duckdb\n  path: e.duckdb\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.dialect is 'duckdb'; supported: sqlite, postgresql",
        id="engine-cannot-be-duckdb",
    ),
    pytest.param(
        ENGINE_SQLITE + "Warehouse:\n  dialect: sqlite\n  path: w.db\n",
        "craft-connector.yml: Warehouse.dialect is 'sqlite'; supported: duckdb, postgresql",
        id="warehouse-cannot-be-sqlite",
    ),
    pytest.param(
        "Engine:\n  dialect: mysql\n  url: mysql://db/etl\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.dialect is 'mysql'; supported: sqlite, postgresql",
        id="unsupported-dialect",
    ),
    pytest.param(
        "Engine:\n  dialect: SQLite\n  path: e.db\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.dialect is 'SQLite'; supported: sqlite, postgresql",
        id="dialect-is-case-sensitive",
    ),
    pytest.param(
        'Engine:\n  dialect: ""\n  path: e.db\n' + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.dialect must be a non-empty text, found ''",
        id="dialect-empty",
    ),
    pytest.param(
        'Engine:\n  dialect: sqlite\n  path: "   "\n' + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.path must be a non-empty text, found '   '",
        id="path-blank",
    ),
    pytest.param(
        "Engine:\n  dialect: sqlite\n  path:\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.path must be a non-empty text, found None",
        id="path-null",
    ),
    pytest.param(
        "Engine:\n  dialect: sqlite\n  path: 42\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.path must be a non-empty text, found 42",
        id="path-number",
    ),
    pytest.param(
        ENGINE_SQLITE + "Warehouse:\n  dialect: duckdb\n  path: [a, b]\n",
        "craft-connector.yml: Warehouse.path must be a non-empty text, found ['a', 'b']",
        id="path-list",
    ),
    pytest.param(
        "Engine:\n  dialect: postgresql\n  url: postgresql://etl@db/etl\n  secret: true\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.secret must be a non-empty text, found True",
        id="secret-boolean",
    ),
    pytest.param(
        "Engine:\n  dialect: sqlite\n  path: e.db\n  url: sqlite:///e.db\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.url does not apply to sqlite; remove it",
        id="sqlite-with-url",
    ),
    pytest.param(
        "Engine:\n  dialect: sqlite\n  path: e.db\n  schema: etl\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.schema does not apply to sqlite; remove it",
        id="sqlite-with-schema",
    ),
    pytest.param(
        ENGINE_SQLITE + "Warehouse:\n  dialect: duckdb\n  path: w.duckdb\n  secret: DW_PASSWORD\n",
        "craft-connector.yml: Warehouse.secret does not apply to duckdb; remove it",
        id="duckdb-with-secret",
    ),
    pytest.param(
        "Engine:\n  dialect: sqlite\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.path is missing; name the sqlite database file",
        id="sqlite-path-missing",
    ),
    pytest.param(
        ENGINE_SQLITE + "Warehouse:\n  dialect: duckdb\n",
        "craft-connector.yml: Warehouse.path is missing; name the duckdb database file",
        id="duckdb-path-missing",
    ),
    pytest.param(
        "Engine:\n  dialect: postgresql\n  url: postgresql://etl@db/etl\n  path: e.db\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.path does not apply to postgresql; use url",
        id="postgresql-with-path",
    ),
    pytest.param(
        "Engine:\n  dialect: postgresql\n  secret: ETL_CRAFT_ENGINE_PASSWORD\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.url is missing; e.g. postgresql://etl@db.example.com/etl",
        id="postgresql-url-missing",
    ),
    pytest.param(
        "Engine:\n  dialect: postgresql\n  url: mysql://etl@db/etl\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.url must start with postgresql://",
        id="url-wrong-scheme",
    ),
    pytest.param(
        ENGINE_SQLITE + "Warehouse:\n  dialect: postgresql\n  url: db.example.com/dw\n",
        "craft-connector.yml: Warehouse.url must start with postgresql://",
        id="url-without-scheme",
    ),
    pytest.param(
        "Engine:\n  dialect: postgresql\n  url: postgresql://etl:hunter2@db/etl\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.url holds a password; remove it and name its variable in Engine.secret",
        id="password-in-engine-url",
    ),
    pytest.param(
        ENGINE_SQLITE + "Warehouse:\n  dialect: postgresql\n  url: postgres://dw:hunter2@dw:5432/dw\n",
        "craft-connector.yml: Warehouse.url holds a password; "
        "remove it and name its variable in Warehouse.secret",
        id="password-in-warehouse-url",
    ),
    pytest.param(
        "Engine:\n  dialect: postgresql\n  url: postgresql://etl@db/etl\n  secret: hunter2!\n"
        + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.secret must be the name of a variable (letters, digits, _), "
        "not a password; "
        "put the password in that variable (environment or .env)",
        id="secret-is-a-password",
    ),
    pytest.param(
        "Engine:\n  dialect: postgresql\n  url: postgresql://etl@db/etl\n  secret: $ETL_PW\n"
        + WAREHOUSE_DUCKDB,
        "craft-connector.yml: Engine.secret must be the name of a variable (letters, digits, _), "
        "not a password; "
        "put the password in that variable (environment or .env)",
        id="secret-is-a-shell-expansion",
    ),
    pytest.param(
        ENGINE_SQLITE + WAREHOUSE_PG.replace("ETL_CRAFT_WAREHOUSE_PASSWORD", "9_PASSWORD"),
        "craft-connector.yml: Warehouse.secret must be the name of a variable (letters, digits, _), not a "
        "password; put the password in that variable (environment or .env)",
        id="secret-name-starts-with-a-digit",
    ),
]


@pytest.mark.parametrize(("text", "message"), BROKEN)
def test_broken_configuration_is_refused_with_its_message(tmp_path: Path, text: str, message: str) -> None:
    write_project(tmp_path, text)
    with pytest.raises(ConfigurationError) as info:
        load_config(tmp_path)
    assert str(info.value) == message
    assert info.value.exit_code == 3


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty-file"),
        pytest.param("# only a comment\n", id="comment-only"),
        pytest.param("- Engine\n- Warehouse\n", id="list"),
        pytest.param("just text\n", id="scalar"),
    ],
)
def test_a_file_that_is_not_a_mapping_is_refused_naming_the_sections(tmp_path: Path, text: str) -> None:
    write_project(tmp_path, text)
    assert load_error(tmp_path) == (
        f"{tmp_path / CONFIG_FILE} must be a mapping of sections (Engine, Warehouse, Email, Orchestration, "
        "Alerts, Artifacts)"
    )


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Engine: [unclosed\n", id="unclosed-flow"),
        pytest.param("Engine:\n\tdialect: sqlite\n", id="tab"),
        pytest.param("a: 1\n---\nb: 2\n", id="two-documents"),
        pytest.param("Engine: !!python/object:os.system {}\n", id="unsafe-tag"),
    ],
)
def test_invalid_yaml_is_refused_naming_the_file(tmp_path: Path, text: str) -> None:
    write_project(tmp_path, text)
    assert load_error(tmp_path).startswith(f"{tmp_path / CONFIG_FILE} is not valid YAML: ")


def test_a_missing_config_file_is_refused_with_the_remedy(tmp_path: Path) -> None:
    assert load_error(tmp_path) == (
        f"{tmp_path / CONFIG_FILE} does not exist; "
        "create a project with etl-craft init DIR, or pass --project DIR"
    )


def test_a_config_file_that_is_not_utf8_is_a_configuration_error(tmp_path: Path) -> None:
    tmp_path.joinpath(CONFIG_FILE).write_bytes(b"Engine:\n  dialect: sqlite\n  path: caf\xe9.db\n")
    assert str(tmp_path / CONFIG_FILE) in load_error(tmp_path)


@pytest.mark.parametrize(
    "url",
    ["postgresql://etl@[db/etl", "postgresql://etl:pw@[::1/etl"],
    ids=["unclosed-ipv6-bracket", "unclosed-ipv6-bracket-with-password"],
)
def test_a_malformed_url_is_a_configuration_error_naming_the_key(tmp_path: Path, url: str) -> None:
    write_project(tmp_path, f"Engine:\n  dialect: postgresql\n  url: {url}\n" + WAREHOUSE_DUCKDB)
    assert "Engine.url" in load_error(tmp_path)


# --------------------------------------------------------------------------------- B56: duplicate keys

DUPLICATES = [
    pytest.param(
        "Engine:\n  dialect: sqlite\n  path: a.db\n  path: b.db\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: the key 'path' appears twice in Engine (lines 3 and 4); keep one of them",
        id="in-engine",
    ),
    pytest.param(
        ENGINE_SQLITE
        + "Warehouse:\n  dialect: duckdb\n  path: w.duckdb\n\n  # again\n  dialect: postgresql\n",
        "craft-connector.yml: the key 'dialect' appears twice in Warehouse (lines 5 and 9); keep one of them",
        id="in-warehouse-far-apart",
    ),
    pytest.param(
        ENGINE_SQLITE + WAREHOUSE_DUCKDB + "Engine:\n  dialect: postgresql\n",
        "craft-connector.yml: the key 'Engine' appears twice at the top level (lines 1 and 7); "
        "keep one of them",
        id="section-twice",
    ),
    pytest.param(
        "Engine: {dialect: sqlite, path: a.db, dialect: sqlite}\n" + WAREHOUSE_DUCKDB,
        "craft-connector.yml: the key 'dialect' appears twice in Engine (lines 1 and 1); keep one of them",
        id="flow-mapping-same-value",
    ),
    pytest.param(
        'Engine:\n  dialect: sqlite\n  "path": a.db\n  path: a.db\n' + WAREHOUSE_DUCKDB,
        "craft-connector.yml: the key 'path' appears twice in Engine (lines 3 and 4); keep one of them",
        id="quoted-and-plain-key",
    ),
]


@pytest.mark.parametrize(("text", "message"), DUPLICATES)
def test_b56_duplicate_key_is_refused_with_both_lines(tmp_path: Path, text: str, message: str) -> None:
    write_project(tmp_path, text)
    assert load_error(tmp_path) == message


# --------------------------------------------------------------------------- B48: credentials in URL queries


@pytest.mark.parametrize(
    "key",
    sorted(
        SECRET_QUERY_KEYS
        | {"PASSWORD", "Pwd", "PassWd", "TOKEN", "Access_Token", "SECRET", "Private_Key_File_Pwd"}
    ),
)
def test_b48_password_query_key_is_refused(tmp_path: Path, key: str) -> None:
    text = f"Engine:\n  dialect: postgresql\n  url: postgresql://etl@db/etl?sslmode=require&{key}=hunter2\n"
    write_project(tmp_path, text + WAREHOUSE_DUCKDB)
    assert load_error(tmp_path) == (
        f"craft-connector.yml: Engine.url has the query key '{key}', which carries a credential; "
        "put the secret in a variable and name it in Engine.secret"
    )


def test_b48_expected_credential_keys_are_all_covered() -> None:
    assert (
        frozenset({"password", "pwd", "passwd", "token", "access_token", "secret", "private_key_file_pwd"})
        <= SECRET_QUERY_KEYS
    )


@pytest.mark.parametrize(
    ("query", "key"),
    [("password", "password"), ("password=", "password"), ("pass%77ord=x", "password")],
    ids=["without-value", "empty-value", "percent-encoded-key"],
)
def test_b48_credential_query_key_is_refused_however_written(tmp_path: Path, query: str, key: str) -> None:
    text = f"Engine:\n  dialect: postgresql\n  url: postgresql://etl@db/etl?{query}\n"
    write_project(tmp_path, text + WAREHOUSE_DUCKDB)
    assert load_error(tmp_path) == (
        f"craft-connector.yml: Engine.url has the query key '{key}', which carries a credential; "
        "put the secret in a variable and name it in Engine.secret"
    )


def test_b48_warehouse_url_credential_query_key_is_refused(tmp_path: Path) -> None:
    text = ENGINE_SQLITE + "Warehouse:\n  dialect: postgresql\n  url: postgresql://dw@dw/dw?Token=abc\n"
    write_project(tmp_path, text)
    assert load_error(tmp_path) == (
        "craft-connector.yml: Warehouse.url has the query key 'Token', which carries a credential; "
        "put the secret in a variable and name it in Warehouse.secret"
    )


# ---------------------------------------------------------------------- B55: paths relative to the project


def test_b55_relative_path_resolves_against_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = write_project(
        tmp_path / "proj", "Engine:\n  dialect: sqlite\n  path: .etl-craft/engine.db\n" + WAREHOUSE_DUCKDB
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_config(project)
    assert config.engine.path == project / ".etl-craft" / "engine.db"
    assert config.engine.path.is_absolute()
    assert config.engine.url == f"sqlite:///{project / '.etl-craft' / 'engine.db'}"
    assert config.warehouse.path == project / "warehouse.duckdb"


def test_b55_loading_from_any_working_directory_gives_the_same_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = write_project(
        tmp_path / "proj", "Engine:\n  dialect: sqlite\n  path: db/engine.db\n" + WAREHOUSE_DUCKDB
    )
    monkeypatch.chdir(tmp_path)
    from_parent = load_config(Path("proj"))
    monkeypatch.chdir(project)
    from_inside = load_config(Path("."))
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path / "other")
    from_other = load_config(project)
    assert from_parent.project_dir == from_inside.project_dir == from_other.project_dir == project
    expected = project / "db" / "engine.db"
    assert from_parent.engine.path == from_inside.engine.path == from_other.engine.path == expected
    assert (
        from_parent.engine.url == from_inside.engine.url == from_other.engine.url == f"sqlite:///{expected}"
    )
    assert from_parent.sha256 == from_inside.sha256 == from_other.sha256


def test_b55_the_env_file_is_read_from_the_project_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(tmp_path / "proj", ENGINE_PG + WAREHOUSE_DUCKDB, env="ETL_CRAFT_ENGINE_PASSWORD=proj\n")
    (tmp_path / ".env").write_text("ETL_CRAFT_ENGINE_PASSWORD=cwd\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    config = load_config(Path("proj"))
    assert config.secret_value(config.engine) == "proj"


# ---------------------------------------------------------------------------- secrets: names, B58, lookups


def test_secret_is_read_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(write_project(tmp_path, ENGINE_PG + WAREHOUSE_PG))
    monkeypatch.setenv("ETL_CRAFT_ENGINE_PASSWORD", "from-env")
    monkeypatch.setenv("ETL_CRAFT_WAREHOUSE_PASSWORD", "dw-from-env")
    assert config.secret_value(config.engine) == "from-env"
    assert config.secret_value(config.warehouse) == "dw-from-env"


def test_secret_is_read_from_the_env_file_when_not_in_the_environment(tmp_path: Path) -> None:
    config = load_config(
        write_project(tmp_path, ENGINE_PG + WAREHOUSE_DUCKDB, env="ETL_CRAFT_ENGINE_PASSWORD=dot\n")
    )
    assert config.secret_value(config.engine) == "dot"


def test_the_environment_wins_over_the_env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(
        write_project(tmp_path, ENGINE_PG + WAREHOUSE_DUCKDB, env="ETL_CRAFT_ENGINE_PASSWORD=dot\n")
    )
    monkeypatch.setenv("ETL_CRAFT_ENGINE_PASSWORD", "env")
    assert config.secret_value(config.engine) == "env"


def test_a_connection_without_secret_has_no_secret_value(tmp_path: Path) -> None:
    config = load_config(write_project(tmp_path, ENGINE_SQLITE + WAREHOUSE_DUCKDB))
    assert config.secret_value(config.engine) is None
    assert config.secret_value(config.warehouse) is None


def test_loading_does_not_need_the_secret_to_be_set(tmp_path: Path) -> None:
    config = load_config(write_project(tmp_path, ENGINE_PG + WAREHOUSE_PG))
    assert config.engine.secret == "ETL_CRAFT_ENGINE_PASSWORD"


@pytest.mark.parametrize("blank", ["", " ", "\t", "   \t "], ids=["empty", "space", "tab", "mixed"])
def test_b58_blank_secret_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blank: str) -> None:
    config = load_config(write_project(tmp_path, ENGINE_PG + WAREHOUSE_DUCKDB))
    monkeypatch.setenv("ETL_CRAFT_ENGINE_PASSWORD", blank)
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "variable ETL_CRAFT_ENGINE_PASSWORD in the environment is empty; set it to the secret"
        )
        + "$",
    ):
        config.secret_value(config.engine)


@pytest.mark.parametrize(
    "line",
    [
        "ETL_CRAFT_ENGINE_PASSWORD=",
        "ETL_CRAFT_ENGINE_PASSWORD=   ",
        'ETL_CRAFT_ENGINE_PASSWORD=""',
        "ETL_CRAFT_ENGINE_PASSWORD=' '",
        "export ETL_CRAFT_ENGINE_PASSWORD=",
    ],
    ids=["empty", "spaces", "empty-double-quotes", "quoted-space", "exported-empty"],
)
def test_b58_blank_secret_in_env_file_is_refused(tmp_path: Path, line: str) -> None:
    config = load_config(write_project(tmp_path, ENGINE_PG + WAREHOUSE_DUCKDB, env=line + "\n"))
    with pytest.raises(ConfigurationError) as info:
        config.secret_value(config.engine)
    assert str(info.value) == (
        f"variable ETL_CRAFT_ENGINE_PASSWORD in {tmp_path / '.env'} is empty; set it to the secret"
    )


def test_a_missing_variable_is_refused_naming_it_and_the_env_file(tmp_path: Path) -> None:
    config = load_config(write_project(tmp_path, ENGINE_PG + WAREHOUSE_DUCKDB, env="UNRELATED=1\n"))
    with pytest.raises(ConfigurationError) as info:
        config.secret_value(config.engine)
    assert str(info.value) == (
        f"variable ETL_CRAFT_ENGINE_PASSWORD is not set in the environment or in {tmp_path / '.env'}; "
        "set it to the secret"
    )


def test_a_missing_variable_error_lists_near_miss_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_config(
        write_project(tmp_path, ENGINE_PG + WAREHOUSE_DUCKDB, env="ETL_CRAFT_ENGINE_PASSWRD=x\nOTHER=y\n")
    )
    monkeypatch.setenv("ETL_CRAFT_ENGNE_PASWORD", "x")
    with pytest.raises(ConfigurationError) as info:
        config.secret_value(config.engine)
    assert str(info.value) == (
        f"variable ETL_CRAFT_ENGINE_PASSWORD is not set in the environment or in {tmp_path / '.env'} "
        "(did you mean ETL_CRAFT_ENGINE_PASSWRD, ETL_CRAFT_ENGNE_PASWORD?); set it to the secret"
    )


def test_resolve_variable_reads_the_given_env_mapping(tmp_path: Path) -> None:
    assert resolve_variable("DW_PASSWORD", {"DW_PASSWORD": "pw"}, tmp_path) == "pw"


def test_resolve_variable_refuses_a_blank_value_in_the_given_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as info:
        resolve_variable("DW_PASSWORD", {"DW_PASSWORD": " "}, tmp_path)
    assert str(info.value) == f"variable DW_PASSWORD in {tmp_path / '.env'} is empty; set it to the secret"


# ---------------------------------------------------------------------------------------------- .env files


def test_env_file_syntax_bom_export_quotes_comments_and_blank_lines(tmp_path: Path) -> None:
    text = (
        "# a comment\n"
        "\n"
        "PLAIN=plain\n"
        "export EXPORTED=exported\n"
        'DOUBLE="double quoted"\n'
        "SINGLE='single quoted'\n"
        "  SPACED  =  spaced value  \n"
        "   # an indented comment\n"
        "WITH_EQUALS=a=b=c\n"
        "HASH=pa#ss\n"
        "MISMATCHED=\"half'\n"
        "EMPTY=\n"
    )
    path = tmp_path / ".env"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert read_env_file(path) == {
        "PLAIN": "plain",
        "EXPORTED": "exported",
        "DOUBLE": "double quoted",
        "SINGLE": "single quoted",
        "SPACED": "spaced value",
        "WITH_EQUALS": "a=b=c",
        "HASH": "pa#ss",
        "MISMATCHED": "\"half'",
        "EMPTY": "",
    }


def test_a_missing_env_file_is_empty(tmp_path: Path) -> None:
    assert read_env_file(tmp_path / ".env") == {}


def test_an_env_file_with_a_bom_feeds_the_first_variable(tmp_path: Path) -> None:
    write_project(tmp_path, ENGINE_PG + WAREHOUSE_DUCKDB)
    (tmp_path / ".env").write_bytes(b"\xef\xbb\xbfETL_CRAFT_ENGINE_PASSWORD=bom-ok\n")
    config = load_config(tmp_path)
    assert config.secret_value(config.engine) == "bom-ok"


@pytest.mark.parametrize(
    "line",
    ["not a pair", "9NAME=x", "=value", "export", "MY PASSWORD=hunter2"],
    ids=["no-equals", "name-starts-with-digit", "no-name", "bare-export", "space-in-name"],
)
def test_a_malformed_env_line_is_refused_naming_file_and_line_without_showing_it(tmp_path: Path, line: str) -> None:
    write_project(tmp_path, ENGINE_SQLITE + WAREHOUSE_DUCKDB, env=f"# header\nOK=1\n{line}\n")
    assert load_error(tmp_path) == (
        f"{tmp_path / '.env'}, line 3: expected NAME=value with NAME made of letters, digits and _ "
        "(the line is not shown: it may hold a secret)"
    )


def test_an_env_file_that_is_not_utf8_is_a_configuration_error(tmp_path: Path) -> None:
    write_project(tmp_path, ENGINE_SQLITE + WAREHOUSE_DUCKDB)
    (tmp_path / ".env").write_bytes(b"ETL_CRAFT_ENGINE_PASSWORD=caf\xe9\n")
    assert str(tmp_path / ".env") in load_error(tmp_path)


# ----------------------------------------------------------------------------------- fingerprint and repr


def test_sha256_is_equal_for_equivalent_files(tmp_path: Path) -> None:
    plain = write_project(tmp_path / "a", ENGINE_PG + WAREHOUSE_DUCKDB)
    rewritten = write_project(
        tmp_path / "b",
        "# comments, another order, other quoting, flow style and indentation\n"
        "Warehouse: {path: 'warehouse.duckdb', dialect: duckdb}\n"
        "\n"
        "Engine:\n"
        "    schema: etl_craft   # trailing comment\n"
        '    secret: "ETL_CRAFT_ENGINE_PASSWORD"\n'
        "    dialect: postgresql\n"
        "    url: postgresql://etl_craft@db.example.com:5432/etl\n",
    )
    bom = tmp_path / "c"
    bom.mkdir()
    (bom / CONFIG_FILE).write_bytes(b"\xef\xbb\xbf" + (ENGINE_PG + WAREHOUSE_DUCKDB).encode())
    assert load_config(plain).sha256 == load_config(rewritten).sha256 == load_config(bom).sha256


def test_sha256_ignores_blanks_the_loader_strips(tmp_path: Path) -> None:
    plain = load_config(write_project(tmp_path / "a", ENGINE_SQLITE + WAREHOUSE_DUCKDB))
    padded = load_config(
        write_project(
            tmp_path / "b", 'Engine:\n  dialect: "sqlite "\n  path: " engine.db"\n' + WAREHOUSE_DUCKDB
        )
    )
    assert (padded.engine.dialect, padded.engine.path.name) == (plain.engine.dialect, plain.engine.path.name)
    assert padded.sha256 == plain.sha256


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("path: engine.db", "path: other.db"),
        ("path: warehouse.duckdb", "path: warehouse2.duckdb"),
    ],
    ids=["engine-path", "warehouse-path"],
)
def test_sha256_differs_when_a_file_value_changes(tmp_path: Path, old: str, new: str) -> None:
    text = ENGINE_SQLITE + WAREHOUSE_DUCKDB
    assert new not in text
    before = load_config(write_project(tmp_path / "a", text)).sha256
    after = load_config(write_project(tmp_path / "b", text.replace(old, new))).sha256
    assert before != after


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("secret: ETL_CRAFT_ENGINE_PASSWORD", "secret: OTHER_PASSWORD"),
        ("schema: etl_craft", "schema: etl_craft2"),
        ("db.example.com:5432", "db.example.com:5433"),
    ],
    ids=["secret-name", "schema", "url"],
)
def test_sha256_differs_when_a_server_value_changes(tmp_path: Path, old: str, new: str) -> None:
    text = ENGINE_PG + WAREHOUSE_DUCKDB
    before = load_config(write_project(tmp_path / "a", text)).sha256
    after = load_config(write_project(tmp_path / "b", text.replace(old, new))).sha256
    assert before != after


def test_sha256_does_not_depend_on_the_secret_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = write_project(tmp_path, ENGINE_PG + WAREHOUSE_DUCKDB, env="ETL_CRAFT_ENGINE_PASSWORD=one\n")
    first = load_config(project).sha256
    (project / ".env").write_text("ETL_CRAFT_ENGINE_PASSWORD=two\n", encoding="utf-8")
    monkeypatch.setenv("ETL_CRAFT_ENGINE_PASSWORD", "three")
    assert load_config(project).sha256 == first


def test_repr_of_the_config_never_contains_a_secret_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = write_project(
        tmp_path, ENGINE_PG + WAREHOUSE_PG, env=f"ETL_CRAFT_WAREHOUSE_PASSWORD={SECRET_VALUE}-dw\n"
    )
    monkeypatch.setenv("ETL_CRAFT_ENGINE_PASSWORD", SECRET_VALUE)
    config = load_config(project)
    assert config.secret_value(config.engine) == SECRET_VALUE
    assert config.secret_value(config.warehouse) == f"{SECRET_VALUE}-dw"
    for text in (repr(config), str(config), repr(config.engine), repr(config.warehouse)):
        assert SECRET_VALUE not in text
    assert "ETL_CRAFT_ENGINE_PASSWORD" in repr(config)


# ------------------------------------------------------------------------- parsed once per text (issue 27)


def test_load_config__same_text_twice__yaml_parsed_once_and_a_changed_file_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task process loads craft-connector.yml on every attempt; the YAML of a text already seen (by the process
    it was forked from) is not parsed again, and an edit to the file is."""
    import yaml

    from etlcraft.config import loader

    loader._parsed.cache_clear()
    composed: list[str] = []
    compose = yaml.compose
    monkeypatch.setattr(yaml, "compose", lambda text, **kw: composed.append(text) or compose(text, **kw))
    write_project(tmp_path, ENGINE_SQLITE + WAREHOUSE_DUCKDB + "Orchestration:\n  Max_parallel_tasks: 3\n")
    first, second = load_config(tmp_path), load_config(tmp_path)
    assert (len(composed), first, second.orchestration.max_parallel_tasks) == (1, second, 3)
    write_project(tmp_path, ENGINE_SQLITE + WAREHOUSE_DUCKDB + "Orchestration:\n  Max_parallel_tasks: 5\n")
    assert (load_config(tmp_path).orchestration.max_parallel_tasks, len(composed)) == (5, 2)
    write_project(tmp_path, ENGINE_SQLITE + WAREHOUSE_DUCKDB + "Engine:\n  dialect: sqlite\n")
    for _ in range(2):  # a refused text is refused on every load, never remembered as good
        assert "the key 'Engine' appears twice at the top level" in load_error(tmp_path)
