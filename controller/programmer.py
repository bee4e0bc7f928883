"""The network model and mobility routes as P4Runtime table entries of p4src/v1model/bs.p4, by P4Info name.

This is the one place that knows the pipeline's table, action and field
names (docs/pipeline.md); everything above it speaks in `p4handoff.controller.intents`.
Entries come out already in the form a switch reads back (ints, lpm as
(value, prefix_len), a /0 prefix as an omitted field) so the reconciliation
in `p4handoff.controller.switch_state` compares them with read-back entries directly.
`decode_route` is the inverse for the mobile hosts' /32 routes: a restarted
controller rebuilds where every MH is from what the switches hold.
"""
from __future__ import annotations

import functools
import ipaddress
from collections import Counter
from dataclasses import replace

from p4handoff.controller.aqm_tables import RedParams
from p4handoff.controller.intents import Deliver, Forward, Punt, RouteAction, Tunnel
from p4handoff.controller.network import PORT_ACCESS, PORT_PEER, Network, Switch
from p4handoff.controller.network_bufsvc import PORT_BUFFER
from p4handoff.controller.p4runtime import TableEntry
from p4handoff.controller.targets import aqm_builder
from p4handoff.controller.tofino import TnaQueues
from p4handoff.wire import TABLE_SIZES, load_constants

_C = load_constants()
ROUTE_MEMO = 65_536      # route entries and keys remembered (then it starts over): a few per MH and switch
# a buffer port is a peer port to the pipeline: marks are trusted only from the address `ipf_peer` names on it
PORT_ROLE = {"core": _C["PORT_ROLE_CORE"], PORT_ACCESS: _C["PORT_ROLE_ACCESS"], PORT_PEER: _C["PORT_ROLE_PEER"],
             PORT_BUFFER: _C["PORT_ROLE_PEER"]}
PUNT_REASON_BUFFER: int = _C["PUNT_REASON_BUFFER"]

T_PORT_ROLE, T_IPF_PEER, T_TUNNEL_TERM, T_ARP, T_FWD, T_IPF_CONFIG = (
    "port_role", "ipf_peer", "tunnel_term", "arp_gateway", "ipv4_fwd", "ipf_config")


@functools.lru_cache(maxsize=65_536)
def ip(addr: str) -> int:
    """An IPv4 address as an int, parsed strictly once per address (each route entry's match names one)."""
    return int(ipaddress.IPv4Address(addr))


def mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


def ip_str(value: int) -> str:
    return str(ipaddress.IPv4Address(value))


def mac_str(value: int) -> str:
    return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))


class Programmer:
    """Entries for one network description (the switch names index everything).

    `target` is the program the switches run: "v1model" (p4src/v1model/bs.p4) or "tna"
    (p4src/tna/bs_tna.p4); only the AQM entries differ: its builder is chosen here, once
    (controller/targets.py).
    """

    def __init__(self, net: Network, target: str = "v1model", queues: TnaQueues = TnaQueues()) -> None:
        self.aqm_entries = aqm_builder(target, queues)
        self.net = net
        self.target = target
        self._routes: dict[tuple[str, str, RouteAction], TableEntry] = {}     # route_entry's memo
        self._keys: dict[str, TableEntry] = {}

    # ---------------------------------------------------------------- static state

    def capacity_problems(self) -> list[tuple[str, str]]:
        """(switch, problem) for every table whose entries would not fit its size in the target's program
        (size.p4: red_pa on v1model, red_pa_gap on TNA).

        `ipv4_fwd` counts one /32 per mobile host on top of the static entries.
        """
        sizes = TABLE_SIZES[self.target]
        problems = []
        for sw in self.net.switches:
            need = Counter(e.table for e in self.static_entries(sw.name))
            need[T_FWD] += len(self.net.mobile_hosts)
            problems += [(sw.name, f"{n} entries for table {t} exceed its size {sizes[t].entries} "
                                   f"({sizes[t].constant}, p4src/include/size.p4)")
                         for t, n in sorted(need.items()) if t in sizes and n > sizes[t].entries]
        return problems

    def static_entries(self, name: str) -> list[TableEntry]:
        """Everything a switch holds whatever the MHs do: roles, trust, termination, ARP, fixed routes, AQM."""
        sw = self._sw(name)
        out: list[TableEntry] = []
        for p in sw.ports:
            if p.role != "core":
                out.append(TableEntry(T_PORT_ROLE, {"port": p.number}, "set_port_role", {"role": PORT_ROLE[p.role]}))
            if p.role == PORT_PEER:
                peer = self._sw(p.peer)
                out.append(TableEntry(T_IPF_PEER, {"ingress_port": p.number, "src_addr": ip(peer.address)},
                                      "trusted_peer"))
            svc = self.net.buffer_service
            if p.role == PORT_BUFFER and svc is not None:
                # the service's releases keep their mark; its echoes come back to it
                out.append(TableEntry(T_IPF_PEER, {"ingress_port": p.number, "src_addr": ip(svc.address)},
                                      "trusted_peer"))
                out.append(self._host_route(svc.address, "deliver", {
                    "port": p.number, "src_mac": mac(sw.mac), "dst_mac": mac(svc.mac)}))
        out.append(TableEntry(T_TUNNEL_TERM, {"dst_addr": ip(sw.address)}, "decap"))
        arp: dict[str, str] = {}
        if sw.is_bs:
            arp[self.net.access_gateway.address] = self.net.access_gateway.mac
        for h in self.net.fixed_hosts:
            if h.switch == name and h.gateway:
                arp[h.gateway] = self._src_mac(sw, h.port)
        out += [TableEntry(T_ARP, {"target_addr": ip(a)}, "arp_reply", {"mac": mac(m)}) for a, m in sorted(arp.items())]
        # drain markers come back to the controller from whichever switch they reach
        out.append(self._host_route(self.net.controller.address, "fwd_punt", {"reason": PUNT_REASON_BUFFER}))
        out += self._fixed_routes(sw)
        out += self._aqm_entries(sw)
        return out

    def ipf_config(self) -> TableEntry:
        """The codepoint in force: the default action of the keyless `ipf_config` table."""
        return TableEntry(T_IPF_CONFIG, {}, "set_ipf_dscp", {"dscp": self.net.priority_dscp}, is_default=True)

    def _fixed_routes(self, sw: Switch) -> list[TableEntry]:
        out = []
        gw = self.net.gateway
        for h in self.net.fixed_hosts:
            if h.switch == sw.name:
                out.append(self._host_route(h.address, "deliver", {
                    "port": h.port, "src_mac": mac(self._src_mac(sw, h.port)), "dst_mac": mac(h.mac)}))
            elif sw.name == gw.name:
                out.append(self._host_route(h.address, *self._forward(sw, h.switch)))
        if sw.is_bs:
            # everything the BS does not know goes up to the gateway (a /0: the lpm field is omitted)
            action, params = self._forward(sw, gw.name)
            out.append(TableEntry(T_FWD, {}, action, params))
        return out

    def _aqm_entries(self, sw: Switch) -> list[TableEntry]:
        """aqm_port per access port plus one RED profile per distinct parameter set of this switch."""
        out: list[TableEntry] = []
        profiles: dict[RedParams | None, int] = {}
        for p in sw.ports:
            if p.role != PORT_ACCESS or p.aqm is None:
                continue
            cfg = p.aqm.port_aqm(p.number)
            shared = cfg.red in profiles
            entries = self.aqm_entries(replace(cfg, profile=profiles.setdefault(cfg.red, len(profiles))))
            out += entries[:1] if shared else entries       # a shared profile's tables are already in
        return out

    # ---------------------------------------------------------------- mobility routes

    def route_entry(self, name: str, addr: str, action: RouteAction) -> TableEntry:
        """The /32 `ipv4_fwd` entry that makes switch `name` do `action` for `addr`: one object per
        (switch, address, action), so a client encodes it once (p4runtime.client.EncodedEntries)."""
        memo = (name, addr, action)
        entry = self._routes.get(memo)
        if entry is None:
            if len(self._routes) >= ROUTE_MEMO:
                self._routes = {}
            entry = self._routes[memo] = self._route_entry(name, addr, action)
        return entry

    def _route_entry(self, name: str, addr: str, action: RouteAction) -> TableEntry:
        sw = self._sw(name)
        if isinstance(action, Deliver):
            return self._host_route(addr, "deliver", {"port": action.port, "src_mac": mac(self._src_mac(sw, action.port)),
                                                      "dst_mac": mac(action.mac)})
        if isinstance(action, Forward):
            return self._host_route(addr, *self._forward(sw, action.peer))
        if isinstance(action, Tunnel):
            peer = self._sw(action.peer)
            port = sw.peer_port(action.peer)
            if port is None:
                raise ValueError(f"{name} has no peer port to {action.peer}: cannot tunnel there")
            return self._host_route(addr, "tunnel", {
                "port": port.number, "src_mac": mac(sw.mac), "dst_mac": mac(peer.mac),
                "src_addr": ip(sw.address), "dst_addr": ip(peer.address), "mark": int(action.priority)})
        if isinstance(action, Punt):
            svc, port = self.net.buffer_service, sw.buffer_port
            if svc is not None and port is not None:
                # the buffer service's path: tunnelled to it out of this switch's buffer port (outer source:
                # which switch diverted it)
                return self._host_route(addr, "tunnel", {
                    "port": port.number, "src_mac": mac(sw.mac), "dst_mac": mac(svc.mac),
                    "src_addr": ip(sw.address), "dst_addr": ip(svc.address), "mark": 0})
            return self._host_route(addr, "fwd_punt", {"reason": PUNT_REASON_BUFFER})
        raise TypeError(f"not a route action: {action!r}")

    def route_key(self, addr: str) -> TableEntry:
        """A match-only entry addressing the /32 of `addr` (for deletes)."""
        key = self._keys.get(addr)
        if key is None:
            if len(self._keys) >= ROUTE_MEMO:
                self._keys = {}
            key = self._keys[addr] = TableEntry(T_FWD, {"dst_addr": (ip(addr), 32)})
        return key

    def decode_route(self, name: str, entry: TableEntry) -> tuple[str, RouteAction] | None:
        """(address, action) of a /32 `ipv4_fwd` entry this programmer could have written, else None."""
        if entry.table != T_FWD or entry.is_default:
            return None
        value = entry.match.get("dst_addr")
        if not isinstance(value, tuple) or value[1] != 32:
            return None
        addr = ip_str(value[0])
        sw = self._sw(name)
        p = entry.params
        if entry.action == "fwd_punt" and p.get("reason") == PUNT_REASON_BUFFER:
            return addr, Punt()
        if entry.action == "deliver":
            peer = self._peer_at(sw, p["port"])
            if peer is not None and mac(self._sw(peer).mac) == p["dst_mac"]:
                return addr, Forward(peer)
            return addr, Deliver(p["port"], mac_str(p["dst_mac"]))
        if entry.action == "tunnel":
            svc = self.net.buffer_service
            if svc is not None and p["dst_addr"] == ip(svc.address):
                return addr, Punt()
            peer = self._peer_at(sw, p["port"])
            if peer is not None:
                return addr, Tunnel(peer, bool(p["mark"]))
        return None

    # ---------------------------------------------------------------- helpers

    @staticmethod
    def _peer_at(sw: Switch, number: int) -> str | None:
        """The neighbour switch behind port `number` of `sw` if it is a peer port (the network names one), else None."""
        port = sw.port(number)
        return port.peer if port is not None and port.role == PORT_PEER else None

    def _sw(self, name: str | None) -> Switch:
        sw = self.net.switch(name) if name else None
        if sw is None:
            raise ValueError(f"unknown switch {name!r}")
        return sw

    def _src_mac(self, sw: Switch, port: int) -> str:
        """Access ports speak as the anycast gateway; every other port as the switch."""
        p = sw.port(port)
        return self.net.access_gateway.mac if p is not None and p.role == PORT_ACCESS else sw.mac

    def _forward(self, sw: Switch, peer_name: str) -> tuple[str, dict[str, int]]:
        port = sw.peer_port(peer_name)
        if port is None:
            raise ValueError(f"{sw.name} has no peer port to {peer_name}")
        return "deliver", {"port": port.number, "src_mac": mac(sw.mac), "dst_mac": mac(self._sw(peer_name).mac)}

    @staticmethod
    def _host_route(addr: str, action: str, params: dict[str, int]) -> TableEntry:
        return TableEntry(T_FWD, {"dst_addr": (ip(addr), 32)}, action, params)

