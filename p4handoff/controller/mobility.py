"""IPF's handoff, per MH: registrations, detaches and punted packets in, ordered effects out.

The MH's inputs: registrations (Mobile IP, punted from an access port),
operator commands (`ctl handoff`, `ctl detach`) and packets punted for
buffering. What they set off is in `ipf_handoff.py` (IPF's buffer, flush and
reroute), `dsbp_probe.py` (DSBP's second path) and `handoff_timers.py`; the
state they share in `mobility_base.py` and `mh_state.py`.

Sans-IO: every input carries the current time and returns the effects
(`p4handoff.controller.intents`) to apply in order; timers are polled through
`next_deadline()` / `on_time(now)`. Nothing here knows P4 names or sockets.
"""
from __future__ import annotations


from p4handoff.controller.spool import Record
from p4handoff.controller.intents import (Deliver, Effect, Forward, Punt, Reply, RouteAction,
                                SendToward, Tunnel)
from p4handoff.controller.mh_state import MhState, MobilityError, Phase, Probe
from p4handoff.controller.network import PORT_ACCESS
from p4handoff.controller.packets import PacketError, marker_nonce, marker_packet, parse_ipv4
from p4handoff.controller.registration import LIFETIME_INFINITE, RegistrationReply, RegistrationRequest, ReplyCode
from p4handoff.controller.handoff_timers import HandoffTimers


class Mobility(HandoffTimers):
    """MH registrations, operator commands and punted packets in; ordered effects out."""

    def registration(self, switch: str, port: int, src_mac: str, src_addr: str, src_port: int,
                     req: RegistrationRequest, now: float, received: float | None = None) -> list[Effect]:
        """A Registration Request punted by `switch` from access `port`.

        `now` is when it is handled (timers count from it); `received`, when it reached the controller
        (default `now`), is where a handoff it starts is timed from, so queueing in front of the
        state machine shows in `handoff_start.queued_ms` and in the handoff's duration.
        """
        fx: list[Effect] = []
        sw = self.net.switch(switch)
        where = {"switch": switch, "port": port, "home": req.home_address, "care_of": req.care_of}
        if sw is None or not sw.is_bs:
            self.log("registration_rejected", {**where, "reason": "not a base station"})
            return fx
        p = sw.port(port)
        if p is None or p.role != PORT_ACCESS:
            self.log("registration_rejected", {**where, "reason": "not an access port"})
            return fx

        def reply(code: ReplyCode, lifetime: int, reason: str = "") -> list[Effect]:
            if code is ReplyCode.ACCEPTED:
                # only an accepted request moves the replay bound: a refused one with a huge
                # identification must not lock the MH out of registering again
                assert st is not None
                st.last_ident = req.identification
            else:
                self.log("registration_rejected", {**where, "reason": reason, "code": int(code)})
            payload = RegistrationReply(code, req.home_address, self.net.gateway.address, lifetime,
                                        req.identification).encode()
            fx.append(Reply(switch, port, src_mac, src_addr, src_port, code, payload))
            return fx

        st = self._by_addr.get(req.home_address)
        if st is None:
            return reply(ReplyCode.ADMIN_PROHIBITED, 0, "unknown mobile host")
        if req.identification <= st.last_ident:
            return reply(ReplyCode.IDENTIFICATION_MISMATCH, 0,
                         f"identification {req.identification} not above {st.last_ident}")
        if req.simultaneous:
            return self._probe_registration(st, switch, port, src_mac, req, now, fx, reply)
        if req.care_of != st.host.address:
            return reply(ReplyCode.ADMIN_PROHIBITED, 0, "care-of must equal the home address (S flag clear)")
        if req.deregistration:
            if st.bs == switch and st.phase in (Phase.ATTACHED, Phase.HANDING_OFF):
                fx += self._leave(st, now, "deregistration")
            else:
                self.log("deregistration_ignored", {"mh": st.host.name, **where, "phase": st.phase.value})
            return reply(ReplyCode.ACCEPTED, 0)
        if st.mac is not None and st.mac != src_mac:
            self.log("mac_changed", {"mh": st.host.name, "old": st.mac, "new": src_mac})
        st.binding_expiry = None if req.lifetime == LIFETIME_INFINITE else now + req.lifetime
        self._timer(st, st.binding_expiry)
        fx += self._attach(st, switch, port, src_mac, now, "registration", received)
        return reply(ReplyCode.ACCEPTED, req.lifetime)

    def malformed_registration(self, switch: str, port: int, src_mac: str, src_addr: str, src_port: int,
                               reason: str) -> list[Effect]:
        """A UDP/434 datagram from an access port that is not a valid request: answer 134, change nothing."""
        sw = self.net.switch(switch)
        where = {"switch": switch, "port": port, "src": src_addr, "reason": reason}
        p = sw.port(port) if sw is not None else None
        if p is None or p.role != PORT_ACCESS:
            self.log("registration_rejected", where)
            return []
        self.log("registration_rejected", {**where, "code": int(ReplyCode.POORLY_FORMED)})
        payload = RegistrationReply(ReplyCode.POORLY_FORMED, "0.0.0.0", self.net.gateway.address, 0, 0).encode()
        return [Reply(switch, port, src_mac, src_addr, src_port, ReplyCode.POORLY_FORMED, payload)]

    def move(self, name: str, bs: str, now: float, port: int | None = None) -> list[Effect]:
        """Operator handoff (`ctl handoff MH --to BS`): as if the MH had registered at `bs`."""
        st = self.state(name)
        sw = self.net.switch(bs)
        if sw is None or not sw.is_bs:
            raise MobilityError(f"{bs!r} is not a base station")
        access = [p.number for p in sw.ports if p.role == PORT_ACCESS]
        if port is None:
            if len(access) != 1:
                raise MobilityError(f"{bs} has access ports {access}: say which one (--port)")
            port = access[0]
        elif port not in access:
            raise MobilityError(f"port {port} of {bs} is not an access port (access ports: {access})")
        if st.mac is None:
            raise MobilityError(f"MAC of {st.host.name} unknown: give 'mac' in the description or let it register")
        return self._attach(st, bs, port, st.mac, now, "command")

    def detach(self, name: str, now: float) -> list[Effect]:
        """Operator detach (`ctl detach MH`): the MH lost its link."""
        st = self.state(name)
        if st.phase is Phase.UNKNOWN:
            raise MobilityError(f"{st.host.name} has never attached")
        if st.phase is Phase.DETACHED:
            self.log("detach_ignored", {"mh": st.host.name, "reason": "already detached"})
            return []
        return self._leave(st, now, "command")

    def packet_in(self, switch: str, packet: bytes, now: float) -> list[Effect]:
        """An IPv4 packet (decapsulated, no Ethernet) punted by `switch` for buffering."""
        try:
            ip = parse_ipv4(packet)
        except PacketError as exc:
            self.log("punt_malformed", {"switch": switch, "reason": str(exc)})
            return []
        nonce = marker_nonce(ip)
        if nonce is not None:
            return self._marker_back(switch, nonce, now)
        st = self._by_addr.get(ip.dst)
        if st is None:
            self.unknown_punts += 1
            self.log("punt_dropped", {"switch": switch, "dst": ip.dst, "reason": "not a mobile host's address"})
            return []
        if switch in st.diverts:
            if switch == self.gw and st.gw_marker is not None:
                segment = "pending"
            elif any(bs == switch for _, bs in st.path_markers.values()):
                segment = "returned"
            else:
                segment = "main"
            self.pool.push(st.host.name, ip.packet, segment)
            return self._drain(st, log=False) + self._maybe_complete(st, now)
        if st.phase in (Phase.ATTACHED, Phase.HANDING_OFF):
            # punted just before its switch stopped diverting: pass it on at once, on the path
            # the flush used (FIFO behind the flushed packets)
            st.late += 1
            self.pool.push(st.host.name, ip.packet)
            return self._drain(st, log=False)
        self.pool.push(st.host.name, ip.packet)
        return []

    # ------------------------------------------------------------------ recovery

    def restore_buffers(self, records: list[Record]) -> None:
        """Before `recover`: the buffers as the previous controller left them in the spool."""
        for mh, count in self.pool.restore(records).items():
            self.log("spool_discarded", {"mh": mh, "packets": count, "reason": "not a mobile host of this network"})
        for name in self.mhs:
            if len(self.pool[name]):
                self.log("spool_restored", {"mh": name, "packets": len(self.pool[name])})

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
        managed = self.managed_addresses()
        for sw, table in routes.items():
            self._routes[sw] = {a: r for a, r in table.items() if a in managed}
        for st in self.mhs.values():
            home = st.host.address
            on = {sw: t[home] for sw, t in self._routes.items() if home in t}
            delivers = [(sw, r) for sw, r in on.items() if isinstance(r, Deliver)]
            punts = {sw for sw, r in on.items() if isinstance(r, Punt)}
            tunnels = [sw for sw, r in on.items() if isinstance(r, Tunnel)]
            gw_route = on.get(self.gw)
            if delivers:
                chosen = next(((sw, r) for sw, r in delivers
                               if isinstance(gw_route, Forward) and gw_route.peer == sw), delivers[0])
                st.bs, st.port, st.mac = chosen[0], chosen[1].port, chosen[1].mac
                for sw, _ in delivers:
                    if sw != st.bs:
                        self._set(fx, sw, home, None)
                st.anchor = st.release_src = st.bs
                st.holds = {sw: now + self.hold_s for sw in tunnels}
                st.diverts = punts
                if len(self.pool[st.host.name]):
                    fx += self._prepare_resume(st, now)
                elif punts or gw_route != Forward(st.bs):
                    # a handoff interrupted by the restart completes towards the delivering BS
                    st.phase, st.started = Phase.HANDING_OFF, now
                    fx += self._complete(st, now, recovered=True)
                else:
                    st.phase = Phase.ATTACHED
                    for old in sorted(st.holds):
                        if self.net.peered(old, st.bs):
                            self._set(fx, old, home, Tunnel(st.bs, True))
                        else:
                            self._set(fx, old, home, None)
                            del st.holds[old]
            elif punts:
                st.phase, st.diverts = Phase.DETACHED, punts
                st.anchor = next((sw for sw in sorted(punts) if sw != self.gw), None)
                st.left_cell = self._cell(st.anchor)
                st.holds = {sw: now + self.hold_s for sw in tunnels}
            else:
                for sw in on:
                    self._set(fx, sw, home, None)
                if len(self.pool[st.host.name]):
                    self.log("spool_discarded", {"mh": st.host.name, "packets": self.pool.discard(st.host.name),
                                                 "reason": "no switch holds a route for it: location unknown"})
            for bs, addr in st.host.cell_addresses:
                r = self._routes[bs].get(addr)
                if isinstance(r, Deliver) and st.phase is Phase.ATTACHED and st.bs != bs:
                    st.probe = Probe(bs, addr, r.port, r.mac, None)
                    self._set(fx, self.gw, addr, Forward(bs))
                else:
                    self._set(fx, bs, addr, None)
                    if self._routes[self.gw].get(addr) == Forward(bs):
                        self._set(fx, self.gw, addr, None)
            for sw in st.holds:
                self._timer(st, st.holds[sw])
            self.log("recovered", {"mh": st.host.name, "phase": st.phase.value, "bs": st.bs,
                                   "diverting": sorted(st.diverts), "holds": sorted(st.holds)})
        return fx

    def _prepare_resume(self, st: MhState, now: float) -> list[Effect]:
        """Recovered mid-handoff with spooled packets: the handoff stays open until they are flushed, along
        the tunnel from the BS it left if there is one, and the gateway diverts so nothing overtakes them."""
        fx: list[Effect] = []
        name, home = st.host.name, st.host.address
        assert st.bs is not None
        old = next((sw for sw in sorted(st.diverts) if sw not in (self.gw, st.bs)), None)
        anchor = old if old is not None and self.net.peered(old, st.bs) else None
        st.phase, st.started = Phase.HANDING_OFF, now
        st.anchor, st.left_cell = anchor or st.bs, self._cell(old)
        st.release_tunnel, st.release_src = anchor is not None, anchor or st.bs
        st.flush_deadline = now + self.flush_s
        self._timer(st, st.flush_deadline)
        self.pool.promote_returned(name)         # the path markers they waited for died with the old process
        via = None
        if self.gw in st.diverts and old is not None:
            via = old         # a fresh gateway marker through the BS it left holds the gateway's punts, as before
        else:
            self.pool.promote_pending(name)
            if self.gw not in st.diverts:
                self._set(fx, self.gw, home, Punt())
                st.diverts.add(self.gw)
        self._resume.append((name, via))
        return fx

    def resume_flushes(self, now: float) -> list[Effect]:
        """After recovery and reconciliation: release the restored packets of interrupted handoffs."""
        fx: list[Effect] = []
        for name, via in self._resume:
            st = self.mhs[name]
            if st.phase is not Phase.HANDING_OFF:
                continue
            self.log("handoff_resumed", {"mh": name, "to": st.bs, "buffer": len(self.pool[name]),
                                         "release": "tunnel" if st.release_tunnel else "direct"})
            if via is not None:
                nonce = self._marker(st, now)
                st.gw_marker = (nonce, now + self.marker_s)
                fx.append(SendToward(self.gw, via, marker_packet(self.net.controller.address, st.host.address, nonce)))
                self.log("marker_sent", {"mh": name, "kind": "gateway", "via": via})
            fx += self._drain(st)
            if st.since_drain:
                fx += self._drain_marker(st, now)
            fx += self._maybe_complete(st, now)
        self._resume = []
        return fx
