"""LISTEN etl_craft_queue: the socket a worker's loop waits on, so a newly QUEUED attempt of its pool wakes it."""

from __future__ import annotations

import contextlib
from typing import Any

import sqlalchemy as sa

from etlcraft.engine.db import EngineDB

CHANNEL = "etl_craft_queue"


class QueueListener:
    """A connection of its own (never pooled: see EngineDB.new_connection) that LISTENs on etl_craft_queue. Nothing
    depends on a notification arriving: the worker also claims every poll interval. A broken connection is opened
    again at the next look."""

    def __init__(self, db: EngineDB, pool: str) -> None:
        self.db, self.pool = db, pool
        self._conn: sa.Connection | None = None

    def _driver(self) -> Any:
        assert self._conn is not None
        return self._conn.connection.driver_connection

    def fileno(self) -> int | None:
        """The socket to wait on (the connection opened and LISTEN sent when there is none); None while the
        Engine DB cannot be reached."""
        if self._conn is None:
            try:
                self._conn = self.db.new_connection()
                driver = self._driver()
                driver.autocommit = True
                driver.execute(f"LISTEN {CHANNEL}")
            except Exception:  # a worker that cannot listen still claims on its timer
                self.close()
                return None
        return int(self._driver().fileno())

    def drain(self) -> int:
        """Read the notifications that arrived; how many named this worker's pool."""
        if self._conn is None:
            return 0
        try:
            return sum(1 for n in self._driver().notifies(timeout=0) if n.payload == self.pool)
        except Exception:  # the connection broke: opened again at the next look
            self.close()
            return 0

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.invalidate()
                self._conn.close()
            self._conn = None
