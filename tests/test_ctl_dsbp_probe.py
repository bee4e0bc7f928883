"""DSBP's probe path on its own (`DsbpProbe`): up, refreshed, refused, down, with its routes and notifications.

The MH is attached through the real IPF part; the answers are what
`Mobility.registration` turns into the Registration Reply.
"""
from __future__ import annotations

from p4handoff.controller.intents import Deliver, Forward, Notify, SetRoute
from p4handoff.controller.registration import FLAG_S, RegistrationRequest, ReplyCode
from p4handoff.notify import Event
from tests.ctl_parts import MH1_MAC, Parts, example_net

PROBE_ADDR = "10.0.12.1"          # mh1's address in bs2's cell (topo/three-switch.yaml)


def probe_request(care_of: str = PROBE_ADDR, lifetime: int = 30) -> RegistrationRequest:
    return RegistrationRequest("10.0.1.1", care_of, lifetime=lifetime, flags=FLAG_S)


def test_probe_up_delivers_in_the_probed_cell_routes_the_gateway_there_and_tells_the_correspondent():
    p = Parts(example_net())
    st = p.attached()
    fx, answer = p.probe.register(st, "bs2", 1, MH1_MAC, probe_request(), 2.0)
    assert answer == (ReplyCode.ACCEPTED, 30, "")
    assert [(e.switch, e.addr, e.action) for e in fx if isinstance(e, SetRoute)] == [
        ("bs2", PROBE_ADDR, Deliver(1, MH1_MAC)), ("gw", PROBE_ADDR, Forward("bs2"))]
    sent = [e for e in fx if isinstance(e, Notify)]
    assert [(e.note.event, e.host) for e in sent] == [(Event.PROBE_UP, "ch"), (Event.PROBE_UP, "mh1")]
    assert (sent[0].note.path_addr, sent[0].note.old_cell, sent[0].note.new_cell) == (PROBE_ADDR, 1, 2)
    assert st.probe is not None and st.probe.expiry == 32.0
    assert p.state.timers.next_deadline() == 32.0            # its lifetime is on the shared heap


def test_a_refresh_from_the_same_port_changes_no_route_and_notifies_nobody():
    p = Parts(example_net())
    st = p.attached()
    p.probe.register(st, "bs2", 1, MH1_MAC, probe_request(), 2.0)
    fx, answer = p.probe.register(st, "bs2", 1, MH1_MAC, probe_request(lifetime=60), 3.0)
    assert fx == [] and answer == (ReplyCode.ACCEPTED, 60, "")
    assert st.probe is not None and st.probe.expiry == 63.0 and p.events()[-1] == "probe_refreshed"


def test_refused_without_effects_when_the_care_of_is_wrong_or_the_mh_is_not_attached_elsewhere():
    p = Parts(example_net())
    st = p.mh()
    fx, answer = p.probe.register(st, "bs2", 1, MH1_MAC, probe_request(), 1.0)       # never attached
    assert fx == [] and answer[0] is ReplyCode.ADMIN_PROHIBITED and st.probe is None
    p.attached()
    fx, answer = p.probe.register(st, "bs2", 1, MH1_MAC, probe_request("10.0.11.1"), 1.0)   # bs1's cell
    assert fx == [] and answer[0] is ReplyCode.ADMIN_PROHIBITED and "not mh1's address" in answer[2]
    fx, answer = p.probe.register(st, "bs1", 1, MH1_MAC, probe_request("10.0.11.1"), 1.0)   # its own BS
    assert fx == [] and answer[0] is ReplyCode.ADMIN_PROHIBITED and st.probe is None


def test_deregistration_and_down_remove_both_routes_and_say_so_only_when_asked():
    p = Parts(example_net())
    st = p.attached()
    p.probe.register(st, "bs2", 1, MH1_MAC, probe_request(), 2.0)
    fx, answer = p.probe.register(st, "bs2", 1, MH1_MAC, probe_request(lifetime=0), 3.0)
    assert answer == (ReplyCode.ACCEPTED, 0, "")
    assert [(e.switch, e.action) for e in fx if isinstance(e, SetRoute)] == [("bs2", None), ("gw", None)]
    assert [e.note.event for e in fx if isinstance(e, Notify)] == [Event.PROBE_DOWN, Event.PROBE_DOWN]
    assert p.state.routes.on(PROBE_ADDR) == {}

    p.probe.register(st, "bs2", 1, MH1_MAC, probe_request(), 4.0)
    quiet = p.probe.down(st, "test", notify=False)
    assert [type(e) for e in quiet] == [SetRoute, SetRoute] and st.probe is None
