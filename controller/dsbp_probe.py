"""DSBP's second path: the MH's address in a neighbouring cell, delivered there while it stays attached.

A Registration Request with the S flag from another BS's access port, with
the MH's address in that BS's cell as care-of, brings the probe path up
(that BS delivers, the gateway forwards there, `PROBE_UP` to the
correspondents); a deregistration, its lifetime, a move elsewhere or the
MH's handoff take it down again (`PROBE_DOWN`).
"""
from __future__ import annotations

from p4handoff.controller.eventlog import LogFn
from p4handoff.controller.handoff_notify import Notifier
from p4handoff.controller.intents import Deliver, Effect, Forward
from p4handoff.controller.mh_state import MhState, Phase, Probe
from p4handoff.controller.mobility_state import MobilityState
from p4handoff.controller.registration import LIFETIME_INFINITE, RegistrationRequest, ReplyCode
from p4handoff.notify import Event

Answer = tuple[ReplyCode, int, str]     # (reply code, lifetime granted, reason if refused)


class DsbpProbe:
    """The probe path of each MH (`MhState.probe`): at most one, at a BS other than its serving one."""

    def __init__(self, state: MobilityState, log: LogFn, notifier: Notifier) -> None:
        self.state = state
        self.log = log
        self.notifier = notifier

    def register(self, st: MhState, bs: str, port: int, mac: str, req: RegistrationRequest,
                 now: float) -> tuple[list[Effect], Answer]:
        """A registration with the S flag (already checked as `st`'s and fresh): its effects and the answer."""
        fx: list[Effect] = []
        routes = self.state.routes
        expected = st.host.cell_address(bs)
        if expected is None or req.care_of != expected:
            return fx, (ReplyCode.ADMIN_PROHIBITED, 0,
                        f"care-of {req.care_of} is not {st.host.name}'s address in the cell of {bs}")
        if req.deregistration:
            if st.probe is not None and st.probe.bs == bs:
                fx += self.down(st, "deregistration")
            return fx, (ReplyCode.ACCEPTED, 0, "")
        if st.phase is not Phase.ATTACHED or st.bs == bs:
            return fx, (ReplyCode.ADMIN_PROHIBITED, 0, "a probe path needs the MH attached at another base station")
        expiry = None if req.lifetime == LIFETIME_INFINITE else now + req.lifetime
        self.state.timers.schedule(st.host.name, expiry)
        if st.probe is not None and st.probe.bs == bs:
            st.probe.expiry = expiry
            if (st.probe.port, st.probe.mac) != (port, mac):
                st.probe.port, st.probe.mac = port, mac
                routes.set(fx, bs, expected, Deliver(port, mac))
            self.log("probe_refreshed", {"mh": st.host.name, "bs": bs, "addr": expected})
            return fx, (ReplyCode.ACCEPTED, req.lifetime, "")
        if st.probe is not None:
            fx += self.down(st, "moved")
        st.probe = Probe(bs, expected, port, mac, expiry)
        routes.set(fx, bs, expected, Deliver(port, mac))
        routes.set(fx, self.state.gw, expected, Forward(bs))
        self.log("probe_up", {"mh": st.host.name, "bs": bs, "addr": expected})
        fx += self.notifier.notify(st, Event.PROBE_UP, expected, self.state.cell(st.bs), self.state.cell(bs),
                                   mh_at=(st.bs, st.port))
        return fx, (ReplyCode.ACCEPTED, req.lifetime, "")

    def down(self, st: MhState, cause: str, notify: bool = True) -> list[Effect]:
        """Take `st`'s probe path down (both routes), telling the correspondents unless `notify` is off."""
        fx: list[Effect] = []
        probe = st.probe
        assert probe is not None
        st.probe = None
        self.state.routes.set(fx, probe.bs, probe.addr, None)
        self.state.routes.set(fx, self.state.gw, probe.addr, None)
        self.log("probe_down", {"mh": st.host.name, "bs": probe.bs, "addr": probe.addr, "cause": cause,
                                "notified": notify})
        if notify:
            fx += self.notifier.notify(st, Event.PROBE_DOWN, probe.addr, self.state.cell(st.bs) if st.bs else 0,
                                       self.state.cell(probe.bs), mh_at=(st.bs, st.port) if st.bs else None)
        return fx
