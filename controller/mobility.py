"""IPF's handoff, per MH: registrations, detaches and punted packets in, ordered effects out.

The MH's inputs: registrations (Mobile IP, punted from an access port),
operator commands (`ctl handoff`, `ctl detach`) and packets punted for
buffering, all handled here. `Mobility` holds the parts of the handoff over
one shared state (`mobility_state.MobilityState`: all MHs, wanted routes,
timers, markers; `mh_state.MhState` per MH): `ipf` (`ipf_handoff.py`: IPF's
buffer, flush and reroute), `probe` (`dsbp_probe.py`: DSBP's second path),
`timers` (`handoff_timers.py`) and `recovery` (`handoff_recovery.py`:
controller restart); notifications are made by `handoff_notify.Notifier`.

Sans-IO: every input carries the current time and returns the effects
(`p4handoff.controller.intents`) to apply in order; timers are polled through
`next_deadline()` / `on_time(now)`. Nothing here knows P4 names or sockets.
"""
from __future__ import annotations

from typing import Any

from p4handoff.controller.buffer import BufferPool
from p4handoff.controller.dsbp_probe import DsbpProbe
from p4handoff.controller.eventlog import LogFn, no_log
from p4handoff.controller.handoff_notify import Notifier
from p4handoff.controller.handoff_recovery import HandoffRecovery
from p4handoff.controller.handoff_timers import HandoffTimers
from p4handoff.controller.intents import Effect, Reply, RouteAction
from p4handoff.controller.ipf_handoff import IpfHandoff
from p4handoff.controller.mh_state import MhState, MobilityError, Phase
from p4handoff.controller.mobility_state import MobilityState
from p4handoff.controller.network import PORT_ACCESS, Network
from p4handoff.controller.packets import PacketError, marker_nonce, may_be_marker, parse_ipv4
from p4handoff.controller.registration import LIFETIME_INFINITE, RegistrationReply, RegistrationRequest, ReplyCode
from p4handoff.controller.spool import Record, Spool


class Mobility:
    """MH registrations, operator commands and punted packets in; ordered effects out."""

    def __init__(self, net: Network, log: LogFn | None = None, seed: int | None = None,
                 spool: Spool | None = None) -> None:
        self.log: LogFn = log or no_log
        self.net = net
        self.shared = MobilityState(net, seed, spool)
        self.notifier = Notifier(net, self.log)
        self.probe = DsbpProbe(self.shared, self.log, self.notifier)
        self.ipf = IpfHandoff(self.shared, self.log, self.notifier, self.probe)
        self.timers = HandoffTimers(self.shared, self.log, self.ipf, self.probe)
        self.recovery = HandoffRecovery(self.shared, self.log, self.ipf)
        self.unknown_punts = 0

    # ------------------------------------------------------------------ queries

    @property
    def mhs(self) -> dict[str, MhState]:
        return self.shared.mhs

    @property
    def pool(self) -> BufferPool:
        return self.shared.pool

    @property
    def marker_s(self) -> float:
        return self.shared.marker_s

    def routes(self) -> dict[str, dict[str, RouteAction]]:
        """The host routes the mobility logic wants on each switch (mobile and probe addresses)."""
        return self.shared.routes.snapshot()

    def state(self, name: str) -> MhState:
        """The MH called `name` or with home address `name` (MobilityError if none)."""
        return self.shared.state(name)

    def status(self) -> list[dict[str, Any]]:
        """Each MH as `ctl status` shows it: phase, where, holds, buffer and its counters."""
        out = []
        for st in self.shared.mhs.values():
            buf = self.shared.pool[st.host.name]
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
        """When `on_time` is next due (None: no timer running)."""
        return self.shared.timers.next_deadline()

    # ------------------------------------------------------------------ time and restarts

    def on_time(self, now: float) -> list[list[Effect]]:
        """Run every timer due at `now`: one effect list per MH (`HandoffTimers.on_time`)."""
        return self.timers.on_time(now)

    def restore_buffers(self, records: list[Record]) -> None:
        """Before `recover`: the buffers as the previous controller left them in the spool."""
        self.recovery.restore_buffers(records)

    def recover(self, routes: dict[str, dict[str, RouteAction]], now: float) -> list[Effect]:
        """Rebuild MH state from the routes read back from the switches (`HandoffRecovery.recover`)."""
        return self.recovery.recover(routes, now)

    def resume_flushes(self, now: float) -> list[Effect]:
        """After recovery and reconciliation: release the restored packets of interrupted handoffs."""
        return self.recovery.resume_flushes(now)

    # ------------------------------------------------------------------ inputs

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

        st = self.shared.by_addr.get(req.home_address)
        if st is None:
            return reply(ReplyCode.ADMIN_PROHIBITED, 0, "unknown mobile host")
        if req.identification <= st.last_ident:
            return reply(ReplyCode.IDENTIFICATION_MISMATCH, 0,
                         f"identification {req.identification} not above {st.last_ident}")
        if req.simultaneous:
            probe_fx, answer = self.probe.register(st, switch, port, src_mac, req, now)
            fx += probe_fx
            return reply(*answer)
        if req.care_of != st.host.address:
            return reply(ReplyCode.ADMIN_PROHIBITED, 0, "care-of must equal the home address (S flag clear)")
        if req.deregistration:
            if st.bs == switch and st.phase in (Phase.ATTACHED, Phase.HANDING_OFF):
                fx += self.ipf.leave(st, now, "deregistration")
            else:
                self.log("deregistration_ignored", {"mh": st.host.name, **where, "phase": st.phase.value})
            return reply(ReplyCode.ACCEPTED, 0)
        if st.mac is not None and st.mac != src_mac:
            self.log("mac_changed", {"mh": st.host.name, "old": st.mac, "new": src_mac})
        st.binding_expiry = None if req.lifetime == LIFETIME_INFINITE else now + req.lifetime
        self.shared.timers.schedule(st.host.name, st.binding_expiry)
        fx += self.ipf.attach(st, switch, port, src_mac, now, "registration", received)
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
        st = self.shared.state(name)
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
        return self.ipf.attach(st, bs, port, st.mac, now, "command")

    def detach(self, name: str, now: float) -> list[Effect]:
        """Operator detach (`ctl detach MH`): the MH lost its link."""
        st = self.shared.state(name)
        if st.phase is Phase.UNKNOWN:
            raise MobilityError(f"{st.host.name} has never attached")
        if st.phase is Phase.DETACHED:
            self.log("detach_ignored", {"mh": st.host.name, "reason": "already detached"})
            return []
        return self.ipf.leave(st, now, "command")

    def marker_back(self, switch: str, nonce: int, now: float) -> list[Effect]:
        """Marker `nonce` is back at `switch` without its own packet: a marker sent behind it on the same path
        came back (the daemon coalesces markers per path, effect_batch.py)."""
        return self.ipf.marker_back(switch, nonce, now)

    def drain_behind(self, nonce: int, releases: int) -> None:
        """Drain marker `nonce` went out behind `releases` releases on its path, other MHs' included: its
        timeout grows to match (`IpfHandoff.drain_behind`; the daemon counts them per step, effect_batch.py)."""
        self.ipf.drain_behind(nonce, releases)

    def packet_in(self, switch: str, packet: bytes, now: float) -> list[Effect]:
        """An IPv4 packet (decapsulated, no Ethernet) punted by `switch` for buffering."""
        try:
            ip = parse_ipv4(packet)
        except PacketError as exc:
            self.log("punt_malformed", {"switch": switch, "reason": str(exc)})
            return []
        nonce = marker_nonce(ip) if may_be_marker(ip.packet) else None
        if nonce is not None:
            return self.ipf.marker_back(switch, nonce, now)
        st = self.shared.by_addr.get(ip.dst)
        if st is None:
            self.unknown_punts += 1
            self.log("punt_dropped", {"switch": switch, "dst": ip.dst, "reason": "not a mobile host's address"})
            return []
        if switch in st.diverts:
            if switch == self.shared.gw and st.gw_marker is not None:
                segment = "pending"
            elif any(bs == switch for _, bs in st.path_markers.values()):
                segment = "returned"
            else:
                segment = "main"
            self.shared.pool.push(st.host.name, ip.packet, segment)
            return self.ipf.drain(st, log=False) + self.ipf.maybe_complete(st, now)
        if st.phase in (Phase.ATTACHED, Phase.HANDING_OFF):
            # punted just before its switch stopped diverting: pass it on at once, on the path
            # the flush used (FIFO behind the flushed packets)
            st.late += 1
            self.shared.pool.push(st.host.name, ip.packet)
            return self.ipf.drain(st, log=False)
        self.shared.pool.push(st.host.name, ip.packet)
        return []
