"""The scenario-facing API: build a topology, schedule mobility, run flows.

    net = Network(seed=1)
    ch = net.host("ch", "10.0.0.1")
    gw = net.router("gw")
    net.link(ch, gw, 100e6, 0.001)
    wlan_bs, g3_bs = net.base_station("bs1"), net.base_station("bs2")
    net.link(gw, wlan_bs, 10e6, 0.004, queue=Queue(50)) ...
    wlan = net.cell("wlan", wlan_bs, 20e6, 0.001, queue=Queue(50))
    mh = net.mobile_host("mh", "10.0.9.1", {"wlan": "10.0.1.9", "g3": "10.0.2.9"})
    net.start_in(mh, "wlan", wlan)
    net.vertical_handoff(mh, "wlan", "g3", g3, at=10.0, outage=0.5)
    flow = net.flow("f1", ch, sender, mh, receiver, sport=40000, dport=5001)
    net.run(60.0)
    flow.stats.throughput_bps(10, 15)

Routes are shortest-hop paths (ties: the link added first), computed when
the run starts; a handoff re-points the MH's home address at every router
and base station to the new cell. Notifications (p4handoff.notify) reach
both endpoints of every flow of the MH `notify_delay` after the event
(each scheme acts on the side it runs on: Freeze-TCP on the MH, the others
on the correspondent).
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from p4handoff.hosts.sim.engine import Simulator
from p4handoff.hosts.sim.link import Link
from p4handoff.hosts.sim.measure import FlowStats
from p4handoff.hosts.sim.nodes import BaseStation, Cell, Host, Interface, MobileHost, Node, Router, Slot
from p4handoff.hosts.sim.queues import Queue
from p4handoff.notify import Event, Forwarding, Notification

if TYPE_CHECKING:
    from p4handoff.hosts.endpoint import Endpoint
    from p4handoff.hosts.sim.packet import Packet

DEFAULT_QUEUE_LIMIT = 1000  # packets, for links given no queue (hosts' NICs, fast wires)
N = TypeVar("N", bound=Node)


@dataclass
class Flow:
    """One connection: its two endpoints where they are bound, and what it achieved."""

    name: str
    sender: Host
    sender_slot: Slot
    receiver: Host
    receiver_slot: Slot
    sport: int
    dport: int
    stats: FlowStats = field(init=False)

    def __post_init__(self) -> None:
        self.stats = FlowStats(self.name)

    @property
    def mobile(self) -> MobileHost | None:
        for host in (self.receiver, self.sender):
            if isinstance(host, MobileHost):
                return host
        return None


class Network:
    """Nodes, links, cells, mobile hosts, flows and the timeline that moves them."""

    def __init__(self, seed: int = 0, notify_delay: float = 0.0) -> None:
        if notify_delay < 0:
            raise ValueError(f"notify_delay must not be negative, got {notify_delay}")
        self.sim = Simulator(seed)
        self.notify_delay = notify_delay
        self.nodes: dict[str, Node] = {}
        self.cells: dict[str, Cell] = {}
        self.links: list[Link] = []
        self.flows: list[Flow] = []
        self.notifications: list[tuple[float, Notification]] = []
        self.timeline: list[tuple[float, str]] = []
        self._into: dict[Node, list[Link]] = {}
        self._src: dict[Link, Node] = {}
        self._next_cache: dict[Node, dict[Node, Link]] = {}
        self._flows_by_ports: dict[tuple[int, int], Flow] = {}
        self._path_log: dict[str, list[tuple[float, Cell | None]]] = {}
        self._note_seq = 0
        self._routed = False

    @property
    def now(self) -> float:
        return self.sim.now

    # -- building -----------------------------------------------------------
    def _add(self, node: N) -> N:
        if node.name in self.nodes or node.name in self.cells:
            raise ValueError(f"name {node.name!r} is already used")
        node.on_drop = self._account_drop
        self.nodes[node.name] = node
        self._into[node] = []
        return node

    def router(self, name: str) -> Router:
        return self._add(Router(self.sim, name))

    def base_station(self, name: str, ipf: bool = False, ipf_limit: int = 64,
                     forward_delay: float = 0.0, signal: bool = True, route_delay: float = 0.0) -> BaseStation:
        """`route_delay`: when an MH leaves this BS for another one, this BS routes the MH's home address to
        the new BS at once, and every other node keeps its route here for `route_delay` s, then follows
        (IPF: what reaches this BS meanwhile is forwarded priority-marked); the HANDOFF leaves with them. The
        lab's controller completes a handoff this way, its gateway waiting for its markers (docs/lab.md,
        "A route delay")."""
        bs = self._add(BaseStation(self.sim, name, ipf, ipf_limit, forward_delay, signal, route_delay))
        bs.on_forward = self._account_forward
        return bs

    def host(self, name: str, addr: str) -> Host:
        self._check_addr(addr)
        return self._add(Host(self.sim, name, addr))

    def mobile_host(self, name: str, home: str, interfaces: dict[str, str]) -> MobileHost:
        for addr in (home, *interfaces.values()):
            self._check_addr(addr)
        mh = MobileHost(self.sim, name, home, interfaces)
        self._path_log[name] = []
        return self._add(mh)

    def _check_addr(self, addr: str) -> None:
        for node in self.nodes.values():
            if isinstance(node, Host) and addr in node.addresses():
                raise ValueError(f"address {addr} is already used by {node.name}")

    def link(self, a: Node, b: Node, rate_bps: float | None, delay: float, loss: float = 0.0,
             queue: Queue | None = None, reverse_queue: Queue | None = None,
             reverse_loss: float | None = None) -> tuple[Link, Link]:
        """A full-duplex link a↔b: the same rate and delay each way, a queue each way."""
        ab = self._one_way(a, b, rate_bps, delay, loss, queue)
        ba = self._one_way(b, a, rate_bps, delay, loss if reverse_loss is None else reverse_loss, reverse_queue)
        return ab, ba

    def _one_way(self, a: Node, b: Node, rate_bps: float | None, delay: float, loss: float,
                 queue: Queue | None) -> Link:
        for node in (a, b):
            if self.nodes.get(node.name) is not node:
                raise ValueError(f"{node!r} is not part of this network")
        if isinstance(a, Host) and isinstance(b, Host):
            raise ValueError(f"hosts do not forward: connect {a.name} and {b.name} through a router")
        if isinstance(a, MobileHost):
            raise ValueError(f"mobile host {a.name} reaches the network through cells, not links")
        if isinstance(a, Host) and a.link is not None:
            raise ValueError(f"host {a.name} already has a link ({a.link.name})")
        link = Link(self.sim, f"{a.name}->{b.name}", rate_bps, delay, b, loss,
                    queue if queue is not None else Queue(DEFAULT_QUEUE_LIMIT))
        self._watch(link)
        if isinstance(a, Host):
            a.link = link
        self.links.append(link)
        self._into[b].append(link)
        self._src[link] = a
        self._routed = False
        self._next_cache.clear()
        return link

    def _watch(self, link: Link) -> None:
        link.on_drop = self._account_drop
        link.queue.on_drop = self._account_drop

    def cell(self, name: str, bs: BaseStation, rate_bps: float, delay: float, loss: float = 0.0,
             queue: Queue | None = None, up_rate_bps: float | None = None, up_loss: float | None = None,
             up_queue_limit: int = 100) -> Cell:
        """A radio cell of `bs`: downlink rate/delay/loss/queue, uplink rate (default: same)."""
        if name in self.cells or name in self.nodes:
            raise ValueError(f"name {name!r} is already used")
        if not isinstance(bs, BaseStation):
            raise ValueError(f"cell {name}: {bs!r} is not a base station")
        cell = Cell(self.sim, name, len(self.cells) + 1, bs, rate_bps, delay, loss,
                    queue if queue is not None else Queue(DEFAULT_QUEUE_LIMIT),
                    up_rate_bps if up_rate_bps is not None else rate_bps,
                    loss if up_loss is None else up_loss, up_queue_limit)
        self._watch(cell.downlink)
        self.cells[name] = cell
        self.links.append(cell.downlink)
        return cell

    # -- routing ------------------------------------------------------------
    def _next_hops(self, target: Node) -> dict[Node, Link]:
        """For every forwarding node that can reach `target`: its first link there."""
        table = self._next_cache.get(target)
        if table is not None:
            return table
        table = {}
        seen = {target}
        todo = deque([target])
        while todo:
            node = todo.popleft()
            for link in self._into[node]:
                prev = self._src[link]
                if prev in seen or isinstance(prev, Host):
                    continue
                seen.add(prev)
                table[prev] = link
                todo.append(prev)
        self._next_cache[target] = table
        return table

    def _reroute(self, mh: MobileHost, prev: Cell | None, cell: Cell) -> float:
        """Every node's route to the MH's new cell at once; or, if the BS it left has a `route_delay`, that BS's
        now (onward to the new BS) and everyone else's after the delay. Returns the delay applied."""
        delay = prev.bs.route_delay if prev is not None and prev.bs is not cell.bs else 0.0
        onward = self._next_hops(cell.bs).get(prev.bs) if prev is not None and delay > 0 else None
        if prev is None or onward is None:          # no delay, or no way from that BS to the new one
            self._route_to_cell(mh.addr, cell)
            return 0.0
        prev.bs.routes[mh.addr] = onward
        cell.bs.routes[mh.addr] = cell.downlink
        self.sim.after(delay, self._if_still_there, mh, cell, self._route_to_cell, mh.addr, cell)
        return delay

    @staticmethod
    def _if_still_there(mh: MobileHost, cell: Cell, fn: Callable[..., None], *args: Any) -> None:
        """A delayed step of a handoff (`route_delay`), unless the MH has moved on meanwhile."""
        if mh.active is not None and mh.active.cell is cell:
            fn(*args)

    def _route_to_cell(self, addr: str, cell: Cell) -> None:
        for node, link in self._next_hops(cell.bs).items():
            node.routes[addr] = link
        cell.bs.routes[addr] = cell.downlink

    def _build_routes(self) -> None:
        for node in self.nodes.values():
            if isinstance(node, MobileHost):
                for iface in node.ifaces.values():
                    if iface.cell is not None:
                        self._route_to_cell(iface.coa, iface.cell)
                if node.active is not None and node.active.cell is not None:
                    self._route_to_cell(node.addr, node.active.cell)
            elif isinstance(node, Host):
                for prev, link in self._next_hops(node).items():
                    prev.routes[node.addr] = link
        self._routed = True

    # -- mobility -----------------------------------------------------------
    def _when(self, at: float | None, fn: Callable[..., None], *args: object) -> None:
        if at is None:
            fn(*args)
        else:
            self.sim.at(at, fn, *args)

    def start_in(self, mh: MobileHost, iface: str, cell: Cell) -> None:
        """Place the MH in `cell` on `iface`, active, from time 0 (no notification)."""
        self.attach(mh, iface, cell)
        self.handoff(mh, iface, notify=False)

    def attach(self, mh: MobileHost, iface: str, cell: Cell, at: float | None = None,
               probe: bool = False) -> None:
        """`iface` joins `cell` (its care-of address becomes reachable there).

        With `probe`, the senders get PROBE_UP for that address (DSBP's
        overlap entry)."""
        i = mh.iface(iface)
        self._when(at, self._attach, mh, i, cell, probe)

    def _attach(self, mh: MobileHost, iface: Interface, cell: Cell, probe: bool) -> None:
        uplink = iface.attach(cell)
        if uplink not in self.links:
            self._watch(uplink)
            self.links.append(uplink)
        if self._routed:
            self._route_to_cell(iface.coa, cell)
        self._log(f"attach {mh.name}.{iface.name} {cell.name}")
        if probe:
            self._notify(mh, Event.PROBE_UP, iface.coa, self._active_cell_id(mh), cell)

    def detach(self, mh: MobileHost, iface: str, at: float | None = None, notify: bool = True,
               warn: float = 0.0) -> None:
        """`iface` leaves its cell: DETACH if it carried the home address, else PROBE_DOWN.

        With `warn` > 0 the notification goes out that long before the detach
        (Freeze-TCP's receiver needs its zero window to reach the sender
        while the MH is still connected)."""
        i = mh.iface(iface)
        if warn < 0:
            raise ValueError(f"warn must not be negative, got {warn}")
        if warn:
            if at is None:
                raise ValueError("a detach with warning needs its time (at)")
            if notify:
                if at - warn < self.sim.now:
                    raise ValueError(f"warning at {at - warn} s lies in the past")
                self.sim.at(at - warn, self._warn_detach, mh, i)
                notify = False
        self._when(at, self._detach, mh, i, notify)

    def _warn_detach(self, mh: MobileHost, iface: Interface) -> None:
        if iface.cell is None:
            return
        if mh.active is iface:
            self._notify(mh, Event.DETACH, mh.addr, iface.cell.id, None)
        else:
            self._notify(mh, Event.PROBE_DOWN, iface.coa, self._active_cell_id(mh), iface.cell)

    def _detach(self, mh: MobileHost, iface: Interface, notify: bool) -> None:
        was_active = mh.active is iface
        cell = iface.detach()
        self._log(f"detach {mh.name}.{iface.name} {cell.name}")
        if was_active:
            self._path_log[mh.name].append((self.sim.now, None))
            cell.bs.mh_left(mh.addr, cell)
            if notify:
                self._notify(mh, Event.DETACH, mh.addr, cell.id, None)
        elif notify:
            self._notify(mh, Event.PROBE_DOWN, iface.coa, self._active_cell_id(mh), cell)

    def handoff(self, mh: MobileHost, iface: str, at: float | None = None, notify: bool = True) -> None:
        """Make `iface` (attached by then) carry the MH's home address: routes switch, HANDOFF."""
        i = mh.iface(iface)
        self._when(at, self._handoff, mh, i, notify)

    def _handoff(self, mh: MobileHost, iface: Interface, notify: bool) -> None:
        cell = iface.cell
        if cell is None:
            raise ValueError(f"t={self.sim.now}: handoff of {mh.name} to {iface.name}, which is not attached")
        prev = self._last_cell(mh)
        mh.active = iface
        cell.members[mh.addr] = iface
        delay = self._reroute(mh, prev, cell) if self._routed else 0.0
        self._path_log[mh.name].append((self.sim.now, cell))
        self._log(f"handoff {mh.name}.{iface.name} {cell.name}")
        fwd = None
        if prev is not None:
            prev.bs.mh_arrived(mh.addr, prev.bs is cell.bs)
            held = prev.bs.forwarding(mh.addr)
            if held is not None:
                sent = self.sim.now + delay
                fwd = Forwarding(min(held[0], 0xFFFF), int(round(max(0.0, held[1] - sent) * 1e6)))
        if not notify:
            return
        args = (mh, Event.HANDOFF, mh.addr, prev.id if prev else 0, cell, fwd)
        if delay > 0:       # the path is active once every route has followed: the lab's controller notifies then
            self.sim.after(delay, self._if_still_there, mh, cell, self._notify, *args)
        else:
            self._notify(*args)

    def vertical_handoff(self, mh: MobileHost, from_iface: str, to_iface: str, to_cell: Cell,
                         at: float, outage: float, warn: float = 0.0) -> None:
        """Leave on `from_iface` at `at` (DETACH `warn` s earlier); `outage` s later be on
        `to_iface` in `to_cell` (HANDOFF)."""
        if outage < 0:
            raise ValueError(f"outage must not be negative, got {outage}")
        self.detach(mh, from_iface, at=at, warn=warn)
        self.attach(mh, to_iface, to_cell, at=at + outage)
        self.handoff(mh, to_iface, at=at + outage)

    def overlap(self, mh: MobileHost, old_iface: str, new_iface: str, new_cell: Cell,
                enter: float, handoff: float, leave: float) -> None:
        """DSBP's overlap area: probe from `enter`, hand off at `handoff`, leave the old cell at `leave`."""
        if not enter <= handoff <= leave:
            raise ValueError(f"overlap needs enter <= handoff <= leave, got {enter}, {handoff}, {leave}")
        self.attach(mh, new_iface, new_cell, at=enter, probe=True)
        self.handoff(mh, new_iface, at=handoff)
        self.detach(mh, old_iface, at=leave, notify=False)

    def _last_cell(self, mh: MobileHost) -> Cell | None:
        """The cell that last carried the MH's home address (even if it has left it)."""
        return next((c for _, c in reversed(self._path_log[mh.name]) if c is not None), None)

    def _active_cell_id(self, mh: MobileHost) -> int:
        return mh.active.cell.id if mh.active is not None and mh.active.cell is not None else 0

    def _log(self, what: str) -> None:
        self.timeline.append((self.sim.now, what))

    def _notify(self, mh: MobileHost, event: Event, path_addr: str, old_cell: int,
                new_cell: Cell | None, forwarding: Forwarding | None = None) -> None:
        self._note_seq += 1
        note = Notification(event, self._note_seq, mh.addr, path_addr, old_cell,
                            new_cell.id if new_cell else 0,
                            int(new_cell.rate_bps // 1000) if new_cell else 0,
                            int(round(new_cell.delay * 1e6)) if new_cell else 0, forwarding)
        self.notifications.append((self.sim.now, note))
        when = self.sim.now + self.notify_delay
        for flow in self.flows:
            if flow.mobile is mh:
                self.sim.at(when, flow.sender.notify, flow.sender_slot, note)
                self.sim.at(when, flow.receiver.notify, flow.receiver_slot, note)

    # -- flows --------------------------------------------------------------
    def flow(self, name: str, sender: Host, sender_ep: "Endpoint", receiver: Host, receiver_ep: "Endpoint",
             sport: int, dport: int, start: float = 0.0) -> Flow:
        """Bind a sender and a receiver endpoint; the sender is first polled at `start`."""
        for port in (sport, dport):
            if not 0 < port < 65536:
                raise ValueError(f"flow {name}: port {port} out of range 1..65535")
        if (sport, dport) in self._flows_by_ports or (dport, sport) in self._flows_by_ports:
            raise ValueError(f"flow {name}: port pair {sport}/{dport} is already used by another flow")
        if start < 0:
            raise ValueError(f"flow {name}: start must not be negative, got {start}")
        rslot = receiver.bind(receiver_ep, dport, sport)
        sslot = sender.bind(sender_ep, sport, dport)
        f = Flow(name, sender, sslot, receiver, rslot, sport, dport)
        sslot.on_send.append(f.stats.on_sender_send)
        sslot.on_receive.append(f.stats.on_sender_receive)
        rslot.on_send.append(f.stats.on_receiver_send)
        self.flows.append(f)
        self._flows_by_ports[(sport, dport)] = f
        self.sim.at(0.0, receiver.service, rslot)
        self.sim.at(start, sender.service, sslot)
        return f

    def _account_forward(self, pkt: "Packet") -> None:
        seg = pkt.seg
        f = self._flows_by_ports.get((seg.sport, seg.dport))
        if f is not None:
            f.stats.on_forwarded(seg)

    def _account_drop(self, pkt: "Packet", cause: str) -> None:
        seg = pkt.seg
        f = self._flows_by_ports.get((seg.sport, seg.dport)) or self._flows_by_ports.get((seg.dport, seg.sport))
        if f is not None:
            f.stats.on_drop(pkt, cause, self.sim.now)

    # -- running ------------------------------------------------------------
    def run(self, until: float, progress: Callable[[float], None] | None = None, step: float = 1.0) -> None:
        """Advance virtual time to `until`; call `progress(now)` every `step` simulated seconds."""
        if not self._routed:
            self._build_routes()
        if progress is not None:
            if step <= 0:
                raise ValueError(f"progress step must be positive, got {step}")
            k = math.floor(self.sim.now / step) + 1
            while k * step < until:
                self.sim.at(k * step, progress, k * step)
                k += 1
        self.sim.run(until)

    # -- results ------------------------------------------------------------
    def path_intervals(self, mh: MobileHost, source: Host) -> list[tuple[float, float, float]]:
        """(start, end, bottleneck b/s) while `mh` had a path: min rate source → BS → cell."""
        log = self._path_log[mh.name]
        out = []
        for k, (t, cell) in enumerate(log):
            if cell is None:
                continue
            end = log[k + 1][0] if k + 1 < len(log) else math.inf
            out.append((t, end, self._bottleneck(source, cell)))
        return out

    def _bottleneck(self, source: Host, cell: Cell) -> float:
        if source.link is None:
            raise ValueError(f"{source.name} has no link")
        rates = [cell.rate_bps]
        link: Link = source.link
        hops = self._next_hops(cell.bs)
        while True:
            if link.rate_bps is not None:
                rates.append(link.rate_bps)
            node = link.dst
            if node is cell.bs:
                break
            if node not in hops:
                raise ValueError(f"no route from {source.name} to {cell.bs.name}")
            link = hops[node]
        return min(rates)

    def link_named(self, name: str) -> Link:
        for link in self.links:
            if link.name == name:
                return link
        raise ValueError(f"no link named {name!r}")

    def counters(self) -> list[dict[str, object]]:
        """Per-link counters (offered, sent, delivered, bytes, drops by cause, queue, avg)."""
        return [link.counters() for link in self.links]
