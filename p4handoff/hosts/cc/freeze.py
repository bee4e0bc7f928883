"""Freeze-TCP (Goff et al., INFOCOM 2000): the mobile host's receiver freezes its sender.

On the mobile host (the notification's mh_addr is our own address):
DETACH -> advertise a zero window at once (the Zero Window Advertisement),
and freeze our own sending if we send too; HANDOFF -> reopen the window
with three identical window-update ACKs (Freeze-TCP's TR-ACKs) and unfreeze.

On the sender (either end): a zero advertised window freezes the sender -
retransmission timer stopped, cwnd/ssthresh kept, zero-window probes
(RFC 9293 persist, exponential backoff, never giving up); a window that
reopens unfreezes it: the backoff is reset, what was in flight is sent
again from SND.UNA (the receiver dropped it) with the cwnd held before.
The TR-ACKs change the window, so only the 2nd and 3rd count as duplicate
ACKs: they cannot trigger a fast retransmit.
"""
from __future__ import annotations

from typing import ClassVar, TYPE_CHECKING

from p4handoff.hosts.cc.base import CongestionControl
from p4handoff.notify import Event

if TYPE_CHECKING:
    from p4handoff.notify import Notification

TR_ACKS = 3


class FreezeTcp(CongestionControl):
    name: ClassVar[str] = "freeze"

    def on_notify(self, note: "Notification", now: float) -> None:
        ctl = self.ctl
        if note.mh_addr != ctl.local_addr:
            return  # the correspondent waits for the mobile host's zero window
        if note.event is Event.DETACH:
            ctl.close_receive_window(now)
            ctl.freeze(now)
        elif note.event is Event.HANDOFF:
            ctl.open_receive_window(now, copies=TR_ACKS)
            ctl.unfreeze(now)

    def on_window_change(self, window: int, now: float) -> None:
        if window == 0:
            self.ctl.freeze(now)
        elif self.ctl.frozen:
            self.ctl.unfreeze(now)
