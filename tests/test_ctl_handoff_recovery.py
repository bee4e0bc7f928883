"""The restart on its own (`HandoffRecovery`): MH state rebuilt from read-back routes, spooled buffers flushed.

The routes are those a first set of parts (the controller before the restart)
left; a fresh set over the same network recovers from them, with the real
IPF part finishing what the restart interrupted.
"""
from __future__ import annotations

from p4handoff.controller.intents import Deliver, Forward, Notify, Punt, Release, SetRoute, Tunnel
from p4handoff.controller.mh_state import Phase
from p4handoff.controller.packets import parse_ipv4
from p4handoff.controller.spool import PUSH, Record
from tests.ctl_parts import MH1_MAC, Parts, data_packet, example_net

HOME = "10.0.1.1"


def test_an_attached_mh_is_taken_over_as_it_is_without_a_single_effect():
    net = example_net()
    before = Parts(net)
    before.attached()
    after = Parts(net, seed=8)
    assert after.recovery.recover(before.state.routes.snapshot(), 5.0) == []
    st = after.mh()
    assert (st.phase, st.bs, st.port, st.mac, st.anchor) == (Phase.ATTACHED, "bs1", 1, MH1_MAC, "bs1")
    assert after.mh("mh2").phase is Phase.UNKNOWN


def test_a_handoff_the_restart_interrupted_completes_towards_the_delivering_bs_without_a_notification():
    net = example_net()
    before = Parts(net)
    st = before.attached()
    before.ipf.attach(st, "bs2", 1, MH1_MAC, 1.0, "test")           # gateway and bs1 punt, bs2 delivers
    routes = before.state.routes.snapshot()
    assert routes["gw"][HOME] == Punt() and routes["bs1"][HOME] == Punt()
    after = Parts(net, seed=8)
    fx = after.recovery.recover(routes, 5.0)
    assert [(e.switch, e.action) for e in fx if isinstance(e, SetRoute)] == [
        ("gw", Forward("bs2")), ("bs1", Tunnel("bs2", True))]
    assert not [e for e in fx if isinstance(e, Notify)]
    assert after.mh().phase is Phase.ATTACHED and "recovered" in after.events()


def test_spooled_packets_of_an_interrupted_handoff_are_flushed_in_order_after_reconciliation():
    net = example_net()
    before = Parts(net)
    st = before.attached()
    before.ipf.leave(st, 0.5, "test")
    before.ipf.attach(st, "bs2", 1, MH1_MAC, 1.0, "test")
    routes = before.state.routes.snapshot()
    after = Parts(net, seed=8)
    after.recovery.restore_buffers([Record(PUSH, "mh1", i, "main", data_packet(HOME, i)) for i in range(3)]
                                   + [Record(PUSH, "nobody", 9, "main", b"x")])
    assert ("spool_discarded", {"mh": "nobody", "packets": 1,
                                "reason": "not a mobile host of this network"}) in after.logs
    assert after.recovery.recover(routes, 5.0) == []                 # the gateway already punts
    assert after.mh().phase is Phase.HANDING_OFF
    fx = after.recovery.resume_flushes(5.1)
    released = [e for e in fx if isinstance(e, Release)]
    assert [int.from_bytes(parse_ipv4(e.packet).packet[-4:], "big") for e in released[:3]] == [0, 1, 2]
    assert all((e.source, e.target, e.tunnel) == ("bs1", "bs2", True) for e in released)
    assert after.mh().gw_marker is not None                          # a fresh gateway marker holds its punts
    assert after.recovery.resume_flushes(5.2) == []                  # resumed once


def test_spooled_packets_of_an_mh_no_switch_knows_are_discarded_and_stray_routes_removed():
    net = example_net()
    after = Parts(net)
    after.recovery.restore_buffers([Record(PUSH, "mh1", 0, "main", data_packet(HOME, 0))])
    stray = {"gw": {}, "bs1": {"10.0.11.1": Deliver(1, MH1_MAC)}, "bs2": {}}
    fx = after.recovery.recover(stray, 1.0)
    assert [(e.switch, e.addr, e.action) for e in fx] == [("bs1", "10.0.11.1", None)]
    assert len(after.state.pool["mh1"]) == 0 and "spool_discarded" in after.events()
