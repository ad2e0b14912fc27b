"""Drive the real etl-craft command line in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def etl_craft(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> Result:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ETLCRAFT_", "ETL_CRAFT_"))}
    environ.update({"ETL_CRAFT_ACTOR": "tester@cli", "COLUMNS": "200", **(env or {})})
    done = subprocess.run([sys.executable, "-m", "etlcraft", *args], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=timeout, check=False)
    return Result(done.returncode, done.stdout, done.stderr)


def start_etl_craft(*args: str, cwd: Path, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start etl-craft in the background, its output in `log` (a file: an unread pipe could block it)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ETLCRAFT_", "ETL_CRAFT_"))}
    environ.update({"ETL_CRAFT_ACTOR": "tester@cli", "COLUMNS": "200", **(env or {})})
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "etlcraft", *args], cwd=cwd, env=environ, stdout=out,
                                stderr=subprocess.STDOUT)


def descendants_alive(pids: list[int]) -> list[int]:
    """Which of `pids` still run (Linux /proc; a zombie does not count)."""
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def descendants(pid: int) -> list[int]:
    """Every process below `pid` now: its children, theirs, and so on (Linux /proc parent links)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
