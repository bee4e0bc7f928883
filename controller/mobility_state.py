"""What every part of the handoff shares: all MHs, the routes wanted for them, the timer heap, the markers.

One object (`MobilityState`) handed to each part of `p4handoff.controller.mobility.Mobility`
(IPF flush, DSBP probe, timers, recovery), so a reader sees in each part's constructor
that it reads and moves this state. Routes are recorded as wanted and a `SetRoute`
emitted only when one changes (`RouteTable.set`, the one place route writes are made);
deadlines are one heap of (time, MH); marker nonces are drawn from one seeded sequence.
"""
from __future__ import annotations

import heapq
import itertools
import random
from typing import Iterable

from p4handoff.controller.buffer import BufferPool
from p4handoff.controller.intents import Effect, RouteAction, SetRoute
from p4handoff.controller.mh_state import MhState, MobilityError
from p4handoff.controller.network import Network
from p4handoff.controller.spool import Spool


class RouteTable:
    """The host routes the mobility logic wants on each switch; every route write goes through `set`."""

    def __init__(self, switches: Iterable[str]) -> None:
        self._tables: dict[str, dict[str, RouteAction]] = {s: {} for s in switches}

    def set(self, fx: list[Effect], switch: str, addr: str, action: RouteAction | None,
            with_previous: bool = False) -> None:
        """Record the wanted route and emit a SetRoute into `fx` only if it changes (`with_previous`: see
        SetRoute)."""
        table = self._tables[switch]
        if table.get(addr) == action:
            return
        if action is None:
            del table[addr]
        else:
            table[addr] = action
        fx.append(SetRoute(switch, addr, action, with_previous))

    def get(self, switch: str, addr: str) -> RouteAction | None:
        return self._tables[switch].get(addr)

    def on(self, addr: str) -> dict[str, RouteAction]:
        """Every switch's wanted route for `addr` (switches without one left out)."""
        return {sw: t[addr] for sw, t in self._tables.items() if addr in t}

    def adopt(self, switch: str, table: dict[str, RouteAction]) -> None:
        """Take `switch`'s routes as read back from it (controller restart), emitting nothing."""
        self._tables[switch] = dict(table)

    def snapshot(self) -> dict[str, dict[str, RouteAction]]:
        return {sw: dict(r) for sw, r in self._tables.items()}


class TimerHeap:
    """Every MH's deadlines in one heap of (time, MH name), polled by the daemon through `next_deadline`."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, str]] = []

    def schedule(self, mh: str, when: float | None) -> None:
        """Wake `mh` at `when` (nothing for None: no deadline)."""
        if when is not None:
            heapq.heappush(self._heap, (when, mh))

    def next_deadline(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: float) -> set[str]:
        """The MHs with a deadline at or before `now`, their entries removed."""
        due: set[str] = set()
        while self._heap and self._heap[0][0] <= now:
            due.add(heapq.heappop(self._heap)[1])
        return due


class Markers:
    """Outstanding marker nonces and the MH each belongs to; each one wakes its MH after the marker timeout."""

    def __init__(self, timers: TimerHeap, timeout_s: float, seed: int | None) -> None:
        self._timers = timers
        self.timeout_s = timeout_s
        self._nonces = itertools.count(random.Random(seed).getrandbits(63))
        self._owner: dict[int, str] = {}

    def issue(self, mh: str, now: float, extra_s: float = 0.0) -> int:
        """A fresh nonce for `mh`'s next marker; its timeout (`extra_s` beyond the usual) is on the heap."""
        nonce = next(self._nonces)
        self._owner[nonce] = mh
        self._timers.schedule(mh, now + self.timeout_s + extra_s)
        return nonce

    def owner(self, nonce: int) -> str | None:
        """The MH an outstanding marker belongs to (None: not outstanding), leaving it outstanding."""
        return self._owner.get(nonce)

    def claim(self, nonce: int) -> str | None:
        """The MH a returned marker belongs to, or None if no marker with this nonce is outstanding."""
        return self._owner.pop(nonce, None)

    def forget(self, nonce: int) -> None:
        """Stop waiting for this marker (timed out, or no longer needed)."""
        self._owner.pop(nonce, None)


class MobilityState:
    """All MHs' state, their buffers, the routes wanted for them, their deadlines and markers, the timeouts."""

    def __init__(self, net: Network, seed: int | None = None, spool: Spool | None = None) -> None:
        self.net = net
        self.gw = net.gateway.name
        self.pool = BufferPool(net.buffer.total_packets, spool)
        self.mhs: dict[str, MhState] = {}
        self.by_addr: dict[str, MhState] = {}
        for host in net.mobile_hosts:
            st = MhState(host, mac=host.mac)
            self.mhs[host.name] = st
            self.by_addr[host.address] = st
            self.pool.add_mh(host.name, host.buffer_packets)
        self.routes = RouteTable(s.name for s in net.switches)
        self.timers = TimerHeap()
        c = net.controller
        self.hold_s = c.hold_time_ms / 1000
        self.marker_s = c.marker_timeout_ms / 1000
        self.flush_s = c.flush_timeout_ms / 1000
        self.markers = Markers(self.timers, self.marker_s, seed)

    def state(self, name: str) -> MhState:
        """The MH called `name` or with home address `name`."""
        st = self.mhs.get(name) or self.by_addr.get(name)
        if st is None:
            raise MobilityError(f"unknown mobile host {name!r}")
        return st

    def managed_addresses(self) -> set[str]:
        """Addresses whose routes belong to the mobility logic (reconciliation leaves the others alone)."""
        return {a for st in self.mhs.values() for a in (st.host.address, *dict(st.host.cell_addresses).values())}

    def cell(self, bs: str | None) -> int:
        """The cell id of `bs` (0 for none)."""
        sw = self.net.switch(bs) if bs else None
        return sw.cell_id if sw is not None else 0
