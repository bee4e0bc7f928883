"""A sender whose every RTT sample the test chooses: for the delay-based schemes' unit tests (cdg, chd).

The peer is played by hand (`ScriptedPeer`, timestamps at 1 MHz): each
segment is acknowledged on its own, `rtt(send_time)` seconds after it was
sent, with the echo of its TSval, so the core's RTT sample is exactly that.
"""
from __future__ import annotations

from typing import Callable

from p4handoff.hosts.cc.base import CongestionControl
from p4handoff.hosts.tcp import TcpConfig, TcpConnection, TraceRecord
from tests.tcp_loop import ScriptedPeer

MSS = 1000
HZ = 1_000_000


class DelaySender:
    def __init__(self, cc: CongestionControl, iw: int = 4, ssthresh_segments: int | None = None) -> None:
        self.records: list[TraceRecord] = []
        cfg = TcpConfig(mss=MSS, iw=iw, ts_hz=HZ, window_segments=2000, min_rto=1.0,
                        initial_ssthresh_segments=ssthresh_segments)
        self.conn = TcpConnection(cfg, "10.0.0.1", 40000, cc=cc, trace=self.records.append)
        self.cc = cc
        self.peer = ScriptedPeer(self.conn, window=65535, wscale=7, ts=True)
        self.sent: dict[int, tuple[float, int]] = {}  # payload offset -> (send time, TSval)
        self.now = 0.0
        self._log(self.peer.open(0.0), 0.0)
        self.conn.send(bytes(20000 * MSS))
        self._log(self.conn.poll(0.0), 0.0)
        self.acked = 0

    def _log(self, segs: list, now: float) -> None:
        for s in segs:
            if s.payload:
                off = (s.seq - self.peer.conn_iss - 1) & 0xFFFFFFFF
                self.sent.setdefault(off, (now, s.ts[0]))

    def ack_next(self, rtt: Callable[[float], float]) -> None:
        """Acknowledge the oldest unacknowledged segment rtt(its send time) after it was sent."""
        sent_at, echo = self.sent[self.acked]
        self.now = max(self.now, sent_at + rtt(sent_at))
        self.acked += MSS
        self.conn.handle(self.peer.segment(ack=self.acked, ts=(1, echo)), self.now)
        self._log(self.conn.poll(self.now), self.now)

    def ack_for(self, seconds: float, rtt: Callable[[float], float]) -> None:
        """Acknowledge segments in order until `seconds` of virtual time have passed."""
        end = self.now + seconds
        while self.now < end:
            self.ack_next(rtt)

    def dupacks(self, n: int = 3) -> None:
        for _ in range(n):
            self.now += 1e-4
            self.conn.handle(self.peer.segment(ack=self.acked, ts=(1, self.sent[self.acked][1])), self.now)
            self._log(self.conn.poll(self.now), self.now)

    def full_ack(self) -> None:
        """Everything sent so far arrives (ends a recovery), RTT unchanged from the last sample's."""
        self.now += 1e-3
        self.acked = self.conn.snd_nxt - self.peer.conn_iss - 1
        self.conn.handle(self.peer.segment(ack=self.acked, ts=(1, self.sent[self.acked - MSS][1])), self.now)
        self._log(self.conn.poll(self.now), self.now)

    def events(self, name: str) -> list[TraceRecord]:
        return [r for r in self.records if r.event == name]


def flat(rtt: float) -> Callable[[float], float]:
    return lambda sent_at: rtt


def rising(base: float, per_second: float, since: float = 0.0) -> Callable[[float], float]:
    """A queue that keeps growing from `since` on: segments sent later see `per_second` more delay per second."""
    return lambda sent_at: base + per_second * max(0.0, sent_at - since)


class FixedDraws:
    """Stands in for a scheme's random stream: always returns `value`."""

    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value
