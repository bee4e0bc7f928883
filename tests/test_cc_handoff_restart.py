"""Immediate Expiration and Bandwidth-Aware ssthresh: their rules against a hand-played receiver,
and the vertical-handoff case (20 Mb/s/1 ms -> 384 kb/s/70 ms, 0.5 s outage) in the test loop."""
from __future__ import annotations

import random

import pytest

from p4handoff.hosts.cc import make_scheme
from p4handoff.hosts.cc.bwaware import BandwidthAware
from p4handoff.hosts.tcp import TcpConfig, TcpConnection, TraceRecord
from tests.tcp_loop import Loop, ScriptedPeer
from p4handoff.notify import Event, Notification

MSS = 1000


def _sender(scheme: str, **cfg: object) -> tuple[TcpConnection, ScriptedPeer, list[TraceRecord]]:
    base = dict(mss=MSS, iw=10, timestamps=False, sack=False, min_rto=0.2)
    base.update(cfg)
    records: list[TraceRecord] = []
    conn = TcpConnection(TcpConfig(**base), "10.0.0.1", 40000, cc=scheme, trace=records.append)  # type: ignore[arg-type]
    peer = ScriptedPeer(conn, mss=MSS)
    conn.connect(peer.addr, peer.port)
    syn = conn.poll(0.0)[0]
    peer.conn_iss = syn.seq
    conn.handle(peer.segment(flags=0x12, seq=0, ack=0).with_(mss=MSS), 0.002)
    conn.poll(0.002)
    conn.send(bytes(200 * MSS))
    conn.poll(0.002)
    return conn, peer, records


def _handoff(peer: ScriptedPeer, path: str | None = None, event: Event = Event.HANDOFF) -> Notification:
    return Notification(event, 1, peer.addr, path or peer.addr)


def _offsets(segs: list, peer: ScriptedPeer) -> list[int]:
    return [(s.seq - peer.conn_iss - 1) & 0xFFFFFFFF for s in segs if s.payload]


def _outage(conn: TcpConnection, peer: ScriptedPeer) -> None:
    """ACK two segments, then nothing arrives: one RTO fires during the outage."""
    peer.ack_data(2 * MSS, 0.004)
    due = conn.next_wakeup()
    assert due is not None
    conn.poll(due)  # the RTO expires in the outage (its retransmission is lost too)
    assert conn.cwnd == MSS


def test_newreno_ignores_handoff_and_waits_for_rto() -> None:
    conn, peer, _ = _sender("newreno")
    _outage(conn, peer)
    due = conn.next_wakeup()
    conn.notify(_handoff(peer), 0.5)
    assert conn.poll(0.5) == []
    assert conn.next_wakeup() == due  # still the backed-off timer


def test_immediate_restarts_at_handoff_with_backoff_reset() -> None:
    conn, peer, records = _sender("immediate")
    _outage(conn, peer)
    backed_off = conn.rto
    assert conn.next_wakeup() > 0.5
    conn.notify(_handoff(peer), 0.5)
    out = conn.poll(0.5)
    assert _offsets(out, peer) == [2 * MSS]  # first unacknowledged segment, at once
    assert conn.cwnd == MSS and conn.ssthresh == 2 * MSS
    assert conn.rto == pytest.approx(backed_off / 2)  # expiry without doubling: the backoff is reset
    assert conn.next_wakeup() == pytest.approx(0.5 + conn.rto)
    assert [r.event for r in records].count("forced_rto") == 1


def test_immediate_halves_ssthresh_when_no_rto_fired_yet() -> None:
    conn, peer, _ = _sender("immediate")
    peer.ack_data(2 * MSS, 0.004)
    flight = conn.flight_size
    conn.notify(_handoff(peer), 0.05)
    assert _offsets(conn.poll(0.05), peer) == [2 * MSS]
    assert conn.ssthresh == flight // 2 and conn.cwnd == MSS


def test_immediate_nothing_outstanding_nothing_sent() -> None:
    conn, peer, _ = _sender("immediate", iw=1)
    conn2 = TcpConnection(TcpConfig(mss=MSS, timestamps=False), "10.0.0.1", 40001, cc="immediate")
    peer2 = ScriptedPeer(conn2, mss=MSS)
    peer2.open(0.0)
    conn2.notify(_handoff(peer2), 1.0)
    assert conn2.poll(1.0) == []
    conn.notify(Notification(Event.HANDOFF, 1, "10.7.7.7", "10.7.7.7"), 0.01)  # another MH
    assert conn.poll(0.01) == []


def test_handoff_path_addr_redirects_data() -> None:
    conn, peer, _ = _sender("immediate")
    peer.ack_data(MSS, 0.004)
    conn.notify(_handoff(peer, path="10.2.2.2"), 0.05)
    out = conn.poll(0.05)
    assert out and all(s.dst == "10.2.2.2" for s in out)
    assert conn.remote_addr == "10.2.2.2" and conn.peer_home == peer.addr


def _bw_restart(conn: TcpConnection, peer: ScriptedPeer, t0: float) -> None:
    _outage(conn, peer)
    conn.notify(_handoff(peer), t0)
    assert _offsets(conn.poll(t0), peer) == [2 * MSS]


def test_bwaware_packet_pair_ssthresh() -> None:
    conn, peer, records = _sender("bwaware")
    _bw_restart(conn, peer, 1.0)
    out = peer.ack_data(3 * MSS, 1.14)  # RTT of the first segment after restart: 140 ms
    assert _offsets(out, peer) == [3 * MSS, 4 * MSS]  # the packet pair
    peer.ack_data(4 * MSS, 1.30)
    assert conn.ssthresh == 2 * MSS  # not yet
    peer.ack_data(5 * MSS, 1.32)  # lag 20 ms for 1000 bytes
    assert conn.ssthresh == int(0.14 * MSS / 0.02 / MSS) * MSS == 7 * MSS
    assert isinstance(conn.cc, BandwidthAware) and conn.cc.estimates[0][2] == 7 * MSS
    assert any(r.event == "bwaware_ssthresh" for r in records)
    for k, t in ((6, 1.4), (7, 1.5), (8, 1.6)):  # once per handoff: later ACKs change nothing
        peer.ack_data(k * MSS, t)
    assert conn.ssthresh == 7 * MSS and len(conn.cc.estimates) == 1


def test_bwaware_floor_two_segments() -> None:
    conn, peer, _ = _sender("bwaware")
    _bw_restart(conn, peer, 1.0)
    peer.ack_data(3 * MSS, 1.01)
    peer.ack_data(4 * MSS, 1.02)
    peer.ack_data(5 * MSS, 1.52)  # lag 0.5 s >> RTT
    assert conn.ssthresh == 2 * MSS


def test_bwaware_uses_size_acked_by_third_ack() -> None:
    conn, peer, _ = _sender("bwaware")
    _bw_restart(conn, peer, 1.0)
    peer.ack_data(3 * MSS, 1.1)
    peer.ack_data(4 * MSS, 1.2)
    peer.ack_data(6 * MSS, 1.21)  # a cumulative ACK for two segments: 2000 bytes in 10 ms
    assert conn.ssthresh == int(0.1 * 2 * MSS / 0.01 / MSS) * MSS == 20 * MSS


def test_bwaware_loss_before_third_ack_abandons() -> None:
    conn, peer, records = _sender("bwaware")
    _bw_restart(conn, peer, 1.0)
    peer.ack_data(3 * MSS, 1.1)
    due = conn.next_wakeup()
    conn.poll(due)  # timeout before the pair's ACKs
    for k, t in ((4, due + 0.1), (5, due + 0.11)):
        peer.ack_data(k * MSS, t)
    assert any(r.event == "bwaware_abandoned" for r in records)
    assert not any(r.event == "bwaware_ssthresh" for r in records)


# ---------------------------------------------------------------- vertical handoff in the loop
T_SWITCH = 4.0

def _vertical_handoff(scheme: str, buffer: int, min_rto: float = 1.0) -> tuple[int, list[TraceRecord], TcpConnection]:
    """20 Mb/s / 1 ms (behind a 10 Mb/s core) -> 384 kb/s / 70 ms, 0.5 s outage; bytes received in the 4.5 s
    after it (counting from the outage's start would add what the core router still held then). The paper
    switches at 10 s; here at 4 s (the flow is in steady state well before), to keep the test quick.

    Before the handoff the 10 Mb/s core router's buffer (100 packets) never limits the 64-segment
    window; `buffer` is the 3G access router's buffer, the one that matters after the handoff.
    """
    cfg = TcpConfig(mss=MSS, iw=1, timestamps=False, sack=False, min_rto=min_rto, window_segments=64)
    records: list[TraceRecord] = []
    got: list[tuple[float, int]] = []
    loop = Loop()
    snd = TcpConnection(cfg, "10.0.0.1", 40000, cc=scheme, trace=records.append)
    rcv = TcpConnection(cfg, "10.0.1.1", 5001, on_data=lambda d: got.append((loop.now, len(d))))
    rcv.listen()
    loop.bind("10.0.0.1", snd)
    loop.bind("10.0.1.1", rcv)
    loop.link("10.0.0.1", "10.0.1.1", delay=0.006, rate=10e6 / 8, buffer=100)
    loop.link("10.0.1.1", "10.0.0.1", delay=0.006)
    snd.connect("10.0.1.1", 5001)
    snd.set_source(lambda n: bytes(n))
    loop.drop = lambda seg, t: T_SWITCH <= t < T_SWITCH + 0.5
    loop.run(T_SWITCH)
    loop.link("10.0.0.1", "10.0.1.1", delay=0.070, rate=384e3 / 8, buffer=buffer)
    loop.link("10.0.1.1", "10.0.0.1", delay=0.070)
    loop.run(T_SWITCH + 0.5)
    snd.notify(Notification(Event.HANDOFF, 1, "10.0.1.1", "10.0.1.1"), T_SWITCH + 0.5)
    loop.run(T_SWITCH + 5.0)
    return sum(n for t, n in got if T_SWITCH + 0.5 <= t < T_SWITCH + 5.0), records, snd


@pytest.mark.parametrize("buffer", [3, 8, 40])
def test_vertical_handoff_bwaware_never_below_newreno(buffer: int) -> None:
    newreno, nr_records, _ = _vertical_handoff("newreno", buffer)
    immediate, im_records, _ = _vertical_handoff("immediate", buffer)
    bwaware, bw_records, bw = _vertical_handoff("bwaware", buffer)
    # immediate and bwaware resume when the outage ends; newreno only when its timer fires
    def first_restart(recs: list[TraceRecord]) -> float:
        return min(r.time for r in recs if r.time >= T_SWITCH + 0.5 and r.event in ("forced_rto", "rto"))
    assert first_restart(im_records) == first_restart(bw_records) == pytest.approx(T_SWITCH + 0.5)
    assert first_restart(nr_records) > T_SWITCH + 0.5 + 0.2
    assert bwaware >= newreno
    assert isinstance(bw.cc, BandwidthAware) and len(bw.cc.estimates) == 1
    if buffer == 8:  # slow start to the old ssthresh overshoots 3G's 6.5-packet BDP + 8: NewReno crawls
        assert bwaware >= 2 * newreno


def test_make_scheme_gives_fresh_instances() -> None:
    a, b = make_scheme("bwaware"), make_scheme("bwaware")
    assert a is not b and a.name == "bwaware"
    with pytest.raises(ValueError, match="unknown"):
        make_scheme("vegas")
    random.seed(0)  # schemes must not depend on the global RNG
