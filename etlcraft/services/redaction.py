"""What never leaves etl-craft in a response: the values of task parameters whose names look secret.

A parameter whose name matches one of the sensitive patterns (*TOKEN*, *SECRET*, *PASSWORD*, *KEY*, compared
without regard to case) is shown as *** by `etl-craft show` and by the HTTP API alike. etl-craft's own documented
parameters (MERGE_KEY, ...; docs/reference/task-parameters.md) hold column names and settings, never secrets, and
are shown as they are. Free text etl-craft serves but did not write (error messages, task logs) goes through a
Scrubber, which masks URL passwords and every known secret value.
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from etlcraft.config.loader import ProjectConfig
from etlcraft.core import parameters
from etlcraft.core.errors import ConfigurationError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.queries import fetch_all

SENSITIVE_PATTERNS = ("*TOKEN*", "*SECRET*", "*PASSWORD*", "*KEY*")
MASK = "***"


def is_sensitive(name: str) -> bool:
    upper = name.upper()
    if upper in parameters.BY_NAME:
        return False
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SENSITIVE_PATTERNS)


def masked_parameters(values: Mapping[str, str | None]) -> dict[str, str | None]:
    """Parameter values by name, each sensitive one (and set) replaced by ***."""
    return {name: MASK if value is not None and is_sensitive(name) else value for name, value in values.items()}


# --- secrets in free text: error messages, logs --------------------------------------------------------------------

#: The password of a URL (scheme://user:password@host), whoever wrote it: a driver's error, a script's print.
_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)[^@\s/]+@")
#: How long a Scrubber's list of secret values serves before it is read again (a new secret parameter is masked
#: from then on; URL passwords are masked at once, by their shape).
REFRESH_SECONDS = 5.0


@dataclass(frozen=True)
class Scrubber:
    """Masks secrets in text that etl-craft serves but did not write itself (error messages, task logs): every URL
    password, and every known secret value: the values of sensitive task parameters and the passwords the
    configuration's variables hold (Engine, Warehouse, Email)."""

    values: tuple[str, ...]

    def text(self, text: str) -> str:
        text = _URL_PASSWORD.sub(lambda found: f"{found.group('head')}{MASK}@", text)
        for value in self.values:
            text = text.replace(value, MASK)
        return text

    def document(self, value: Any) -> Any:
        """A JSON document with each string scrubbed."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.document(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.document(v) for v in value]
        return value

    def lines(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """A byte stream scrubbed line by line (a secret never straddles two chunks)."""
        rest = b""
        for chunk in chunks:
            *whole, rest = (rest + chunk).split(b"\n")
            if whole:
                yield b"".join(self.text(line.decode("utf-8", "replace")).encode("utf-8") + b"\n" for line in whole)
        if rest:
            yield self.text(rest.decode("utf-8", "replace")).encode("utf-8")


def scrubber(db: EngineDB, config: ProjectConfig) -> Scrubber:
    """The Scrubber of this Engine DB and configuration, its secret values read at most every REFRESH_SECONDS."""
    key = (id(db), id(config))
    now = time.monotonic()
    cached = _cache.get(key)
    if cached is not None and now - cached[0] < REFRESH_SECONDS:
        return cached[1]
    with db.read() as conn:
        rows = fetch_all(db, conn, "task_parameters")
    found = {str(r["parameter_value"]) for r in rows if r["parameter_value"] and is_sensitive(r["parameter_name"])}
    for holder in (config.engine, config.warehouse, config.email):
        if holder is not None and holder.secret is not None:
            with contextlib.suppress(ConfigurationError):
                found.add(config.secret_value(holder) or "")
    made = Scrubber(tuple(sorted((v for v in found if len(v) >= MIN_SECRET), key=len, reverse=True)))
    _cache[key] = (now, made)
    return made


#: Shorter values are not masked in free text: masking every "1" or "on" would garble logs and hide nothing.
MIN_SECRET = 4
_cache: dict[tuple[int, int], tuple[float, Scrubber]] = {}
