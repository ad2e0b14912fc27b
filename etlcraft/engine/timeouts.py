"""How long the Engine DB may keep etl-craft waiting: the Engine section's connect_timeout_seconds,
statement_timeout_seconds and busy_timeout_seconds (etlcraft/config/keys.py holds their defaults and ranges), or
their defaults when --engine-url names the Engine DB."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from etlcraft.config.keys import keys_of

if TYPE_CHECKING:
    from etlcraft.config.loader import Connection


def _default(key: str) -> int:
    value = next(k.default for k in keys_of("Engine") if k.name == key)
    assert isinstance(value, int)
    return value


@dataclass(frozen=True)
class EngineTimeouts:
    """How long the Engine DB may keep etl-craft waiting, in seconds: for a PostgreSQL session to start (connect),
    for one statement (statement; migrate, grant and the wait for a target's lock are exempt) and for a SQLite file
    another process holds (busy). `configured`: set by the Engine section of craft-connector.yml; else the Engine DB
    is named by the command line option `option` (--engine-url, or engine copy's --to), where the defaults apply and
    the URL's query may set connect_timeout and options."""

    connect: int = field(default_factory=lambda: _default("connect_timeout_seconds"))
    statement: int = field(default_factory=lambda: _default("statement_timeout_seconds"))
    busy: int = field(default_factory=lambda: _default("busy_timeout_seconds"))
    configured: bool = False
    option: str = "--engine-url"

    @property
    def url_key(self) -> str:
        """Where the Engine DB's URL is set, as a message names it."""
        return "Engine.url in craft-connector.yml" if self.configured else self.option

    def key(self, name: str) -> str:
        """How a message names the setting of timeout `name` (connect, statement or busy)."""
        if self.configured:
            return f"Engine.{name}_timeout_seconds in craft-connector.yml"
        if name == "connect":
            return f"connect_timeout in the query of {self.option}"
        if name == "statement":
            return f"options=-c statement_timeout=MS in the query of {self.option}"
        return f"the default of Engine.busy_timeout_seconds: {self.option} does not read craft-connector.yml"


def engine_timeouts(engine: Connection) -> EngineTimeouts:
    """The timeouts the Engine section of craft-connector.yml sets (defaults filled in by the loader)."""
    return EngineTimeouts(
        connect=engine.connect_timeout_seconds or _default("connect_timeout_seconds"),
        statement=engine.statement_timeout_seconds or _default("statement_timeout_seconds"),
        busy=engine.busy_timeout_seconds or _default("busy_timeout_seconds"),
        configured=True,
    )
