"""Stop signals (SIGTERM, SIGHUP, SIGINT) held back while a block runs that must not be cut in half: an Engine DB
transaction (a connection interrupted mid-statement cannot even be rolled back cleanly on PostgreSQL), the claim of
an attempt and the start of its task process. The signal is delivered, to the handler it had, when the block
ends."""

from __future__ import annotations

import _signal
import contextlib
import threading
from collections.abc import Iterator
from types import FrameType

_STOPS = (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGINT)


@contextlib.contextmanager
def holding_stops() -> Iterator[None]:
    """Hold SIGTERM, SIGHUP and SIGINT until the block ends, then deliver them to the handlers they had (B3).
    Blocks nest: an inner block hands what it held to the outer one. Outside the main thread, where handlers cannot
    be changed (and where signals are never delivered), the block runs as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        held.append(signum)

    # _signal is what the signal module wraps: its wrapper turns a callable handler into an enum by catching a
    # ValueError, which costs more than the system calls. Every Engine DB call runs in a block like this one, among
    # them each claim and finish of a worker's loop (release/benchmarks/claims.md).
    previous = {s: _signal.signal(s, hold) for s in _STOPS}
    try:
        yield
    finally:
        for stop, handler in previous.items():
            _signal.signal(stop, _signal.SIG_DFL if handler is None else handler)
        for signum in dict.fromkeys(held):
            _signal.raise_signal(signum)
