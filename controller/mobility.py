"""IPF's handoff, per MH: registrations, detaches and punted packets in, ordered effects out.

The MH's inputs: registrations (Mobile IP, punted from an access port),
operator commands (`ctl handoff`, `ctl detach`) and packets punted for
buffering. What they set off is in `ipf_handoff.py` (IPF's buffer, flush and
reroute), `dsbp_probe.py` (DSBP's second path), `handoff_timers.py` and
`handoff_recovery.py` (controller restart); the state they share in
`mobility_base.py` and `mh_state.py`.

Sans-IO: every input carries the current time and returns the effects
(`p4handoff.controller.intents`) to apply in order; timers are polled through
`next_deadline()` / `on_time(now)`. Nothing here knows P4 names or sockets.
"""
from __future__ import annotations

from p4handoff.controller.intents import Effect, Reply
from p4handoff.controller.mh_state import MobilityError, Phase
from p4handoff.controller.network import PORT_ACCESS
from p4handoff.controller.packets import PacketError, marker_nonce, parse_ipv4
from p4handoff.controller.registration import LIFETIME_INFINITE, RegistrationReply, RegistrationRequest, ReplyCode
from p4handoff.controller.handoff_recovery import HandoffRecovery
from p4handoff.controller.handoff_timers import HandoffTimers


class Mobility(HandoffRecovery, HandoffTimers):
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
