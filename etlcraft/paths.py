"""Where etl-craft's files are: its SQL sources (inside an installed wheel, or at the root of a source checkout),
and the task logs of a project's attempts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

_PACKAGE = Path(__file__).parent
#: A project's task logs, under its directory. Before migration 0014 the runs' folders were right under it.
LOGS_DIR = Path(".etl-craft") / "logs"


def sql_dir() -> Path:
    """The folder holding state_machine.yaml, errors.yaml, migrations/ and functions/."""
    bundled = _PACKAGE / "_sql"
    return bundled if bundled.is_dir() else _PACKAGE.parent / "sql"


def read_sql_yaml(name: str) -> Any:
    """One of the YAML files of sql_dir(), parsed by libyaml when PyYAML has it (every etl-craft process reads
    state_machine.yaml and errors.yaml, and the pure-Python parser takes a tenth of a second for them)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load((sql_dir() / name).read_text(encoding="utf-8"), Loader=loader)


def task_log_dir(project_dir: Path, engine_id: str, pipeline_code: str, run_id: int) -> Path:
    """The folder of one run's task logs: .etl-craft/logs/<Engine DB identity>/<pipeline>/<run>/ under the project.
    Run and attempt ids start at 1 in every Engine DB, so the logs of two Engine DBs of one project (SQLite, then
    PostgreSQL) are kept apart by the identity of the database that ran them (ENG_SETTINGS ENGINE_ID)."""
    if not (len(engine_id) == 32 and all(c in "0123456789abcdef" for c in engine_id)):
        raise ValueError(f"{engine_id!r} is not an Engine DB identity (32 hex digits)")
    return project_dir / LOGS_DIR / engine_id / pipeline_code / str(run_id)
