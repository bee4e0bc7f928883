"""The state the mobility logic keeps for all MHs, its queries and the helpers every part uses.

Routes are recorded as wanted (`routes()`), effects emitted only when one
changes; timers are one heap of (deadline, MH) polled through
`next_deadline()`; notifications carry one sequence number space.
"""
from __future__ import annotations

import heapq
import itertools
import random
from typing import Any, Callable

from p4handoff.controller.buffer import BufferPool
from p4handoff.controller.intents import Effect, Notify, RouteAction, SetRoute
from p4handoff.controller.mh_state import MhState, MobilityError, Phase
from p4handoff.controller.network import Network
from p4handoff.controller.spool import Spool
from p4handoff.notify import Event, Forwarding, Notification

LogFn = Callable[[str, dict[str, Any]], None]


class MobilityBase:
    """All MHs' state, the routes it wants for their addresses, their buffers, timers and markers.

    The parts of the handoff (`p4handoff.controller.dsbp_probe`, `.ipf_handoff`, `.handoff_timers`,
    `.handoff_recovery`, `.mobility`) build on this class and share its state.
    """

    def __init__(self, net: Network, log: LogFn | None = None, seed: int | None = None,
                 spool: Spool | None = None) -> None:
        self.net = net
        self.gw = net.gateway.name
        self.log: LogFn = log or (lambda event, fields: None)
        self.pool = BufferPool(net.buffer.total_packets, spool)
        self._resume: list[tuple[str, str | None]] = []    # (MH, gateway marker via) to flush after recovery
        self.mhs: dict[str, MhState] = {}
        self._by_addr: dict[str, MhState] = {}
        for host in net.mobile_hosts:
            st = MhState(host, mac=host.mac)
            self.mhs[host.name] = st
            self._by_addr[host.address] = st
            self.pool.add_mh(host.name, host.buffer_packets)
        self._routes: dict[str, dict[str, RouteAction]] = {s.name: {} for s in net.switches}
        self._seq = itertools.count(1)
        rng = random.Random(seed)
        self._nonces = itertools.count(rng.getrandbits(63))
        self._timers: list[tuple[float, str]] = []
        self._marker_owner: dict[int, str] = {}      # outstanding marker nonce -> MH name
        self.unknown_punts = 0
        c = net.controller
        self.hold_s = c.hold_time_ms / 1000
        self.marker_s = c.marker_timeout_ms / 1000
        self.flush_s = c.flush_timeout_ms / 1000

    # ------------------------------------------------------------------ queries

    def routes(self) -> dict[str, dict[str, RouteAction]]:
        """The host routes the mobility logic wants on each switch (mobile and probe addresses)."""
        return {sw: dict(r) for sw, r in self._routes.items()}

    def managed_addresses(self) -> set[str]:
        """Addresses whose routes belong to this module (reconciliation leaves the others alone)."""
        return {a for st in self.mhs.values() for a in (st.host.address, *dict(st.host.cell_addresses).values())}

    def state(self, name: str) -> MhState:
        st = self.mhs.get(name) or self._by_addr.get(name)
        if st is None:
            raise MobilityError(f"unknown mobile host {name!r}")
        return st

    def status(self) -> list[dict[str, Any]]:
        out = []
        for st in self.mhs.values():
            buf = self.pool[st.host.name]
            phase = st.phase.value
            if st.phase is Phase.ATTACHED and st.holds:
                phase = "attached-new"
            out.append({
                "mh": st.host.name, "address": st.host.address, "phase": phase, "bs": st.bs,
                "port": st.port, "holds": sorted(st.holds), "diverting": sorted(st.diverts),
                "buffer": len(buf), "buffer_limit": buf.limit, "buffered": buf.stats.buffered,
                "released": buf.stats.released, "dropped_overflow": buf.stats.dropped_overflow,
                "dropped_global": buf.stats.dropped_global, "late": st.late, "handoffs": st.handoffs,
                "probe": None if st.probe is None else {"bs": st.probe.bs, "addr": st.probe.addr},
            })
        return out

    def next_deadline(self) -> float | None:
        return self._timers[0][0] if self._timers else None

    # ------------------------------------------------------------------ helpers

    def _set(self, fx: list[Effect], switch: str, addr: str, action: RouteAction | None) -> None:
        """Record the wanted route and emit a SetRoute only if it changes."""
        table = self._routes[switch]
        if table.get(addr) == action:
            return
        if action is None:
            del table[addr]
        else:
            table[addr] = action
        fx.append(SetRoute(switch, addr, action))

    def _notify(self, st: MhState, event: Event, path_addr: str, old_cell: int, new_cell: int,
                mh_at: tuple[str | None, int | None] | None, forwarding: Forwarding | None = None) -> list[Effect]:
        note = Notification(event, next(self._seq) & 0xFFFFFFFF, st.host.address, path_addr, old_cell, new_cell,
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

    def _cell(self, bs: str | None) -> int:
        sw = self.net.switch(bs) if bs else None
        return sw.cell_id if sw is not None else 0

    def _timer(self, st: MhState, when: float | None) -> None:
        if when is not None:
            heapq.heappush(self._timers, (when, st.host.name))
