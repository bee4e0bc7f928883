"""UCC: rho from one-way delays (timestamp echoes), halve on dup-ACK loss only if rho > alpha."""
from __future__ import annotations

import random

import pytest

from p4handoff.hosts.cc.ucc import Ucc
from p4handoff.hosts.tcp import TcpConfig, TcpConnection, TraceRecord
from tests.tcp_loop import Loop, ScriptedPeer
from p4handoff.notify import Event, Notification

MSS = 1000
HZ = 1_000_000
BASE = 20_000  # ticks: the path's minimum one-way delay (plus the clocks' offset)


class _Ucc:
    """A UCC sender, a hand-played receiver with its own microsecond clock, and the TSval of every segment sent."""

    def __init__(self, **params: object) -> None:
        self.records: list[TraceRecord] = []
        cfg = TcpConfig(mss=MSS, iw=4, ts_hz=HZ, window_segments=1000, min_rto=0.2)
        self.conn = TcpConnection(cfg, "10.0.0.1", 40000, cc=Ucc(**params), trace=self.records.append)  # type: ignore[arg-type]
        self.peer = ScriptedPeer(self.conn, window=65535, wscale=7, ts=True)
        self.tsvals: dict[int, int] = {}
        self.now = 0.0
        self._log(self.peer.open(0.0))
        self.conn.send(bytes(5000 * MSS))
        self._log(self.conn.poll(0.0))
        self.acked = 0
        assert isinstance(self.conn.cc, Ucc)
        self.ucc = self.conn.cc

    def _log(self, segs: list) -> None:
        for s in segs:
            if s.payload:
                self.tsvals[(s.seq - self.peer.conn_iss - 1) & 0xFFFFFFFF] = s.ts[0]

    def ack_next(self, queueing_ticks: int) -> None:
        """The next segment arrives after BASE + queueing ticks and is acknowledged at once."""
        echo = self.tsvals[self.acked]
        self.acked += MSS
        self.now += 0.001
        self.conn.handle(self.peer.segment(ack=self.acked, ts=((echo + BASE + queueing_ticks) & 0xFFFFFFFF, echo)),
                         self.now)
        self._log(self.conn.poll(self.now))

    def dupacks(self, n: int = 3) -> None:
        for _ in range(n):
            self.now += 0.0001
            self.conn.handle(self.peer.segment(ack=self.acked, ts=(1, self.tsvals[self.acked])), self.now)
            self._log(self.conn.poll(self.now))


def test_rho_below_alpha_keeps_cwnd() -> None:
    u = _Ucc()
    for i in range(100):
        u.ack_next(0 if i in (10, 60) else 300 + i)  # 2 of 100 packets saw no queue: rho = 0.98
    assert u.ucc.utilisation() == pytest.approx(0.98)
    cwnd = u.conn.cwnd
    u.dupacks()
    assert u.conn.in_recovery  # still a fast retransmit
    assert u.conn.ssthresh == cwnd and u.ucc.decisions[-1][1:] == (pytest.approx(0.98), False)
    assert any(r.event == "ucc_loss" for r in u.records)


def test_rho_above_alpha_halves() -> None:
    u = _Ucc()
    for i in range(200):
        u.ack_next(0 if i == 5 else 500)  # rho = 0.995 > 0.99
    flight = u.conn.flight_size
    u.dupacks()
    assert u.conn.ssthresh == flight // 2 and u.ucc.decisions[-1][2] is True


def test_tolerance_counts_near_minimum_and_alpha_is_configurable() -> None:
    u = _Ucc(alpha=0.5, tolerance=1e-4)
    for i in range(100):
        u.ack_next([0, 100, 101, 5000][i % 4])  # 100 ticks = the 0.1 ms tolerance: counts as minimum
    assert u.ucc.utilisation() == pytest.approx(0.5)
    cwnd = u.conn.cwnd
    u.dupacks()
    assert u.conn.ssthresh == cwnd  # rho 0.5 is not > alpha 0.5


def test_measurement_window_restarts_at_each_loss() -> None:
    u = _Ucc()
    for i in range(100):
        u.ack_next(0 if i < 50 else 400)
    u.dupacks()
    assert u.ucc.utilisation() == 1.0  # no samples since the loss: treated as congested
    u.acked = u.conn.snd_nxt - u.peer.conn_iss - 1  # full ACK ends recovery
    u.conn.handle(u.peer.segment(ack=u.acked), u.now + 0.01)
    u._log(u.conn.poll(u.now + 0.01))
    for _ in range(10):
        u.ack_next(400)
    assert u.ucc.utilisation() == 1.0  # only queued packets in this window (the minimum is still 0)


def test_timeout_sets_cwnd_one() -> None:
    u = _Ucc()
    for _ in range(20):
        u.ack_next(0)
    flight = u.conn.flight_size
    u.conn.poll(u.conn.next_wakeup())
    assert u.conn.cwnd == MSS and u.conn.ssthresh == flight // 2


def test_handoff_forgets_the_minimum() -> None:
    u = _Ucc()
    for _ in range(50):
        u.ack_next(0)
    u.conn.notify(Notification(Event.HANDOFF, 1, u.peer.addr, u.peer.addr), u.now)
    for _ in range(50):
        u.ack_next(30_000)  # the new path is 30 ms longer; no queue on it
    assert u.ucc.utilisation() == 0.0


def test_minimum_is_refreshed_after_min_window() -> None:
    u = _Ucc(min_window=0.05)
    for _ in range(20):
        u.ack_next(0)
    for _ in range(200):  # 200 ms on a path 10 ms slower, no queue: two windows later the old minimum is gone
        u.ack_next(10_000)
    assert u.ucc.utilisation() == 0.0


def _lossy_flow(scheme: str, loss: float = 0.01, seconds: float = 15.0) -> float:
    """10 Mb/s, 40 ms RTT, 50-packet buffer, random loss on data packets: goodput in bytes/s."""
    cfg = TcpConfig(mss=MSS, min_rto=0.2, ts_hz=HZ, window_segments=128)
    rng = random.Random(7)
    snd = TcpConnection(cfg, "10.0.0.1", 40000, cc=scheme)
    rcv = TcpConnection(cfg, "10.0.1.1", 5001, cc=scheme, on_data=lambda d: None)
    rcv.listen()
    loop = Loop(delay=0.02, drop=lambda s, t: bool(s.payload) and rng.random() < loss)
    loop.link("10.0.0.1", "10.0.1.1", delay=0.02, rate=10e6 / 8, buffer=50)
    loop.bind("10.0.0.1", snd)
    loop.bind("10.0.1.1", rcv)
    snd.connect("10.0.1.1", 5001)
    snd.set_source(lambda n: bytes(n))
    loop.run(seconds)
    return rcv.bytes_received / seconds


@pytest.mark.slow
def test_ucc_beats_newreno_at_one_percent_random_loss() -> None:
    ucc, newreno = _lossy_flow("ucc"), _lossy_flow("newreno")
    assert ucc >= 1.5 * newreno
    assert _lossy_flow("ucc", loss=0.0, seconds=5.0) == pytest.approx(_lossy_flow("newreno", loss=0.0, seconds=5.0),
                                                                     rel=0.1)
