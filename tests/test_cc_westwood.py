"""Westwood+ (NewReno recovery): ACK-rate bandwidth estimate, ssthresh = BWE * RTTmin after loss."""
from __future__ import annotations

import random

import pytest

from p4handoff.hosts.cc.westwood import Westwood
from p4handoff.hosts.tcp import TcpConfig, TcpConnection, TraceRecord
from tests.tcp_loop import Loop, ScriptedPeer

MSS = 1000


def _westwood(records: list[TraceRecord] | None = None) -> tuple[TcpConnection, ScriptedPeer, Westwood]:
    conn = TcpConnection(TcpConfig(mss=MSS, iw=10, timestamps=False, min_rto=0.2, window_segments=64),
                         "10.0.0.1", 40000, cc="westwood", trace=records.append if records is not None else None)
    peer = ScriptedPeer(conn, mss=MSS)
    conn.connect(peer.addr, peer.port)
    syn = conn.poll(0.0)[0]
    peer.conn_iss = syn.seq
    conn.handle(peer.segment(flags=0x12, seq=0, ack=0).with_(mss=MSS), 0.1)  # RTT 100 ms
    conn.send(bytes(1000 * MSS))
    conn.poll(0.1)
    assert isinstance(conn.cc, Westwood)
    return conn, peer, conn.cc


def test_estimate_is_ack_rate_and_sets_ssthresh_on_fast_retransmit() -> None:
    records: list[TraceRecord] = []
    conn, peer, ww = _westwood(records)
    t = 0.1
    for k in range(1, 61):  # one segment acknowledged every 10 ms: 100 kB/s, the first after 100 ms
        t = 0.2 + (k - 1) * 0.01
        peer.ack_data(k * MSS, t)
    assert ww.bwe == pytest.approx(100_000, rel=0.02)
    for i in range(3):
        peer.ack_data(60 * MSS, t + 0.001 * (i + 1))
    assert conn.in_recovery
    # BWE * RTTmin, whatever the flight was (which is far larger here)
    assert conn.min_rtt is not None and conn.min_rtt >= 0.02
    assert conn.ssthresh == max(2, int(ww.bwe * conn.min_rtt / MSS)) * MSS
    assert conn.ssthresh < conn.flight_size // 2
    assert any(r.event == "westwood_ssthresh" for r in records)


def test_dupacks_count_as_delivered_segments() -> None:
    conn, peer, ww = _westwood()
    for k in range(1, 31):
        peer.ack_data(k * MSS, 0.1 + k * 0.01)
    before = ww.bwe
    t = 0.4
    for i in range(1, 31):  # the receiver still gets one segment per 10 ms, but a hole holds the ACK
        t = 0.4 + i * 0.01
        peer.ack_data(30 * MSS, t)
    assert ww.bwe == pytest.approx(before, rel=0.1)


def test_timeout_uses_estimate_and_cwnd_one() -> None:
    conn, peer, ww = _westwood()
    for k in range(1, 41):
        peer.ack_data(k * MSS, 0.2 + (k - 1) * 0.005)  # 200 kB/s
    conn.poll(conn.next_wakeup())
    assert conn.cwnd == MSS
    assert conn.min_rtt is not None
    assert conn.ssthresh == max(2, int(ww.bwe * conn.min_rtt / MSS)) * MSS


def test_no_estimate_falls_back_to_newreno() -> None:
    conn, peer, ww = _westwood()
    flight = conn.flight_size
    for i in range(3):
        peer.ack_data(0, 0.11 + i * 0.001)
    assert ww.bwe == 0 and conn.ssthresh == flight // 2


def _lossy_run(scheme: str) -> tuple[TcpConnection, float]:
    cfg = TcpConfig(mss=MSS, min_rto=0.2, timestamps=False, window_segments=64)
    rng = random.Random(2)
    snd = TcpConnection(cfg, "10.0.0.1", 40000, cc=scheme)
    rcv = TcpConnection(cfg, "10.0.1.1", 5001, on_data=lambda d: None)
    rcv.listen()
    loop = Loop(delay=0.02, rate=1e6, buffer=30, drop=lambda s, t: bool(s.payload) and rng.random() < 0.005)
    loop.bind("10.0.0.1", snd)
    loop.bind("10.0.1.1", rcv)
    snd.connect("10.0.1.1", 5001)
    snd.set_source(lambda n: bytes(n))
    loop.run(10.0)
    return snd, rcv.bytes_received / 10.0


def test_estimate_tracks_delivery_rate_and_beats_newreno_under_random_loss() -> None:
    snd, goodput = _lossy_run("westwood")
    assert isinstance(snd.cc, Westwood)
    link_payload_rate = 1e6 * MSS / (MSS + 40)
    assert snd.cc.bwe == pytest.approx(goodput, rel=0.2) and snd.cc.bwe <= 1.05 * link_payload_rate
    _, newreno_goodput = _lossy_run("newreno")
    assert goodput > 1.2 * newreno_goodput  # random losses do not halve the window
