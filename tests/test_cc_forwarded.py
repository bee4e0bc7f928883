"""Issue 20: senders told that the network forwards their flight (HANDOFF with forwarding).

On the sans-IO core against a hand-played receiver: Immediate Expiration and
Bandwidth-Aware send no copy of a forwarded segment, still take the handoff's
window (and Bandwidth-Aware its packet-pair estimate, measured on the
forwarded flight), and a segment that really was lost is still recovered, by
fast retransmit or by the timer; DSBP keeps the timer off the forwarded flight.
"""
from __future__ import annotations

import pytest

from p4handoff.hosts.cc.bwaware import BandwidthAware
from p4handoff.hosts.segment import Segment
from p4handoff.hosts.tcp import TcpConfig, TcpConnection, TraceRecord
from p4handoff.notify import Event, Forwarding, Notification
from tests.tcp_loop import ScriptedPeer

MSS = 1000
FLIGHT = 11  # segments 2..12 outstanding at the handoff
T0 = 0.05    # the HANDOFF: before the flight's timer (RTO 0.2 s from 0.004) is due


def _sender(scheme: str) -> tuple[TcpConnection, ScriptedPeer, list[Segment], list[TraceRecord]]:
    """10 segments out, the first two ACKed (one ACK): 11 in flight (offsets 2..12), cwnd 11."""
    records: list[TraceRecord] = []
    conn = TcpConnection(TcpConfig(mss=MSS, iw=10, timestamps=False, sack=False, min_rto=0.2),
                         "10.0.0.1", 40000, cc=scheme, trace=records.append)
    peer = ScriptedPeer(conn, mss=MSS)
    sent: list[Segment] = []
    sent += peer.open(0.0)
    conn.send(bytes(200 * MSS))
    sent += conn.poll(0.002)
    sent += peer.ack_data(2 * MSS, 0.004)
    assert conn.flight_size == FLIGHT * MSS
    return conn, peer, sent, records


def _forwarded(peer: ScriptedPeer, buffered: int = FLIGHT, flush_end_us: int = 0) -> Notification:
    return Notification(Event.HANDOFF, 1, peer.addr, peer.addr, forwarding=Forwarding(buffered, flush_end_us))


def _offsets(segs: list[Segment], peer: ScriptedPeer) -> list[int]:
    return [((s.seq - peer.conn_iss - 1) & 0xFFFFFFFF) // MSS for s in segs if s.payload]


def _copies(segs: list[Segment], peer: ScriptedPeer) -> list[int]:
    """Segments (by number) sent more than once."""
    offs = _offsets(segs, peer)
    return sorted({o for o in offs if offs.count(o) > 1})


@pytest.mark.parametrize("scheme", ["immediate", "bwaware"])
def test_forwarded_flight_is_not_resent_and_the_window_restarts(scheme: str) -> None:
    conn, peer, sent, records = _sender(scheme)
    conn.notify(_forwarded(peer, flush_end_us=30_000), T0)
    assert conn.poll(T0) == []                        # no go-back-N
    assert conn.cwnd == MSS and conn.ssthresh == FLIGHT * MSS // 2
    assert conn.next_wakeup() == pytest.approx(T0 + 0.03 + conn.rto)   # timer after the flush's end
    t = T0 + 0.05
    for k in range(3, 3 + FLIGHT):                     # the forwarded flight arrives, one ACK each
        sent += peer.ack_data(k * MSS, t)
        t += 0.02
    for k in range(3 + FLIGHT, 40):                    # and the new data after it
        sent += peer.ack_data(k * MSS, t)
        t += 0.02
    assert _copies(sent, peer) == [] and conn.retransmits == 0
    assert max(_offsets(sent, peer)) > 2 + FLIGHT      # new data flowed, clocked by the flight's ACKs
    assert "forced_rto" not in [r.event for r in records]


@pytest.mark.parametrize("scheme", ["immediate", "bwaware"])
def test_a_segment_really_lost_is_fast_retransmitted_once(scheme: str) -> None:
    """Segment 2 died in the old cell; the forwarded 3..12 bring the duplicate ACKs."""
    conn, peer, sent, _ = _sender(scheme)
    conn.notify(_forwarded(peer, buffered=FLIGHT - 1), T0)
    before = len(sent)
    t = T0 + 0.05
    for _ in range(FLIGHT - 1):
        sent += peer.ack_data(2 * MSS, t)
        t += 0.005
    assert _offsets(sent[before:], peer).count(2) == 1   # fast retransmit at the third duplicate
    sent += peer.ack_data((2 + FLIGHT) * MSS, t)           # the hole filled: everything ACKed
    for k in range(3 + FLIGHT, 40):
        t += 0.02
        sent += peer.ack_data(k * MSS, t)
    assert _copies(sent, peer) == [2] and conn.retransmits == 1


@pytest.mark.parametrize("scheme", ["immediate", "bwaware"])
def test_the_last_segment_really_lost_is_recovered_by_the_timer_alone(scheme: str) -> None:
    """Segment 12 died and nothing follows it: no duplicate ACKs. Only the timer resends it,
    and only it (go-back-N from SND.UNA = 12)."""
    conn, peer, sent, records = _sender(scheme)
    conn.notify(_forwarded(peer, buffered=FLIGHT - 1), T0)
    t = T0 + 0.05
    for k in range(3, 2 + FLIGHT):                     # up to 11 ACKed, 12 never arrives
        out = peer.ack_data(k * MSS, t)
        sent += out
        t += 0.02
    new = [o for o in _offsets(sent, peer) if o >= 2 + FLIGHT]
    due = conn.next_wakeup()
    assert due is not None and due > t
    out = conn.poll(due)
    assert _offsets(out, peer) == [2 + FLIGHT - 1]     # segment 12, once
    assert "rto" in [r.event for r in records]
    assert all(_offsets(sent, peer).count(o) == 1 for o in new)


def test_bwaware_measures_the_pair_on_the_forwarded_flight_and_rtt_on_new_data() -> None:
    conn, peer, sent, records = _sender("bwaware")
    conn.notify(_forwarded(peer), T0)
    peer.ack_data(3 * MSS, T0 + 0.10)
    peer.ack_data(4 * MSS, T0 + 0.12)
    peer.ack_data(5 * MSS, T0 + 0.14)                  # lag 20 ms for 1000 bytes
    assert conn.ssthresh == FLIGHT * MSS // 2          # no RTT of the new path yet
    # the rest of the flight 1 ms apart; every new segment ACKed 100 ms after it left
    acks = [(T0 + 0.14 + 0.001 * i, k) for i, k in enumerate(range(6, 3 + FLIGHT), 1)]
    while acks and not any(r.event == "bwaware_ssthresh" for r in records):
        acks.sort()
        t, k = acks.pop(0)
        acks += [(t + 0.1, o + 1) for o in _offsets(peer.ack_data(k * MSS, t), peer)]
    assert isinstance(conn.cc, BandwidthAware) and len(conn.cc.estimates) == 1
    rtt, lag, ssthresh = conn.cc.estimates[0]
    assert lag == pytest.approx(0.02) and rtt == pytest.approx(0.1)
    assert ssthresh == int(rtt * MSS / lag / MSS + 1e-9) * MSS == 5 * MSS
    assert conn.cwnd <= ssthresh                       # the new path holds no more


def test_bwaware_with_too_few_forwarded_packets_makes_no_estimate() -> None:
    conn, peer, sent, records = _sender("bwaware")
    conn.notify(_forwarded(peer, buffered=2), T0)
    t = T0 + 0.05
    for k in range(3, 40):
        sent += peer.ack_data(k * MSS, t)
        t += 0.02
    assert isinstance(conn.cc, BandwidthAware) and conn.cc.estimates == []
    assert _copies(sent, peer) == []


@pytest.mark.parametrize("scheme", ["immediate", "bwaware", "dsbp"])
def test_a_recovery_begun_before_the_handoff_resends_its_next_hole_at_the_partial_ack(scheme: str) -> None:
    """Segments 2 and 3 died in the old cell before the MH left: fast retransmit of 2 is under way when
    the HANDOFF says the rest is forwarded. The partial ACK for 2 is not the flush's reordering but the
    old loss's second hole: 3 is resent at once (NewReno), not left to a timeout."""
    conn, peer, sent, records = _sender(scheme)
    t = 0.01
    for _ in range(3):                                 # 4, 5, 6 arrived: three duplicate ACKs for 2
        sent += peer.ack_data(2 * MSS, t)
        t += 0.001
    assert conn.in_recovery and _offsets(sent, peer).count(2) == 2
    conn.notify(_forwarded(peer, buffered=FLIGHT - 2), T0)
    sent += peer.ack_data(3 * MSS, T0 + 0.02)           # the retransmitted 2 arrived: a partial ACK
    assert _offsets(sent, peer).count(3) == 2           # 3 resent there and then
    t = T0 + 0.04
    sent += peer.ack_data((2 + FLIGHT) * MSS, t)        # it filled the last hole: everything ACKed
    for k in range(3 + FLIGHT, 40):
        t += 0.02
        sent += peer.ack_data(k * MSS, t)
    assert "rto" not in [r.event for r in records] and conn.retransmits == 2


def _detached(peer: ScriptedPeer) -> Notification:
    return Notification(Event.DETACH, 1, peer.addr, "")


@pytest.mark.parametrize("scheme", ["immediate", "bwaware"])
def test_a_handoff_after_the_forwarded_flights_acks_keeps_the_window(scheme: str) -> None:
    """The lab's controller notifies after its flush (flush_end_us = 0): the forwarded flight's ACKs
    came first, so the ACK clock runs through the new path and no timeout is being replaced. The
    window stands (no cwnd = 1), nothing is resent, the timer is re-armed from the HANDOFF."""
    conn, peer, sent, records = _sender(scheme)
    srtt = conn.srtt
    assert srtt is not None and srtt < 0.01
    conn.notify(_detached(peer), T0)
    sent += peer.ack_data(3 * MSS, T0 + srtt / 2)       # data the MH got before it left
    t = T0 + 0.03                                      # the flush reached it through the new BS (timer not due)
    for k in range(4, 9):
        sent += peer.ack_data(k * MSS, t)
        t += 0.002
    cwnd, ssthresh = conn.cwnd, conn.ssthresh
    assert cwnd > 2 * MSS
    conn.notify(_forwarded(peer), t)
    assert conn.poll(t) == []
    assert (conn.cwnd, conn.ssthresh) == (cwnd, ssthresh)
    assert conn.next_wakeup() == pytest.approx(t + conn.rto)
    assert "window_kept" in [r.event for r in records]
    for k in range(9, 40):
        t += 0.02
        sent += peer.ack_data(k * MSS, t)
    assert _copies(sent, peer) == [] and conn.retransmits == 0


@pytest.mark.parametrize("scheme", ["immediate", "bwaware"])
def test_acks_of_what_the_mh_got_before_it_left_do_not_count_as_resumed(scheme: str) -> None:
    """An ACK within one SRTT of the DETACH is for data delivered before the MH left: the HANDOFF
    that follows still takes the timeout's window (the flush's ACKs are yet to come)."""
    conn, peer, sent, records = _sender(scheme)
    srtt = conn.srtt
    assert srtt is not None
    conn.notify(_detached(peer), T0)
    sent += peer.ack_data(3 * MSS, T0 + srtt / 2)
    flight = conn.flight_size
    conn.notify(_forwarded(peer), T0 + 0.03)
    assert conn.poll(T0 + 0.03) == []
    assert conn.cwnd == MSS and conn.ssthresh == max(flight // 2, 2 * MSS)
    assert "window_kept" not in [r.event for r in records]


@pytest.mark.parametrize("scheme", ["immediate", "bwaware"])
def test_without_the_signal_the_flight_is_restarted_as_before(scheme: str) -> None:
    conn, peer, _, records = _sender(scheme)
    conn.notify(Notification(Event.HANDOFF, 1, peer.addr, peer.addr), T0)
    assert _offsets(conn.poll(T0), peer) == [2]
    assert "forced_rto" in [r.event for r in records]


@pytest.mark.parametrize("scheme", ["newreno", "reno", "dsbp"])
def test_schemes_that_never_restart_only_keep_the_timer_off_the_flight(scheme: str) -> None:
    conn, peer, _, _ = _sender(scheme)
    cwnd, ssthresh = conn.cwnd, conn.ssthresh
    due = conn.next_wakeup()
    conn.notify(_forwarded(peer, flush_end_us=400_000), T0)
    assert conn.poll(T0) == []
    assert (conn.cwnd, conn.ssthresh) == (cwnd, ssthresh)
    if scheme == "dsbp":
        assert conn.next_wakeup() == pytest.approx(T0 + 0.4 + conn.rto)
    else:
        assert conn.next_wakeup() == due                  # NewReno and Reno ignore notifications


def test_pacing_spreads_new_data_and_never_holds_a_retransmission() -> None:
    """The core's `pace`: DSBP's window after a handoff leaves one segment per interval."""
    conn, peer, sent, _ = _sender("newreno")
    conn.pace(T0, 0.01, T0 + 0.1)
    out = peer.ack_data(8 * MSS, T0)                   # six segments' worth of window opens at once
    assert len(_offsets(out, peer)) == 1               # one now ...
    times = [T0]
    while conn.next_wakeup() is not None and conn.next_wakeup() < T0 + 0.06:
        t = conn.next_wakeup()
        assert t is not None
        if _offsets(conn.poll(t), peer):
            times.append(t)
    assert times == pytest.approx([T0 + 0.01 * i for i in range(len(times))]) and len(times) >= 5
    for _ in range(3):                                 # three duplicate ACKs: resent at once
        out = peer.ack_data(8 * MSS, T0 + 0.061)
    assert 8 in _offsets(out, peer)
    t = T0 + 0.2                                       # pacing over: the window leaves at once again
    out = peer.ack_data(20 * MSS, t)
    assert len(_offsets(out, peer)) > 1


@pytest.mark.parametrize("scheme", ["immediate", "bwaware", "dsbp"])
def test_partial_acks_inside_the_forwarded_flight_resend_nothing(scheme: str) -> None:
    """The forwarded flight arrives reordered at its head (three later segments first: fast
    retransmit of segment 2), then in order, one segment per ACK. NewReno's rule would resend the
    next segment at every partial ACK - each one on its way in the flush; inside the forwarded
    flight a partial ACK ends recovery instead, so only the fast retransmit is a second copy."""
    conn, peer, sent, _ = _sender(scheme)
    conn.notify(_forwarded(peer), T0)
    t = T0 + 0.05
    for _ in range(3):
        sent += peer.ack_data(2 * MSS, t)
        t += 0.002
    for k in range(3, 3 + FLIGHT):                     # then 2, 3, 4, ... one ACK each
        sent += peer.ack_data(k * MSS, t)
        t += 0.002
    for k in range(3 + FLIGHT, 40):
        sent += peer.ack_data(k * MSS, t)
        t += 0.002
    assert _copies(sent, peer) == [2]
