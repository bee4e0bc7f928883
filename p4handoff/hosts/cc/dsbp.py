"""DSBP, dummy-segment bandwidth probing (Taleb et al.): probe the next cell, start at its rate.

Sender: on PROBE_UP (the MH has an address in the overlap cell) it sends
dummy segments - copies of the last data segment, DSBP-marked (TCP dummy
bit + DSCP LE, docs/wire-contract.md) and addressed to that address - at
rwnd segments per probe-path RTT (rwnd = min(peer window, window cap)),
paced evenly. The probe-path RTT is the smallest RTT measured on a dummy
(its dummy ACK echoes the dummy's TSval; the minimum, because dummies queue
behind data in the low-priority class), SRTT until one is measured or
without timestamps.
Receiver (ours, same scheme): the core answers every dummy data segment
with a marked dummy ACK from the probed address; dummies never touch
sequence state, so they are never duplicates or losses.
On HANDOFF: ssthresh = N, the number of dummy ACKs received in the last
probe-path RTT before the handoff (floor 2 segments). A poorer new cell
(N below cwnd): cwnd = N at once. A richer one: "one real data segment per
dummy ACK received" - each dummy ACK still returning during the next
probe-path RTT opens cwnd by one segment, up to N, so the new path is
filled at the rate the probes came back instead of by one line-rate burst
(which overflowed the new cell's buffer); if dummy ACKs stop short, slow
start continues to ssthresh. During fast recovery only ssthresh is set, so
the recovery's inflated window is not cut under the flight (that stalled
it until an RTO); its exit sets cwnd, and dummy ACKs returning after the
exit open it further as above (slow start from the exit's small cwnd
overflowed a 10-packet cell buffer); with pacing the exit takes N at once,
paced, since the ramp's dummy ACKs mostly come back during a recovery that
lasts an RTT. Afterwards normal NewReno: cwnd /
RTT on the new path equals the rate at which dummy ACKs came back (at most
rwnd / RTT, the probing rate). A loss of a segment sent before the handoff
(on the old path) keeps ssthresh at N instead of halving: it says nothing
about the new path. PROBE_DOWN stops probing and changes nothing; a HANDOFF
without probing changes nothing either. DSBP never resends the flight at a
handoff, so the forwarding signal (IPF) changes one thing: the retransmission
timer is re-armed to one RTO after the flush's end (`hold_flight`), so a long
flush does not time out the forwarded flight.
Pacing (issue 20): with 10-packet cell buffers the window taken at the
handoff arrived as a burst that overflowed the new cell (docs/lab.md). So
for one probe-path RTT after the handoff new data leaves at most one
segment per RTT / N (the probed window N spread over the new path's RTT:
the rate the dummy ACKs came back at); after a handoff during fast
recovery, for one RTT from the recovery's exit, which is when its window is
taken. Retransmissions are never held. `dsbp-unpaced` is DSBP without it
(for the comparison in traces/dsbp-search.yaml).
"""
from __future__ import annotations

from collections import deque
from typing import ClassVar, TYPE_CHECKING

from p4handoff.hosts.cc.base import CongestionControl
from p4handoff.notify import Event
from p4handoff.wire import DSCP_LE

if TYPE_CHECKING:
    from p4handoff.hosts.segment import Segment
    from p4handoff.notify import Notification

MASK32 = 0xFFFFFFFF
DEFAULT_RTT = 0.1  # pacing before any RTT sample exists


class Dsbp(CongestionControl):
    name: ClassVar[str] = "dsbp"
    answers_dummies: ClassVar[bool] = True
    #: pace the window taken at the handoff over one probe-path RTT (issue 20)
    pace: ClassVar[bool] = True

    def __init__(self) -> None:
        super().__init__()
        self.probe_addr: str | None = None
        self._next_dummy: float | None = None
        self._dummy_acks: deque[float] = deque()
        self.probe_rtt: float | None = None  # smallest RTT measured on a dummy in this probing period
        self.dummies_sent = 0
        self.dummy_acks = 0
        self.handoff_counts: list[int] = []  # dummy ACKs counted at each handoff
        self._probed = 0                     # the window (bytes) the last handoff's probing found
        self._old_path_end: int | None = None  # SND.MAX at that handoff: data below it left on the old path
        self._ramp: tuple[str, float] | None = None  # (probed address, until): dummy ACKs still open cwnd
        self._pace_after_recovery = False  # a handoff in recovery: its window is taken at the exit

    def on_notify(self, note: "Notification", now: float) -> None:
        ctl = self.ctl
        if note.mh_addr != ctl.peer_home:
            return  # we are the MH: our receiver answers dummies, nothing to probe
        if note.event is Event.PROBE_UP:
            self.probe_addr = note.path_addr
            self._next_dummy = now
            self._dummy_acks.clear()
            self.probe_rtt = None
        elif note.event is Event.PROBE_DOWN:
            if note.path_addr == self.probe_addr:
                self._stop()
        elif note.event is Event.HANDOFF and note.forwarding is not None:
            # never restarts go-back-N anyway; only the timer must stay off the forwarded flight
            ctl.hold_flight(now, now + note.forwarding.flush_end_us / 1e6)
        if note.event is Event.HANDOFF and self.probe_addr is not None:
            window = self._probe_rtt()
            count = sum(1 for t in self._dummy_acks if t > now - window)
            self.handoff_counts.append(count)
            target = ctl.ssthresh = self._probed = max(2, count) * ctl.mss
            self._old_path_end = ctl.snd_max
            if ctl.in_recovery or target > ctl.cwnd:
                # a richer cell (or recovery, whose exit sets cwnd): one more data segment per
                # dummy ACK still coming back, instead of a burst or slow start into its buffer
                self._ramp = (self.probe_addr, now + window)
            else:
                ctl.cwnd = target  # a poorer cell: never flood it
            ctl.trace("dsbp_handoff", now, f"dummy_acks={count} window={window:.6f}")
            if self.pace:
                self._pace_after_recovery = ctl.in_recovery
                if not ctl.in_recovery:
                    self._pace_window(now)
            self._stop()

    def _pace_window(self, now: float) -> None:
        """The window taken at the handoff leaves evenly over one probe-path RTT, not as a burst."""
        rtt = self._probe_rtt()
        self.ctl.pace(now, rtt * self.ctl.mss / self._probed, now + rtt)

    def on_recovery_exit(self, now: float) -> None:
        super().on_recovery_exit(now)
        if self._pace_after_recovery:
            # the probed window is taken now, paced: the exit's deflation (flight + 1) would leave slow start
            # to reach it, and the ramp's dummy ACKs came back during the recovery, so none opens it (issue 20)
            self._pace_after_recovery = False
            self.ctl.cwnd = max(self.ctl.cwnd, self._probed)
            self._pace_window(now)

    def on_loss(self, now: float) -> None:
        """A loss on the old path says nothing about the new one: keep the probed window."""
        if self._old_path_loss():
            self.ctl.ssthresh = self._probed
            self.ctl.trace("dsbp_old_path_loss", now, "fast retransmit")
        else:
            super().on_loss(now)

    def on_rto(self, now: float) -> None:
        super().on_rto(now)
        self._pace_after_recovery = False  # the recovery the handoff came in ended by timeout, not by an exit
        if self._old_path_loss():
            self.ctl.ssthresh = self._probed
            self.ctl.trace("dsbp_old_path_loss", now, "timeout")

    def _old_path_loss(self) -> bool:
        """Is the first unacknowledged segment one sent before the last handoff (on the old path)?"""
        end = self._old_path_end
        if end is not None and self.ctl.snd_una >= end:
            self._old_path_end = end = None
        return end is not None

    def _probe_rtt(self) -> float:
        return self.probe_rtt or self.ctl.srtt or DEFAULT_RTT

    def _stop(self) -> None:
        self.probe_addr = None
        self._next_dummy = None

    def next_wakeup(self) -> float | None:
        return self._next_dummy

    def on_timer(self, now: float) -> None:
        ctl = self.ctl
        if self.probe_addr is None:
            return
        last = ctl.last_data_segment
        if last is not None:
            ts = (ctl.tsval(now), last.ts[1]) if last.ts is not None else None
            ctl.emit(last.with_(dst=self.probe_addr, dummy=True, dscp=DSCP_LE, ts=ts))
            self.dummies_sent += 1
        rwnd = max(1, min(ctl.peer_window, ctl.max_cwnd) // ctl.mss)
        self._next_dummy = now + self._probe_rtt() / rwnd

    def on_dummy_ack(self, segment: "Segment", now: float) -> None:
        if self._ramp is not None:
            addr, until = self._ramp
            ctl = self.ctl
            if now > until:
                self._ramp = None
            elif segment.src == addr and not ctl.in_recovery:
                ctl.cwnd = min(ctl.cwnd + ctl.mss, max(ctl.cwnd, self._probed))
            return
        if self.probe_addr is None or segment.src != self.probe_addr:
            return
        self.dummy_acks += 1
        self._dummy_acks.append(now)
        ctl = self.ctl
        if segment.ts is not None and segment.ts[1]:
            ticks = (ctl.tsval(now) - segment.ts[1]) & MASK32
            if ticks < 0x80000000:
                rtt = max(ticks, 1) / ctl.ts_hz
                self.probe_rtt = rtt if self.probe_rtt is None else min(self.probe_rtt, rtt)
        horizon = now - 4 * self._probe_rtt()
        while self._dummy_acks and self._dummy_acks[0] < horizon:
            self._dummy_acks.popleft()


class DsbpUnpaced(Dsbp):
    """DSBP without the pacing after the handoff (the comparison in traces/dsbp-search.yaml)."""

    name = "dsbp-unpaced"
    pace = False
