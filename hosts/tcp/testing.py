"""A minimal virtual-time loop joining endpoints: for unit tests and examples, not the simulator.

Each direction between two addresses is a FIFO link with a one-way delay
and, optionally, a rate (bytes/s) with a drop-tail buffer; a `drop`
callable can discard chosen segments. Segments are routed by destination
address, so a DSBP dummy to a second address reaches whichever endpoint
that address is bound to. Everything is deterministic.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Callable

from hosts.endpoint import Endpoint
from hosts.segment import Segment

IP_TCP_HEADERS = 40


@dataclass
class _Link:
    delay: float
    rate: float | None  # bytes per second; None = infinitely fast
    buffer: int | None  # packets waiting for the link at most; None = unlimited
    busy_until: float = 0.0
    departures: list[float] = field(default_factory=list)  # departure times of queued packets


class Loop:
    """Delivers every segment an endpoint emits to the endpoint bound to its destination address."""

    def __init__(self, delay: float = 0.01, rate: float | None = None, buffer: int | None = None,
                 drop: Callable[[Segment, float], bool] | None = None) -> None:
        self.delay, self.rate, self.buffer = delay, rate, buffer
        self.drop = drop
        self.now = 0.0
        self.bound: dict[str, Endpoint] = {}
        self.links: dict[tuple[str, str], _Link] = {}
        self.sent: list[tuple[float, Segment]] = []  # every segment emitted, in order
        self.dropped: list[tuple[float, Segment]] = []
        self._events: list[tuple[float, int, Segment]] = []
        self._count = 0

    def bind(self, addr: str, endpoint: Endpoint) -> None:
        self.bound[addr] = endpoint

    def link(self, src: str, dst: str, delay: float | None = None, rate: float | None = None,
             buffer: int | None = None) -> None:
        """Give the direction src -> dst its own delay/rate/buffer."""
        self.links[(src, dst)] = _Link(self.delay if delay is None else delay, rate, buffer)

    def _link_for(self, seg: Segment) -> _Link:
        key = (seg.src, seg.dst)
        if key not in self.links:
            self.links[key] = _Link(self.delay, self.rate, self.buffer)
        return self.links[key]

    def inject(self, seg: Segment, at: float | None = None) -> None:
        """Deliver `seg` at time `at` (default: now), bypassing links (e.g. a forged segment)."""
        self._count += 1
        heapq.heappush(self._events, (self.now if at is None else at, self._count, seg))

    def _transmit(self, seg: Segment) -> None:
        self.sent.append((self.now, seg))
        if self.drop is not None and self.drop(seg, self.now):
            self.dropped.append((self.now, seg))
            return
        link = self._link_for(seg)
        if link.rate is None:
            arrival = self.now + link.delay
        else:
            link.departures = [t for t in link.departures if t > self.now]
            if link.buffer is not None and len(link.departures) > link.buffer:
                self.dropped.append((self.now, seg))
                return
            start = max(self.now, link.busy_until)
            link.busy_until = start + (len(seg.payload) + IP_TCP_HEADERS) / link.rate
            link.departures.append(link.busy_until)
            arrival = link.busy_until + link.delay
        self._count += 1
        heapq.heappush(self._events, (arrival, self._count, seg))

    def _poll_all(self) -> None:
        for ep in list(dict.fromkeys(self.bound.values())):
            for seg in ep.poll(self.now):
                self._transmit(seg)

    def run(self, until: float, stop: Callable[[], bool] | None = None) -> float:
        """Advance virtual time to `until` (or until `stop()` is true); returns the time reached."""
        self._poll_all()
        while True:
            if stop is not None and stop():
                return self.now
            times = [ep.next_wakeup() for ep in dict.fromkeys(self.bound.values())]
            candidates = [t for t in times if t is not None]
            if self._events:
                candidates.append(self._events[0][0])
            if not candidates:
                return self.now
            t = max(min(candidates), self.now)
            if t > until:
                self.now = until
                return until
            self.now = t
            while self._events and self._events[0][0] <= t:
                _, _, seg = heapq.heappop(self._events)
                ep = self.bound.get(seg.dst)
                if ep is not None:
                    ep.handle(seg, t)
            self._poll_all()
