"""craft-connector.yml: a project's connections and settings, loaded strictly.

Every key and its check come from the one table in etlcraft/config/keys.py (which also generates
docs/reference/configuration.md). Unknown sections and keys are refused naming the expected ones; a key given
twice is refused with both line numbers (B56); secrets are never values in the file but names of variables,
read from the environment or the project's .env when needed (B58); credential-looking URL query keys are
refused (B48); relative paths resolve against the project directory, never the working directory (B55); whole
numbers are plain ASCII digits within their range (S2.G.8).
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import parse_qsl, urlsplit
from zoneinfo import ZoneInfo, available_timezones

import yaml

from etlcraft.config.alerts import AlertsConfig, channels_from, check_channels
from etlcraft.config.keys import (
    ENGINE_DIALECTS,
    SECTIONS,
    VARIABLE_PATTERN,
    WAREHOUSE_DIALECTS,
    WHOLE_NUMBER_MAX,
    Key,
    KeyType,
    keys_of,
    rules_of,
    section_names,
)
from etlcraft.core.errors import ConfigurationError

__all__ = [
    "CONFIG_FILE",
    "ENGINE_DIALECTS",
    "ENV_FILE",
    "SECRET_QUERY_KEYS",
    "WAREHOUSE_DIALECTS",
    "AlertsConfig",
    "ArtifactsConfig",
    "Connection",
    "EmailConfig",
    "OrchestrationConfig",
    "ProjectConfig",
    "load_config",
    "read_env_file",
    "resolve_variable",
]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

CONFIG_FILE = "craft-connector.yml"
ENV_FILE = ".env"
#: URL query keys that would carry a credential (any case): refused, put the secret in a variable.
SECRET_QUERY_KEYS = frozenset({"password", "pwd", "passwd", "token", "access_token", "secret", "private_key_file_pwd"})
_VARIABLE = re.compile(VARIABLE_PATTERN)
_DIGITS = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")
#: Tags whose plain scalars are shown as written in messages (0x10, not 16; yes, not True).
_SHOWN_AS_WRITTEN = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool"})


@dataclass(frozen=True)
class Connection:
    """One database connection. `secret` is the name of the variable holding the password, never its value.
    `section` is Engine or Warehouse, for messages. The timeouts are in seconds, None where the dialect has no such
    wait (keys.py says which apply where)."""

    dialect: str
    url: str
    secret: str | None = None
    schema: str | None = None
    path: Path | None = None
    section: str = ""
    connect_timeout_seconds: int | None = None
    statement_timeout_seconds: int | None = None
    busy_timeout_seconds: int | None = None


@dataclass(frozen=True)
class EmailConfig:
    """The SMTP relay (section Email). `secret` is the name of the variable holding the password."""

    host: str
    port: int
    tls_mode: str
    ca_file: Path | None
    username: str | None
    secret: str | None
    from_address: str
    to: tuple[str, ...]
    subject_prefix: str | None


@dataclass(frozen=True)
class OrchestrationConfig:
    """Scheduling, retries, leases, shutdown and the server's connections (section Orchestration). A key that is
    not set holds its default. `timezone` is None when not set: the project's time zone is decided by
    etlcraft.core.zones, not here."""

    project: str | None  # None: not set (etlcraft.services.projects then takes the Engine DB's only project)
    timezone: str | None
    max_parallel_tasks: int
    gate_wait_minutes: int
    retries: int
    retry_delay_seconds: int
    retry_backoff: float
    lease_seconds: int
    heartbeat_seconds: int
    shutdown_grace_seconds: int
    api_address: str
    full_check_day: str
    db_pool_size: int


class _HasSecret(Protocol):
    @property
    def secret(self) -> str | None: ...


@dataclass(frozen=True)
class ArtifactsConfig:
    """Where bundles are published and cached (section Artifacts; etlcraft.engine.bundles reads it), and how an
    s3:// store is reached (etlcraft.engine.artifacts_s3); its credentials are never here."""

    store: str
    cache_dir: Path | None
    endpoint_url: str | None = None
    region: str | None = None


@dataclass(frozen=True)
class ProjectConfig:
    project_dir: Path
    engine: Connection
    warehouse: Connection
    sha256: str
    orchestration: OrchestrationConfig
    email: EmailConfig | None = None
    env: Mapping[str, str] = field(repr=False, compare=False, default_factory=dict)
    alerts: AlertsConfig | None = None
    artifacts: ArtifactsConfig | None = None

    def secret_value(self, holder: _HasSecret) -> str | None:
        """The password named by `holder.secret` (a Connection or the EmailConfig), read from its variable now:
        never stored on the object."""
        return None if holder.secret is None else resolve_variable(holder.secret, self.env, self.project_dir)


# ---------------------------------------------------------------------------------------- files and secrets


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


@lru_cache(maxsize=8)
def _parsed(text: str) -> tuple[yaml.Node | None, Any]:
    """The YAML of a craft-connector.yml's text, checked for keys given twice: its node tree and its value. Kept
    by text, which the file is read for on every load, so a changed file is parsed again. A task process forked
    from the process that loaded the file first finds it here and parses nothing (YAML is ~5 ms per attempt)."""
    document = yaml.compose(text, Loader=yaml.SafeLoader)
    _check_duplicate_keys(document, "")
    return document, yaml.safe_load(text)


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


def load_config(project_dir: Path, config_file: Path | None = None) -> ProjectConfig:
    """Load and check `project_dir`/craft-connector.yml; or `config_file` (the copy a pinned bundle holds), its
    relative paths and its .env still those of `project_dir`."""
    project_dir = project_dir.absolute()
    path = config_file or project_dir / CONFIG_FILE
    if not path.is_file():
        raise ConfigurationError(
            f"{path} does not exist; create a project with etl-craft init DIR, or pass --project DIR"
        )
    try:
        document, parsed = _parsed(_read_text(path))
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{path} is not valid YAML: {exc}") from exc
    raw = copy.deepcopy(parsed)
    names = section_names()
    if not isinstance(raw, dict):
        raise ConfigurationError(f"{path} must be a mapping of sections ({', '.join(names)})")
    unknown = [s for s in raw if s not in names]
    if unknown:
        raise ConfigurationError(
            f"{CONFIG_FILE}: unknown section {unknown[0]!r}; the sections are {', '.join(names)}"
            + _suggestion(str(unknown[0]), names)
        )
    for section in SECTIONS:
        if section.required and section.name not in raw:
            raise ConfigurationError(f"{CONFIG_FILE}: the section {section.name} is missing")
    nodes = _value_nodes(document)
    engine, engine_values = _connection("Engine", raw["Engine"], nodes, project_dir)
    warehouse, warehouse_values = _connection("Warehouse", raw["Warehouse"], nodes, project_dir)
    normalized: dict[str, Any] = {"Engine": engine_values, "Warehouse": warehouse_values}
    email = None
    if "Email" in raw:
        normalized["Email"] = _settings("Email", raw["Email"], nodes)
        email = _build(EmailConfig, "Email", normalized["Email"], project_dir)
    alerts = None
    if "Alerts" in raw:
        normalized["Alerts"] = _settings("Alerts", raw["Alerts"], nodes)
        alerts = _build(AlertsConfig, "Alerts", normalized["Alerts"], project_dir)
    artifacts = None
    if "Artifacts" in raw:
        normalized["Artifacts"] = _settings("Artifacts", raw["Artifacts"], nodes)
        artifacts = _build(ArtifactsConfig, "Artifacts", normalized["Artifacts"], project_dir)
    normalized["Orchestration"] = _settings("Orchestration", raw.get("Orchestration", {}), nodes)
    orchestration = _build(OrchestrationConfig, "Orchestration", normalized["Orchestration"], project_dir)
    env = read_env_file(project_dir / ENV_FILE)
    sha256 = _fingerprint(normalized)
    log.debug("loaded %s (sections %s; CONFIG_SHA256 %s)", path, ", ".join(map(str, raw)), sha256)
    return ProjectConfig(project_dir, engine, warehouse, sha256, orchestration, email, env, alerts, artifacts)


# ------------------------------------------------------------------------------------------------ sections


def _value_nodes(document: yaml.Node | None) -> dict[tuple[str, str], yaml.Node]:
    """The YAML node of each section's key, to show a value as written (0x10, not 16)."""
    nodes: dict[tuple[str, str], yaml.Node] = {}
    if isinstance(document, yaml.MappingNode):
        for section_node, body in document.value:
            if isinstance(body, yaml.MappingNode):
                for key_node, value_node in body.value:
                    nodes[(str(section_node.value), str(key_node.value))] = value_node
    return nodes


def _suggestion(name: str, names: Sequence[str]) -> str:
    """"; did you mean X?" for a name that differs from an expected one by case or a typo; else ""."""
    folded = [n for n in names if n.lower() == name.lower()]
    if folded:
        return f"; did you mean {folded[0]}? (names are case-sensitive)"
    near = difflib.get_close_matches(name, names, n=1, cutoff=0.8)
    return f"; did you mean {near[0]}?" if near else ""


def _section_values(section: str, raw: object, nodes: Mapping[tuple[str, str], yaml.Node]) -> dict[str, Any]:
    """The keys `raw` sets, each checked against its row in keys.py and normalized (text stripped)."""
    keys = {key.name: key for key in keys_of(section)}
    if not isinstance(raw, dict):
        raise ConfigurationError(f"{CONFIG_FILE}: {section} must be a mapping of {', '.join(keys)}")
    for name in raw:
        if name not in keys:
            raise ConfigurationError(
                f"{CONFIG_FILE}: unknown key {section}.{name}; the keys of {section} are {', '.join(keys)}"
                + _suggestion(str(name), list(keys))
            )
    return {name: _check(keys[name], value, nodes.get((section, name))) for name, value in raw.items()}


def _settings(section: str, raw: object, nodes: Mapping[tuple[str, str], yaml.Node]) -> dict[str, Any]:
    """A section of settings (Email, Orchestration): every key of the table, defaults filled in, rules checked."""
    given = _section_values(section, raw, nodes)
    values: dict[str, Any] = {}
    for key in keys_of(section):
        if key.name in given:
            values[key.name] = given[key.name]
        elif key.required:
            raise ConfigurationError(f"{CONFIG_FILE}: {key.path} is missing; {_missing_hint(key, None)}")
        else:
            values[key.name] = key.default
    for rule in rules_of(section):
        message = rule.check(values, frozenset(given))
        if message:
            raise ConfigurationError(f"{CONFIG_FILE}: {message}")
    return values


def _build(cls: type[_T], section: str, values: Mapping[str, Any], project_dir: Path) -> _T:
    """The section's config object from its normalized values: paths made absolute, lists made tuples."""
    kwargs: dict[str, Any] = {}
    for key in keys_of(section):
        value = values[key.name]
        if key.type is KeyType.PATH and value is not None:
            value = _absolute(project_dir, value)
        elif key.type is KeyType.TEXT_LIST:
            value = tuple(value)
        elif key.type is KeyType.CHANNELS:
            value = channels_from(value)
        kwargs[key.field] = value
    return cls(**kwargs)


def _absolute(project_dir: Path, text: str) -> Path:
    """A path from the file: relative ones start at the project directory (B55); links are kept (.absolute())."""
    path = Path(text)
    return path if path.is_absolute() else (project_dir / path).absolute()


def _missing_hint(key: Key, dialect: str | None) -> str:
    if key.missing_hint:
        return key.missing_hint.format(dialect=dialect)
    return f"expected {key.expected()}"


# --------------------------------------------------------------------------------------------- connections


def _connection(
    section: str, raw: object, nodes: Mapping[tuple[str, str], yaml.Node], project_dir: Path
) -> tuple[Connection, dict[str, Any]]:
    """Engine or Warehouse: the connection, and its normalized values for the fingerprint."""
    values = _section_values(section, raw, nodes)
    keys = {key.name: key for key in keys_of(section)}
    dialect = values.get("dialect")
    if dialect is None:
        supported = ", ".join(keys["dialect"].choices)
        raise ConfigurationError(f"{CONFIG_FILE}: {section}.dialect is None; supported: {supported}")
    extra = sorted(name for name in values if keys[name].applies_to and dialect not in keys[name].applies_to)
    if extra:
        key = keys[extra[0]]
        remedy = f"use {key.instead}" if key.instead else "remove it"
        raise ConfigurationError(f"{CONFIG_FILE}: {key.path} does not apply to {dialect}; {remedy}")
    given = frozenset(values)
    for key in keys.values():
        applies = not key.applies_to or dialect in key.applies_to
        if key.required and applies and key.name not in values:
            raise ConfigurationError(f"{CONFIG_FILE}: {key.path} is missing; {_missing_hint(key, dialect)}")
        if applies and key.default is not None and key.name not in values:
            values[key.name] = key.default
    timeouts = {name: values[name] for name in _TIMEOUT_KEYS if name in values}
    if "path" in values:
        path = _absolute(project_dir, values["path"])
        return Connection(dialect=dialect, url=f"{dialect}:///{path}", path=path, section=section, **timeouts), values
    url = _server_url(section, values["url"], given)
    connection = Connection(dialect=dialect, url=url, secret=values.get("secret"), schema=values.get("schema"),
                            section=section, **timeouts)
    return connection, values


#: The timeout keys of a connection section (keys.py), which set the Connection's fields of the same names.
_TIMEOUT_KEYS = ("connect_timeout_seconds", "statement_timeout_seconds", "busy_timeout_seconds")


def _server_url(section: str, url: str, given: frozenset[str]) -> str:
    """A server's URL, checked: postgresql://, no password, no credential in its query, and no timeout that a key
    the file gives sets too (a timeout in the URL alone is the session's, as with --engine-url)."""
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
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key.lower() in SECRET_QUERY_KEYS:
            raise ConfigurationError(
                f"{CONFIG_FILE}: {section}.url has the query key {key!r}, which carries a credential; "
                f"put the secret in a variable and name it in {section}.secret"
            )
        twice = _set_twice(key, value, given)
        if twice:
            raise ConfigurationError(
                f"{CONFIG_FILE}: {section}.url sets {twice} in its query and {section}.{twice}_seconds sets it too; "
                f"keep {section}.{twice}_seconds (whole seconds) and remove {twice} from the URL"
            )
    return url


def _set_twice(key: str, value: str, given: frozenset[str]) -> str | None:
    """The timeout that URL query key `key` sets when a key of the section sets it too (connect_timeout, or
    statement_timeout in options), else None."""
    if key.lower() == "connect_timeout" and "connect_timeout_seconds" in given:
        return "connect_timeout"
    if key.lower() == "options" and "statement_timeout" in value.lower() and "statement_timeout_seconds" in given:
        return "statement_timeout"
    return None


# ------------------------------------------------------------------------------------------------- values


def _check(key: Key, value: object, node: yaml.Node | None) -> Any:
    """`value` checked against `key`'s row and normalized (JSON-ready: the fingerprint hashes it)."""
    if key.type is KeyType.INTEGER:
        return _whole_number(key, value, node)
    if key.type is KeyType.NUMBER:
        return _decimal(key, value, node)
    if key.type is KeyType.BOOLEAN:
        if isinstance(value, bool) and (node is None or str(node.value).lower() in ("true", "false")):
            return value
        raise _unexpected(key, value, node)
    if key.type is KeyType.TEXT_LIST:
        return _text_list(key, value, node)
    if key.type is KeyType.CHANNELS:
        return check_channels(key.path, value)
    if key.type is KeyType.VARIABLE:
        return _variable(key, value)
    if key.type is KeyType.CHOICE and isinstance(value, bool):  # YAML 1.1 reads off, no, on, yes as booleans
        raise ConfigurationError(
            f"{CONFIG_FILE}: {key.path} is {_shown(value, node)}; supported: {', '.join(key.choices)}"
        )
    text = _text(key, value)
    if key.type is KeyType.CHOICE and text not in key.choices:
        raise ConfigurationError(f"{CONFIG_FILE}: {key.path} is {text!r}; supported: {', '.join(key.choices)}")
    if key.type is KeyType.TIMEZONE:
        return _timezone(key, text)
    if key.pattern and not re.fullmatch(key.pattern, text):
        if key.refuse_user_info and "@" in text:
            raise ConfigurationError(
                f"{CONFIG_FILE}: {key.path} holds user information (an @; the value is not shown, it may hold a "
                f"password); {key.user_info_remedy or _user_info_remedy(key)}"
            )
        raise ConfigurationError(f"{CONFIG_FILE}: {key.path} is {text!r}; expected {key.item_expected()}")
    return text


def _user_info_remedy(key: Key) -> str:
    return (f"give the host name alone, the user in {key.section}.username and the name of the password's variable "
            f"in {key.section}.secret")


def _text(key: Key, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"{CONFIG_FILE}: {key.path} must be a non-empty text, found {value!r}")
    return value.strip()


def _variable(key: Key, value: object) -> str:
    """A variable's name. Whatever else is written there is not shown: it may be the password itself."""
    if value is None or isinstance(value, bool) or (isinstance(value, str) and not value.strip()):
        return _text(key, value)
    if not isinstance(value, str) or not _VARIABLE.match(value.strip()):
        raise ConfigurationError(
            f"{CONFIG_FILE}: {key.path} must be the name of a variable (letters, digits, _), not a password; "
            "put the password in that variable (environment or .env)"
        )
    return value.strip()


def _shown(value: object, node: yaml.Node | None) -> str:
    """A value in a message: numbers and booleans as written in the file, anything else as its repr."""
    if isinstance(node, yaml.ScalarNode) and node.style is None and node.tag in _SHOWN_AS_WRITTEN:
        return str(node.value)
    return repr(value)


def _unexpected(key: Key, value: object, node: yaml.Node | None, capped: bool = False) -> ConfigurationError:
    expected = key.expected() if not capped else f"a whole number {key.range_text(capped=True)}"
    why = f" ({key.range_reason})" if key.range_reason else ""
    return ConfigurationError(f"{CONFIG_FILE}: {key.path} is {_shown(value, node)}; expected {expected}{why}")


def _as_written(value: object, node: yaml.Node | None) -> str | None:
    """The text of a number: a YAML number as written in the file, or a string; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return str(node.value) if isinstance(node, yaml.ScalarNode) else str(value)
    if isinstance(value, str):
        return value.strip()
    return None


def _whole_number(key: Key, value: object, node: yaml.Node | None) -> int:
    """Plain ASCII digits only (not "²", "1e3", 0x10, 1_000, true or 2.0), read in base 10, within range."""
    text = _as_written(value, node)
    if text is None or not _DIGITS.fullmatch(text):
        raise _unexpected(key, value, node)
    maximum = WHOLE_NUMBER_MAX if key.maximum is None else key.maximum
    if len(text.lstrip("0")) > len(str(WHOLE_NUMBER_MAX)):
        raise _unexpected(key, value, node, capped=key.maximum is None)
    number = int(text)
    if key.minimum is not None and number < key.minimum:
        raise _unexpected(key, value, node)
    if number > maximum:
        raise _unexpected(key, value, node, capped=key.maximum is None)
    return number


def _decimal(key: Key, value: object, node: yaml.Node | None) -> float:
    """Digits with an optional decimal part (2, 2.5); no sign, exponent, infinity or NaN; within range."""
    text = _as_written(value, node)
    if text is None or not _DECIMAL.fullmatch(text) or len(text) > 32:
        raise _unexpected(key, value, node)
    number = float(text)
    if (key.minimum is not None and number < key.minimum) or (key.maximum is not None and number > key.maximum):
        raise _unexpected(key, value, node)
    return number


def _text_list(key: Key, value: object, node: yaml.Node | None) -> list[str]:
    if not isinstance(value, list) or not value:
        raise _unexpected(key, value, node)
    items = []
    for index, item in enumerate(value):
        text = item.strip() if isinstance(item, str) else ""
        if not text or (key.pattern and not re.fullmatch(key.pattern, text)):
            raise ConfigurationError(
                f"{CONFIG_FILE}: {key.path}[{index}] is {item!r}; expected {key.item_expected()}"
            )
        items.append(text)
    return items


@cache
def _time_zones() -> frozenset[str]:
    """The IANA names of the system's time zone database, without the machine-local ones (localtime, Factory)."""
    return frozenset(available_timezones()) - {"localtime", "Factory", "posixrules"}


def _timezone(key: Key, name: str) -> str:
    """An IANA name exactly as the time zone database spells it (Europe/Paris, not europe/paris)."""
    zones = _time_zones()
    if name in zones or name == "UTC":
        try:
            ZoneInfo(name)
            return name
        except (KeyError, ValueError, OSError):  # ZoneInfoNotFoundError is a KeyError
            pass
    hint = _suggestion(name, sorted(zones))
    if not zones:
        hint = "; this system has no time zone database: install the tzdata package"
    raise ConfigurationError(f"{CONFIG_FILE}: {key.path} is {name!r}; expected {key.expected()}{hint}")


def _fingerprint(raw: Mapping[str, Any]) -> str:
    """CONFIG_SHA256: the normalized configuration, defaults filled in (secrets appear as variable names only)."""
    return hashlib.sha256(json.dumps(raw, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()
