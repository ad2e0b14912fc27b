"""craft-connector.yml: a project's connections, loaded strictly.

Unknown sections and keys are refused naming the expected ones; a key given twice is refused with both line
numbers (B56); secrets are never values in the file but names of variables, read from the environment or the
project's .env (B58); credential-looking URL query keys are refused (B48); relative paths resolve against the
project directory, never the working directory (B55).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml

from etlcraft.core.errors import ConfigurationError

CONFIG_FILE = "craft-connector.yml"
ENV_FILE = ".env"
#: URL query keys that would carry a credential (any case): refused, put the secret in a variable.
SECRET_QUERY_KEYS = frozenset({"password", "pwd", "passwd", "token", "access_token", "secret", "private_key_file_pwd"})
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

ENGINE_DIALECTS = ("sqlite", "postgresql")
WAREHOUSE_DIALECTS = ("duckdb", "postgresql")
_SECTION_KEYS = {
    "Engine": ("dialect", "path", "url", "secret", "schema"),
    "Warehouse": ("dialect", "path", "url", "secret"),
}


@dataclass(frozen=True)
class Connection:
    """One database connection. `secret` is the name of the variable holding the password, never its value."""

    dialect: str
    url: str
    secret: str | None = None
    schema: str | None = None
    path: Path | None = None


@dataclass(frozen=True)
class ProjectConfig:
    project_dir: Path
    engine: Connection
    warehouse: Connection
    sha256: str
    env: Mapping[str, str] = field(repr=False, compare=False, default_factory=dict)

    def secret_value(self, connection: Connection) -> str | None:
        """The password of `connection`, read from its variable now (never stored on the object)."""
        return None if connection.secret is None else resolve_variable(connection.secret, self.env, self.project_dir)


def _check_duplicate_keys(node: yaml.Node | None, path: str) -> None:
    """Refuse a key given twice in one mapping, naming the key, where it is and both lines (B56)."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                where = f"in {path}" if path else "at the top level"
                raise ConfigurationError(
                    f"{CONFIG_FILE}: the key {key!r} appears twice {where} (lines {seen[key]} and {line}); "
                    "keep one of them"
                )
            seen[key] = line
            _check_duplicate_keys(value_node, f"{path}.{key}" if path else key)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _check_duplicate_keys(item, f"{path}[{index}]")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8"
        ) from exc


def read_env_file(path: Path) -> dict[str, str]:
    """A .env file: KEY=value lines, optional `export`, comments and blank lines ignored, BOM tolerated."""
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    for number, raw in enumerate(_read_text(path).splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not _VARIABLE.match(name):
            raise ConfigurationError(
                f"{path}, line {number}: expected NAME=value with NAME made of letters, digits and _ "
                "(the line is not shown: it may hold a secret)"
            )
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name] = value
    return values


def resolve_variable(name: str, env: Mapping[str, str], project_dir: Path) -> str:
    """The value of variable `name`: the environment first, then the project's .env. Blank values are refused."""
    if name in os.environ:
        value, where = os.environ[name], "the environment"
    elif name in env:
        value, where = env[name], f"{project_dir / ENV_FILE}"
    else:
        known = sorted(set(os.environ) | set(env))
        near = difflib.get_close_matches(name, known, n=3, cutoff=0.75)
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise ConfigurationError(
            f"variable {name} is not set in the environment or in {project_dir / ENV_FILE}{hint}; set it to the secret"
        )
    if not value.strip():
        raise ConfigurationError(f"variable {name} in {where} is empty; set it to the secret")
    return value


def load_config(project_dir: Path) -> ProjectConfig:
    """Load and check `project_dir`/craft-connector.yml."""
    project_dir = project_dir.absolute()
    path = project_dir / CONFIG_FILE
    if not path.is_file():
        raise ConfigurationError(
            f"{path} does not exist; create a project with etl-craft init DIR, or pass --project DIR"
        )
    text = _read_text(path)
    try:
        _check_duplicate_keys(yaml.compose(text, Loader=yaml.SafeLoader), "")
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{path} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigurationError(f"{path} must be a mapping of sections ({', '.join(_SECTION_KEYS)})")
    unknown = [s for s in raw if s not in _SECTION_KEYS]
    if unknown:
        raise ConfigurationError(
            f"{CONFIG_FILE}: unknown section {unknown[0]!r}; the sections are {', '.join(_SECTION_KEYS)}"
        )
    for required in ("Engine", "Warehouse"):
        if required not in raw:
            raise ConfigurationError(f"{CONFIG_FILE}: the section {required} is missing")
    engine = _connection("Engine", raw["Engine"], ENGINE_DIALECTS, project_dir)
    warehouse = _connection("Warehouse", raw["Warehouse"], WAREHOUSE_DIALECTS, project_dir)
    env = read_env_file(project_dir / ENV_FILE)
    normalized = {section: {k: _text(section, k, v) for k, v in raw[section].items()} for section in _SECTION_KEYS}
    return ProjectConfig(project_dir, engine, warehouse, _fingerprint(normalized), env)


def _connection(section: str, raw: object, dialects: tuple[str, ...], project_dir: Path) -> Connection:
    if not isinstance(raw, dict):
        raise ConfigurationError(f"{CONFIG_FILE}: {section} must be a mapping of {', '.join(_SECTION_KEYS[section])}")
    for key in raw:
        if key not in _SECTION_KEYS[section]:
            raise ConfigurationError(
                f"{CONFIG_FILE}: unknown key {section}.{key}; the keys of {section} are "
                f"{', '.join(_SECTION_KEYS[section])}"
            )
    values = {k: _text(section, k, v) for k, v in raw.items()}
    dialect = values.get("dialect")
    if dialect not in dialects:
        raise ConfigurationError(
            f"{CONFIG_FILE}: {section}.dialect is {dialect!r}; supported: {', '.join(dialects)}"
        )
    secret = values.get("secret")
    if secret is not None and not _VARIABLE.match(secret):
        raise ConfigurationError(
            f"{CONFIG_FILE}: {section}.secret must be the name of a variable (letters, digits, _), not a password; "
            "put the password in that variable (environment or .env)"
        )
    if dialect in ("sqlite", "duckdb"):
        return _file_connection(section, dialect, values, project_dir)
    return _server_connection(section, dialect, values, secret)


def _file_connection(section: str, dialect: str, values: dict[str, str], project_dir: Path) -> Connection:
    extra = sorted(set(values) - {"dialect", "path"})
    if extra:
        raise ConfigurationError(f"{CONFIG_FILE}: {section}.{extra[0]} does not apply to {dialect}; remove it")
    if "path" not in values:
        raise ConfigurationError(f"{CONFIG_FILE}: {section}.path is missing; name the {dialect} database file")
    path = Path(values["path"])
    path = path if path.is_absolute() else (project_dir / path).absolute()
    return Connection(dialect=dialect, url=f"{'sqlite' if dialect == 'sqlite' else 'duckdb'}:///{path}", path=path)


def _server_connection(section: str, dialect: str, values: dict[str, str], secret: str | None) -> Connection:
    if "path" in values:
        raise ConfigurationError(f"{CONFIG_FILE}: {section}.path does not apply to {dialect}; use url")
    url = values.get("url")
    if not url:
        raise ConfigurationError(f"{CONFIG_FILE}: {section}.url is missing; e.g. postgresql://etl@db.example.com/etl")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parses the port, raising ValueError for a bad one
    except ValueError as exc:
        raise ConfigurationError(f"{CONFIG_FILE}: {section}.url is not a valid URL ({exc}); fix it") from exc
    if parts.scheme not in ("postgresql", "postgres"):
        raise ConfigurationError(f"{CONFIG_FILE}: {section}.url must start with postgresql://")
    if parts.scheme == "postgres":
        url = "postgresql" + url[len("postgres"):]
    if parts.password:
        raise ConfigurationError(
            f"{CONFIG_FILE}: {section}.url holds a password; remove it and name its variable in {section}.secret"
        )
    for key, _ in parse_qsl(parts.query, keep_blank_values=True):
        if key.lower() in SECRET_QUERY_KEYS:
            raise ConfigurationError(
                f"{CONFIG_FILE}: {section}.url has the query key {key!r}, which carries a credential; "
                f"put the secret in a variable and name it in {section}.secret"
            )
    schema = values.get("schema")
    return Connection(dialect=dialect, url=url, secret=secret, schema=schema)


def _text(section: str, key: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"{CONFIG_FILE}: {section}.{key} must be a non-empty text, found {value!r}")
    return value.strip()


def _fingerprint(raw: Mapping[str, Any]) -> str:
    """CONFIG_SHA256: the normalized configuration (secrets appear as variable names only)."""
    return hashlib.sha256(json.dumps(raw, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()
