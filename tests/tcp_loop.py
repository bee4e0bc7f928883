"""A minimal virtual-time loop joining endpoints: for unit tests and examples, not the simulator.

Each direction between two addresses is a FIFO link with a one-way delay
and, optionally, a rate (bytes/s) with a drop-tail buffer; a `drop`
callable can discard chosen segments. DSBP-marked segments (dummy bit and
DSCP LE) stand for a strictly lower-priority class with no buffer of its
own: on a rate-limited link they are sent only if the link is idle, else
dropped, so they never delay or displace data by more than one packet. Segments are routed by destination
address, so a DSBP dummy to a second address reaches whichever endpoint
that address is bound to. Everything is deterministic.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Callable

from p4handoff.hosts.endpoint import Endpoint
from p4handoff.hosts.segment import Segment
from p4handoff.wire import DSCP_LE
from p4handoff.hosts.tcp.connection import TcpConnection

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
            lower_effort = seg.dummy and seg.dscp == DSCP_LE
            if (lower_effort and link.busy_until > self.now) or (
                    link.buffer is not None and len(link.departures) > link.buffer):
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


class ScriptedPeer:
    """The far end of one connection, played by hand: a test crafts exactly the segments it wants.

    Byte offsets are relative: `ack_data(k)` acknowledges the first k payload
    bytes the connection sent, `data(k, n)` carries peer bytes k..k+n.
    """

    def __init__(self, conn: TcpConnection, addr: str = "10.9.9.9", port: int = 5001, isn: int = 7000,
                 window: int = 65535, mss: int = 1460, wscale: int | None = None, ts: bool = False,
                 sack: bool = False) -> None:
        self.conn, self.addr, self.port, self.isn = conn, addr, port, isn
        self.window, self.mss, self.wscale, self.ts, self.sack = window, mss, wscale, ts, sack
        self.clock = 1  # our TSval

    def open(self, now: float = 0.0) -> list[Segment]:
        """Complete the conn's active open; returns what the conn sent after our SYN-ACK."""
        self.conn.connect(self.addr, self.port)
        syn = self.conn.poll(now)[0]
        self.conn_iss = syn.seq
        self.conn_ts = syn.ts
        self.conn.handle(Segment(self.addr, syn.src, self.port, syn.sport, self.isn, (syn.seq + 1) & 0xFFFFFFFF,
                                 0x12, min(self.window, 0xFFFF), mss=self.mss, wscale=self.wscale,
                                 sack_permitted=self.sack,
                                 ts=(self.clock, syn.ts[0]) if self.ts and syn.ts else None), now)
        return self.conn.poll(now)

    def segment(self, flags: int = 0x10, ack: int | None = None, seq: int = 1, payload: bytes = b"",
                window: int | None = None, ts: tuple[int, int] | None = None) -> Segment:
        """A segment from us; `ack` and `seq` are relative offsets (data bytes), raw wire values otherwise."""
        c = self.conn
        return Segment(self.addr, c.local_addr, self.port, c.local_port, (self.isn + seq) & 0xFFFFFFFF,
                       (self.conn_iss + 1 + (ack or 0)) & 0xFFFFFFFF, flags,
                       self.window if window is None else window, payload, ts=ts)

    def ack_data(self, k: int, now: float, window: int | None = None) -> list[Segment]:
        """Acknowledge the first k payload bytes; returns what the connection sends in reply."""
        self.conn.handle(self.segment(ack=k, window=window), now)
        return self.conn.poll(now)

