"""The controller's structured event log as its parts see it: an event name and its fields.

The daemon writes each call as one JSON line (`JsonLog`);
tests collect the calls in a list. One type, so every part takes the same log.
"""
from __future__ import annotations

import json
import threading
import time
from typing import IO, Any, Callable

LogFn = Callable[[str, dict[str, Any]], None]


def no_log(event: str, fields: dict[str, Any]) -> None:
    """The log of a part run without one: events are dropped."""


class JsonLog:
    """JSON lines, one per event, each with a wall-clock timestamp; thread-safe."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self._lock = threading.Lock()

    def __call__(self, event: str, fields: dict[str, Any]) -> None:
        line = json.dumps({"ts": round(time.time(), 6), "event": event, **fields}, default=str)
        with self._lock:
            self.out.write(line + "\n")
            self.out.flush()
