"""etl-craft init: lay out a new project directory, refusing to overwrite anything that is already there."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from etlcraft.core.errors import RefusedByPolicyError, UsageError

#: The scaffold's sources: common/ goes into every project, then example/ (two example pipelines) or blank/ (empty
#: folders that say what goes in them).
_SOURCE = Path(__file__).parent.parent / "scaffold"
_RENAMES = {"env.example": ".env.example", "gitignore": ".gitignore", "migrations/gitkeep": "migrations/.gitkeep"}
_FOLDERS = ("migrations", "sql_files", "ingestion_scripts", "tests")
_CODE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,127}")
_CONFIG = "craft-connector.yml"
_SHOWN = 5  # conflicting paths named in a refusal


@dataclass
class ScaffoldReport:
    directory: Path
    project_code: str
    blank: bool = False
    created: list[str] = field(default_factory=list)
    #: Always empty: init writes into a directory that holds none of its files. Kept for etl-craft/scaffold/1.
    unchanged: list[str] = field(default_factory=list)


def project_code_for(directory: Path) -> str:
    """A project code from a folder name: other characters become _, and it starts with a letter."""
    code = re.sub(r"[^A-Za-z0-9_]", "_", directory.absolute().name)[:120] or "project"
    return code if code[0].isalpha() else f"p_{code}"


def scaffold(directory: Path, project_code: str | None = None, *, blank: bool = False) -> ScaffoldReport:
    """Create a project's files: the example project, or with `blank` one without pipelines. A directory that
    already holds craft-connector.yml or any file init would write is refused before anything is written."""
    directory = directory.absolute()
    code = project_code_for(directory) if project_code is None else project_code
    if not _CODE.fullmatch(code):
        raise UsageError(f"the project code {code!r} is not an identifier; use a letter, then letters, digits or _")
    planned = _planned_files(code, blank)
    _refuse_existing(directory, planned)
    report = ScaffoldReport(directory, code, blank)
    for folder in _FOLDERS:
        (directory / folder).mkdir(parents=True, exist_ok=True)
    for relative, content in planned.items():
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (directory / relative).write_text(content, encoding="utf-8")
        report.created.append(relative)
    return report


def _refuse_existing(directory: Path, planned: dict[str, str]) -> None:
    """Refuse a directory in which init would overwrite something: a project's craft-connector.yml, any file of
    `planned`, or a non-folder where one of the project's folders goes."""
    if (directory / _CONFIG).exists() or (directory / _CONFIG).is_symlink():
        raise RefusedByPolicyError(
            f"{directory} is already an etl-craft project: it has {_CONFIG}; etl-craft init creates new projects "
            "and overwrites nothing: change this project with a new numbered file in migrations/ and etl-craft "
            "migrate, or give init a new or empty directory (nothing was written)"
        )
    found = [rel for rel in planned if (directory / rel).exists() or (directory / rel).is_symlink()]
    found += [f"{folder} (not a folder)" for folder in _FOLDERS
              if (directory / folder).exists() and not (directory / folder).is_dir()]
    if found:
        shown = ", ".join(found[:_SHOWN]) + (f" and {len(found) - _SHOWN} more" if len(found) > _SHOWN else "")
        raise RefusedByPolicyError(
            f"{directory} already has {shown}, which etl-craft init would write; init overwrites nothing: move "
            f"{'it' if len(found) == 1 else 'them'} away, or give init a new or empty directory (nothing was written)"
        )


def _planned_files(code: str, blank: bool) -> dict[str, str]:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    files = {}
    for layer in ("common", "blank" if blank else "example"):
        source = _SOURCE / layer
        # Byte-compiled copies of the scaffold's scripts (pip compiles every .py of a wheel it installs) are not part
        # of a project.
        for path in sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            relative = path.relative_to(source).as_posix()
            relative = _RENAMES.get(relative, relative)
            text = path.read_text(encoding="utf-8")
            if relative.endswith(".j2"):
                relative, text = relative[: -len(".j2")], env.from_string(text).render(project_code=code)
            files[relative] = text
    return files
