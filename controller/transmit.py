"""Packet effects as packet-outs, among them IPF's flush: which switch, which frame, which `packet_out` fields.

Every frame is complete (Ethernet included) and leaves the switch without
table lookups (`lookup` = 0): the controller already decided the path. Buffer
releases over a BS-to-BS hop are wrapped here in IPv4-in-IPv4 (old BS → new
BS) and sent with `mark_priority` = 1, so the old BS writes the codepoint in
force into the outer header and the new BS admits them as IPF priority
packets (docs/wire-contract.md, "Controller packet headers").
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from p4handoff.controller.intents import Notify, PacketEffect, Release, Reply, SendToward
from p4handoff.controller.network import PORT_ACCESS, Network
from p4handoff.controller.packets import encapsulate, ethernet, udp_packet
from p4handoff.keyfile import Keys
from p4handoff.notify_auth import Sealer
from p4handoff.wire import DSCP_BEST_EFFORT, UDP_PORT_HANDOFF_NOTIFY, UDP_PORT_MIP_REGISTRATION


@dataclass(frozen=True)
class PacketOut:
    switch: str
    egress_port: int
    frame: bytes
    mark_priority: bool

    def metadata(self) -> dict[str, int]:
        return {"egress_port": self.egress_port, "mark_priority": int(self.mark_priority), "lookup": 0,
                "telemetry": 0}


class Transmitter:
    """`keys`: notifications to a host with a key carry the authentication trailer (p4handoff.notify_auth)."""

    def __init__(self, net: Network, keys: Keys | None = None) -> None:
        self.net = net
        self.keys = keys
        self.sealer = Sealer()

    def packet_out(self, effect: PacketEffect,
                   up: Callable[[str], bool] = lambda _switch: True) -> PacketOut:
        """The packet-out for `effect`; `up(switch)`: is that switch connected and programmed now?

        A release to tunnel from an old BS that is down (killed, restarting) leaves the new BS straight
        onto the MH's port instead: the old BS would lose it, and the new BS is where it goes anyway.
        """
        if isinstance(effect, Release):
            if effect.tunnel and not up(effect.source) and up(effect.target):
                effect = replace(effect, tunnel=False)
            return self._release(effect)
        if isinstance(effect, SendToward):
            sw, peer = self._sw(effect.switch), self._sw(effect.peer)
            port = sw.peer_port(peer.name)
            if port is None:
                raise ValueError(f"{sw.name} has no peer port to {peer.name}")
            return PacketOut(sw.name, port.number, ethernet(peer.mac, sw.mac, effect.packet), False)
        if isinstance(effect, Notify):
            payload = effect.note.encode()
            host_key = self.keys.get(effect.host) if self.keys is not None else None
            if host_key is not None:
                payload = self.sealer.seal(payload, host_key.key)
            pkt = udp_packet(self.net.controller.address, effect.addr, UDP_PORT_HANDOFF_NOTIFY,
                             UDP_PORT_HANDOFF_NOTIFY, payload)
            return PacketOut(effect.switch, effect.port,
                             ethernet(effect.mac, self._src_mac(effect.switch, effect.port), pkt), False)
        if isinstance(effect, Reply):
            pkt = udp_packet(self.net.access_gateway.address, effect.dst_addr, UDP_PORT_MIP_REGISTRATION,
                             effect.dst_port, effect.payload)
            return PacketOut(effect.switch, effect.port, ethernet(effect.mac, self.net.access_gateway.mac, pkt), False)
        raise TypeError(f"not a packet effect: {effect!r}")

    def _release(self, r: Release) -> PacketOut:
        if not r.tunnel:
            return PacketOut(r.target, r.port, ethernet(r.mac, self._src_mac(r.target, r.port), r.packet), True)
        src, dst = self._sw(r.source), self._sw(r.target)
        port = src.peer_port(dst.name)
        if port is None:
            raise ValueError(f"{src.name} has no peer port to {dst.name}")
        # the outer DSCP is rewritten by the switch (mark_priority) to the codepoint in force
        outer = encapsulate(r.packet, src.address, dst.address, DSCP_BEST_EFFORT)
        return PacketOut(src.name, port.number, ethernet(dst.mac, src.mac, outer), True)

    def _sw(self, name: str):
        sw = self.net.switch(name)
        if sw is None:
            raise ValueError(f"unknown switch {name!r}")
        return sw

    def _src_mac(self, switch: str, port: int) -> str:
        sw = self._sw(switch)
        p = sw.port(port)
        return self.net.access_gateway.mac if p is not None and p.role == PORT_ACCESS else sw.mac
