"""The controller's structured event log as its parts see it: an event name and its fields.

The daemon writes each call as one JSON line (`JsonLog`);
tests collect the calls in a list. One type, so every part takes the same log.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import IO, Any, Callable

LogFn = Callable[[str, dict[str, Any]], None]
_encode = json.JSONEncoder(default=str).encode      # json.dumps(..., default=str) without a new encoder per line


def no_log(event: str, fields: dict[str, Any]) -> None:
    """The log of a part run without one: events are dropped."""


class JsonLog:
    """JSON lines, one per event, each with a wall-clock timestamp; thread-safe.

    Each line is flushed at once, except inside `held()`: the daemon holds the log while it handles one
    event (a batch of 200 registrations writes ~2,400 lines), and the lines go out in one write at its end,
    each still stamped when it was logged. Give it a file that is not line-buffered, or each line is a
    write anyway."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self._lock = threading.Lock()
        self._held = 0

    def __call__(self, event: str, fields: dict[str, Any]) -> None:
        line = _encode({"ts": round(time.time(), 6), "event": event, **fields})
        with self._lock:
            self.out.write(line + "\n")
            if not self._held:
                self.out.flush()

    def flush(self) -> None:
        """What was logged so far goes out now, held or not."""
        with self._lock:
            self.out.flush()

    @contextmanager
    def held(self) -> Iterator[None]:
        """Lines logged inside (by any thread) are flushed together when the outermost block ends."""
        with self._lock:
            self._held += 1
        try:
            yield
        finally:
            with self._lock:
                self._held -= 1
                if not self._held:
                    self.out.flush()


def held(log: LogFn) -> Any:
    """`log.held()` where the log can hold its lines (JsonLog), else a block that does nothing."""
    return log.held() if isinstance(log, JsonLog) else nullcontext()


def flush(log: LogFn) -> None:
    """`log.flush()` where the log can hold its lines (JsonLog)."""
    if isinstance(log, JsonLog):
        log.flush()
