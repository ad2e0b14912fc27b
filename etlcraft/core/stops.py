"""Stop signals (SIGTERM, SIGHUP) held back while a block runs that must not be cut in half: an Engine DB
transaction (a connection interrupted mid-statement cannot even be rolled back cleanly on PostgreSQL), the claim of
an attempt and the start of its task process. The signal is delivered, to the handler it had, when the block
ends."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


@contextlib.contextmanager
def holding_stops() -> Iterator[None]:
    """Hold SIGTERM and SIGHUP until the block ends, then deliver them to the handlers they had (B3). Blocks nest:
    an inner block hands what it held to the outer one. Outside the main thread, where handlers cannot be changed
    (and where signals are never delivered), the block runs as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        held.append(signum)

    previous = {s: signal.signal(s, hold) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, signal.SIG_DFL if handler is None else handler)
        for signum in dict.fromkeys(held):
            signal.raise_signal(signum)
