"""The folder a SQLite Engine DB file lives in: created for a project's Engine section, and explained in one line
when it cannot be there (a regular file in the way, a folder this user may not write, a read-only file system),
instead of SQLite's "unable to open database file" or a traceback."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

from etlcraft.core.errors import EngineDbError

#: Where the path of a SQLite Engine DB is set, for the remedy of a message.
SETTING = "Engine: path in craft-connector.yml (or the --engine-url option)"


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return f"uid {os.getuid()}"


def _shown(path: Path) -> Path:
    """`path` as a message shows it: absolute, without . and .. parts."""
    return Path(os.path.normpath(path.absolute()))


def _nearest_existing(folder: Path) -> Path:
    """`folder` itself, or its nearest ancestor that exists (as a folder or as anything else)."""
    current = folder
    while not os.path.lexists(current) and current.parent != current:
        current = current.parent
    return current


def folder_problem(path: Path) -> str | None:
    """Why the SQLite file `path` cannot be created because of its folder, with the remedy, or None when its folder
    exists (or can be created) and this user may create files in it."""
    folder = _shown(path).parent
    found = _nearest_existing(path.absolute().parent)
    if not found.is_dir():
        found = _shown(found)
        under = "" if found == folder else f", so the folder {folder} cannot be created under it"
        return (f"{found} is a file, not a folder{under}; set {SETTING} to a file in a folder, or move {found} out "
                "of the way")
    if not os.path.lexists(path) and not os.access(found, os.W_OK | os.X_OK):
        found = _shown(found)
        return (f"the folder {found} is not writable by {_user()}, so {path.name} cannot be created in "
                f"{folder}; set {SETTING} to a folder you can write, or give {_user()} write access to {found}")
    return None


def create_folder(path: Path) -> None:
    """Create the folder of the SQLite Engine DB file `path` (and its parents); EngineDbError naming the folder,
    why it cannot be created and the remedy when that fails."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        problem = folder_problem(path) or (
            f"the folder {_shown(path).parent} cannot be created ({exc.strerror or exc}: "
            f"{exc.filename or path.parent}); set {SETTING} to a file in a folder you can create")
        raise EngineDbError(f"cannot create the SQLite Engine DB {_shown(path)}: {problem}") from exc


def open_problem(path: Path, *, folder_is_created: bool = False) -> str | None:
    """Why SQLite cannot open or create the Engine DB file `path` for a reason of its folder, as a one-line message;
    None when the folder is not the reason. A folder that does not exist is a reason unless etl-craft creates it
    (folder_is_created: a project's Engine: path, not a file a --engine-url names)."""
    problem = folder_problem(path)
    folder = path.absolute().parent
    if problem is None and not folder_is_created and not folder.is_dir():
        folder = _shown(folder)
        problem = f"its folder {folder} does not exist; create it, or set {SETTING} to a file in an existing folder"
    return None if problem is None else f"cannot open the SQLite Engine DB {_shown(path)}: {problem}"
