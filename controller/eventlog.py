"""The controller's structured event log as its parts see it: an event name and its fields.

The daemon writes each call as one JSON line (`p4handoff.controller.daemon`);
tests collect the calls in a list. One type, so every part takes the same log.
"""
from __future__ import annotations

from typing import Any, Callable

LogFn = Callable[[str, dict[str, Any]], None]


def no_log(event: str, fields: dict[str, Any]) -> None:
    """The log of a part run without one: events are dropped."""
