"""Bandwidth-Aware ssthresh (Tsukamoto et al., scheme 2): immediate restart + packet-pair ssthresh.

After the forced restart the sender measures, once per handoff:
RTT = time from the restart's retransmission to the first ACK that advances
SND.UNA; lag = arrival of the 3rd such ACK minus arrival of the 2nd (the
2nd and 3rd segments leave back to back in slow start, so their ACKs are
spaced by the new bottleneck's service time); packet size = bytes the 3rd
ACK acknowledged. ssthresh = floor(RTT * size / lag / SMSS) segments, at
least 2. A loss or timeout before the 3rd ACK abandons the measurement
(NewReno's ssthresh stays); a lag of zero gives no estimate (same). The
measurement assumes one ACK per segment (delayed ACKs off at the receiver).

When the network forwards the flight (HANDOFF with forwarding; see
`ImmediateExpiration`), nothing is resent and the pair is the forwarded
flight itself: the old BS sends it back to back, so the 2nd and 3rd ACKs
that advance SND.UNA after the notification are spaced by the new
bottleneck (lag, size as above). Their RTT samples include the outage and
the buffering, so RTT is the first sample on an ACK for data sent after the
notification (beyond SND.MAX then). The estimate then sets ssthresh and,
if cwnd has already grown past it, cwnd: it is what the new path holds.
Fewer than 3 packets forwarded: no pair to measure, no estimate.
"""
from __future__ import annotations

from typing import ClassVar, TYPE_CHECKING

from p4handoff.hosts.cc.base import AckInfo
from p4handoff.hosts.cc.immediate import ImmediateExpiration

if TYPE_CHECKING:
    from p4handoff.notify import Notification


class BandwidthAware(ImmediateExpiration):
    name: ClassVar[str] = "bwaware"

    def __init__(self) -> None:
        super().__init__()
        self._restart_at: float | None = None  # measuring since this restart/notification, else None
        self._acks = 0
        self._rtt = 0.0
        self._second_ack_at = 0.0
        self._new_data: int | None = None  # forwarded flight: RTT from the first ACK beyond this
        self._lag: tuple[float, int] | None = None  # forwarded flight: (lag, size) waiting for the RTT
        self.estimates: list[tuple[float, float, int]] = []  # (rtt, lag, ssthresh bytes) per handoff

    def on_handoff(self, note: "Notification", now: float) -> None:
        fwd = note.forwarding
        if fwd is None:
            if self.restart(now):
                self._measure(now, None)
        elif self.forwarded(fwd, now) and fwd.buffered >= 3:
            self._measure(now, self.ctl.snd_max)

    def _measure(self, now: float, new_data: int | None) -> None:
        self._restart_at, self._acks, self._new_data, self._lag = now, 0, new_data, None

    def on_ack(self, info: AckInfo) -> None:
        super().on_ack(info)
        if self._restart_at is None:
            return
        if self._lag is not None:
            if info.rtt is not None and self.ctl.snd_una > (self._new_data or 0):
                self._estimate(info.now, info.rtt, *self._lag)
            return
        self._acks += 1
        if self._acks == 1:
            self._rtt = info.now - self._restart_at
        elif self._acks == 2:
            self._second_ack_at = info.now
        else:
            lag = info.now - self._second_ack_at
            if lag <= 0:
                self._restart_at = None
                self.ctl.trace("bwaware_no_estimate", info.now, "zero lag")
            elif self._new_data is None:
                self._estimate(info.now, self._rtt, lag, info.acked)
            else:
                self._lag = (lag, info.acked)   # the forwarded flight's pair: RTT from new data

    def _estimate(self, now: float, rtt: float, lag: float, size: int) -> None:
        self._restart_at = None
        ctl = self.ctl
        # floor, but not below an exact integer that floating point left just short of
        segments = int(rtt * size / lag / ctl.mss + 1e-9)
        ctl.ssthresh = max(2, segments) * ctl.mss
        if self._new_data is not None and ctl.cwnd > ctl.ssthresh:
            ctl.cwnd = ctl.ssthresh
        self.estimates.append((rtt, lag, ctl.ssthresh))
        ctl.trace("bwaware_ssthresh", now, f"rtt={rtt:.6f} lag={lag:.6f} size={size}")

    def on_loss(self, now: float) -> None:
        self._abandon(now)
        super().on_loss(now)

    def on_rto(self, now: float) -> None:
        if self._restart_at is not None and now > self._restart_at:
            self._abandon(now)
        super().on_rto(now)

    def _abandon(self, now: float) -> None:
        if self._restart_at is not None:
            self._restart_at = None
            self.ctl.trace("bwaware_abandoned", now, f"after {self._acks} ACKs")
