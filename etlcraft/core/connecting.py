"""Time limits on PostgreSQL connections, and what to tell a user when one fails: shared by the Engine DB and the
warehouse.

libpq reports a connection that failed without a SQLSTATE, in its own words; the kind of failure (no answer, refused,
a login refused, ...) is read from them, and the message names the database, its host and port, what happened, the
craft-connector.yml key or variable involved (never a password) and the remedy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

#: libpq's words for each kind of failure, first match wins: (pattern, kind).
_KINDS = (
    (re.compile(r"timeout expired", re.I), "timeout"),
    (re.compile(r"password authentication failed|authentication failed|invalid password", re.I), "password"),
    (re.compile(r"no password supplied|password is required", re.I), "no-password"),
    (re.compile(r'role "[^"]*" does not exist|no pg_hba\.conf entry|not permitted to log in', re.I), "login"),
    (re.compile(r'database "[^"]*" does not exist', re.I), "database"),
    (re.compile(r"connection refused", re.I), "refused"),
    (re.compile(r"could not translate host name|failed to resolve host|name or service not known", re.I), "host"),
)
_LIBPQ_PREFIX = re.compile(r"^(connection failed: )?(connection to server (at|on) .*? failed: )?", re.I)
_STATEMENT_TIMEOUT = re.compile(r"canceling statement due to statement timeout", re.I)
_OPTION_TIMEOUT = re.compile(r"statement_timeout\s*=\s*'?([0-9]+(?:\.[0-9]+)?)\s*(ms|s|min|h|d)?", re.I)
_UNITS = {"": 0.001, "ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True)
class Server:
    """A PostgreSQL database etl-craft connects to, as a message names it.

    `what` is "the Engine DB" or "the warehouse", `shown` its URL without a password, `address` its host:port;
    `url_key` is where its URL is set (Engine.url, Warehouse.url or --engine-url), `secret` the name of the
    password's variable and `secret_key` the key that names it (None where none can), `timeout_key` the setting
    of the connect timeout, `connect_timeout` its value in seconds."""

    what: str
    shown: str
    address: str
    user: str | None
    url_key: str
    secret: str | None
    secret_key: str | None
    timeout_key: str
    connect_timeout: int


def address(url: str) -> str:
    """host:port of a postgresql:// URL as messages show it (5432 when it names no port), or its socket folder."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    where = parts.netloc.rpartition("@")[2] or query.get("host", "")
    if not where:
        return "the local socket"
    if where.startswith("/"):
        return f"the socket in {where}"
    if where.endswith("]") or ":" not in where:
        where = f"{where}:{query.get('port', 5432)}"
    return where


def user(url: str) -> str | None:
    parts = urlsplit(url)
    return parts.username or dict(parse_qsl(parts.query)).get("user")


def connect_args(url_query: dict[str, str], connect_timeout: int, *, before: dict[str, str],
                 after: dict[str, str]) -> dict[str, object]:
    """psycopg's connect arguments: the connect timeout (unless the URL's query sets one, as --engine-url may) and
    the session's settings as -c options: `before` first, so that the URL's own options may change them, then
    those of the URL, then `after`, which nothing changes (PostgreSQL takes the last of a name)."""
    options = [f"-c {name}={value}" for name, value in before.items()]
    options += [url_query["options"]] if url_query.get("options") else []
    options += [f"-c {name}={value}" for name, value in after.items()]
    args: dict[str, object] = {"options": " ".join(options)} if options else {}
    if "connect_timeout" not in url_query:
        args["connect_timeout"] = connect_timeout
    return args


def url_connect_timeout(url_query: dict[str, str], default: int) -> int:
    """The connect timeout psycopg applies: the URL's own (libpq waits at least 2 s), else `default`."""
    try:
        value = int(float(url_query["connect_timeout"]))
    except (KeyError, ValueError):
        return default
    return max(value, 2) if value > 0 else default


def failure_kind(text: str) -> str | None:
    """The kind of a failed connection from libpq's words, or None when they say nothing known."""
    return next((kind for pattern, kind in _KINDS if pattern.search(text)), None)


def is_statement_timeout(text: str) -> bool:
    return bool(_STATEMENT_TIMEOUT.search(text))


def connect_failure(server: Server, driver_text: str) -> str:
    """What went wrong connecting to `server`, and what to do: one line."""
    said = _libpq_words(driver_text)
    kind = failure_kind(said)
    at, user = f"{server.what} at {server.shown}", server.user or "(the default)"
    if kind == "timeout":
        return (f"cannot reach {at}: no answer within {server.connect_timeout} s ({server.timeout_key}); check that "
                f"PostgreSQL runs at {server.address} and that no firewall drops the packets, then try again, or "
                f"raise {server.timeout_key}")
    if kind == "refused":
        return (f"cannot reach {at}: the connection was refused (nothing listens on {server.address}); check "
                f"{server.url_key} and that the server is running")
    if kind == "host":
        return f"cannot reach {at}: {said}; check the host in {server.url_key}"
    if kind in ("password", "no-password"):
        return f"{at} refused the login of user {user}: {said}; {_password_remedy(server, kind)}"
    if kind == "login":
        return (f"{at} refused the login of user {user}: {said}; check the user in {server.url_key}, and ask the "
                "DBA to let that user log in from this host")
    if kind == "database":
        return f"{at} refused the connection: {said}; check the database named in {server.url_key}"
    return f"cannot reach {at}: {said}; check {server.url_key} and that the server is running"


def _password_remedy(server: Server, kind: str) -> str:
    if server.secret_key is None:
        return (f"{server.url_key} names no password variable: give libpq the password of user "
                f"{server.user or '(the default)'} in a .pgpass file")
    if server.secret is None:
        return (f"the server asks for a password and {server.secret_key} is not set: name the variable that holds "
                f"the password of user {server.user or '(the default)'} in {server.secret_key}")
    return (f"check that the variable {server.secret} ({server.secret_key}, read from the environment or the "
            f"project's .env) holds the password of user {server.user or '(the default)'}")


def statement_timeout(where: str, seconds: float, key: str, statement: str | None) -> str:
    """A statement the server at `where` cancelled at its statement timeout, and what to do."""
    shown = f" ({_excerpt(statement)})" if statement else ""
    return (f"{where} cancelled a statement{shown} that ran longer than its limit of {seconds:g} s ({key}); a lock "
            f"held by another session (see pg_stat_activity) or an overloaded server makes a statement wait that "
            f"long: find the cause, or raise the limit")


def options_statement_timeout(options: str | None) -> float | None:
    """The statement timeout in seconds that libpq options (-c statement_timeout=...) set, if any (the last)."""
    found = _OPTION_TIMEOUT.findall(options or "")
    if not found:
        return None
    number, unit = found[-1]
    return float(number) * _UNITS[unit.lower()]


def _libpq_words(text: str) -> str:
    """libpq's message on one line, without the server it names (the message names it already) or "FATAL:"."""
    said = " ".join(text.split())
    said = _LIBPQ_PREFIX.sub("", said)
    return said.removeprefix("FATAL: ").rstrip(".; ").strip()


def _excerpt(statement: str, width: int = 80) -> str:
    flat = " ".join(statement.split())
    return flat if len(flat) <= width else flat[:width - 3] + "..."
