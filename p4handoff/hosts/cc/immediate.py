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
"""
from __future__ import annotations

from typing import ClassVar, TYPE_CHECKING

from p4handoff.hosts.cc.base import CongestionControl
from p4handoff.notify import Event

if TYPE_CHECKING:
    from p4handoff.notify import Forwarding, Notification


class ImmediateExpiration(CongestionControl):
    name: ClassVar[str] = "immediate"

    def on_notify(self, note: "Notification", now: float) -> None:
        if note.event is Event.HANDOFF:
            if note.forwarding is None:
                self.restart(now)
            else:
                self.forwarded(note.forwarding, now)

    def restart(self, now: float) -> bool:
        """Force the RTO expiry; False if nothing was outstanding (then there is nothing to restart)."""
        return self.ctl.force_rto(now)

    def forwarded(self, fwd: "Forwarding", now: float) -> bool:
        """The timeout's window response without its go-back-N; False if nothing was outstanding."""
        ctl = self.ctl
        flight = ctl.flight_size
        if not ctl.hold_flight(now, now + fwd.flush_end_us / 1e6):
            return False
        ctl.ssthresh = max(flight // 2, 2 * ctl.mss)
        ctl.cwnd = ctl.mss
        return True
