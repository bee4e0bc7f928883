"""SIGTERM unwinds like Ctrl-C, so every `finally` runs before the process ends.

A host endpoint stopped by a lab must still RST its peer and remove its
kernel guard; a lab run stopped by `timeout` or a service manager must
still tear down its switches, emulators and Mininet nodes. Python's default
SIGTERM ends the process without either.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def sigterm_as_interrupt() -> None:
    """From now on SIGTERM raises KeyboardInterrupt in the main thread."""
    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupt)


@contextmanager
def uninterrupted() -> Iterator[None]:
    """SIGTERM and Ctrl-C wait until the block has run, then interrupt as before.

    For teardowns: one interrupted halfway (a second Ctrl-C, or a SIGTERM
    that lands while a finished run is being taken down) leaves switches,
    emulators and namespaces running with nobody left to stop them. Only
    the main thread can hold signals; elsewhere the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {s: signal.signal(s, lambda signum, _frame: held.append(signum))
                for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if held:
            raise KeyboardInterrupt
