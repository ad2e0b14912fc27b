"""The Engine DB statement latency histogram (etlcraft/engine/latency.py): cumulative buckets with Prometheus'
`le` meaning (a value equal to a bound is counted in it), and fed by every statement an EngineDB sends."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from etlcraft.engine.db import EngineDB
from etlcraft.engine.latency import STATEMENT_LATENCY, Latencies


def test_latencies__values_on_and_between_bounds__cumulative_counts_and_sum() -> None:
    latencies = Latencies((0.1, 1.0))
    for seconds in (0.05, 0.1, 0.5, 1.0, 7.0):
        latencies.observe(seconds)
    counts = latencies.snapshot()
    assert counts.buckets == ((0.1, 2), (1.0, 4), (float("inf"), 5))
    assert counts.count == 5 and abs(counts.total - 8.65) < 1e-9


def test_statement_latency__statements_of_an_engine_db__each_counted_once(tmp_path: Path) -> None:
    db = EngineDB(f"sqlite:///{tmp_path / 'engine.db'}")
    with db.engine.connect() as conn:
        conn.execute(sa.text("SELECT 1"))  # the connection's own set-up statements run before this point
        before = STATEMENT_LATENCY.snapshot().count
        for _ in range(3):
            conn.execute(sa.text("SELECT 1"))
    assert STATEMENT_LATENCY.snapshot().count == before + 3
    db.dispose()
