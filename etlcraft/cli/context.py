"""What every command shares: the project directory, the Engine DB it names, and the actor."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from etlcraft.config.loader import CONFIG_FILE, ProjectConfig, load_config
from etlcraft.core.actor import Actor, resolve_actor
from etlcraft.core.errors import EngineDbError, EtlCraftError
from etlcraft.engine.db import DEFAULT_SCHEMA, EngineDB
from etlcraft.engine.sqlite_file import create_folder, open_problem
from etlcraft.engine.timeouts import engine_timeouts
from etlcraft.services.projects import ProjectChoice, choose

if TYPE_CHECKING:
    from etlcraft.cli.remote import Remote


@dataclass
class CliContext:
    project_dir: Path
    engine_url: str | None
    engine_schema: str | None
    remote: Remote | None = None  # --server URL: the command asks the HTTP API, never the Engine DB
    project_code: str | None = None  # --project-code: the project whose pipelines the command acts on
    _db: EngineDB | None = field(default=None, repr=False)
    _config: ProjectConfig | None = field(default=None, repr=False)

    @classmethod
    def create(cls, project: str, engine_url: str | None, engine_schema: str | None,
               server: str | None = None, project_code: str | None = None) -> CliContext:
        remote = None
        if server:
            from etlcraft.cli.remote import Remote

            remote = Remote.create(server, os.environ.get("ETL_CRAFT_TOKEN"), project_code)
        return cls(Path(project).absolute(), engine_url, engine_schema, remote, project_code or None)

    def configured_project(self) -> str | None:
        """`Orchestration: Project` of the project's craft-connector.yml; None when not set, without a project, or
        when the file cannot be read (the command that needs the file reports why)."""
        if not self.has_project:
            return None
        try:
            return self.config().orchestration.project
        except EtlCraftError:
            return None

    def for_project(self, project_code: str) -> CliContext:
        """This context acting on project `project_code` (a command's own --project-code), chosen for the services."""
        self.project_code = project_code
        if self.remote is not None:
            self.remote = dataclasses.replace(self.remote, project_code=project_code)
        self.choose_project()
        return self

    def choose_project(self) -> None:
        """Set the project the services act on for this command (etlcraft.services.projects)."""
        choose(ProjectChoice(self.project_code, read_configured=self.configured_project))

    @property
    def has_project(self) -> bool:
        return (self.project_dir / CONFIG_FILE).is_file()

    def config(self) -> ProjectConfig:
        if self._config is None:
            self._config = load_config(self.project_dir)
        return self._config

    def configured_timezone(self) -> str | None:
        """`Orchestration: Timezone` of the project's craft-connector.yml; None when not set or without a project
        (an Engine DB named by --engine-url alone). etlcraft.core.zones puts it after the project row's."""
        return self.config().orchestration.timezone if self.has_project else None

    def actor(self) -> Actor:
        return resolve_actor()

    def engine_db(self, pool_size: int | None = None) -> EngineDB:
        """The Engine DB named by --engine-url, else by the project's craft-connector.yml; `pool_size`: a fixed
        budget of pooled connections (the server's Db_pool_size, a worker's 2 + slots/8), else SQLAlchemy's default
        pool. Opened once per process."""
        if self._db is None:
            if self.engine_url:
                self._db = EngineDB(self.engine_url, schema=self.engine_schema or DEFAULT_SCHEMA, pool_size=pool_size)
            else:
                config = self.config()
                engine = config.engine
                if engine.path is not None:
                    create_folder(engine.path)
                self._db = EngineDB(
                    engine.url, schema=engine.schema or DEFAULT_SCHEMA, password=config.secret_value(engine),
                    timeouts=engine_timeouts(engine), secret=engine.secret, pool_size=pool_size,
                )
        return self._db

    def existing_engine_db(self) -> EngineDB:
        """The Engine DB for a read-only command: a SQLite file that does not exist yet is not created."""
        path = self.sqlite_path()
        if path is not None and not path.exists():
            raise EngineDbError(open_problem(path, folder_is_created=True)
                                or f"the Engine DB file {path} does not exist yet; run etl-craft migrate")
        return self.engine_db()

    def sqlite_path(self) -> Path | None:
        if self.engine_url:
            return None
        return self.config().engine.path if self.config().engine.dialect == "sqlite" else None

    def close(self) -> None:
        if self._db is not None:
            self._db.dispose()
