"""The daemon's side of the buffer service path: releases gathered per step and sent as one batch, arrivals checked.

With `buffer_service` in the description the switches divert into the
service (programmer.py's `Punt` becomes a tunnel to it) and the state machine
is fed the service's arrivals instead of packet-ins: the same
`Mobility.packet_in`, in the order the service read them from each switch,
so every ordering rule of the packet-in path holds unchanged (one FIFO per
MH, segments, gateway/path/drain markers). Releases the state machine
tunnels (`Release.tunnel`) go to the service, which writes them into the new
BS's buffer port; direct releases (the MH came back to a BS that still
diverts it) stay packet-outs on the access port, since a tunnel into that BS
would be diverted again.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from p4handoff.controller.bufsvc_link import ServiceArrivals, ServiceLink
from p4handoff.controller.intents import Release
from p4handoff.controller.network import Network
from p4handoff.controller.packets import PacketError, forged_marker, may_be_marker, parse_ipv4
from p4handoff.keyfile import Keys

PROBE = "bufsvc"       # the fence "switch" whose probes are the service's RELEASED answers


class ServicePath:
    def __init__(self, net: Network, keys: Keys | None, post: Callable[[object], None],
                 log: Callable[[str, dict[str, Any]], None]) -> None:
        svc = net.buffer_service
        assert svc is not None
        key = keys.get(svc.key_name) if keys is not None else None
        if key is None:
            raise ValueError(f"the key file has no key {svc.key_name!r} for the buffer service "
                             "(`p4handoff ctl keys` writes one for it)")
        self.log = log
        self.link = ServiceLink(svc.control, key.key, post, log)
        self.names = {s.address: s.name for s in net.switches}
        self.addrs = {s.name: s.address for s in net.switches}
        self.pending: list[tuple[str, bytes]] = []
        self.batches: list[int] = []
        self.counters = {"arrivals": 0, "released": 0, "batches": 0, "lost_releases": 0, "refused": 0}

    def status(self) -> dict[str, Any]:
        return {"up": self.link.up, **self.counters}

    def queue(self, r: Release) -> None:
        self.pending.append((self.addrs[r.target], r.packet))

    def send(self) -> None:
        """The releases queued since the last call, as one batch (a step's, in order)."""
        if not self.pending:
            return
        batch = self.link.release(self.pending)
        if batch is None:
            self.counters["lost_releases"] += len(self.pending)
            self.log("bufsvc_release_lost", {"packets": len(self.pending), "reason": "service not connected"})
        else:
            self.batches.append(batch)
            self.counters["batches"] += 1
            self.counters["released"] += len(self.pending)
        self.pending = []

    def take_batches(self) -> set[tuple[str, int]]:
        """Fence probes for the batches sent since the last call (answered by RELEASED)."""
        out, self.batches = {(PROBE, b) for b in self.batches}, []
        return out

    def accepted(self, ev: ServiceArrivals) -> Iterator[tuple[str, bytes]]:
        """(switch, packet) of each arrival from a known switch that is not a forged drain marker."""
        for addr, packet in ev.items:
            self.counters["arrivals"] += 1
            switch = self.names.get(addr)
            try:
                forged = may_be_marker(packet) and forged_marker(parse_ipv4(packet))
            except PacketError as exc:
                self.counters["refused"] += 1
                self.log("punt_malformed", {"switch": switch, "via": "bufsvc", "reason": str(exc)})
                continue
            if switch is None or forged:
                self.counters["refused"] += 1
                self.log("marker_forged" if forged else "punt_dropped",
                         {"switch": switch or addr, "via": "bufsvc",
                          "reason": "drain marker whose tag does not check" if forged else "not a switch"})
                continue
            yield switch, packet

    def ack(self, ev: ServiceArrivals) -> None:
        self.link.ack(ev.first + len(ev.items) - 1)
