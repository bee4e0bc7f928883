"""Immediate Expiration of the retransmission timer on handoff (Tsukamoto et al., scheme 1).

Segments in flight during the switch are lost; instead of waiting for the
(possibly backed-off) RTO, the sender treats the handoff signal as the
timeout itself: retransmit the first unacknowledged segment, cwnd = 1,
ssthresh as on a timeout, backoff reset. Afterwards plain NewReno.

When the HANDOFF says the network forwards the flight (IPF; notification
revision 2), that flight is not lost and resending it go-back-N would put a
second copy of it into the new cell. The handoff is then a timeout whose
retransmissions the network has made: the same window response (cwnd = 1,
ssthresh = half the flight), nothing resent, the timer (backoff reset)
re-armed to one RTO after the flush's end. The forwarded flight's ACKs clock
the slow start; a segment really lost is recovered by fast retransmit (the
forwarded segments behind it bring the duplicate ACKs) or by that timer.

A HANDOFF may come after the forwarded flight's ACKs: the lab's controller
notifies once its flush has passed the new BS (`flush_end_us` = 0), by which
time the ACK clock runs through the new path. Then no timeout is being
replaced, and cwnd = 1 would only throttle a connection that has recovered:
the sender holds the timer and keeps its window. "Resumed" = an ACK advanced
SND.UNA later than one SRTT after the DETACH (an ACK of data the MH got
before it left comes back within one SRTT); without a DETACH, or without an
RTT sample at it, nothing counts as resumed (docs/hosts-tcp.md).
"""
from __future__ import annotations

from typing import ClassVar, TYPE_CHECKING

from p4handoff.hosts.cc.base import AckInfo, CongestionControl
from p4handoff.notify import Event

if TYPE_CHECKING:
    from p4handoff.notify import Forwarding, Notification


class ImmediateExpiration(CongestionControl):
    name: ClassVar[str] = "immediate"

    def __init__(self) -> None:
        super().__init__()
        self._quiet_until: float | None = None     # after a DETACH: an ACK later than this is the new path's
        self._resumed = False                      # such an ACK came before the HANDOFF

    def on_notify(self, note: "Notification", now: float) -> None:
        if note.event is Event.DETACH:
            srtt = self.ctl.srtt
            self._quiet_until, self._resumed = (now + srtt if srtt is not None else None), False
        elif note.event is Event.HANDOFF:
            self.on_handoff(note, now)
            self._quiet_until, self._resumed = None, False

    def on_handoff(self, note: "Notification", now: float) -> None:
        """The go-back-N restart, or with forwarding the window response alone."""
        if note.forwarding is None:
            self.restart(now)
        else:
            self.forwarded(note.forwarding, now)

    def on_ack(self, info: AckInfo) -> None:
        super().on_ack(info)
        if self._quiet_until is not None and info.now > self._quiet_until:
            self._resumed = True

    def restart(self, now: float) -> bool:
        """Force the RTO expiry; False if nothing was outstanding (then there is nothing to restart)."""
        return self.ctl.force_rto(now)

    def forwarded(self, fwd: "Forwarding", now: float) -> bool:
        """The timeout's window response without its go-back-N (none if the ACK clock already
        resumed: the window stands); False if nothing was outstanding."""
        ctl = self.ctl
        flight = ctl.flight_size
        if not ctl.hold_flight(now, now + fwd.flush_end_us / 1e6):
            return False
        if self._resumed:
            ctl.trace("window_kept", now, "ACK clock resumed before the HANDOFF")
            return True
        ctl.ssthresh = max(flight // 2, 2 * ctl.mss)
        ctl.cwnd = ctl.mss
        return True
