"""What a handler is given (TaskContext) and what it gives back (HandlerResult), shared by every handler."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from etlcraft.config.loader import ProjectConfig


@dataclass(frozen=True)
class Offset:
    """An ingestion offset as the Engine DB stores it: its text and its type (INTEGER, DECIMAL, TEXT, DATE,
    TIMESTAMP)."""

    value: str
    type: str


@dataclass(frozen=True)
class Counts:
    """What an attempt did, recorded on the attempt and its task run. None: not measured by this handler."""

    source: int | None = None  # rows the SELECT or script produced
    insert: int | None = None
    update: int | None = None
    delete: int | None = None
    duplicate: int | None = None  # rows removed by MERGE_DEDUPE_ORDER
    rows_written: int | None = None  # insert + update + delete for SQL actions, the row count for scripts
    target: int | None = None  # rows in the target afterwards


@dataclass(frozen=True)
class TaskContext:
    """One attempt of one task, with everything its handler needs. Paths are absolute."""

    project_dir: Path
    config: ProjectConfig
    pipeline_id: int
    pipeline_code: str
    pipeline_run_id: int
    run_date: date
    task_id: int
    task_code: str
    task_run_id: int
    attempt_id: int
    handler: str
    action: str | None
    sql_file: str | None
    script_file: str | None
    target_object: str | None
    parameters: Mapping[str, str] = field(default_factory=dict)
    last_offset: Offset | None = None
    #: Run by `etl-craft run --task-code T --force`: the task redoes its work in full (a BUSINESS_RULES task judges
    #: its whole table, B52).
    force: bool = False

    @property
    def sql_path(self) -> Path | None:
        return None if self.sql_file is None else self.project_dir / "sql_files" / self.sql_file

    @property
    def script_path(self) -> Path | None:
        return None if self.script_file is None else self.project_dir / "ingestion_scripts" / self.script_file


@dataclass(frozen=True)
class HandlerResult:
    counts: Counts = Counts()
    offset: Offset | None = None
    message: str | None = None
