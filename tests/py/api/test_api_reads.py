"""A request that reads costs one Engine DB connection and one transaction, authentication included: every read
of the services it calls shares them (EngineDB.shared_read), and a token used within the minute is not written."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event

from tests.py.api.conftest import Live


@contextmanager
def _counting(live: Live) -> Iterator[dict[str, int]]:
    counts = {"checkouts": 0, "transactions": 0}

    def checkout(*_: Any) -> None:
        counts["checkouts"] += 1

    def begin(*_: Any) -> None:
        counts["transactions"] += 1

    event.listen(live.db.engine, "checkout", checkout)
    event.listen(live.db.engine, "begin", begin)
    try:
        yield counts
    finally:
        event.remove(live.db.engine, "checkout", checkout)
        event.remove(live.db.engine, "begin", begin)


def test_read_requests__one_connection_and_one_transaction_each(live: Live) -> None:
    for path in ("/api/v1/runs/1", "/api/v1/runs/1/tasks/report/explain", "/api/v1/pipelines/flow/runs"):
        assert live.call("GET", path, token="viewer").status_code == 200  # the token's use of this minute noted
        with _counting(live) as counts:
            answer = live.call("GET", path, token="viewer")
        assert answer.status_code == 200, answer.text
        # explain also asks two Engine DB functions (the retry policy, the dependencies' states): a connection each,
        # in a transaction of its own on SQLite and as one autocommitted statement on PostgreSQL
        calls = 2 if path.endswith("/explain") else 0
        assert counts["checkouts"] == 1 + calls, path
        assert counts["transactions"] == 1 + (calls if live.db.dialect == "sqlite" else 0), path


def test_first_use_of_the_minute__the_answer_shows_it(live: Live) -> None:
    """The request that writes its token's LAST_USED_AT answers from a snapshot taken after that write."""
    answer = live.call("GET", "/api/v1/tokens", token="admin")
    assert answer.status_code == 200, answer.text
    admin = next(t for t in answer.json()["tokens"] if t["name"] == "admin")
    assert admin["last_used_at"] is not None
