"""Drive the real etl-craft command line in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def etl_craft(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> Result:
    """Run `etl-craft <args>` in `cwd` to its end. It runs in a process of its own, forked from a warm server that
    has imported etl-craft (tests.py.support.cli_server), unless `env` sets an interpreter variable (PYTHON...),
    which only a new interpreter reads."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ETL_CRAFT_", "ETLCRAFT_"))}
    environ.update({"ETL_CRAFT_ACTOR": "tester@cli", "COLUMNS": "200", **(env or {})})
    if any(name.startswith("PYTHON") for name in env or {}):
        done = subprocess.run([sys.executable, "-m", "etlcraft", *args], cwd=cwd, env=environ, capture_output=True,
                              text=True, timeout=timeout, check=False)
        return Result(done.returncode, done.stdout, done.stderr)
    return _Server.get().run(list(args), cwd, environ, timeout)


class _Server:
    """This test process's cli_server, started on first use and ended with this process."""

    _current: _Server | None = None

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        self.process = subprocess.Popen([sys.executable, "-m", "tests.py.support.cli_server", str(theirs.fileno())],
                                        cwd=Path(__file__).resolve().parents[3], pass_fds=[theirs.fileno()],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        theirs.close()
        self.socket = ours
        self.reader: IO[str] = ours.makefile("r")
        self.writer: IO[str] = ours.makefile("w")

    @classmethod
    def get(cls) -> _Server:
        if cls._current is None or cls._current.process.poll() is not None:
            cls._current = cls()
        return cls._current

    def close(self) -> None:
        _Server._current = None
        self.process.kill()
        self.process.wait()
        for stream in (self.reader, self.writer, self.socket):
            stream.close()

    def _reply(self) -> dict[str, Any]:
        line = self.reader.readline()
        if not line:
            raise RuntimeError(f"the tests' etl-craft server ended (exit code {self.process.wait()})")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def run(self, args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> Result:
        with tempfile.TemporaryDirectory(prefix="etl-craft-cli-") as scratch:
            out, err = Path(scratch) / "out", Path(scratch) / "err"
            self.writer.write(json.dumps({"args": args, "cwd": str(cwd), "env": env, "out": str(out),
                                          "err": str(err)}) + "\n")
            self.writer.flush()
            pid = self._reply()["pid"]
            self.socket.settimeout(timeout)
            try:
                returncode = self._reply()["returncode"]
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                self.close()  # its reply is still to come: the next command starts a new server
                raise subprocess.TimeoutExpired(["etl-craft", *args], timeout) from None
            self.socket.settimeout(None)
            return Result(returncode, out.read_text(), err.read_text())


def start_etl_craft(*args: str, cwd: Path, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start etl-craft in the background, its output in `log` (a file: an unread pipe could block it)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ETL_CRAFT_", "ETLCRAFT_"))}
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
