"""IPF's handoff: the old BS buffers, the buffer is flushed to the new BS priority-marked, routes follow.

This is the controller half of IPF (the paper's buffering at the old BS,
flush to the new one and priority marking; README, "Paper mechanisms"): it
decides when to buffer, when to flush and along which path. `buffer.py` holds
the IPF buffer, `transmit.py` sends the flush priority-marked.

Ordering (docs/controller.md, "Ordering"): while a handoff runs, every packet
for the MH that reaches a *diverting* switch (the old BS, the gateway) is
punted into one FIFO and released from there, priority-marked, along one
path (old BS → new BS tunnel). The gateway's packets are held until a drain
marker sent along the gateway → old BS link comes back punted by the old BS:
then every packet the gateway sent that way before diverting is already in
the FIFO, ahead of them. When the FIFO is empty and no marker is out, a last
marker follows the releases and comes back once they have passed the new
BS's ingress (packet-outs travel asynchronously, route writes do not); only
then are the diverting switches switched to their final routes (gateway →
new BS, old BS → priority tunnel to the new BS for the hold time).
"""
from __future__ import annotations

from p4handoff.controller.dsbp_probe import DsbpProbe
from p4handoff.controller.eventlog import LogFn
from p4handoff.controller.handoff_notify import Notifier
from p4handoff.controller.intents import Completed, Deliver, Effect, Forward, Punt, Release, SendToward, Tunnel
from p4handoff.controller.mh_state import MhState, Phase
from p4handoff.controller.mobility_state import MobilityState
from p4handoff.controller.packets import marker_packet
from p4handoff.notify import Event, Forwarding

MAX_DRAIN_ROUNDS = 2     # the first overlaps the gateway marker; a second covers what was released meanwhile
RELEASE_ALLOWANCE_S = 0.001   # a drain marker's timeout grows by this per release ahead of it (a floor of 1 k/s)


class IpfHandoff:
    """An MH's transitions (attach, leave, handoff) and the IPF flush with its markers.

    It takes a handoff's probe path down (`probe`) and announces DETACH and HANDOFF (`notifier`).
    """

    def __init__(self, state: MobilityState, log: LogFn, notifier: Notifier, probe: DsbpProbe) -> None:
        self.state = state
        self.log = log
        self.notifier = notifier
        self.probe = probe

    def attach(self, st: MhState, bs: str, port: int, mac: str, now: float, cause: str,
                received: float | None = None) -> list[Effect]:
        fx: list[Effect] = []
        name = st.host.name
        if st.phase is Phase.UNKNOWN:
            st.phase, st.bs, st.port, st.mac, st.anchor = Phase.ATTACHED, bs, port, mac, bs
            st.release_src, st.release_tunnel = bs, False
            self.state.routes.set(fx, bs, st.host.address, Deliver(port, mac))
            self.state.routes.set(fx, self.state.gw, st.host.address, Forward(bs))
            self.log("attached", {"mh": name, "bs": bs, "port": port, "cause": cause})
            return fx
        if st.phase in (Phase.ATTACHED, Phase.HANDING_OFF) and st.bs == bs:
            if (st.port, st.mac) != (port, mac):
                st.port, st.mac = port, mac
                if bs not in st.diverts:
                    self.state.routes.set(fx, bs, st.host.address, Deliver(port, mac))
            self.log("registration_refreshed", {"mh": name, "bs": bs, "port": port, "cause": cause})
            return fx
        if st.phase in (Phase.ATTACHED, Phase.HANDING_OFF):
            # make-before-break, or the MH moved on before its handoff completed (ping-pong)
            fx += self.leave(st, now, cause, notify=False)
        return fx + self._start_handoff(st, bs, port, mac, now, cause, received)

    def leave(self, st: MhState, now: float, cause: str, notify: bool = True) -> list[Effect]:
        """The MH left `st.bs`: that BS diverts its packets to the buffer from now on."""
        fx: list[Effect] = []
        src, left, port, mac = self._release_path(st)
        home = st.host.address
        if st.phase is Phase.ATTACHED:
            st.anchor = left
            st.left_cell = self.state.cell(left)
            self.state.routes.set(fx, left, home, Punt())
            st.diverts.add(left)
        elif left not in st.diverts:
            # left the BS it was being handed to: releases still on their way there come back punted
            self.state.routes.set(fx, left, home, Punt())
            st.diverts.add(left)
            if st.release_tunnel:
                nonce = self.state.markers.issue(st.host.name, now)
                st.path_markers[nonce] = (now + self.state.marker_s, left)
                fx.append(Release(st.host.name, marker_packet(self.state.net.controller.address, home, nonce),
                                  src, left, port, mac, True))
        if st.drain_marker is not None:          # it followed releases to the BS just left
            self.state.markers.forget(st.drain_marker[0])
        st.drain_marker, st.drain_rounds, st.since_drain = None, 0, 0
        st.phase, st.bs, st.port = Phase.DETACHED, None, None
        self.log("detached", {"mh": st.host.name, "bs": left, "cause": cause,
                              "diverting": sorted(st.diverts), "buffer": len(self.state.pool[st.host.name])})
        if notify:
            fx += self.notifier.notify(st, Event.DETACH, home, st.left_cell, 0, mh_at=(left, port))
        return fx

    def _start_handoff(self, st: MhState, bs: str, port: int, mac: str, now: float, cause: str,
                       received: float | None = None) -> list[Effect]:
        fx: list[Effect] = []
        home = st.host.address
        st.phase, st.bs, st.port, st.mac = Phase.HANDING_OFF, bs, port, mac
        st.started = now if received is None else min(received, now)
        st.flush_deadline = now + self.state.flush_s
        st.drain_marker, st.drain_rounds, st.since_drain, st.flushed = None, 0, 0, 0
        self.state.timers.schedule(st.host.name, st.flush_deadline)
        # one release path per handoff keeps the FIFO order; never tunnel into a BS that diverts. With a buffer
        # service every release it can make is tunnelled from it into the new BS (bufsvc_path.py)
        st.release_tunnel = bs not in st.diverts and (
            self.state.net.buffer_service is not None
            or (st.anchor is not None and st.anchor != bs and self.state.net.peered(st.anchor, bs)))
        st.release_src = (st.anchor or bs) if st.release_tunnel else bs
        self.log("handoff_start", {"mh": st.host.name, "from": st.anchor, "to": bs, "port": port, "cause": cause,
                                   "buffer": len(self.state.pool[st.host.name]),
                                   "release": "tunnel" if st.release_tunnel else "direct",
                                   "queued_ms": round((now - st.started) * 1000, 3)})
        # The gateway's divert, the old BS's (leave, just before) and the new BS's delivery are written at once
        # (`with_previous`): nothing reaches the new BS for the MH but the releases, which follow all three, and
        # the gateway's marker leaves only once both diverting switches divert. Its round trip is the longest
        # step, so it is the first packet out.
        marker_via: str | None = None
        if self.state.gw not in st.diverts:
            prev = self.state.routes.get(self.state.gw, home)
            self.state.routes.set(fx, self.state.gw, home, Punt(), with_previous=True)
            st.diverts.add(self.state.gw)
            self.log("gateway_diverted", {"mh": st.host.name, "was": getattr(prev, "peer", None)})
            if isinstance(prev, Forward) and prev.peer in st.diverts:
                marker_via = prev.peer
        if bs not in st.diverts:                   # before any release reaches it
            self.state.routes.set(fx, bs, home, Deliver(port, mac), with_previous=True)
            st.holds.pop(bs, None)
            self.log("delivery_installed", {"mh": st.host.name, "bs": bs, "port": port})
        if marker_via is not None:
            fx += self.gateway_marker(st, marker_via, now)
        fx += self.drain(st)
        if st.since_drain:
            fx += self.drain_marker(st, now)      # overlaps with the gateway marker's round trip
        return fx + self.maybe_complete(st, now)

    def drain(self, st: MhState, log: bool = True) -> list[Effect]:
        """Release every ready packet towards the BS the MH is at (nothing while detached).

        Batches are logged; single packets passed on as they arrive (`log=False`)
        are only counted (buffer stats) so a stream does not flood the log.
        """
        if st.phase is Phase.DETACHED or st.phase is Phase.UNKNOWN:
            return []
        fx: list[Effect] = []
        name = st.host.name
        src, bs, port, mac = self._release_path(st)
        while (pkt := self.state.pool.pop_main(name)) is not None:
            fx.append(Release(name, pkt, src, bs, port, mac, st.release_tunnel))
        st.since_drain += len(fx)
        st.flushed += len(fx)
        if fx and log:
            self.log("flush", {"mh": name, "packets": len(fx), "from": src, "to": bs,
                               "path": "tunnel" if st.release_tunnel else "direct"})
        return fx

    def maybe_complete(self, st: MhState, now: float) -> list[Effect]:
        if st.phase is not Phase.HANDING_OFF or st.gw_marker is not None or st.path_markers \
                or len(self.state.pool[st.host.name]) > 0 or st.drain_marker is not None:
            return []
        if st.since_drain and st.drain_rounds < MAX_DRAIN_ROUNDS:
            return self.drain_marker(st, now)
        return self.complete(st, now)

    def drain_marker(self, st: MhState, now: float) -> list[Effect]:
        """A marker behind the releases so far: back once they are all queued at the new BS.

        Releases travel asynchronously (stream, CPU port, link) while route writes do not, so
        the final routes wait for it: what the new routes bring then queues behind the flush.
        """
        src, bs, port, mac = self._release_path(st)
        extra = st.since_drain * RELEASE_ALLOWANCE_S       # it waits behind them: a big flush is not cut short
        nonce = self.state.markers.issue(st.host.name, now, extra)
        st.drain_marker = (nonce, now + self.state.marker_s + extra)
        st.drain_rounds += 1
        self.log("marker_sent", {"mh": st.host.name, "kind": "drain", "via": src, "to": bs,
                                 "behind": st.since_drain})
        st.since_drain = 0
        packet = marker_packet(self.state.net.controller.address, self.state.net.controller.address, nonce)
        if st.release_tunnel:
            return [Release(st.host.name, packet, src, bs, port, mac, True)]
        # direct releases left through the new BS's own ingress: the marker follows them there
        # and goes up to the gateway, which punts it
        return [SendToward(bs, self.state.gw, packet)]

    def drain_behind(self, nonce: int, releases: int) -> None:
        """Drain marker `nonce` left behind `releases` releases on its path, other MHs' too (a group's flushes
        share the old BS's tunnel, each MH's marker behind every release of the group before it): its timeout
        grows by the allowance for each, so a group's flush is not cut short either. Nothing if the marker
        is no longer awaited."""
        name = self.state.markers.owner(nonce)
        st = self.state.mhs.get(name) if name is not None else None
        if st is None or st.drain_marker is None or st.drain_marker[0] != nonce or releases <= 0:
            return
        deadline = st.drain_marker[1] + releases * RELEASE_ALLOWANCE_S
        st.drain_marker = (nonce, deadline)
        self.state.timers.schedule(st.host.name, deadline)

    def gateway_marker(self, st: MhState, via: str, now: float) -> list[Effect]:
        """A marker from the gateway through `via` (a BS that diverts): back once all the gateway sent there is in
        the buffer, so the gateway's own punts (held as `pending`) queue behind them."""
        nonce = self.state.markers.issue(st.host.name, now)
        st.gw_marker = (nonce, now + self.state.marker_s)
        self.log("marker_sent", {"mh": st.host.name, "kind": "gateway", "via": via})
        return [SendToward(self.state.gw, via, marker_packet(self.state.net.controller.address, st.host.address, nonce))]

    @staticmethod
    def _release_path(st: MhState) -> tuple[str, str, int, str]:
        """(release source, serving BS, access port, MAC) of an MH attached or handing off.

        An invariant, not input: `attach`, `_start_handoff` and `HandoffRecovery.recover` set all four together
        when they enter those phases, and `leave` clears the BS and port only as it leaves them.
        """
        assert st.phase in (Phase.ATTACHED, Phase.HANDING_OFF), st.phase
        assert st.release_src is not None and st.bs is not None and st.port is not None and st.mac is not None, st
        return st.release_src, st.bs, st.port, st.mac

    def complete(self, st: MhState, now: float, forced: bool = False, recovered: bool = False) -> list[Effect]:
        """Final routes: new BS delivering, gateway → new BS (the path is active: HANDOFF goes out),
        then the old BSs tunnel to it priority-marked for the hold time."""
        fx: list[Effect] = []
        new, home, name, left = st.bs, st.host.address, st.host.name, st.anchor
        assert new is not None and st.port is not None and st.mac is not None
        # the new BS before the gateway: once the gateway sends there, it delivers
        if new in st.diverts:
            self.state.routes.set(fx, new, home, Deliver(st.port, st.mac))
        self.state.routes.set(fx, self.state.gw, home, Forward(new))
        old_cell = st.left_cell
        st.phase, st.anchor = Phase.ATTACHED, new
        st.late += st.since_drain           # released after the last drain marker: may be overtaken
        st.gw_marker, st.path_markers, st.drain_marker, st.since_drain = None, {}, None, 0
        st.handoffs += 1
        if not recovered:
            # the flush has passed the new BS's ingress (drain marker back): forwarded, flush over
            left_sw = self.state.net.switch(left) if left is not None else None
            signal = left_sw is None or left_sw.signal_forwarding     # the BS the MH left says it flushed
            fwd = Forwarding(min(st.flushed, 0xFFFF), 0) if st.flushed and signal else None
            fx += self.notifier.notify(st, Event.HANDOFF, home, old_cell, self.state.cell(new), mh_at=(new, st.port),
                                       forwarding=fwd)
            if st.started is not None:
                fx.append(Completed(name, st.started))
        # the old BSs last: the gateway's marker came back, so nothing it sent is still on its way
        # there; whatever they punt until their tunnel is written is passed on at once (late)
        st.diverts.discard(self.state.gw)
        st.diverts.discard(new)
        for old in sorted(st.diverts):
            st.holds[old] = now + self.state.hold_s
        st.diverts.clear()
        st.holds.pop(new, None)
        for old in sorted(st.holds):
            if self.state.hold_s > 0 and self.state.net.peered(old, new):
                self.state.routes.set(fx, old, home, Tunnel(new, True))
                self.state.timers.schedule(st.host.name, st.holds[old])
            else:
                self.state.routes.set(fx, old, home, None)
                del st.holds[old]
        self.log("rerouted", {"mh": name, "gateway_to": new, "holds": sorted(st.holds)})
        if st.probe is not None:
            fx += self.probe.down(st, "handoff", notify=st.probe.bs != new)
        buf = self.state.pool[name].stats
        self.log("handoff_complete", {
            "mh": name, "bs": new, "forced": forced, "recovered": recovered,
            "duration_ms": round((now - (st.started if st.started is not None else now)) * 1000, 3),
            "released": buf.released, "dropped_overflow": buf.dropped_overflow,
            "dropped_global": buf.dropped_global, "late": st.late})
        st.started = st.flush_deadline = None
        return fx

    def marker_back(self, switch: str, nonce: int, now: float) -> list[Effect]:
        """A marker punted back by `switch`: what it held back is released, the handoff completes if it can."""
        name = self.state.markers.claim(nonce)
        if name is None:
            self.log("marker_stale", {"via": switch, "reason": "no outstanding marker with this nonce"})
            return []
        st = self.state.mhs[name]
        if st.drain_marker is not None and st.drain_marker[0] == nonce:
            st.drain_marker = None
            self.log("marker_returned", {"mh": name, "kind": "drain", "via": switch})
        elif st.gw_marker is not None and st.gw_marker[0] == nonce:
            st.gw_marker = None
            self.state.pool.promote_pending(st.host.name)
            self.log("marker_returned", {"mh": st.host.name, "kind": "gateway", "via": switch})
        elif nonce in st.path_markers:
            del st.path_markers[nonce]
            if not st.path_markers:
                self.state.pool.promote_returned(st.host.name)
            self.log("marker_returned", {"mh": st.host.name, "kind": "path", "via": switch})
        else:
            self.log("marker_stale", {"mh": st.host.name, "via": switch, "reason": "marker no longer awaited"})
            return []
        return self.drain(st) + self.maybe_complete(st, now)
