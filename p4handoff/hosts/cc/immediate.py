"""Immediate Expiration of the retransmission timer on handoff (Tsukamoto et al., scheme 1).

Segments in flight during the switch are lost; instead of waiting for the
(possibly backed-off) RTO, the sender treats the handoff signal as the
timeout itself: retransmit the first unacknowledged segment, cwnd = 1,
ssthresh as on a timeout, backoff reset. Afterwards plain NewReno.
"""
from __future__ import annotations

from typing import ClassVar, TYPE_CHECKING

from p4handoff.hosts.cc.base import CongestionControl
from p4handoff.notify import Event

if TYPE_CHECKING:
    from p4handoff.notify import Notification


class ImmediateExpiration(CongestionControl):
    name: ClassVar[str] = "immediate"

    def on_notify(self, note: "Notification", now: float) -> None:
        if note.event is Event.HANDOFF:
            self.restart(now)

    def restart(self, now: float) -> bool:
        """Force the RTO expiry; False if nothing was outstanding (then there is nothing to restart)."""
        return self.ctl.force_rto(now)
