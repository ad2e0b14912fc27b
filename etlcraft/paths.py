"""Where etl-craft's SQL sources live: inside an installed wheel, or at the root of a source checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).parent


def sql_dir() -> Path:
    """The folder holding state_machine.yaml, errors.yaml, migrations/ and functions/."""
    bundled = _PACKAGE / "_sql"
    return bundled if bundled.is_dir() else _PACKAGE.parent / "sql"
