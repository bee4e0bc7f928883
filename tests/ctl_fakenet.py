"""An in-memory, discrete-event model of the switches at the intent level, for the controller's unit tests.

It executes the mobility state machine's effects with realistic *relative*
latencies (a route write takes longer than a link hop; a punt to the
controller and a packet-out each take longer than a link hop), so the
ordering races of a real handoff happen here too. It is a fake used in
addition to the BMv2 integration tests (tests/test_ctl_bmv2.py), never
instead of them.
"""
from __future__ import annotations

import heapq
import itertools
import struct
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from p4handoff.controller.effect_batch import EffectBatch, Step, owners_in
from p4handoff.controller.intents import Completed, Deliver, Effect, Forward, Notify, Punt, Release, Reply, SendToward, SetRoute, Tunnel
from p4handoff.controller.mobility import Mobility
from p4handoff.controller.network import PORT_ACCESS, Network
from p4handoff.controller.packets import marker_nonce, parse_ipv4, parse_udp, udp_packet
from p4handoff.controller.registration import RegistrationReply, RegistrationRequest
from p4handoff.notify import Notification

DATA_PORT = 5001


@dataclass
class Received:
    seq: int
    priority: bool      # came over a priority-marked BS-to-BS tunnel (or a priority packet-out)
    via: str            # "direct", "tunnel", "packet-out"


@dataclass
class FakeNet:
    net: Network
    mobility: Mobility
    link: float = 0.001
    punt: float = 0.002
    packet_out: float = 0.002
    write: float = 0.003
    now: float = 0.0
    tables: dict[str, dict] = field(default_factory=dict)
    location: dict[str, tuple[str, int] | None] = field(default_factory=dict)
    received: dict[str, list[Received]] = field(default_factory=dict)
    lost: list[tuple[str, int, str]] = field(default_factory=list)
    notes: list[tuple[str, Notification]] = field(default_factory=list)
    replies: list[RegistrationReply] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
    completed: list[tuple[str, float]] = field(default_factory=list)   # (mh, registration → routes applied)
    down: bool = False                   # the controller process is dead (see `crash`)
    lost_inputs: list[str] = field(default_factory=list)   # what reached it while it was
    batched: bool = False                # inputs queued while it was busy run together (effect_batch.py)
    writes: list[tuple[float, str, int]] = field(default_factory=list)    # (when, switch, updates) per Write

    def __post_init__(self) -> None:
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()
        self._busy_until = 0.0      # the controller is one thread: writes block it
        self._inbox: deque[Callable[[], list[list[Effect]]]] = deque()     # each: the inputs it handles
        self._pump_at: float | None = None
        self._timer_queued = False
        self._idents = itertools.count(1)
        self._followers: dict[int, list[int]] = {}     # kept marker -> the markers it stood in for
        self.tables = {s.name: {} for s in self.net.switches}
        self.location = {m.name: None for m in self.net.mobile_hosts}
        self.received = {m.name: [] for m in self.net.mobile_hosts}

    # ---- event loop

    def at(self, when: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._events, (when, next(self._order), fn))

    def run(self, until: float) -> None:
        while True:
            t_ev = self._events[0][0] if self._events else None
            t_tm = None if self._timer_queued or self.down else self.mobility.next_deadline()
            nxt = min(t for t in (t_ev, t_tm) if t is not None) if (t_ev is not None or t_tm is not None) else None
            if nxt is None or nxt > until:
                break
            self.now = max(self.now, nxt)
            if t_tm is not None and t_tm <= nxt and (t_ev is None or t_tm <= t_ev):
                self._timer_queued = True
                self._queue(self._on_time)
            else:
                _, _, fn = heapq.heappop(self._events)
                fn()
        self.now = max(self.now, until)

    # ---- the controller side

    def _on_time(self) -> list[list[Effect]]:
        self._timer_queued = False
        return self.mobility.on_time(self.now)          # one input per MH, as the daemon batches them

    def controller(self, step: Callable[[], list[Effect]], what: str = "input") -> None:
        """Queue one controller input; inputs run in arrival order whenever the controller is free."""
        self._queue(lambda: [step()], what)

    def _queue(self, step: Callable[[], list[list[Effect]]], what: str = "input") -> None:
        if self.down:
            self.lost_inputs.append(what)
            return
        self._inbox.append(step)
        self._pump()

    def crash(self) -> None:
        """The controller process dies with its queued inputs; until `down` is cleared (a new `mobility`
        recovered), punts and registrations reaching it are lost, as a switch drops packet-ins nobody reads."""
        self.down = True
        self._inbox.clear()
        self._timer_queued = False

    def _pump(self) -> None:
        while self._inbox:
            if self._busy_until > self.now:
                if self._pump_at != self._busy_until:
                    self._pump_at = self._busy_until
                    self.at(self._busy_until, self._pump)
                return
            if not self.batched:
                self.apply([e for fx in self._inbox.popleft()() for e in fx])
                continue
            batch = EffectBatch(owners_in(self.net), self.net.controller.address)
            while self._inbox:
                for fx in self._inbox.popleft()():
                    batch.add(fx)
            self.apply_steps(batch.steps())

    def apply(self, effects: list[Effect], commit: bool = True) -> None:
        """Effects in order, as the daemon does: a route write (one per run of writes to the same
        switch, batched) blocks until the switch has applied it; packet-outs do not block.
        `commit=False`: the controller dies before journaling the releases (controller/spool.py)."""
        self.effects += effects
        t = max(self.now, self._busy_until)
        prev_switch = None
        for e in effects:
            if isinstance(e, SetRoute):
                if e.switch != prev_switch:
                    t += self.write
                    self.writes.append((t, e.switch, 0))
                w = self.writes[-1]
                self.writes[-1] = (w[0], w[1], w[2] + 1)
                prev_switch = e.switch
                self.at(t, lambda e=e: self._install(e))
                continue
            prev_switch = None
            self._packet(e, t)
        self._busy_until = t
        if commit:
            self.mobility.pool.commit()      # as the daemon does once the packet-outs are handed on

    def apply_steps(self, steps: list[Step]) -> None:
        """A batch's steps as the daemon runs them: the step's Writes (one per switch) go out at once and
        take one write latency; its packet effects follow; coalesced markers are remembered."""
        t = max(self.now, self._busy_until)
        for step in steps:
            if step.writes:
                t += self.write
            for switch, routes in step.writes.items():
                self.writes.append((t, switch, len(routes)))
                for e in routes:
                    self.effects.append(e)
                    self.at(t, lambda e=e: self._install(e))
            for nonce, releases in step.behind.items():
                self.mobility.drain_behind(nonce, releases)
            for e in step.after:
                self.effects.append(e)
                self._packet(e, t)
            self._followers.update(step.coalesced)
        self._busy_until = t
        self.mobility.pool.commit()

    def _packet(self, e: Effect, t: float) -> None:
        if isinstance(e, Release):
            if e.tunnel:
                self.at(t + self.packet_out + self.link,
                        lambda e=e: self._arrive(e.target, e.packet, priority=True, via="tunnel"))
            else:
                self.at(t + self.packet_out,
                        lambda e=e: self._to_port(e.target, e.port, e.packet, True, "packet-out"))
        elif isinstance(e, SendToward):
            self.at(t + self.packet_out + self.link,
                    lambda e=e: self._arrive(e.peer, e.packet, priority=False, via="direct"))
        elif isinstance(e, Notify):
            self.notes.append((e.host, e.note))
        elif isinstance(e, Reply):
            self.replies.append(RegistrationReply.decode(e.payload))
        elif isinstance(e, Completed):
            self.completed.append((e.mh, t - e.started))

    def _punted(self, switch: str, packet: bytes) -> list[list[Effect]]:
        """The punt, and each marker it stood in for, as inputs of their own (as the daemon adds them)."""
        nonce = marker_nonce(parse_ipv4(packet))
        return [self.mobility.packet_in(switch, packet, self.now)] + [
            self.mobility.marker_back(switch, other, self.now)
            for other in (self._followers.pop(nonce, []) if nonce is not None else [])]

    def _install(self, e: SetRoute) -> None:
        if e.action is None:
            self.tables[e.switch].pop(e.addr, None)
        else:
            self.tables[e.switch][e.addr] = e.action

    # ---- the data plane

    def send(self, mh: str, seq: int, when: float | None = None) -> None:
        """The correspondent sends data packet `seq` to `mh`; it enters the gateway one link later."""
        ch = self.net.fixed_hosts[0]
        dst = self.net.mobile(mh).address
        pkt = udp_packet(ch.address, dst, DATA_PORT, DATA_PORT, struct.pack("!I", seq))
        self.at((self.now if when is None else when) + self.link,
                lambda: self._arrive(self.net.gateway.name, pkt, priority=False, via="direct"))

    def _arrive(self, switch: str, packet: bytes, priority: bool, via: str) -> None:
        ip = parse_ipv4(packet)
        route = Punt() if ip.dst == self.net.controller.address else self.tables[switch].get(ip.dst)
        sw = self.net.switch(switch)
        if route is None:
            if sw.is_bs:
                route = Forward(self.net.gateway.name)
            else:
                self.lost.append((ip.dst, _seq(packet), f"no route at {switch}"))
                return
        if isinstance(route, Deliver):
            self._to_port(switch, route.port, packet, priority, via)
        elif isinstance(route, Forward):
            self.at(self.now + self.link, lambda: self._arrive(route.peer, packet, False, "direct"))
        elif isinstance(route, Tunnel):
            self.at(self.now + self.link, lambda: self._arrive(route.peer, packet, route.priority, "tunnel"))
        elif isinstance(route, Punt):
            self.at(self.now + self.punt,
                    lambda: self._queue(lambda: self._punted(switch, packet), f"punt {ip.dst} {_seq(packet)}"))

    def _to_port(self, switch: str, port: int, packet: bytes, priority: bool, via: str) -> None:
        ip = parse_ipv4(packet)
        mh = self.net.mobile(ip.dst)
        if mh is None:
            for m in self.net.mobile_hosts:
                if ip.dst in dict(m.cell_addresses).values():
                    mh = m
        if mh is None or self.location[mh.name] != (switch, port):
            self.lost.append((ip.dst, _seq(packet), f"not at {switch}:{port}"))
            return
        if _seq(packet) >= 0:
            self.received[mh.name].append(Received(_seq(packet), priority, via))

    # ---- the mobile host

    def register(self, mh: str, bs: str, *, care_of: str | None = None, lifetime: int = 0xFFFF,
                 simultaneous: bool = False, move: bool = True, ident: int | None = None) -> None:
        """The MH (moved to `bs` if `move`) sends a registration; the BS punts it to the controller."""
        host = self.net.mobile(mh)
        port = next(p.number for p in self.net.switch(bs).ports if p.role == PORT_ACCESS)
        if move:
            self.location[mh] = (bs, port)
        req = RegistrationRequest(host.address, care_of or host.address, self.net.gateway.address, lifetime,
                                  next(self._idents) if ident is None else ident, 0x80 if simultaneous else 0)
        mac = host.mac or _mac_of(mh)
        self.at(self.now + self.link + self.punt, lambda: self.controller(
            lambda: self.mobility.registration(bs, port, mac, req.care_of, 434, req, self.now), f"registration {mh}"))

    def leave(self, mh: str, tell_controller: bool = True) -> None:
        """The MH loses its link; the controller hears of it one punt delay later."""
        self.location[mh] = None
        if tell_controller:
            self.at(self.now + self.punt, lambda: self.controller(lambda: self.mobility.detach(mh, self.now)))

    def seqs(self, mh: str) -> list[int]:
        return [r.seq for r in self.received[mh]]


def _seq(packet: bytes) -> int:
    ip = parse_ipv4(packet)
    _, dport, payload = parse_udp(ip)
    return struct.unpack("!I", payload[:4])[0] if dport == DATA_PORT and len(payload) >= 4 else -1


def _mac_of(mh: str) -> str:
    return "02:aa:00:00:00:%02x" % (sum(mh.encode()) & 0xFF)
