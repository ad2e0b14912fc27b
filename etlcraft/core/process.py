"""Who a process is: host, pid and a start identity that a reused pid does not share (Linux: boot id and start
ticks from /proc). Owners of runs and attempts are named from it."""

from __future__ import annotations

import os
import secrets
import socket
from functools import cache
from pathlib import Path

_PROC = Path("/proc")


def host() -> str:
    return socket.gethostname()


@cache
def _boot_id() -> str:
    try:
        return (_PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip()[:8]
    except OSError:
        return "noboot"


def process_start(pid: int) -> str | None:
    """The start identity of process `pid` ("<boot id>:<start ticks>"), None when it does not exist."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: the fields after it follow the last ')'.
    fields = stat[stat.rindex(")") + 2:].split()
    return f"{_boot_id()}:{fields[19]}"


def is_alive(pid: int | None, start: str | None) -> bool:
    """Whether the process that recorded (pid, start) still runs: same pid and same start identity."""
    return pid is not None and start is not None and process_start(pid) == start


def owner_id() -> str:
    """A new owner id for this process: host, pid, process start and a random suffix."""
    pid = os.getpid()
    return f"{host()}:{pid}:{process_start(pid) or 'unknown'}:{secrets.token_hex(4)}"
