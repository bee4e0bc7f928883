"""The notifications of a handoff (HANDOFF, DETACH, PROBE_UP, PROBE_DOWN): built, numbered and addressed here.

The one place a `Notify` effect is made, so what a notification carries (and one
sequence number space across all MHs) is decided once for every part of the handoff.
The numbers come from `sequence`: 1, 2, ... in memory by default; the daemon
gives it the journaled `NotificationSequence`, which a restart does not reset
(receivers drop a seq they have seen for an MH).
"""
from __future__ import annotations

import itertools
from typing import Callable

from p4handoff.controller.eventlog import LogFn
from p4handoff.controller.intents import Effect, Notify
from p4handoff.controller.mh_state import MhState
from p4handoff.controller.network import Network
from p4handoff.notify import Event, Forwarding, Notification


class Notifier:
    """Tells an MH's correspondents (and the MH itself, where it can be reached) what its path did."""

    def __init__(self, net: Network, log: LogFn) -> None:
        self.net = net
        self.log = log
        self.sequence: Callable[[], int] = itertools.count(1).__next__

    def notify(self, st: MhState, event: Event, path_addr: str, old_cell: int, new_cell: int,
               mh_at: tuple[str | None, int | None] | None, forwarding: Forwarding | None = None) -> list[Effect]:
        """One notification to each correspondent, and to the MH at `mh_at` (switch, port) if given; `forwarding`:
        the network forwarded the MH's in-flight packets (HANDOFF after an IPF flush, issue 20)."""
        note = Notification(event, self.sequence() & 0xFFFFFFFF, st.host.address, path_addr, old_cell, new_cell,
                            forwarding=forwarding)
        fx: list[Effect] = []
        for name in st.host.correspondents:
            h = self.net.fixed(name)
            assert h is not None
            fx.append(Notify(note, h.name, h.address, h.switch, h.port, h.mac))
        if mh_at is not None and mh_at[0] is not None and mh_at[1] is not None and st.mac:
            fx.append(Notify(note, st.host.name, st.host.address, mh_at[0], mh_at[1], st.mac))
        self.log("notified", {"mh": st.host.name, "notification": event.name, "seq": note.seq,
                              "to": [n.host for n in fx if isinstance(n, Notify)]})
        return fx
