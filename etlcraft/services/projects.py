"""Which project a command acts on when one Engine DB serves several (seed S5.G).

Pipeline codes are unique per project, so a pipeline is found by the pair (project, code). The project is chosen,
in this order: `--project-code P` (the CLI) or `?project=P` (the HTTP API), else `Orchestration: Project` of
craft-connector.yml, else the only active project of the Engine DB; with several projects and none chosen the
command is refused with a message listing them. The entry points (the CLI group, each API route) set the choice for
what they run; the services resolve it where they look a pipeline up by its code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import sqlalchemy as sa

from etlcraft.core.errors import AmbiguousError, NotFoundError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.queries import fetch_all


@dataclass(frozen=True)
class ProjectChoice:
    """What the caller said about the project: `code` given for this call (--project-code, ?project=), and
    `configured`, Orchestration: Project of the project's craft-connector.yml; None when not said."""

    code: str | None = None
    configured: str | None = None
    #: Reads `configured` when first needed (the CLI: craft-connector.yml is read only by a command that looks a
    #: pipeline up, never by one that must not read it, such as the hermetic etl-craft test).
    read_configured: Callable[[], str | None] | None = field(default=None, compare=False, repr=False)

    @property
    def wanted(self) -> tuple[str, str] | None:
        """The chosen code and where it came from; None when nothing chose one."""
        if self.code:
            return self.code, "--project-code (or ?project=)"
        configured = self.configured or (self.read_configured() if self.read_configured else None)
        if configured:
            return configured, "Orchestration: Project of craft-connector.yml"
        return None


_CHOICE: ContextVar[ProjectChoice | None] = ContextVar("etl_craft_project_choice", default=None)


def choose(choice: ProjectChoice) -> None:
    """Set the project choice for the rest of this command (the CLI: one command per process)."""
    _CHOICE.set(choice)


@contextmanager
def choosing(choice: ProjectChoice) -> Iterator[None]:
    """The project choice for what runs inside the block (an API request), restored after it."""
    token = _CHOICE.set(choice)
    try:
        yield
    finally:
        _CHOICE.reset(token)


def current_choice() -> ProjectChoice:
    return _CHOICE.get() or ProjectChoice()


def resolve_project(db: EngineDB, conn: sa.Connection, choice: ProjectChoice | None = None) -> str:
    """The code of the project to act on, among the Engine DB's active projects (pick_project)."""
    return pick_project([str(r["project_code"]) for r in fetch_all(db, conn, "active_project_codes")], choice)


def pick_project(codes: Sequence[str], choice: ProjectChoice | None = None) -> str:
    """The code of the project to act on among the active `codes` (module docstring); NotFoundError for a chosen
    project that is not among them, AmbiguousError when there are several and none was chosen."""
    choice = current_choice() if choice is None else choice
    listed = ", ".join(sorted(codes)) or "none"
    wanted = choice.wanted
    if wanted is not None:
        code, source = wanted
        if code not in codes:
            raise NotFoundError(
                f"project {code} (from {source}) is not an active project of this Engine DB, whose projects are "
                f"{listed}; expected one of them: correct the code, or run etl-craft migrate in the project's "
                "folder to create it")
        return code
    if len(codes) == 1:
        return codes[0]
    if not codes:
        raise NotFoundError("this Engine DB holds no active project (CFG_PROJECTS), expected one; run etl-craft "
                            "migrate in the project's folder to apply its metadata migrations")
    raise AmbiguousError(
        f"this Engine DB serves {len(codes)} projects ({listed}) and no project was chosen; expected one: give "
        "--project-code P (ETL_CRAFT_PROJECT_CODE), set Orchestration: Project in craft-connector.yml, or add "
        "?project=P to the API request")
