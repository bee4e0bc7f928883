"""Reno (RFC 5681 3.2) against NewReno (RFC 6582) on the core: what a partial ACK does."""
from __future__ import annotations

from p4handoff.hosts.cc.reno import Reno
from p4handoff.hosts.segment import Segment
from p4handoff.hosts.tcp import TcpConfig, TcpConnection, TraceRecord
from tests.tcp_loop import Loop, ScriptedPeer

MSS = 1000


def _sender(scheme: str, records: list[TraceRecord]) -> tuple[TcpConnection, ScriptedPeer]:
    conn = TcpConnection(TcpConfig(mss=MSS, iw=10, timestamps=False, min_rto=0.2, window_segments=64),
                         "10.0.0.1", 40000, cc=scheme, trace=records.append)
    peer = ScriptedPeer(conn, mss=MSS)
    conn.connect(peer.addr, peer.port)
    syn = conn.poll(0.0)[0]
    peer.conn_iss = syn.seq
    conn.handle(peer.segment(flags=0x12, seq=0, ack=0).with_(mss=MSS), 0.1)
    conn.send(bytes(200 * MSS))
    conn.poll(0.1)
    return conn, peer


def _two_holes(scheme: str) -> tuple[TcpConnection, list[TraceRecord], list[Segment]]:
    """Ten segments in flight, the 1st and 4th lost: three dup ACKs, then the partial ACK up to the 4th."""
    records: list[TraceRecord] = []
    conn, peer = _sender(scheme, records)
    for i in range(3):
        peer.ack_data(0, 0.2 + 0.001 * i)
    assert conn.in_recovery and conn.ssthresh == 5 * MSS
    sent = peer.ack_data(3 * MSS, 0.3)  # the retransmission arrived; segment 4 is still missing
    return conn, records, sent


def test_partial_ack_ends_reno_recovery_with_cwnd_ssthresh() -> None:
    conn, records, sent = _two_holes("reno")
    assert isinstance(conn.cc, Reno)
    assert not conn.in_recovery
    assert conn.cwnd == conn.ssthresh == 5 * MSS
    assert [r for r in records if r.event == "recovery_exit"][-1].detail == "partial ACK (Reno)"
    assert not any(r.event == "partial_ack" for r in records)
    # no retransmission of the second hole: only new data (if the window allows) leaves
    assert all(s.seq != conn.snd_una for s in sent if s.payload)


def test_partial_ack_keeps_newreno_in_recovery_and_retransmits_the_hole() -> None:
    conn, records, sent = _two_holes("newreno")
    assert conn.in_recovery
    assert any(r.event == "partial_ack" for r in records)
    assert any(s.seq == conn.snd_una for s in sent if s.payload)


def _window_with_two_losses(scheme: str) -> tuple[TcpConnection, list[TraceRecord]]:
    """A whole transfer over a 1 MB/s link where two segments of one window are dropped once."""
    records: list[TraceRecord] = []
    cfg = TcpConfig(mss=MSS, min_rto=0.2, timestamps=False, window_segments=64, iw=10)
    snd = TcpConnection(cfg, "10.0.0.1", 40000, cc=scheme, trace=records.append)
    rcv = TcpConnection(cfg, "10.0.1.1", 5001, on_data=lambda d: None)
    rcv.listen()
    seen: set[int] = set()

    def drop(seg: Segment, t: float) -> bool:
        if not seg.payload or seg.seq in seen:
            return False
        seen.add(seg.seq)
        return (seg.seq - snd.iss - 1) // MSS in (20, 23)

    loop = Loop(delay=0.02, rate=1e6, buffer=100, drop=drop)
    loop.bind("10.0.0.1", snd)
    loop.bind("10.0.1.1", rcv)
    snd.connect("10.0.1.1", 5001)
    snd.send(bytes(100 * MSS))
    loop.run(5.0)
    assert rcv.bytes_received == 100 * MSS
    return snd, records


def test_two_losses_in_a_window_cost_reno_a_timeout_and_newreno_none() -> None:
    _, reno = _window_with_two_losses("reno")
    _, newreno = _window_with_two_losses("newreno")
    assert sum(r.event == "fast_retransmit" for r in reno) == 1
    assert sum(r.event == "rto" for r in reno) == 1
    assert sum(r.event == "rto" for r in newreno) == 0
    assert sum(r.event == "partial_ack" for r in newreno) == 1
