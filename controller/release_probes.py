"""The telemetry probes behind buffer releases: fences before a release is journaled, credit before more.

Both rest on one fact (release_fence.py, release_credit.py): a probe sent to a
switch after its packet-outs comes back only once the switch has read them.
This part sends those probes to each switch's fence port, feeds their answers
to the fences and the credit, and journals the releases a settled fence
guarded. The daemon decides when; waiting for credit stays in its loop, which
holds the other events met meanwhile.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Mapping

from p4handoff.controller.buffer import BufferPool
from p4handoff.controller.network import PORT_ACCESS, Network
from p4handoff.controller.p4runtime import P4RuntimeError
from p4handoff.controller.release_credit import ReleaseCredit
from p4handoff.controller.release_fence import ReleaseFences
from p4handoff.controller.spool import Record
from p4handoff.controller.status_rounds import PROBE_FRAME


class ReleaseProbes:
    """Fences and credit of every switch, and the probes that answer both."""

    def __init__(self, net: Network, sessions: Mapping[str, Any], pool: BufferPool, window: int,
                 log: Callable[[str, dict[str, Any]], None]) -> None:
        self.net, self.sessions, self.pool, self.log = net, sessions, pool, log
        self.fences = ReleaseFences()           # buffer releases journaled once their switches read them
        self.credit = ReleaseCredit(window)     # packet-outs per switch not yet seen read

    def port(self, name: str) -> int | None:
        """Where fence and credit probes go: a port no status round probes (status probes access ports)."""
        sw = self.net.switch(name)
        return next((p.number for p in sw.ports if p.role != PORT_ACCESS), None) if sw else None

    def probe(self, name: str, fence: bool) -> int | None:
        """A probe to the switch's fence port, after everything sent to it; the port, None if not sent."""
        client, port = self.sessions[name].client, self.port(name)
        if client is None or port is None:
            return None
        try:
            client.packet_out(PROBE_FRAME, egress_port=port, mark_priority=0, lookup=0, telemetry=1)
        except P4RuntimeError:
            return None                 # gone: what went to it is lost with it, nothing waits for it
        self.credit.probe_sent(name, fence)
        return port

    def fence(self, records: list[Record], switches: set[str], probes: set[tuple[str, int]]) -> None:
        """Journal `records` once every switch they went to (and every probe in `probes`) has answered."""
        for name in switches:
            port = self.probe(name, fence=True)
            if port is not None:
                probes.add((name, port))
        self.fences.open(records, probes, time.monotonic())
        self.settle()

    def cover_credit(self) -> None:
        """After a flush: a probe to every switch whose packet-outs no probe follows yet, so its answer
        returns the credit before the next flush."""
        for name in self.sessions:
            if self.credit.uncovered(name):
                self.probe(name, fence=False)

    def answered(self, switch: str, port: int) -> bool:
        """A telemetry answer from `port`: True if it was one of these probes' (credit, and maybe a fence)."""
        if port != self.port(switch):
            return False
        fence = self.credit.answered(switch)
        if fence and self.fences.answer(switch, port):
            self.settle()
        return fence is not None

    def settle(self) -> None:
        """Journal what the answered (or expired) fences at the head guarded, in order."""
        records, expired = self.fences.settle(time.monotonic())
        for f in expired:
            self.log("release_fence_expired", {"switches": sorted(s for s, _ in f.waiting),
                                               "releases": len(f.records)})
        if records:
            self.pool.journal_releases(records, settled=not self.fences)
