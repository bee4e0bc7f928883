"""A restarted controller takes over: MH state rebuilt from the switches' routes, spooled buffers flushed.

The switches keep their entries across a controller restart and the spool
(`p4handoff.controller.spool`) keeps the buffered packets; `recover` reads
the one and `restore_buffers` the other, and a handoff the restart
interrupted is completed (docs/controller.md, "Restarts and reconciliation").
"""
from __future__ import annotations

from p4handoff.controller.eventlog import LogFn
from p4handoff.controller.intents import Deliver, Effect, Forward, Punt, RouteAction, Tunnel
from p4handoff.controller.ipf_handoff import IpfHandoff
from p4handoff.controller.mh_state import MhState, Phase, Probe
from p4handoff.controller.mobility_state import MobilityState
from p4handoff.controller.spool import Record


class HandoffRecovery:
    """Each MH's phase, serving BS, holds and probe path, as the switches' routes show them.

    An interrupted handoff is finished by `ipf` (flush, markers, final routes).
    """

    def __init__(self, state: MobilityState, log: LogFn, ipf: IpfHandoff) -> None:
        self.state = state
        self.log = log
        self.ipf = ipf
        self._resume: list[tuple[str, str | None]] = []    # (MH, gateway marker via) to flush after recovery

    def restore_buffers(self, records: list[Record]) -> None:
        """Before `recover`: the buffers as the previous controller left them in the spool."""
        for mh, count in self.state.pool.restore(records).items():
            self.log("spool_discarded", {"mh": mh, "packets": count, "reason": "not a mobile host of this network"})
        for name in self.state.mhs:
            if len(self.state.pool[name]):
                self.log("spool_restored", {"mh": name, "packets": len(self.state.pool[name])})

    def recover(self, routes: dict[str, dict[str, RouteAction]], now: float) -> list[Effect]:
        """Rebuild MH state from the routes read back from the switches (controller restart).

        MHs that did not move are left exactly as they are (no effects); a
        handoff interrupted by the restart is completed towards the BS that
        delivers — after the packets restored from the spool (`restore_buffers`)
        are flushed to it, in order (`resume_flushes`, once the switches are
        reconciled). Restored packets of an MH detached at restart wait for its
        registration as before; those of an MH no switch has a route for are
        discarded (logged): nobody knows where it is.
        """
        fx: list[Effect] = []
        managed = self.state.managed_addresses()
        for sw, table in routes.items():
            self.state.routes.adopt(sw, {a: r for a, r in table.items() if a in managed})
        for st in self.state.mhs.values():
            home = st.host.address
            on = self.state.routes.on(home)
            delivers = [(sw, r) for sw, r in on.items() if isinstance(r, Deliver)]
            punts = {sw for sw, r in on.items() if isinstance(r, Punt)}
            tunnels = [sw for sw, r in on.items() if isinstance(r, Tunnel)]
            gw_route = on.get(self.state.gw)
            if delivers:
                chosen = next(((sw, r) for sw, r in delivers
                               if isinstance(gw_route, Forward) and gw_route.peer == sw), delivers[0])
                st.bs, st.port, st.mac = chosen[0], chosen[1].port, chosen[1].mac
                for sw, _ in delivers:
                    if sw != st.bs:
                        self.state.routes.set(fx, sw, home, None)
                st.anchor = st.release_src = st.bs
                st.holds = {sw: now + self.state.hold_s for sw in tunnels}
                st.diverts = punts
                if len(self.state.pool[st.host.name]):
                    fx += self._prepare_resume(st, now)
                elif punts or gw_route != Forward(st.bs):
                    # a handoff interrupted by the restart completes towards the delivering BS
                    st.phase, st.started = Phase.HANDING_OFF, now
                    fx += self.ipf.complete(st, now, recovered=True)
                else:
                    st.phase = Phase.ATTACHED
                    for old in sorted(st.holds):
                        if self.state.net.peered(old, st.bs):
                            self.state.routes.set(fx, old, home, Tunnel(st.bs, True))
                        else:
                            self.state.routes.set(fx, old, home, None)
                            del st.holds[old]
            elif punts:
                st.phase, st.diverts = Phase.DETACHED, punts
                st.anchor = next((sw for sw in sorted(punts) if sw != self.state.gw), None)
                st.left_cell = self.state.cell(st.anchor)
                st.holds = {sw: now + self.state.hold_s for sw in tunnels}
            else:
                for sw in on:
                    self.state.routes.set(fx, sw, home, None)
                if len(self.state.pool[st.host.name]):
                    self.log("spool_discarded", {"mh": st.host.name, "packets": self.state.pool.discard(st.host.name),
                                                 "reason": "no switch holds a route for it: location unknown"})
            for bs, addr in st.host.cell_addresses:
                r = self.state.routes.get(bs, addr)
                if isinstance(r, Deliver) and st.phase is Phase.ATTACHED and st.bs != bs:
                    st.probe = Probe(bs, addr, r.port, r.mac, None)
                    self.state.routes.set(fx, self.state.gw, addr, Forward(bs))
                else:
                    self.state.routes.set(fx, bs, addr, None)
                    if self.state.routes.get(self.state.gw, addr) == Forward(bs):
                        self.state.routes.set(fx, self.state.gw, addr, None)
            for sw in st.holds:
                self.state.timers.schedule(st.host.name, st.holds[sw])
            self.log("recovered", {"mh": st.host.name, "phase": st.phase.value, "bs": st.bs,
                                   "diverting": sorted(st.diverts), "holds": sorted(st.holds)})
        return fx

    def _prepare_resume(self, st: MhState, now: float) -> list[Effect]:
        """Recovered mid-handoff with spooled packets: the handoff stays open until they are flushed, along
        the tunnel from the BS it left if there is one, and the gateway diverts so nothing overtakes them."""
        fx: list[Effect] = []
        name, home = st.host.name, st.host.address
        assert st.bs is not None
        old = next((sw for sw in sorted(st.diverts) if sw not in (self.state.gw, st.bs)), None)
        anchor = old if old is not None and self.state.net.peered(old, st.bs) else None
        st.phase, st.started = Phase.HANDING_OFF, now
        st.anchor, st.left_cell = anchor or st.bs, self.state.cell(old)
        st.release_tunnel = st.bs not in st.diverts and (anchor is not None or self.state.net.buffer_service is not None)
        st.release_src = anchor or st.bs
        st.flush_deadline = now + self.state.flush_s
        self.state.timers.schedule(st.host.name, st.flush_deadline)
        self.state.pool.promote_returned(name)         # the path markers they waited for died with the old process
        via = None
        if self.state.gw in st.diverts and old is not None:
            via = old         # a fresh gateway marker through the BS it left holds the gateway's punts, as before
        else:
            self.state.pool.promote_pending(name)
            if self.state.gw not in st.diverts:
                self.state.routes.set(fx, self.state.gw, home, Punt())
                st.diverts.add(self.state.gw)
        self._resume.append((name, via))
        return fx

    def resume_flushes(self, now: float) -> list[Effect]:
        """After recovery and reconciliation: release the restored packets of interrupted handoffs."""
        fx: list[Effect] = []
        for name, via in self._resume:
            st = self.state.mhs[name]
            if st.phase is not Phase.HANDING_OFF:
                continue
            self.log("handoff_resumed", {"mh": name, "to": st.bs, "buffer": len(self.state.pool[name]),
                                         "release": "tunnel" if st.release_tunnel else "direct"})
            if via is not None:
                fx += self.ipf.gateway_marker(st, via, now)
            fx += self.ipf.drain(st)
            if st.since_drain:
                fx += self.ipf.drain_marker(st, now)
            fx += self.ipf.maybe_complete(st, now)
        self._resume = []
        return fx
