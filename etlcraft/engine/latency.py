"""How long this process's Engine DB statements take: a cumulative histogram fed by SQLAlchemy's cursor events.

The engine layer keeps the counts itself, in plain Python, because prometheus_client belongs to the optional
`server` extra and nothing below the API may need it; etlcraft.api.metrics exposes these counts as the histogram
etl_craft_engine_db_statement_duration_seconds. Each statement costs two perf_counter() calls, a bisect over the
bucket bounds and three additions under a lock: well under a microsecond beside a statement's round trip.
"""

from __future__ import annotations

import bisect
import threading
import time
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

#: Upper bounds (seconds) of the statement latency buckets; +Inf is implied.
STATEMENT_BUCKETS: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                                        2.5, 5.0, 10.0, 30.0)


@dataclass(frozen=True)
class HistogramCounts:
    """A snapshot: cumulative counts per upper bound (the last is +Inf), the sum of observations, their count."""

    buckets: tuple[tuple[float, int], ...]
    total: float
    count: int


class Latencies:
    """A cumulative histogram of durations in seconds, safe to feed from several threads."""

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self._counts = [0] * (len(bounds) + 1)
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, seconds: float) -> None:
        index = bisect.bisect_left(self.bounds, seconds)
        with self._lock:
            self._counts[index] += 1
            self._sum += seconds

    def snapshot(self) -> HistogramCounts:
        with self._lock:
            counts, total = list(self._counts), self._sum
        cumulative, running = [], 0
        for bound, count in zip((*self.bounds, float("inf")), counts, strict=True):
            running += count
            cumulative.append((bound, running))
        return HistogramCounts(tuple(cumulative), total, running)


#: Every Engine DB statement this process sends through SQLAlchemy, whichever EngineDB sends it.
STATEMENT_LATENCY = Latencies(STATEMENT_BUCKETS)


def time_statements(engine: sa.Engine) -> None:
    """Feed STATEMENT_LATENCY from `engine`'s cursor events; the start is kept on the statement's execution
    context (one per statement). A statement that fails has no after-event and is not counted."""

    @event.listens_for(engine, "before_cursor_execute")
    def _before(conn: sa.Connection, cursor: Any, statement: str, parameters: Any, context: Any,
                executemany: bool) -> None:
        if context is not None:
            context.etl_craft_started = time.perf_counter()

    @event.listens_for(engine, "after_cursor_execute")
    def _after(conn: sa.Connection, cursor: Any, statement: str, parameters: Any, context: Any,
               executemany: bool) -> None:
        started = getattr(context, "etl_craft_started", None)
        if started is not None:
            STATEMENT_LATENCY.observe(time.perf_counter() - started)
