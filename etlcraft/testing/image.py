"""The migrated engine schema of etl-craft test's in-memory Engine DB, kept between runs in the user's cache.

Each `etl-craft test` process needs the engine's schema in an in-memory SQLite database before it can apply a
project's metadata migrations: rendering the engine's migrations and functions and executing them costs about a
tenth of a second of CPU, every run, for the same result. The migrated database is therefore saved once as an image
(SQLite's serialize()) and read back (deserialize()) by later runs.

The image is only a shortcut to a result the process would compute itself, so it is trusted only when it is
certainly that result:

- it is keyed by everything that shapes the migrated schema: etl-craft's version, the SQLite library, the Python
  version, and the content of every source the migrations are rendered from (sql/ without its rendered snapshot)
  or applied by (etlcraft/engine, etlcraft/core, etlcraft/paths.py). Any change, even uncommitted, is a new key;
- the file names its key and the SHA-256 of the database that follows; a file that is not a regular file of this
  user, is too large, names another key or does not match its digest is ignored, and the image is built again and
  written over it;
- it is written atomically (a temporary file in the same folder, then renamed), so a reader never sees half of it;
  the folder keeps the KEEP_IMAGES most recent images, so each change of etl-craft's sources does not leave one more.

Nothing of a project is in the image (the project's migrations are applied to a copy of it in memory), and nothing
of a test reads the cache folder otherwise. The folder is $ETL_CRAFT_TEST_CACHE, else ~/.cache/etl-craft/test;
ETL_CRAFT_TEST_CACHE=off neither reads nor writes an image. A folder that cannot be written costs the build only.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat
import sys
import tempfile
from pathlib import Path

from etlcraft import __version__
from etlcraft.paths import sql_dir

CACHE_ENV = "ETL_CRAFT_TEST_CACHE"
#: The first line of an image file; a new format gets a new line.
MAGIC = b"etl-craft engine image 1\n"
#: An image larger than this is not read (the engine's schema takes well under a megabyte).
MAX_IMAGE_BYTES = 64 * 1024 * 1024
#: Images kept when one is written (the most recent): enough for a few etl-craft installations side by side, while
#: every change to etl-craft's sources (a new key) would otherwise leave one more behind.
KEEP_IMAGES = 8
_PACKAGE = Path(__file__).resolve().parent.parent


def cache_dir() -> Path | None:
    """The folder images are kept in; None when ETL_CRAFT_TEST_CACHE=off."""
    value = os.environ.get(CACHE_ENV, "").strip()
    if value.lower() == "off":
        return None
    if value:
        return Path(value)
    try:
        return Path.home() / ".cache" / "etl-craft" / "test"
    except (RuntimeError, KeyError):  # no home directory to be found: no cache, the schema is migrated each run
        return None


def _sources() -> list[Path]:
    """The files the migrated engine schema is made from: sql/ (its rendered snapshot left out) and the modules
    that render and apply it."""
    root = sql_dir()
    found = [p for p in root.rglob("*") if p.is_file() and "rendered" not in p.relative_to(root).parts[:1]]
    for folder in ("engine", "core"):
        found += (_PACKAGE / folder).glob("*.py")
    return [*sorted(found), _PACKAGE / "paths.py"]


def image_key(dialect: str = "sqlite") -> str:
    """The key of the engine image for this etl-craft, SQLite and Python, and these sources."""
    digest = hashlib.sha256(MAGIC)
    for part in (__version__, dialect, sqlite3.sqlite_version, sys.version):
        digest.update(part.encode("utf-8") + b"\0")
    root = sql_dir()
    for path in _sources():
        data = path.read_bytes()
        name = path.relative_to(root) if path.is_relative_to(root) else path.relative_to(_PACKAGE)
        digest.update(f"{name.as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def _path(folder: Path, key: str) -> Path:
    return folder / f"engine-sqlite-{key[:32]}.image"


def load(key: str) -> sqlite3.Connection | None:
    """The cached image of `key` as a new in-memory database; None when there is none that can be trusted."""
    folder = cache_dir()
    if folder is None or not hasattr(sqlite3.Connection, "deserialize"):
        return None
    data = _read(_path(folder, key))
    if data is None:
        return None
    header = MAGIC + key.encode("ascii") + b"\n"
    body = data[len(header) + 65:]
    if not data.startswith(header) or data[len(header) + 64:len(header) + 65] != b"\n" \
            or hashlib.sha256(body).hexdigest().encode("ascii") != data[len(header):len(header) + 64]:
        return None
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        conn.deserialize(body)
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        conn.close()
        return None
    return conn


def _read(path: Path) -> bytes | None:
    """The file's bytes when it is a regular file of this user, not a link, and not too large."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_IMAGE_BYTES or \
                (hasattr(os, "getuid") and info.st_uid != os.getuid()):
            return None
        with os.fdopen(fd, "rb", closefd=False) as source:
            return source.read(MAX_IMAGE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def store(key: str, conn: sqlite3.Connection) -> None:
    """Save `conn`'s database as the image of `key`, atomically; a cache that cannot be written is left alone."""
    folder = cache_dir()
    if folder is None or not hasattr(sqlite3.Connection, "serialize"):
        return
    body = conn.serialize()
    data = MAGIC + key.encode("ascii") + b"\n" + hashlib.sha256(body).hexdigest().encode("ascii") + b"\n" + body
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".image-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temporary, _path(folder, key))
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        _prune(folder)


def _prune(folder: Path) -> None:
    """Remove all but the KEEP_IMAGES most recently written images of the folder (of any key)."""
    images = []
    for path in folder.glob("engine-*.image"):
        with contextlib.suppress(OSError):
            images.append((path.lstat().st_mtime_ns, path))
    for _, path in sorted(images, reverse=True)[KEEP_IMAGES:]:
        with contextlib.suppress(OSError):
            path.unlink()


__all__ = ["CACHE_ENV", "cache_dir", "image_key", "load", "store"]
