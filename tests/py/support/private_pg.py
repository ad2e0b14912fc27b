"""A PostgreSQL cluster of the test's own, on another port, that a test may stop and start (the shared server on
5432 is never stopped). Made with the machine's initdb and pg_ctl, run as the postgres user (tests run as root),
with trust authentication on loopback and its socket in its own folder."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psycopg


def _bindir() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateCluster:
    def __init__(self) -> None:
        bindir = _bindir()
        if bindir is None:
            raise RuntimeError("no initdb on this machine: install PostgreSQL's server package")
        self.bindir = bindir
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="etlcraft-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        postgres = pwd.getpwnam("postgres")
        os.chown(self.root, postgres.pw_uid, postgres.pw_gid)
        self._as_postgres("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    def _as_postgres(self, tool: str, *args: str) -> None:
        command = ["runuser", "-u", "postgres", "--", str(self.bindir / tool), *args]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._as_postgres("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")

    def stop(self) -> None:
        """A fast shutdown: sessions are ended and their open transactions rolled back, as in a restart."""
        self._as_postgres("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        name = f"outage_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def remove(self) -> None:
        with suppress(subprocess.CalledProcessError):  # it was not running
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def private_cluster() -> Iterator[PrivateCluster]:
    cluster = PrivateCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()
