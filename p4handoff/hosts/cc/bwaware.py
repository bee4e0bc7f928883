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
"""
from __future__ import annotations

from typing import ClassVar, TYPE_CHECKING

from p4handoff.hosts.cc.base import AckInfo
from p4handoff.hosts.cc.immediate import ImmediateExpiration
from p4handoff.notify import Event

if TYPE_CHECKING:
    from p4handoff.notify import Notification


class BandwidthAware(ImmediateExpiration):
    name: ClassVar[str] = "bwaware"

    def __init__(self) -> None:
        super().__init__()
        self._restart_at: float | None = None  # measuring since this restart, else None
        self._acks = 0
        self._rtt = 0.0
        self._second_ack_at = 0.0
        self.estimates: list[tuple[float, float, int]] = []  # (rtt, lag, ssthresh bytes) per handoff

    def on_notify(self, note: "Notification", now: float) -> None:
        if note.event is Event.HANDOFF and self.restart(now):
            self._restart_at = now
            self._acks = 0

    def on_ack(self, info: AckInfo) -> None:
        super().on_ack(info)
        if self._restart_at is None:
            return
        self._acks += 1
        if self._acks == 1:
            self._rtt = info.now - self._restart_at
        elif self._acks == 2:
            self._second_ack_at = info.now
        else:
            self._restart_at = None
            lag = info.now - self._second_ack_at
            if lag <= 0:
                self.ctl.trace("bwaware_no_estimate", info.now, "zero lag")
                return
            ctl = self.ctl
            # floor, but not below an exact integer that floating point left just short of
            segments = int(self._rtt * info.acked / lag / ctl.mss + 1e-9)
            ctl.ssthresh = max(2, segments) * ctl.mss
            self.estimates.append((self._rtt, lag, ctl.ssthresh))
            ctl.trace("bwaware_ssthresh", info.now, f"rtt={self._rtt:.6f} lag={lag:.6f} size={info.acked}")

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
