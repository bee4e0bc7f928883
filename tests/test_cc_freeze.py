"""Freeze-TCP: zero-window advertisement on DETACH, frozen sender, probes, resume with the old cwnd."""
from __future__ import annotations

import random

import pytest

from p4handoff.hosts.segment import ACK, SYN, Segment
from p4handoff.hosts.tcp import State, TcpConfig, TcpConnection, TraceRecord
from tests.tcp_loop import Loop, ScriptedPeer
from p4handoff.notify import Event, Notification

MSS = 1000
CH, MH = "10.0.0.1", "10.0.1.1"


def test_zero_window_freezes_sender_keeps_cwnd_and_probes() -> None:
    records: list[TraceRecord] = []
    conn = TcpConnection(TcpConfig(mss=MSS, iw=10, timestamps=False, min_rto=0.2), CH, 40000, cc="freeze",
                         trace=records.append)
    peer = ScriptedPeer(conn, mss=MSS)
    peer.open(0.0)
    conn.send(bytes(100 * MSS))
    conn.poll(0.0)
    peer.ack_data(4 * MSS, 0.1)  # slow start: cwnd 14
    cwnd, ssthresh = conn.cwnd, conn.ssthresh
    assert peer.ack_data(4 * MSS, 0.11, window=0) == []  # the zero window advertisement
    assert conn.frozen and conn.cwnd == cwnd and conn.ssthresh == ssthresh
    # no retransmission timer: only zero-window probes, one byte each, spaced ever wider
    t, probes = 0.11, []
    while t < 10.0:
        t = conn.next_wakeup()
        out = conn.poll(t)
        assert all(len(s.payload) == 1 for s in out)
        probes.extend(t for s in out)
        peer.ack_data(4 * MSS, t, window=0)  # the receiver answers each probe, window still zero
    assert len(probes) >= 4 and not any(r.event == "rto" for r in records)
    assert [b - a for a, b in zip(probes, probes[1:])] == pytest.approx(
        [(probes[1] - probes[0]) * 2 ** k for k in range(len(probes) - 1)])
    assert conn.cwnd == cwnd and conn.established
    # the window reopens: resume at once with the old cwnd, from SND.UNA (in-flight data was dropped)
    out = peer.ack_data(4 * MSS, t + 0.01)
    assert not conn.frozen and conn.cwnd == cwnd
    offsets = [(s.seq - peer.conn_iss - 1) & 0xFFFFFFFF for s in out if s.payload]
    assert offsets[0] == 4 * MSS and len(offsets) == cwnd // MSS


def test_mh_receiver_advertises_zero_window_on_detach_and_tr_acks_on_handoff() -> None:
    rcv = TcpConnection(TcpConfig(mss=MSS, timestamps=False), MH, 5001, cc="freeze")
    rcv.listen()
    rcv.handle(Segment(CH, MH, 40000, 5001, 100, 0, SYN, 65535, mss=MSS), 0.0)
    synack = rcv.poll(0.0)[0]
    rcv.handle(Segment(CH, MH, 40000, 5001, 101, synack.seq + 1, ACK, 65535), 0.01)
    rcv.notify(Notification(Event.DETACH, 1, MH, MH), 1.0)
    out = rcv.poll(1.0)
    assert len(out) == 1 and out[0].window == 0 and out[0].flags == ACK
    rcv.handle(Segment(CH, MH, 40000, 5001, 101, synack.seq + 1, ACK, 65535, b"x" * 100), 1.1)
    out = rcv.poll(1.1)
    assert rcv.bytes_received == 0 and out[0].window == 0  # nothing accepted while closed
    rcv.notify(Notification(Event.HANDOFF, 2, MH, MH), 2.0)
    out = rcv.poll(2.0)
    assert len(out) == 3 and all(s.window > 0 and s.ack == out[0].ack for s in out)


def test_correspondent_ignores_detach_for_the_mh() -> None:
    conn = TcpConnection(TcpConfig(mss=MSS, timestamps=False), CH, 40000, cc="freeze")
    peer = ScriptedPeer(conn, addr=MH, mss=MSS)
    peer.open(0.0)
    conn.send(bytes(10 * MSS))
    conn.poll(0.0)
    conn.notify(Notification(Event.DETACH, 1, MH, MH), 0.05)
    assert not conn.frozen and conn.poll(0.05) == []


def _detach_outage(scheme: str) -> tuple[TcpConnection, TcpConnection, list[TraceRecord], bytes, bytearray]:
    cfg = TcpConfig(mss=MSS, min_rto=0.2, timestamps=False, window_segments=32)
    records: list[TraceRecord] = []
    got = bytearray()
    snd = TcpConnection(cfg, CH, 40000, cc=scheme, trace=records.append)
    rcv = TcpConnection(cfg, MH, 5001, cc=scheme, on_data=got.extend)
    rcv.listen()
    loop = Loop(delay=0.02, rate=1.25e6, buffer=40, drop=lambda s, t: 1.05 <= t < 3.0)
    loop.bind(CH, snd)
    loop.bind(MH, rcv)
    data = random.Random(4).randbytes(2_000_000)
    snd.connect(MH, 5001)
    snd.send(data)
    snd.close()
    loop.run(1.0)
    rcv.notify(Notification(Event.DETACH, 1, MH, MH), 1.0)  # one RTT's warning before the link goes
    loop.run(3.0)
    for ep in (snd, rcv):
        ep.notify(Notification(Event.HANDOFF, 2, MH, MH), 3.0)

    def done() -> bool:
        if rcv.eof and rcv.state is State.CLOSE_WAIT:
            rcv.close()
        return snd.closed and rcv.closed

    loop.run(60.0, stop=done)
    return snd, rcv, records, data, got


def test_freeze_rides_out_outage_without_timeouts() -> None:
    snd, rcv, records, data, got = _detach_outage("freeze")
    assert bytes(got) == data and snd.error is None
    freeze = next(r for r in records if r.event == "freeze")
    unfreeze = next(r for r in records if r.event == "unfreeze")
    assert 1.0 < freeze.time < 1.05 and unfreeze.time == pytest.approx(3.0, abs=0.05)
    assert unfreeze.cwnd == freeze.cwnd > 2 * MSS
    assert not any(r.event == "rto" for r in records if r.time < unfreeze.time)
    nr_snd, _, nr_records, _, nr_got = _detach_outage("newreno")
    assert bytes(nr_got) == data
    assert any(r.event == "rto" for r in nr_records if 1.0 < r.time < 3.0)


def test_frozen_idle_sender_sleeps_then_probes_when_data_is_queued() -> None:
    conn = TcpConnection(TcpConfig(mss=MSS, timestamps=False, min_rto=0.2), CH, 40000, cc="freeze")
    peer = ScriptedPeer(conn, mss=MSS)
    peer.open(0.0)
    peer.ack_data(0, 0.1, window=0)
    assert conn.frozen
    conn.poll(conn.next_wakeup())  # the first persist deadline finds nothing to probe with
    assert conn.next_wakeup() is None
    conn.send(b"late data")
    conn.poll(1.0)
    due = conn.next_wakeup()
    assert due is not None and due > 1.0
    out = conn.poll(due)
    assert [s.payload for s in out] == [b"l"]  # a one-byte zero-window probe
