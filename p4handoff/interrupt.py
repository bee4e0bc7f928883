"""SIGTERM unwinds like Ctrl-C, so every `finally` runs before the process ends.

A host endpoint stopped by a lab must still RST its peer and remove its
kernel guard; a lab run stopped by `timeout` or a service manager must
still tear down its switches, emulators and Mininet nodes. Python's default
SIGTERM ends the process without either.
"""
from __future__ import annotations

import signal


def sigterm_as_interrupt() -> None:
    """From now on SIGTERM raises KeyboardInterrupt in the main thread."""
    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupt)
