"""Fences for buffer releases: journal a release as done only once the switch has read its packet-out.

`P4RuntimeClient.packet_out` returns as soon as the message is queued on the
stream; gRPC writes it a few milliseconds later. A controller killed in
between loses every queued packet-out, and if their releases were already
journaled (controller/spool.py) the restarted controller cannot send them
again: in `tests/test_ctl_spool_bmv2.py` a kill 3 ms after a 40-packet flush
lost 38 packets in 3 of 5 runs. P4Runtime streams are in order and the
switch answers a telemetry probe with a packet-in, so a probe sent after the
flush comes back only once the switch has read every packet-out before it:
its answer is the fence. Until then the releases stay unjournaled; a restart
in between re-sends them (a duplicate, never a loss, as the spool promises).

A fence whose switch does not answer (gone, restarting) is settled at its
deadline: what went to that switch is lost with it either way.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from p4handoff.controller.spool import Record

FENCE_TIMEOUT = 2.0      # s: a switch that does not answer a probe by then is gone


@dataclass
class Fence:
    records: list[Record]                         # the releases it guards (REMOVE records)
    deadline: float
    waiting: set[tuple[str, int]] = field(default_factory=set)     # (switch, probed port) not answered yet


class ReleaseFences:
    """Open fences in the order their releases happened; settled strictly in that order."""

    def __init__(self) -> None:
        self._open: deque[Fence] = deque()

    def __bool__(self) -> bool:
        return bool(self._open)

    def open(self, records: list[Record], probes: set[tuple[str, int]], now: float) -> None:
        """Guard `records` until every probe in `probes` (sent after their packet-outs) is answered."""
        self._open.append(Fence(records, now + FENCE_TIMEOUT, set(probes)))

    def answer(self, switch: str, port: int) -> bool:
        """A telemetry answer: True if it was a fence's (the oldest fence waiting for that probe)."""
        for fence in self._open:
            if (switch, port) in fence.waiting:
                fence.waiting.discard((switch, port))
                return True
        return False

    def settle(self, now: float) -> tuple[list[Record], list[Fence]]:
        """The records now safe to journal (answered or expired fences at the head, in order),
        and the expired fences among them (to be logged)."""
        records: list[Record] = []
        expired: list[Fence] = []
        while self._open and (not self._open[0].waiting or now >= self._open[0].deadline):
            fence = self._open.popleft()
            if fence.waiting:
                expired.append(fence)
            records += fence.records
        return records, expired
