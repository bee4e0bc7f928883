"""What happens when a handoff's time runs out: markers, the flush, holds, binding and probe lifetimes.

Every deadline is a (time, MH) on the shared `TimerHeap`; `on_time(now)` runs
each MH's due ones at once and answers one effect list per MH. A marker that does not come back counts as
returned (its punted packets are released), a flush past its timeout
completes the handoff (`forced`), an old BS's hold ends its priority
tunnel, an expired binding detaches the MH, an expired probe path goes down.
"""
from __future__ import annotations

from p4handoff.controller.dsbp_probe import DsbpProbe
from p4handoff.controller.eventlog import LogFn
from p4handoff.controller.intents import Effect
from p4handoff.controller.ipf_handoff import MAX_DRAIN_ROUNDS, IpfHandoff
from p4handoff.controller.mh_state import MhState, Phase
from p4handoff.controller.mobility_state import MobilityState


class HandoffTimers:
    """The timeouts of each MH's handoff, binding and probe path: what is due goes on through `ipf` and `probe`."""

    def __init__(self, state: MobilityState, log: LogFn, ipf: IpfHandoff, probe: DsbpProbe) -> None:
        self.state = state
        self.log = log
        self.ipf = ipf
        self.probe = probe

    def on_time(self, now: float) -> list[list[Effect]]:
        """Run every timer due at `now`: marker and flush timeouts, hold expiry, binding lifetimes; one
        effect list per MH whose timers were due (each MH's list is its own input: the daemon batches
        them as it does packet-ins, so 200 timed-out markers are not 400 Writes one after another)."""
        return [fx for name in sorted(self.state.timers.pop_due(now))
                if (fx := self._expire(self.state.mhs[name], now))]

    def _expire(self, st: MhState, now: float) -> list[Effect]:
        """Whatever of `st` is due at `now`, in order: markers, flush, holds, binding, probe path."""
        fx: list[Effect] = []
        name = st.host.name
        if st.gw_marker is not None and st.gw_marker[1] <= now:
            self.state.markers.forget(st.gw_marker[0])
            st.gw_marker = None
            self.state.pool.promote_pending(name)
            self.log("marker_timeout", {"mh": name, "kind": "gateway"})
        if st.drain_marker is not None and st.drain_marker[1] <= now:
            self.state.markers.forget(st.drain_marker[0])
            st.drain_marker = None
            self.log("marker_timeout", {"mh": name, "kind": "drain"})
        for nonce, (deadline, bs) in list(st.path_markers.items()):
            if deadline <= now:
                del st.path_markers[nonce]
                self.state.markers.forget(nonce)
                self.log("marker_timeout", {"mh": name, "kind": "path", "bs": bs})
                if not st.path_markers:
                    self.state.pool.promote_returned(name)
        fx += self.ipf.drain(st) + self.ipf.maybe_complete(st, now)
        if st.phase is Phase.HANDING_OFF and st.flush_deadline is not None and st.flush_deadline <= now:
            for nonce in [m[0] for m in (st.gw_marker, st.drain_marker) if m] + list(st.path_markers):
                self.state.markers.forget(nonce)
            st.gw_marker, st.path_markers, st.drain_marker = None, {}, None
            st.drain_rounds = MAX_DRAIN_ROUNDS
            self.state.pool.promote_returned(name)
            self.state.pool.promote_pending(name)
            fx += self.ipf.drain(st) + self.ipf.complete(st, now, forced=True)
        for old, until in list(st.holds.items()):
            if until <= now and st.phase is Phase.ATTACHED:
                del st.holds[old]
                self.state.routes.set(fx, old, st.host.address, None)
                self.log("hold_expired", {"mh": name, "bs": old})
        if st.binding_expiry is not None and st.binding_expiry <= now:
            st.binding_expiry = None
            if st.phase in (Phase.ATTACHED, Phase.HANDING_OFF):
                fx += self.ipf.leave(st, now, "lifetime")
        if st.probe is not None and st.probe.expiry is not None and st.probe.expiry <= now:
            fx += self.probe.down(st, "lifetime")
        return fx
