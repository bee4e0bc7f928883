"""Nodes of the simulated network: routers, base stations with their cells,
fixed hosts and mobile hosts that run sans-IO endpoints.

Forwarding is by destination address through a per-node table that the
`Network` fills in (and rewrites for a mobile host's home address at each
handoff). Hosts never forward. A cell is the radio side of a base station:
one shared downlink queue, delivering to whichever interface currently
owns the destination address, and one uplink per attached interface.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from p4handoff.hosts.sim.link import Link
from p4handoff.hosts.sim.packet import DATA, PRIORITY, Packet, packet_of
from p4handoff.hosts.sim.queues import Queue

if TYPE_CHECKING:
    from p4handoff.hosts.endpoint import Endpoint
    from p4handoff.hosts.segment import Segment
    from p4handoff.hosts.sim.engine import Simulator
    from p4handoff.notify import Notification

#: An endpoint asking to be woken at the current instant more often than this
#: without the clock moving is stuck; the simulator stops with an error.
MAX_SAME_INSTANT_WAKEUPS = 10_000


class Node:
    """Anything that receives packets from links; counts what it cannot forward."""

    def __init__(self, sim: "Simulator", name: str) -> None:
        self.sim = sim
        self.name = name
        self.routes: dict[str, Link] = {}
        self.drops: dict[str, int] = {}
        self.on_drop: Callable[[Packet, str], None] | None = None

    def drop(self, pkt: Packet, cause: str) -> None:
        self.drops[cause] = self.drops.get(cause, 0) + 1
        if self.on_drop is not None:
            self.on_drop(pkt, cause)

    def receive(self, pkt: Packet, link: Link | None) -> None:
        out = self.routes.get(pkt.dst)
        if out is None:
            self.drop(pkt, "no_route")
        else:
            out.send(pkt)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class Router(Node):
    """A wired forwarding node (correspondent's router, gateway)."""


class BaseStation(Router):
    """A router that serves cells; with `ipf`, it buffers and forwards at handoff.

    IPF (docs/papers.md#ipf-mred): when a mobile host's active interface leaves this
    BS's cell, the packets for its home address that were waiting in the
    cell's downlink queue, those lost on the air at that moment, and those
    arriving until the forward are kept (up to `ipf_limit`); `forward_delay`
    after the handoff they are sent, in order and marked priority, along the
    BS's route for that address (now toward the new BS), and so is every
    later arrival for it until the MH comes back. `forwarding(home)` is what
    the HANDOFF notification then tells the senders (docs/wire-contract.md).
    """

    def __init__(self, sim: "Simulator", name: str, ipf: bool = False, ipf_limit: int = 64,
                 forward_delay: float = 0.0, signal: bool = True, route_delay: float = 0.0) -> None:
        super().__init__(sim, name)
        if ipf_limit < 1:
            raise ValueError(f"base station {name}: ipf_limit must be at least 1, got {ipf_limit}")
        if forward_delay < 0:
            raise ValueError(f"base station {name}: forward_delay must not be negative, got {forward_delay}")
        if route_delay < 0:
            raise ValueError(f"base station {name}: route_delay must not be negative, got {route_delay}")
        self.ipf = ipf
        self.ipf_limit = ipf_limit
        self.forward_delay = forward_delay
        # an MH that leaves: this BS routes it onward at once, the other nodes follow this long after the
        # handoff (Network._reroute; the lab controller's ordered handoff, docs/lab.md "A route delay")
        self.route_delay = route_delay
        self.signal = signal  # announce the forwarding in HANDOFF (False: a revision-1 network)
        self.cells: list[Cell] = []
        self._buffers: dict[str, list[Packet]] = {}
        self._air_slot: dict[str, int] = {}
        self._forwarding: set[str] = set()
        self._flush_at: dict[str, float] = {}
        self.forwarded = 0
        self.on_forward: Callable[[Packet], None] | None = None  # each packet it forwards, as it does

    def receive(self, pkt: Packet, link: Link | None) -> None:
        if self.ipf:
            buf = self._buffers.get(pkt.dst)
            if buf is not None:
                self._keep(pkt, buf, len(buf))
                return
            if pkt.dst in self._forwarding and pkt.klass == DATA:
                self._forward(pkt)
        out = self.routes.get(pkt.dst)
        if out is None:
            self.drop(pkt, "no_route")
        else:
            out.send(pkt)

    def _keep(self, pkt: Packet, buf: list[Packet], at: int) -> bool:
        if len(buf) >= self.ipf_limit:
            self.drop(pkt, "ipf_overflow")
            return False
        buf.insert(at, pkt)
        return True

    def mh_left(self, home: str, cell: "Cell") -> None:
        """The MH's active interface left `cell`: start buffering (IPF) its packets."""
        if not self.ipf:
            return
        self._forwarding.discard(home)
        buf = self._buffers.setdefault(home, [])
        for pkt in cell.downlink.queue.take(home, self.sim.now):
            self._keep(pkt, buf, len(buf))
        self._air_slot[home] = 0

    def rescue(self, pkt: Packet) -> bool:
        """A packet for a departed MH failed on the air: keep it if IPF is buffering; after the
        flush (the air outlasted a break-free handoff), forward it as a later arrival."""
        buf = self._buffers.get(pkt.dst)
        if buf is None:
            if pkt.dst not in self._forwarding:
                return False
            self.receive(pkt, None)
            return True
        slot = self._air_slot[pkt.dst]
        if self._keep(pkt, buf, slot):
            self._air_slot[pkt.dst] = slot + 1
        return True

    def mh_arrived(self, home: str, here: bool) -> None:
        """The MH handed off (to one of this BS's cells if `here`): schedule the forward."""
        if not self.ipf:
            return
        if here:
            self._forwarding.discard(home)
        if home in self._buffers:
            self._flush_at[home] = self.sim.now + self.forward_delay
            self.sim.after(self.forward_delay, self._flush, home)

    def forwarding(self, home: str) -> tuple[int, float] | None:
        """(packets held for `home`, time of their flush) while a flush is pending, else None (also
        without `signal`): what the HANDOFF notification announces. Also when it holds none yet:
        the MH's flight may still be on its way here (a window-limited flow sends it as one train
        per RTT), and what arrives after the flush is forwarded too; a HANDOFF without the signal
        would have the sender resend it (the lab's controller also counts what reached the gateway
        during the handoff, so it is rarely left with none)."""
        buf = self._buffers.get(home)
        at = self._flush_at.get(home)
        return (len(buf), at) if self.signal and buf is not None and at is not None else None

    def _flush(self, home: str) -> None:
        buf = self._buffers.pop(home, None)
        self._air_slot.pop(home, None)
        self._flush_at.pop(home, None)
        if buf is None:
            return
        out = self.routes.get(home)
        away = not any(out is cell.downlink for cell in self.cells)
        if away:
            self._forwarding.add(home)
        for pkt in buf:
            if out is None:
                self.drop(pkt, "no_route")
                continue
            if away and pkt.klass == DATA:
                self._forward(pkt)
            out.send(pkt)

    def _forward(self, pkt: Packet) -> None:
        pkt.klass = PRIORITY
        self.forwarded += 1
        if self.on_forward is not None:
            self.on_forward(pkt)


class Cell:
    """The radio side of a base station: a shared downlink and per-interface uplinks."""

    def __init__(self, sim: "Simulator", name: str, cell_id: int, bs: BaseStation, rate_bps: float,
                 delay: float, loss: float, queue: Queue, up_rate_bps: float, up_loss: float,
                 up_queue_limit: int) -> None:
        self.sim = sim
        self.name = name
        self.id = cell_id
        self.bs = bs
        self.rate_bps = rate_bps
        self.delay = delay
        self.up_rate_bps = up_rate_bps
        self.up_loss = up_loss
        self.up_queue_limit = up_queue_limit
        self.downlink = Link(sim, f"{name}/down", rate_bps, delay, self, loss, queue)
        self.members: dict[str, Interface] = {}
        bs.cells.append(self)

    def receive(self, pkt: Packet, link: Link | None) -> None:
        """End of the downlink: hand the packet to the interface that owns its address."""
        iface = self.members.get(pkt.dst)
        if iface is None or iface.attached_at > pkt.sent_at:
            if not self.bs.rescue(pkt):
                self.downlink.drop(pkt, "no_receiver")
            return
        iface.host.receive(pkt, self.downlink)

    def __repr__(self) -> str:
        return f"Cell({self.name}, {self.rate_bps} b/s, {self.delay} s)"


class Interface:
    """One radio of a mobile host: its own care-of address, attached to at most one cell."""

    def __init__(self, host: "MobileHost", name: str, coa: str) -> None:
        self.host = host
        self.name = name
        self.coa = coa
        self.cell: Cell | None = None
        self.attached_at = 0.0
        self.uplinks: dict[str, Link] = {}

    @property
    def uplink(self) -> Link | None:
        return self.uplinks[self.cell.name] if self.cell is not None else None

    def attach(self, cell: Cell) -> Link:
        """Join `cell`; return this interface's uplink in it (made on first visit)."""
        sim = self.host.sim
        if self.cell is not None:
            raise ValueError(f"t={sim.now}: {self.host.name}.{self.name} is already attached to {self.cell.name}")
        self.cell = cell
        self.attached_at = sim.now
        cell.members[self.coa] = self
        link = self.uplinks.get(cell.name)
        if link is None:
            link = Link(sim, f"{cell.name}/up/{self.host.name}.{self.name}", cell.up_rate_bps, cell.delay,
                        cell.bs, cell.up_loss, Queue(cell.up_queue_limit))
            self.uplinks[cell.name] = link
        link.set_up()
        return link

    def detach(self) -> Cell:
        cell = self.cell
        if cell is None:
            raise ValueError(f"t={self.host.sim.now}: {self.host.name}.{self.name} is not attached")
        for addr in [a for a, i in cell.members.items() if i is self]:
            del cell.members[addr]
        self.uplinks[cell.name].set_down()
        self.cell = None
        return cell


class Slot:
    """An endpoint bound on a host, with its wake-up bookkeeping and taps.

    The wake-up due is (`wake_at`, `wake_seq`): its time and the sequence number it took when it was
    asked for, so it runs in that order. Only the earliest one asked for since the last wake-up is on the
    event heap (`armed_at`, `armed_seq`): when an endpoint moves its wake-up later (the RTO deadline on
    every ACK) nothing is pushed; the armed event, when its time comes, pushes the one due.
    """

    __slots__ = ("ep", "local_port", "remote_port", "wake_at", "wake_seq", "armed_at", "armed_seq",
                 "same_instant", "on_send", "on_receive")

    def __init__(self, ep: "Endpoint", local_port: int, remote_port: int | None) -> None:
        self.ep = ep
        self.local_port = local_port
        self.remote_port = remote_port
        self.wake_at: float | None = None
        self.wake_seq = 0
        self.armed_at: float | None = None
        self.armed_seq = 0
        self.same_instant = 0
        self.on_send: list[Callable[["Segment", float], None]] = []
        self.on_receive: list[Callable[["Segment", float], None]] = []


class Host(Node):
    """An end system on one wired link; runs endpoints, demultiplexed by port pair."""

    def __init__(self, sim: "Simulator", name: str, addr: str) -> None:
        super().__init__(sim, name)
        self.addr = addr
        self.link: Link | None = None
        self._slots: dict[tuple[int, int | None], Slot] = {}

    def addresses(self) -> list[str]:
        return [self.addr]

    def bind(self, ep: "Endpoint", local_port: int, remote_port: int | None = None) -> Slot:
        """Deliver segments for `local_port` (from `remote_port`, or any) to `ep`."""
        key = (local_port, remote_port)
        if key in self._slots:
            raise ValueError(f"{self.name}: port {local_port} (peer port {remote_port}) is already bound")
        slot = self._slots[key] = Slot(ep, local_port, remote_port)
        return slot

    def receive(self, pkt: Packet, link: Link | None) -> None:
        seg = pkt.seg
        slot = self._slots.get((seg.dport, seg.sport)) or self._slots.get((seg.dport, None))
        if slot is None:
            self.drop(pkt, "no_endpoint")
            return
        now = self.sim.now
        for tap in slot.on_receive:
            tap(seg, now)
        slot.ep.handle(seg, now)
        self.service(slot)

    def service(self, slot: Slot) -> None:
        """Poll the endpoint, send what it returns, and book its next wake-up."""
        now = self.sim.now
        ep = slot.ep
        for seg in ep.poll(now):
            for tap in slot.on_send:
                tap(seg, now)
            self.output(packet_of(seg))
        wake = ep.next_wakeup()
        if wake is None:
            slot.wake_at = None
            return
        if wake <= now:
            wake = now
            slot.same_instant += 1
            if slot.same_instant > MAX_SAME_INSTANT_WAKEUPS:
                raise RuntimeError(f"{self.name}: endpoint on port {slot.local_port} keeps asking to be "
                                   f"woken at t={now} without progress")
        else:
            slot.same_instant = 0
        if wake != slot.wake_at:
            sim = self.sim
            slot.wake_at = wake
            slot.wake_seq = seq = sim.reserve()
            armed = slot.armed_at
            if armed is None or wake < armed:     # (equal times: the armed one has the lower sequence number)
                slot.armed_at, slot.armed_seq = wake, seq
                sim.at_reserved(wake, seq, self._wake, slot, wake, seq)

    def _wake(self, slot: Slot, when: float, seq: int) -> None:
        if slot.armed_at == when and slot.armed_seq == seq:
            slot.armed_at = None
        if slot.wake_at == when and slot.wake_seq == seq:
            slot.wake_at = None
            self.service(slot)
        elif slot.armed_at is None and slot.wake_at is not None:    # the wake-up due moved later: push it now
            slot.armed_at, slot.armed_seq = slot.wake_at, slot.wake_seq
            self.sim.at_reserved(slot.wake_at, slot.wake_seq, self._wake, slot, slot.wake_at, slot.wake_seq)

    def notify(self, slot: Slot, note: "Notification") -> None:
        slot.ep.notify(note, self.sim.now)
        self.service(slot)

    def output(self, pkt: Packet) -> None:
        if self.link is None:
            self.drop(pkt, "no_link")
        else:
            self.link.send(pkt)


class MobileHost(Host):
    """A host with radio interfaces; its home address follows the active interface.

    A packet leaves through the interface whose care-of address is its
    source, if that interface is attached, else through the active one.
    """

    def __init__(self, sim: "Simulator", name: str, home: str, interfaces: dict[str, str]) -> None:
        super().__init__(sim, name, home)
        if not interfaces:
            raise ValueError(f"mobile host {name} needs at least one interface")
        self.ifaces = {iname: Interface(self, iname, coa) for iname, coa in interfaces.items()}
        self._by_coa = {i.coa: i for i in self.ifaces.values()}
        if len(self._by_coa) != len(self.ifaces) or home in self._by_coa:
            raise ValueError(f"mobile host {name}: interface addresses must be distinct from each other and the home address")
        self.active: Interface | None = None

    def addresses(self) -> list[str]:
        return [self.addr, *self._by_coa]

    def iface(self, name: str) -> Interface:
        try:
            return self.ifaces[name]
        except KeyError:
            raise ValueError(f"mobile host {self.name} has no interface {name!r} "
                             f"(has {', '.join(self.ifaces)})") from None

    def output(self, pkt: Packet) -> None:
        iface = self._by_coa.get(pkt.src)
        if iface is None or iface.cell is None:
            iface = self.active
        if iface is None or iface.cell is None:
            self.drop(pkt, "detached")
            return
        iface.uplinks[iface.cell.name].send(pkt)

