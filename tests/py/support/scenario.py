"""Metadata and runs for contract tests, written through the engine on either dialect."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

import sqlalchemy as sa

from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call

RUN_DATE = date(2026, 1, 1)


#: Why a test's run created IN-PROGRESS skips its pipeline gate (recorded on its BYPASSED decisions).
SETUP_BYPASS = "test set-up: the run is created IN-PROGRESS"


@dataclass
class Project:
    """A project with pipelines and tasks by code; ids come back from the Engine DB."""

    db: EngineDB
    pipelines: dict[str, int] = field(default_factory=dict)
    tasks: dict[str, int] = field(default_factory=dict)
    project_id: int | None = None

    def _insert(self, conn: sa.Connection, table: str, key: str, **values: Any) -> int:
        columns, binds = ", ".join(values), ", ".join(f":{k}" for k in values)
        sql = f"INSERT INTO {self.db.qualify(table)} ({columns}) VALUES ({binds}) RETURNING {key}"
        return int(conn.execute(sa.text(sql), values).scalar_one())

    def pipeline(self, code: str, **columns: Any) -> int:
        with self.db.write() as conn:
            if self.project_id is None:
                self.project_id = self._insert(conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE="proj")
            self.pipelines[code] = self._insert(conn, "CFG_PIPELINES", "PIPELINE_ID", PROJECT_ID=self.project_id,
                                                PIPELINE_CODE=code, **columns)
        return self.pipelines[code]

    def task(self, pipeline: str, code: str, handler: str = "SQL", **columns: Any) -> int:
        defaults: dict[str, Any] = {"SQL": {"ACTION": "OVERWRITE_TABLE", "SQL_FILE": f"{code}.sql"},
                                    "PYTHON": {"SCRIPT_FILE": f"{code}.py"}}.get(handler, {})
        with self.db.write() as conn:
            self.tasks[code] = self._insert(conn, "CFG_TASKS", "TASK_ID", PIPELINE_ID=self.pipelines[pipeline],
                                            TASK_CODE=code, HANDLER=handler, **{**defaults, **columns})
        return self.tasks[code]

    def depends(self, task: str, on: str, type_: str = "SUCCESS", consume_repairs: str = "Y") -> int:
        with self.db.write() as conn:
            return self._insert(conn, "CFG_TASK_DEPENDENCY", "TASK_DEPENDENCY_ID", TASK_ID=self.tasks[task],
                                DEPENDS_ON_TASK_ID=self.tasks[on], DEPENDENCY_TYPE=type_,
                                CONSUME_REPAIRS=consume_repairs)

    def pipeline_depends(self, pipeline: str, on: str, type_: str = "SUCCESS", consume_repairs: str = "Y") -> int:
        with self.db.write() as conn:
            return self._insert(conn, "CFG_PIPELINE_DEPENDENCY", "PIPELINE_DEPENDENCY_ID",
                                PIPELINE_ID=self.pipelines[pipeline], DEPENDS_ON_PIPELINE_ID=self.pipelines[on],
                                DEPENDENCY_TYPE=type_, CONSUME_REPAIRS=consume_repairs)

    def run(self, pipeline: str, key: str = "manual:1", **arguments: Any) -> int:
        """Run `key` of `pipeline` by create_run, IN-PROGRESS unless `status` says otherwise. A run created
        IN-PROGRESS skips its pipeline gate, which create_run records BYPASSED (SETUP_BYPASS) when the pipeline has
        one; a test of the gate creates its run QUEUED and admits it."""
        if arguments.get("status", "IN-PROGRESS") == "IN-PROGRESS":
            arguments.setdefault("bypass_reason", SETUP_BYPASS)
        row = call(self.db, "create_run", pipeline_id=self.pipelines[pipeline], run_key=key,
                   run_date=arguments.pop("run_date", RUN_DATE), **arguments)[0]
        return int(row.pipeline_run_id)

    def scalar(self, sql: str, **params: Any) -> Any:
        """One value from a read query; table names in {braces} are qualified for the dialect."""
        names = {t: self.db.qualify(t) for t in _TABLES}
        with self.db.read() as conn:
            return conn.execute(sa.text(sql.format(**names)), params).scalar()

    def rows(self, sql: str, **params: Any) -> list[tuple[Any, ...]]:
        names = {t: self.db.qualify(t) for t in _TABLES}
        with self.db.read() as conn:
            return [tuple(r) for r in conn.execute(sa.text(sql.format(**names)), params)]


_TABLES = ("CFG_PROJECTS", "CFG_PIPELINES", "CFG_TASKS", "CFG_TASK_PARAMETERS", "CFG_TASK_DEPENDENCY",
           "CFG_PIPELINE_DEPENDENCY", "CFG_POOLS", "AUD_PIPELINES_RUN_LOG", "AUD_TASK_RUN_LOG", "AUD_TASK_ATTEMPTS",
           "AUD_GATE_DECISIONS", "AUD_DEPENDENCY_CONSUMPTION", "AUD_RUN_INTERVENTIONS", "AUD_PIPELINE_PAUSES",
           "AUD_ACTIONS", "AUD_METADATA_CHANGES", "AUD_TASK_OFFSETS", "CFG_API_TOKENS")
