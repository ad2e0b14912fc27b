"""Where etl-craft's SQL sources live: inside an installed wheel, or at the root of a source checkout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

_PACKAGE = Path(__file__).parent


def sql_dir() -> Path:
    """The folder holding state_machine.yaml, errors.yaml, migrations/ and functions/."""
    bundled = _PACKAGE / "_sql"
    return bundled if bundled.is_dir() else _PACKAGE.parent / "sql"


def read_sql_yaml(name: str) -> Any:
    """One of the YAML files of sql_dir(), parsed by libyaml when PyYAML has it (every etl-craft process reads
    state_machine.yaml and errors.yaml, and the pure-Python parser takes a tenth of a second for them)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load((sql_dir() / name).read_text(encoding="utf-8"), Loader=loader)
