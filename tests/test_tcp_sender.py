"""Sender behaviour against a hand-played receiver: RFC 5681/6582 NewReno, RFC 6298 RTO, Karn, windows."""
from __future__ import annotations

import pytest

from p4handoff.hosts.segment import FIN, PSH
from p4handoff.hosts.tcp import TcpConfig, TcpConnection, TraceRecord
from tests.tcp_loop import ScriptedPeer

MSS = 1000


def _sender(**cfg: object) -> tuple[TcpConnection, ScriptedPeer, list[TraceRecord]]:
    base = dict(mss=MSS, iw=10, timestamps=False, sack=False, min_rto=0.2, initial_rto=1.0, window_segments=64)
    base.update(cfg)
    records: list[TraceRecord] = []
    conn = TcpConnection(TcpConfig(**base), "10.0.0.1", 40000, trace=records.append)  # type: ignore[arg-type]
    peer = ScriptedPeer(conn, mss=MSS)
    conn.connect(peer.addr, peer.port)
    syn = conn.poll(0.0)[0]
    peer.conn_iss = syn.seq
    conn.handle(peer.segment(flags=0x12, seq=0, ack=0).with_(mss=MSS), 0.1)  # SYN-ACK after 100 ms
    conn.poll(0.1)
    assert conn.established
    return conn, peer, records


def _offsets(segs: list, peer: ScriptedPeer) -> list[int]:
    return [(s.seq - peer.conn_iss - 1) & 0xFFFFFFFF for s in segs if s.payload]


def test_handshake_gives_rtt_sample_and_iw() -> None:
    conn, peer, _ = _sender()
    assert conn.srtt == pytest.approx(0.1)
    conn.send(b"x" * 50 * MSS)
    assert _offsets(conn.poll(0.1), peer) == [i * MSS for i in range(10)]  # IW = 10 segments
    assert conn.flight_size == 10 * MSS


def _fill(conn: TcpConnection, peer: ScriptedPeer, now: float = 0.1) -> None:
    conn.send(bytes(range(256)) * 200)  # 51200 bytes
    conn.poll(now)


def test_fast_retransmit_after_exactly_three_dupacks() -> None:
    conn, peer, records = _sender()
    _fill(conn, peer)
    out = peer.ack_data(MSS, 0.2)  # slow start: one ACK -> two new segments
    assert _offsets(out, peer) == [10 * MSS, 11 * MSS]
    cwnd_before, flight = conn.cwnd, conn.flight_size
    assert peer.ack_data(MSS, 0.21) == []
    assert peer.ack_data(MSS, 0.22) == []
    assert conn.dupacks == 2 and not conn.in_recovery and conn.cwnd == cwnd_before
    out = peer.ack_data(MSS, 0.23)
    assert _offsets(out, peer)[0] == MSS  # the first unacknowledged segment, retransmitted
    assert conn.in_recovery
    assert conn.ssthresh == flight // 2
    assert conn.cwnd == conn.ssthresh + 3 * MSS
    assert any(r.event == "fast_retransmit" for r in records)


def test_recovery_inflates_deflates_on_partial_ack_and_exits_on_full_ack() -> None:
    conn, peer, records = _sender()
    _fill(conn, peer)
    peer.ack_data(MSS, 0.2)  # now 12 segments sent (offsets 0..11), 11 outstanding
    for t in (0.21, 0.22, 0.23):
        peer.ack_data(MSS, t)
    ssthresh = conn.ssthresh
    recover_end = 12 * MSS
    cwnd = conn.cwnd
    out = peer.ack_data(MSS, 0.24)  # a 4th duplicate inflates by one segment
    assert conn.cwnd == cwnd + MSS
    # partial ACK: segments 1..2 arrive (the retransmission), 3 was also lost
    cwnd = conn.cwnd
    out = peer.ack_data(3 * MSS, 0.3)
    assert _offsets(out, peer)[0] == 3 * MSS  # next hole retransmitted at once
    assert conn.in_recovery
    assert conn.cwnd == cwnd - 2 * MSS + MSS  # deflated by the 2 segments acked, plus one SMSS back
    assert any(r.event == "partial_ack" for r in records)
    # full ACK: everything sent before recovery started
    peer.ack_data(recover_end, 0.4)
    assert not conn.in_recovery
    exits = [r for r in records if r.event == "recovery_exit"]
    assert len(exits) == 1
    assert exits[0].cwnd == min(ssthresh, max(exits[0].flight, MSS) + MSS)  # RFC 6582 step 3, option 1
    assert exits[0].flight == 0 and exits[0].cwnd == 2 * MSS  # nothing new was sent: no burst after recovery


def test_no_second_fast_retransmit_for_dupacks_below_recover() -> None:
    """RFC 6582 step 2: after a timeout, duplicate ACKs for data sent before it do not trigger FR."""
    conn, peer, records = _sender()
    _fill(conn, peer)
    conn.poll(conn.next_wakeup() or 0)  # RTO expiry
    assert conn.cwnd == MSS
    for t in (1.5, 1.51, 1.52):
        peer.ack_data(0, t)
    assert not conn.in_recovery
    assert not any(r.event == "fast_retransmit" for r in records)


def test_rto_backoff_doubles_and_resets_with_karn() -> None:
    conn, peer, records = _sender()
    conn.send(b"a" * 3 * MSS)
    conn.poll(0.1)
    base = conn.rto
    assert base == pytest.approx(max(0.2, 0.1 + 4 * 0.05))
    t = 0.1
    timeouts = []
    for k in range(1, 4):
        due = conn.next_wakeup()
        assert due == pytest.approx(t + base * 2 ** (k - 1))
        t = due
        out = conn.poll(t)
        assert _offsets(out, peer) == [0]  # go-back-N: one segment (cwnd = 1)
        timeouts.append(conn.rto)
    assert timeouts == pytest.approx([2 * base, 4 * base, 8 * base])
    assert conn.ssthresh == 2 * MSS  # repeated timeouts: flight 1 segment -> ssthresh floor
    # ACK of the retransmitted segment: Karn forbids a sample, the backoff stays
    srtt = conn.srtt
    out = peer.ack_data(MSS, t + 0.3)
    assert conn.srtt == srtt and conn.rto == pytest.approx(8 * base)
    # next segments are new transmissions: the timed one gives a sample and resets the backoff
    out = peer.ack_data(2 * MSS, t + 0.4)
    assert _offsets(out, peer) == []  # 2*MSS acked; third segment was already re-sent by go-back-N slow start
    peer.ack_data(3 * MSS, t + 0.5)
    assert conn.srtt == srtt  # still retransmissions (go-back-N)
    conn.send(b"b" * MSS)
    out = conn.poll(t + 0.5)
    assert _offsets(out, peer) == [3 * MSS]
    peer.ack_data(4 * MSS, t + 0.6)
    assert conn.srtt != srtt
    assert conn.rto < 2 * base
    assert [r.event for r in records].count("rto") == 3


def test_rto_reset_after_ack_restarts_timer_with_current_rto() -> None:
    conn, peer, _ = _sender()
    conn.send(b"a" * 4 * MSS)
    conn.poll(0.1)
    peer.ack_data(MSS, 0.15)
    assert conn.next_wakeup() == pytest.approx(0.15 + conn.rto)  # RFC 6298 5.3
    peer.ack_data(4 * MSS, 0.2)
    assert conn.next_wakeup() is None  # 5.2: all acked, timer off


def test_peer_window_limits_flight() -> None:
    conn, peer, _ = _sender()
    conn.send(b"z" * 40 * MSS)
    conn.handle(peer.segment(ack=0, window=3500), 0.1)
    out = conn.poll(0.1)
    # 3 full segments; the remaining 500 bytes of window are not used while data is in flight (SWS)
    assert _offsets(out, peer) == [0, MSS, 2 * MSS]
    out = peer.ack_data(MSS, 0.2, window=3500)
    assert _offsets(out, peer) == [3 * MSS]
    assert conn.flight_size <= 3500


def test_cwnd_capped_at_window_segments() -> None:
    conn, peer, _ = _sender(window_segments=8, iw=2)
    conn.send(b"q" * 100 * MSS)
    conn.poll(0.1)
    acked, t = 0, 0.1
    for _ in range(40):
        t += 0.01
        acked += MSS
        peer.ack_data(acked, t)
        assert conn.cwnd <= 8 * MSS
        assert conn.flight_size <= 8 * MSS
    assert conn.cwnd == 8 * MSS


def test_slow_start_then_congestion_avoidance() -> None:
    conn, peer, _ = _sender(iw=1, initial_ssthresh_segments=4)
    conn.send(b"w" * 100 * MSS)
    conn.poll(0.1)
    acked, t = 0, 0.1
    cwnds = []
    for _ in range(8):
        t += 0.01
        acked += MSS
        peer.ack_data(acked, t)
        cwnds.append(conn.cwnd)
    assert cwnds[:3] == [2 * MSS, 3 * MSS, 4 * MSS]  # +1 SMSS per ACK below ssthresh
    assert cwnds[3] == 4 * MSS + MSS * MSS // (4 * MSS)  # then +SMSS^2/cwnd per ACK
    assert all(b - a <= MSS // 4 for a, b in zip(cwnds[3:], cwnds[4:]))


def test_fin_follows_data_and_close_completes() -> None:
    conn, peer, _ = _sender()
    conn.send(b"hello")
    conn.close()
    out = conn.poll(0.1)
    assert out[-1].flags & FIN and out[-1].flags & PSH and out[-1].payload == b"hello"
    assert conn.state.value == "FIN_WAIT_1"
    peer.ack_data(6, 0.2)  # data + FIN
    assert conn.state.value == "FIN_WAIT_2" and conn.send_complete and conn.bytes_acked == 5
    conn.handle(peer.segment(flags=0x11, ack=6), 0.3)  # peer's FIN
    out = conn.poll(0.3)
    assert conn.state.value == "TIME_WAIT" and out and not out[0].payload
    conn.poll(conn.next_wakeup() or 0)
    assert conn.closed and conn.error is None


def test_max_retries_aborts_with_error() -> None:
    conn, peer, _ = _sender(max_retries=3, max_rto=1.0)
    conn.send(b"x" * MSS)
    t = 0.1
    conn.poll(t)
    for _ in range(10):
        due = conn.next_wakeup()
        if due is None:
            break
        conn.poll(due)
    assert conn.closed and conn.error == "connection timed out"
