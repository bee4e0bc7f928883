"""IPF's part on its own (`IpfHandoff`): attach, leave, the flush with its markers and the final routes.

Driven directly, with the real shared state, notifier and probe path; the
markers are handed back as the switches would punt them (`marker_back`).
"""
from __future__ import annotations

from p4handoff.controller.intents import Completed, Deliver, Forward, Notify, Punt, Release, SendToward, SetRoute, Tunnel
from p4handoff.controller.mh_state import Phase
from p4handoff.controller.packets import marker_nonce, parse_ipv4
from p4handoff.controller.registration import FLAG_S, RegistrationRequest
from p4handoff.notify import Event
from tests.ctl_parts import MH1_MAC, Parts, data_packet, example_net


def routes(fx: list) -> list[tuple[str, object]]:
    return [(e.switch, e.action) for e in fx if isinstance(e, SetRoute) and e.addr == "10.0.1.1"]


def notes(fx: list) -> list[tuple[Event, str]]:
    return [(e.note.event, e.host) for e in fx if isinstance(e, Notify)]


def test_first_attach_delivers_at_the_bs_and_points_the_gateway_there():
    p = Parts(example_net())
    st = p.mh()
    fx = p.ipf.attach(st, "bs1", 1, MH1_MAC, 0.0, "test")
    assert routes(fx) == [("bs1", Deliver(1, MH1_MAC)), ("gw", Forward("bs1"))]
    assert st.phase is Phase.ATTACHED and st.anchor == "bs1" and not notes(fx)


def test_leave_diverts_the_old_bs_into_the_buffer_and_tells_correspondent_and_mh():
    p = Parts(example_net())
    st = p.attached()
    fx = p.ipf.leave(st, 1.0, "test")
    assert routes(fx) == [("bs1", Punt())]
    assert st.phase is Phase.DETACHED and st.diverts == {"bs1"} and st.left_cell == 1
    assert notes(fx) == [(Event.DETACH, "ch"), (Event.DETACH, "mh1")]


def test_handoff_flushes_the_buffer_in_order_over_the_tunnel_and_reroutes_only_after_every_marker():
    p = Parts(example_net())
    st = p.attached()
    p.ipf.leave(st, 1.0, "test")
    for seq in range(3):                                   # punted by bs1 while the MH is away
        p.state.pool.push("mh1", data_packet("10.0.1.1", seq))
    fx = p.ipf.attach(st, "bs2", 1, MH1_MAC, 1.5, "test")
    # gateway diverted first, with a marker through the BS it sent to; delivery at bs2 before any release
    assert routes(fx) == [("gw", Punt()), ("bs2", Deliver(1, MH1_MAC))]
    gw_marker = next(e for e in fx if isinstance(e, SendToward))
    assert (gw_marker.switch, gw_marker.peer) == ("gw", "bs1")
    released = [e for e in fx if isinstance(e, Release)]
    assert [int.from_bytes(parse_ipv4(e.packet).packet[-4:], "big") for e in released[:3]] == [0, 1, 2]
    assert all((e.source, e.target, e.tunnel) == ("bs1", "bs2", True) for e in released)
    drain = released[3]                                    # a drain marker follows the releases
    assert marker_nonce(parse_ipv4(drain.packet)) == st.drain_marker[0]
    assert st.phase is Phase.HANDING_OFF and not notes(fx)

    fx = p.ipf.marker_back("bs2", st.drain_marker[0], 1.51)
    assert fx == [] and st.phase is Phase.HANDING_OFF       # the gateway's marker is still out
    fx = p.ipf.marker_back("bs1", marker_nonce(parse_ipv4(gw_marker.packet)), 1.52)
    assert routes(fx) == [("gw", Forward("bs2")), ("bs1", Tunnel("bs2", True))]
    assert notes(fx) == [(Event.HANDOFF, "ch"), (Event.HANDOFF, "mh1")]
    assert Completed("mh1", 1.5) in fx
    assert st.phase is Phase.ATTACHED and st.handoffs == 1 and st.holds == {"bs1": 1.52 + p.state.hold_s}


def test_a_handoff_into_the_probed_cell_takes_the_probe_path_down_quietly():
    p = Parts(example_net())
    st = p.attached()
    probe_addr = st.host.cell_address("bs2")
    p.probe.register(st, "bs2", 1, MH1_MAC, RegistrationRequest("10.0.1.1", probe_addr, flags=FLAG_S), 0.1)
    assert st.probe is not None
    fx = p.ipf.attach(st, "bs2", 1, MH1_MAC, 0.5, "test")
    fx += p.ipf.complete(st, 0.6, forced=True)
    assert st.probe is None
    assert [(e.switch, e.action) for e in fx if isinstance(e, SetRoute) and e.addr == probe_addr] == [
        ("bs2", None), ("gw", None)]
    assert Event.PROBE_DOWN not in [e for e, _ in notes(fx)]        # the MH is in that cell now
    assert ("probe_down", {"mh": "mh1", "bs": "bs2", "addr": probe_addr, "cause": "handoff",
                           "notified": False}) in p.logs


def test_a_marker_nobody_waits_for_changes_nothing():
    p = Parts(example_net())
    p.attached()
    assert p.ipf.marker_back("bs1", 12345, 1.0) == []
    assert p.logs[-1][0] == "marker_stale"
