"""TCP Reno (RFC 5681 section 3.2): fast recovery without NewReno's partial-ACK rule.

The IPF paper's TCP (ns-2 `Agent/TCP/Reno`). Fast retransmit on the third
duplicate ACK and window inflation per further duplicate ACK are the
core's, as for NewReno; the difference is the first ACK of new data: it
ends recovery (cwnd = ssthresh) even if it acknowledges only part of the
window. Further losses of that window then need three new duplicate ACKs,
which `recover` (RFC 6582's guard, also in ns-2's Reno with `bug_fix_`)
refuses until the window is acknowledged, so they are repaired by the
retransmission timer. That timeout on a multi-loss window is what makes a
burst of RED drops synchronise Reno flows (docs/papers.md#ipf-mred).
"""
from __future__ import annotations

from typing import ClassVar

from p4handoff.hosts.cc.base import CongestionControl


class Reno(CongestionControl):
    name: ClassVar[str] = "reno"
    partial_acks: ClassVar[bool] = False

    def on_recovery_exit(self, now: float) -> None:
        """RFC 5681 step 6: cwnd = ssthresh (deflate the window)."""
        self.ctl.cwnd = self.ctl.ssthresh
