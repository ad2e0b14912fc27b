"""What never leaves etl-craft in a response: the values of task parameters whose names look secret.

A parameter whose name matches one of the sensitive patterns (*TOKEN*, *SECRET*, *PASSWORD*, *KEY*, compared
without regard to case) is shown as *** by `etl-craft show` and by the HTTP API alike. etl-craft's own documented
parameters (MERGE_KEY, ...; docs/reference/task-parameters.md) hold column names and settings, never secrets, and
are shown as they are.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

from etlcraft.core import parameters

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
