"""etl-craft init: lay out a new project directory, idempotently and without overwriting anyone's work."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from etlcraft.core.errors import UsageError

_SOURCE = Path(__file__).parent.parent / "scaffold" / "project"
_RENAMES = {"env.example": ".env.example", "gitignore": ".gitignore"}
_FOLDERS = ("migrations", "sql_files", "ingestion_scripts", "tests")
_CODE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,127}")


@dataclass
class ScaffoldReport:
    directory: Path
    project_code: str
    created: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def project_code_for(directory: Path) -> str:
    """A project code from a folder name: other characters become _, and it starts with a letter."""
    code = re.sub(r"[^A-Za-z0-9_]", "_", directory.absolute().name)[:120] or "project"
    return code if code[0].isalpha() else f"p_{code}"


def scaffold(directory: Path, project_code: str | None = None) -> ScaffoldReport:
    """Create the project's files. Files already there with the same content are left alone; a file that
    differs is refused before anything is written."""
    directory = directory.absolute()
    code = project_code_for(directory) if project_code is None else project_code
    if not _CODE.fullmatch(code):
        raise UsageError(f"the project code {code!r} is not an identifier; use a letter, then letters, digits or _")
    planned = _planned_files(code)
    report = ScaffoldReport(directory, code)
    for folder in _FOLDERS:
        if (directory / folder).exists() and not (directory / folder).is_dir():
            raise UsageError(
                f"{directory / folder} exists and is not a folder; move it away or choose another directory "
                "(nothing was written)"
            )
    for relative, content in planned.items():
        target = directory / relative
        if target.exists():
            if not target.is_file() or target.read_bytes() != content.encode("utf-8"):
                raise UsageError(
                    f"{target} already exists and differs from what etl-craft init writes; move it away or "
                    "choose another directory (nothing was written)"
                )
            report.unchanged.append(relative)
    for folder in _FOLDERS:
        (directory / folder).mkdir(parents=True, exist_ok=True)
    for relative, content in planned.items():
        if relative not in report.unchanged:
            (directory / relative).parent.mkdir(parents=True, exist_ok=True)
            (directory / relative).write_text(content, encoding="utf-8")
            report.created.append(relative)
    return report


def _planned_files(code: str) -> dict[str, str]:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    files = {}
    # Byte-compiled copies of the scaffold's scripts (pip compiles every .py of a wheel it installs) are not part of
    # a project.
    for path in sorted(p for p in _SOURCE.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        relative = path.relative_to(_SOURCE).as_posix()
        relative = _RENAMES.get(relative, relative)
        text = path.read_text(encoding="utf-8")
        if relative.endswith(".j2"):
            relative, text = relative[: -len(".j2")], env.from_string(text).render(project_code=code)
        files[relative] = text
    return files
