"""DSBP's second path: the MH's address in a neighbouring cell, delivered there while it stays attached.

A Registration Request with the S flag from another BS's access port, with
the MH's address in that BS's cell as care-of, brings the probe path up
(that BS delivers, the gateway forwards there, `PROBE_UP` to the
correspondents); a deregistration, its lifetime, a move elsewhere or the
MH's handoff take it down again (`PROBE_DOWN`).
"""
from __future__ import annotations

from typing import Callable

from p4handoff.controller.intents import Deliver, Effect, Forward
from p4handoff.controller.mh_state import MhState, Phase, Probe
from p4handoff.controller.mobility_base import MobilityBase
from p4handoff.controller.registration import LIFETIME_INFINITE, RegistrationRequest, ReplyCode
from p4handoff.notify import Event


class DsbpProbePath(MobilityBase):
    """The probe path of each MH (`MhState.probe`): at most one, at a BS other than its serving one."""

    def _probe_registration(self, st: MhState, bs: str, port: int, mac: str, req: RegistrationRequest,
                            now: float, fx: list[Effect], reply: Callable[..., list[Effect]]) -> list[Effect]:
        expected = st.host.cell_address(bs)
        if expected is None or req.care_of != expected:
            return reply(ReplyCode.ADMIN_PROHIBITED, 0,
                         f"care-of {req.care_of} is not {st.host.name}'s address in the cell of {bs}")
        if req.deregistration:
            if st.probe is not None and st.probe.bs == bs:
                fx += self._probe_down(st, now, "deregistration")
            return reply(ReplyCode.ACCEPTED, 0)
        if st.phase is not Phase.ATTACHED or st.bs == bs:
            return reply(ReplyCode.ADMIN_PROHIBITED, 0,
                         "a probe path needs the MH attached at another base station")
        expiry = None if req.lifetime == LIFETIME_INFINITE else now + req.lifetime
        self._timer(st, expiry)
        if st.probe is not None and st.probe.bs == bs:
            st.probe.expiry = expiry
            if (st.probe.port, st.probe.mac) != (port, mac):
                st.probe.port, st.probe.mac = port, mac
                self._set(fx, bs, expected, Deliver(port, mac))
            self.log("probe_refreshed", {"mh": st.host.name, "bs": bs, "addr": expected})
            return reply(ReplyCode.ACCEPTED, req.lifetime)
        if st.probe is not None:
            fx += self._probe_down(st, now, "moved")
        st.probe = Probe(bs, expected, port, mac, expiry)
        self._set(fx, bs, expected, Deliver(port, mac))
        self._set(fx, self.gw, expected, Forward(bs))
        self.log("probe_up", {"mh": st.host.name, "bs": bs, "addr": expected})
        fx += self._notify(st, Event.PROBE_UP, expected, self._cell(st.bs), self._cell(bs), mh_at=(st.bs, st.port))
        return reply(ReplyCode.ACCEPTED, req.lifetime)

    def _probe_down(self, st: MhState, now: float, cause: str, notify: bool = True) -> list[Effect]:
        fx: list[Effect] = []
        probe = st.probe
        assert probe is not None
        st.probe = None
        self._set(fx, probe.bs, probe.addr, None)
        self._set(fx, self.gw, probe.addr, None)
        self.log("probe_down", {"mh": st.host.name, "bs": probe.bs, "addr": probe.addr, "cause": cause,
                                "notified": notify})
        if notify:
            fx += self._notify(st, Event.PROBE_DOWN, probe.addr, self._cell(st.bs) if st.bs else 0,
                               self._cell(probe.bs), mh_at=(st.bs, st.port) if st.bs else None)
        return fx

