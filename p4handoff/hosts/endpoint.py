"""The contract between a sans-IO endpoint and the drivers that run it.

An endpoint never reads a clock or touches a socket: a driver (the real
network driver or the simulator) hands it segments and the current time,
polls it for segments to transmit, and wakes it at the time it asks for.
The same endpoint object therefore runs unchanged on real packets and in
virtual time.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from p4handoff.hosts.segment import Segment
    from p4handoff.notify import Notification


class Endpoint(Protocol):
    def handle(self, segment: "Segment", now: float) -> None:
        """Take one received segment (already decoded and checksum-verified)."""

    def poll(self, now: float) -> list["Segment"]:
        """Run timers due at `now` and return the segments to transmit now, in order."""

    def next_wakeup(self) -> float | None:
        """The earliest time `poll` has work to do (a timer, paced sending), or None."""

    def notify(self, note: "Notification", now: float) -> None:
        """A cross-layer handoff event (see p4handoff.notify)."""
