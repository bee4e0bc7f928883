"""DSBP: dummy segments to the MH's second address, dummy ACKs, cwnd from them at handoff."""
from __future__ import annotations

import random

import pytest

from p4handoff.hosts.cc import make_scheme
from p4handoff.hosts.cc.dsbp import Dsbp
from p4handoff.hosts.segment import ACK, SYN, Segment
from p4handoff.hosts.tcp import State, TcpConfig, TcpConnection, TraceRecord
from tests.tcp_loop import Loop
from p4handoff.notify import Event, Notification
from p4handoff.wire import DSCP_LE

MSS = 1000
CH, MH, MH2 = "10.0.0.1", "10.0.1.1", "10.0.2.1"


class _Run:
    """CH -> MH over the old cell (6 Mb/s); the MH's second address MH2 is behind the new cell."""

    def __init__(self, scheme: str, new_rate: float, probe: bool = True, handoff: bool = True,
                 new_buffer: int = 20) -> None:
        cfg = TcpConfig(mss=MSS, min_rto=0.2, window_segments=64)
        self.records: list[TraceRecord] = []
        self.got = bytearray()
        self.loop = Loop(delay=0.03)
        self.snd = TcpConnection(cfg, CH, 40000, cc=scheme, trace=self.records.append)
        self.rcv = TcpConnection(cfg, MH, 5001, cc=scheme, on_data=self._data)
        self.delivered: list[tuple[float, int]] = []
        self.rcv.listen()
        self.loop.bind(CH, self.snd)
        self.loop.bind(MH, self.rcv)
        self.loop.bind(MH2, self.rcv)
        self.loop.link(CH, MH, delay=0.03, rate=6e6 / 8, buffer=50)
        self.loop.link(CH, MH2, delay=0.03, rate=new_rate / 8, buffer=new_buffer)
        self.data = random.Random(8).randbytes(4_000_000)
        self.snd.connect(MH, 5001)
        self.snd.send(self.data)
        self.snd.close()
        self.loop.run(3.0)
        if probe:
            self.snd.notify(Notification(Event.PROBE_UP, 1, MH, MH2, 1, 2), 3.0)
        self.loop.run(4.0)
        if handoff:
            self.snd.notify(Notification(Event.HANDOFF, 2, MH, MH2, 1, 2), 4.0)
        self.loop.run(4.8)

    def _data(self, data: bytes) -> None:
        self.got += data
        self.delivered.append((self.loop.now, len(data)))

    def finish(self) -> None:
        def done() -> bool:
            if self.rcv.eof and self.rcv.state is State.CLOSE_WAIT:
                self.rcv.close()
            return self.snd.closed and self.rcv.closed
        self.loop.run(120.0, stop=done)
        assert bytes(self.got) == self.data

    def sent(self, lo: float, hi: float, dst: str | None = None) -> list[Segment]:
        return [s for t, s in self.loop.sent if lo <= t < hi and (dst is None or s.dst == dst)]

    def data_retransmissions_after(self, t0: float) -> int:
        seen: set[int] = set()
        count = 0
        for t, s in self.loop.sent:
            if s.src == CH and s.payload and not s.dummy:
                if s.seq in seen and t >= t0:
                    count += 1
                seen.add(s.seq)
        return count


def test_dummies_are_marked_copies_at_rwnd_per_rtt_and_answered() -> None:
    r = _Run("dsbp", new_rate=11e6)
    dummies = [s for s in r.sent(3.0, 4.0, MH2) if s.src == CH]
    assert dummies and all(s.dummy and s.dscp == DSCP_LE and len(s.payload) == MSS for s in dummies)
    data_payloads = {s.payload for t, s in r.loop.sent if s.src == CH and not s.dummy}
    assert all(s.payload in data_payloads for s in dummies)  # copies of data already sent
    assert isinstance(r.snd.cc, Dsbp) and r.snd.cc.probe_rtt is not None
    expected = 64 / r.snd.cc.probe_rtt  # rwnd segments per probe-path RTT, for one second
    assert len(dummies) == pytest.approx(expected, rel=0.1)
    answers = [s for s in r.sent(3.0, 4.1) if s.src == MH2]
    assert answers and all(s.dummy and s.dscp == DSCP_LE and not s.payload for s in answers)
    # dummies never touch the connection: no duplicate ACKs, no losses, no data bytes twice
    assert not any(rec.event in ("dupack", "fast_retransmit", "rto") for rec in r.records if rec.time < 4.0)
    assert r.snd.cc.probe_rtt == pytest.approx(0.06 + 2 * (MSS + 40) * 8 / 11e6, rel=0.05)
    r.finish()


def test_rich_new_cell_cwnd_is_rwnd_and_rate_follows_within_an_rtt() -> None:
    r = _Run("dsbp", new_rate=11e6)
    assert isinstance(r.snd.cc, Dsbp)
    count = r.snd.cc.handoff_counts[0]
    assert count >= 60  # probing at 64 segments per RTT, all answered
    rec = next(x for x in r.records if x.event == "dsbp_handoff")
    assert rec.cwnd == rec.ssthresh == count * MSS
    assert all(s.dst == MH2 for s in r.sent(4.0, 4.8) if s.src == CH and s.payload)
    # from one RTT after the handoff the MH receives at the rate the window allows on the new path
    rtt = 0.06 + (MSS + 40) * 8 / 11e6
    window_rate = 64 * MSS / rtt
    got = sum(n for t, n in r.delivered if 4.0 + 2 * rtt <= t < 4.0 + 6 * rtt)
    assert got / (4 * rtt) >= 0.9 * min(window_rate, 11e6 / 8 * MSS / (MSS + 40))
    assert r.data_retransmissions_after(4.0) == 0
    r.finish()


def test_poor_new_cell_dsbp_loses_nothing_where_newreno_floods() -> None:
    r = _Run("dsbp", new_rate=1e6)
    assert isinstance(r.snd.cc, Dsbp)
    bdp = 1e6 / 8 / (MSS + 40) * 0.06
    assert r.snd.cc.handoff_counts[0] == pytest.approx(bdp, abs=2)
    assert r.data_retransmissions_after(4.0) == 0
    r.finish()
    nr = _Run("newreno", new_rate=1e6)
    assert nr.data_retransmissions_after(4.0) > 5
    nr.finish()


def test_probe_down_stops_probing_and_changes_nothing() -> None:
    r = _Run("dsbp", new_rate=11e6, handoff=False)
    cwnd = r.snd.cwnd
    r.snd.notify(Notification(Event.PROBE_DOWN, 3, MH, MH2), r.loop.now)
    r.loop.run(r.loop.now + 0.5)
    assert not [s for s in r.sent(4.81, 6.0, MH2) if s.src == CH]
    assert r.snd.cwnd == cwnd and r.snd.remote_addr == MH
    assert not any(x.event == "dsbp_handoff" for x in r.records)
    r.finish()


def test_handoff_without_probing_changes_nothing() -> None:
    r = _Run("dsbp", new_rate=11e6, probe=False)
    assert isinstance(r.snd.cc, Dsbp) and r.snd.cc.handoff_counts == [] and r.snd.cc.dummies_sent == 0
    r.finish()


def test_non_dsbp_receiver_treats_dummy_as_ordinary_duplicate() -> None:
    rcv = TcpConnection(TcpConfig(mss=MSS, timestamps=False), MH, 5001, cc="newreno")
    rcv.listen()
    rcv.handle(Segment(CH, MH, 40000, 5001, 100, 0, SYN, 65535, mss=MSS), 0.0)
    synack = rcv.poll(0.0)[0]
    data = Segment(CH, MH, 40000, 5001, 101, synack.seq + 1, ACK, 65535, b"d" * 100)
    rcv.handle(data, 0.1)
    rcv.poll(0.1)
    rcv.handle(data.with_(dummy=True, dscp=DSCP_LE), 0.2)
    out = rcv.poll(0.2)
    assert len(out) == 1 and not out[0].dummy and out[0].dscp == 0 and rcv.bytes_received == 100


class _Ctl:
    """The few sender facts the DSBP rule reads (a stand-in in addition to the real runs above)."""

    def __init__(self, in_recovery: bool) -> None:
        self.peer_home, self.mss, self.in_recovery = MH, MSS, in_recovery
        self.cwnd, self.ssthresh, self.srtt, self.ts_hz = 90 * MSS, 45 * MSS, 0.06, 1000
        self.last_data_segment = None
        self.snd_una, self.snd_max, self.flight_size = 0, 90 * MSS, 90 * MSS
        self.paced: list[tuple[float, float, float]] = []

    def trace(self, event: str, now: float, detail: str = "") -> None:
        pass

    def pace(self, now: float, interval: float, until: float) -> None:
        self.paced.append((now, interval, until))


@pytest.mark.parametrize("in_recovery", [False, True])
def test_handoff_in_fast_recovery_sets_only_ssthresh(in_recovery: bool) -> None:
    cc, ctl = Dsbp(), _Ctl(in_recovery)
    cc.attach(ctl)  # type: ignore[arg-type]
    cc.on_notify(Notification(Event.PROBE_UP, 1, MH, MH2), 0.0)
    for k in range(30):
        cc.on_dummy_ack(Segment(MH2, CH, 5001, 40000, 0, 0, ACK, 0, dummy=True, dscp=DSCP_LE), 1.0 + k * 0.001)
    cc.on_notify(Notification(Event.HANDOFF, 2, MH, MH2), 1.03)
    assert ctl.ssthresh == 30 * MSS
    assert ctl.cwnd == (90 * MSS if in_recovery else 30 * MSS)
    # the 30-segment window over one RTT (SRTT 60 ms: no dummy carried a timestamp): 2 ms apart;
    # in recovery from its exit, which takes the window
    paced_at_handoff = [] if in_recovery else [(1.03, pytest.approx(0.002), pytest.approx(1.09))]
    assert ctl.paced == paced_at_handoff
    cc.on_recovery_exit(1.2)
    assert ctl.paced == paced_at_handoff + ([(1.2, pytest.approx(0.002), pytest.approx(1.26))] if in_recovery else [])


def test_unpaced_dsbp_takes_the_same_window_without_pacing() -> None:
    cc, ctl = make_scheme("dsbp-unpaced"), _Ctl(False)
    cc.attach(ctl)  # type: ignore[arg-type]
    cc.on_notify(Notification(Event.PROBE_UP, 1, MH, MH2), 0.0)
    for k in range(30):
        cc.on_dummy_ack(Segment(MH2, CH, 5001, 40000, 0, 0, ACK, 0, dummy=True, dscp=DSCP_LE), 1.0 + k * 0.001)
    cc.on_notify(Notification(Event.HANDOFF, 2, MH, MH2), 1.03)
    assert (ctl.ssthresh, ctl.cwnd, ctl.paced) == (30 * MSS, 30 * MSS, [])


def _dummy_ack(cc: Dsbp, t: float) -> None:
    cc.on_dummy_ack(Segment(MH2, CH, 5001, 40000, 0, 0, ACK, 0, dummy=True, dscp=DSCP_LE), t)


def _probed_handoff(ctl: _Ctl, acks: int = 30) -> Dsbp:
    cc = Dsbp()
    cc.attach(ctl)  # type: ignore[arg-type]
    cc.on_notify(Notification(Event.PROBE_UP, 1, MH, MH2), 0.0)
    for k in range(acks):
        _dummy_ack(cc, 1.0 + k * 0.001)
    cc.on_notify(Notification(Event.HANDOFF, 2, MH, MH2), 1.03)
    return cc


def test_richer_cell_opens_cwnd_one_segment_per_returning_dummy_ack() -> None:
    ctl = _Ctl(False)
    ctl.cwnd = 10 * MSS
    cc = _probed_handoff(ctl)
    assert ctl.ssthresh == 30 * MSS and ctl.cwnd == 10 * MSS  # no burst at the handoff
    for k in range(5):
        _dummy_ack(cc, 1.04 + k * 0.001)
    assert ctl.cwnd == 15 * MSS
    for k in range(40):
        _dummy_ack(cc, 1.05 + k * 0.001)
    assert ctl.cwnd == 30 * MSS  # never beyond what the probes found
    ctl.cwnd = 12 * MSS
    _dummy_ack(cc, 1.03 + 0.07)  # more than one probe RTT (60 ms) after the handoff: over
    assert ctl.cwnd == 12 * MSS


def test_old_path_losses_keep_the_probed_window_new_path_losses_halve() -> None:
    ctl = _Ctl(False)
    cc = _probed_handoff(ctl)
    ctl.ssthresh = 0
    cc.on_loss(1.2)  # SND.UNA is below SND.MAX at the handoff: a segment of the old path
    assert ctl.ssthresh == 30 * MSS
    cc.on_rto(1.5)
    assert ctl.ssthresh == 30 * MSS and ctl.cwnd == MSS
    ctl.snd_una = ctl.snd_max  # everything sent on the old path is acknowledged
    ctl.flight_size = 40 * MSS
    cc.on_loss(2.0)
    assert ctl.ssthresh == 20 * MSS


def test_after_a_recovery_at_the_handoff_returning_dummy_acks_open_cwnd() -> None:
    ctl = _Ctl(True)
    cc = _probed_handoff(ctl)
    assert ctl.ssthresh == 30 * MSS and ctl.cwnd == 90 * MSS
    _dummy_ack(cc, 1.031)
    assert ctl.cwnd == 90 * MSS          # still in recovery: its inflation rules
    ctl.in_recovery, ctl.cwnd = False, 12 * MSS   # the exit deflated to the flight
    for k in range(3):
        _dummy_ack(cc, 1.04 + k * 0.001)
    assert ctl.cwnd == 15 * MSS          # paced by the probes, not slow start's doubling


@pytest.mark.parametrize("scheme", ["dsbp", "dsbp-unpaced"])
def test_a_recovery_that_outlasts_the_ramp_takes_the_probed_window_paced(scheme: str) -> None:
    """Issue 20 (dsbp-over-ipf, 10-packet buffers): the recovery at the handoff ended one RTT later, after
    the ramp's dummy ACKs had come back (all during the recovery), and its exit deflated cwnd to the flight
    (8 segments) — slow start from there to the probed ssthresh overflowed the new cell's buffer. DSBP takes
    the probed window at the exit, paced over one probe RTT; the unpaced (earlier) rule keeps the deflation."""
    ctl = _Ctl(True)
    cc = make_scheme(scheme)
    cc.attach(ctl)  # type: ignore[arg-type]
    cc.on_notify(Notification(Event.PROBE_UP, 1, MH, MH2), 0.0)
    for k in range(30):
        _dummy_ack(cc, 1.0 + k * 0.001)  # type: ignore[arg-type]
    cc.on_notify(Notification(Event.HANDOFF, 2, MH, MH2), 1.03)
    _dummy_ack(cc, 1.05)                 # type: ignore[arg-type]  # during the recovery: opens nothing
    ctl.flight_size = 8 * MSS            # what is left in flight when the full ACK comes
    ctl.in_recovery = False
    cc.on_recovery_exit(1.1)             # after the ramp's end (1.03 + 60 ms)
    if scheme == "dsbp":
        assert ctl.cwnd == 30 * MSS
        assert ctl.paced == [(1.1, pytest.approx(0.002), pytest.approx(1.16))]
    else:
        assert ctl.cwnd == 9 * MSS and ctl.paced == []


def test_a_timeout_ends_the_handoffs_recovery_so_a_later_exit_takes_no_probed_window() -> None:
    """The handoff's recovery ended by a timeout (dsbp-search, old path dropped: the flight died with the old
    cell): a later, unrelated recovery's exit keeps NewReno's deflation, not the old probed window."""
    ctl = _Ctl(True)
    cc = _probed_handoff(ctl)
    cc.on_rto(2.0)
    ctl.in_recovery, ctl.flight_size, ctl.snd_una = False, 8 * MSS, ctl.snd_max   # new-path data since
    ctl.ssthresh = 13 * MSS
    cc.on_recovery_exit(3.0)
    assert ctl.cwnd == 9 * MSS and ctl.paced == []
