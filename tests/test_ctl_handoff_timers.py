"""The timeouts on their own (`HandoffTimers`): markers lost, a flush past its deadline, holds, lifetimes.

What falls due is carried on by the real IPF part and probe path; the test
only moves the clock (`on_time`).
"""
from __future__ import annotations

from p4handoff.controller.intents import Completed, Forward, Notify, Release, SetRoute, Tunnel
from p4handoff.controller.mh_state import Phase
from p4handoff.controller.registration import FLAG_S, RegistrationRequest
from p4handoff.notify import Event
from tests.ctl_parts import MH1_MAC, Parts, data_packet, example_net


def handing_off(p: Parts, now: float = 1.0):
    """mh1 moved bs1 → bs2 at `now`, the gateway's marker out, one packet held by the gateway."""
    st = p.attached()
    p.ipf.attach(st, "bs2", 1, MH1_MAC, now, "test")
    p.state.pool.push("mh1", data_packet("10.0.1.1", 7), "pending")
    return st


def test_nothing_due_does_nothing():
    p = Parts(example_net())
    st = handing_off(p)
    assert p.timers.on_time(1.0 + p.state.marker_s / 2) == []
    assert st.gw_marker is not None and st.phase is Phase.HANDING_OFF


def test_a_lost_gateway_marker_counts_as_returned_and_what_the_gateway_held_is_released():
    p = Parts(example_net())
    st = handing_off(p)
    [fx] = p.timers.on_time(1.0 + p.state.marker_s)
    assert ("marker_timeout", {"mh": "mh1", "kind": "gateway"}) in p.logs
    held = [e for e in fx if isinstance(e, Release)]
    assert held and held[0].packet == data_packet("10.0.1.1", 7) and st.gw_marker is None
    assert st.drain_marker is not None                  # the flush is followed by a drain marker


def test_a_flush_past_its_deadline_completes_the_handoff_forced():
    p = Parts(example_net(marker_timeout_ms=5000, flush_timeout_ms=1000))   # the markers outlive the flush
    st = handing_off(p)
    assert p.timers.on_time(1.5) == [] and st.gw_marker is not None
    late_marker = st.gw_marker[0]
    [fx] = p.timers.on_time(2.0)
    assert st.phase is Phase.ATTACHED and st.gw_marker is None and st.drain_marker is None
    done = [f for e, f in p.logs if e == "handoff_complete"]
    assert len(done) == 1 and done[0]["forced"] is True and done[0]["released"] == 1
    assert [e.packet for e in fx if isinstance(e, Release)] == [data_packet("10.0.1.1", 7)]
    assert Completed("mh1", 1.0) in fx and ("gw", Forward("bs2")) in [
        (e.switch, e.action) for e in fx if isinstance(e, SetRoute)]
    assert p.ipf.marker_back("bs1", late_marker, 2.1) == []             # forgotten: it no longer counts
    assert p.logs[-1] == ("marker_stale", {"via": "bs1", "reason": "no outstanding marker with this nonce"})


def test_the_old_bs_tunnel_ends_with_its_hold():
    p = Parts(example_net())
    st = p.attached()
    p.ipf.attach(st, "bs2", 1, MH1_MAC, 1.0, "test")
    p.ipf.complete(st, 1.1)
    assert p.state.routes.get("bs1", "10.0.1.1") == Tunnel("bs2", True)
    assert p.timers.on_time(1.1 + p.state.hold_s / 2) == [] and "bs1" in st.holds
    [fx] = p.timers.on_time(1.1 + p.state.hold_s)
    assert [(e.switch, e.action) for e in fx if isinstance(e, SetRoute)] == [("bs1", None)]
    assert st.holds == {} and "hold_expired" in p.events()


def test_binding_and_probe_lifetimes_end_in_a_detach_and_a_probe_down():
    p = Parts(example_net())
    st = p.attached()
    p.probe.register(st, "bs2", 1, MH1_MAC,
                     RegistrationRequest("10.0.1.1", "10.0.12.1", lifetime=5, flags=FLAG_S), 0.0)
    [fx] = p.timers.on_time(5.0)
    assert st.probe is None and [e.note.event for e in fx if isinstance(e, Notify)] == [Event.PROBE_DOWN] * 2
    st.binding_expiry = 9.0
    p.state.timers.schedule("mh1", 9.0)
    [fx] = p.timers.on_time(9.0)
    assert st.phase is Phase.DETACHED and [e.note.event for e in fx if isinstance(e, Notify)][:1] == [Event.DETACH]



def test_timers_due_together_answer_one_effect_list_per_mh():
    """Two MHs' holds end at once: one effect list each, with only its own MH's route (the daemon adds each
    as an input of its own, so both deletes share one Write instead of a chain of Writes through every MH)."""
    p = Parts(example_net())
    for name in ("mh1", "mh2"):
        st = p.attached(name)
        p.ipf.attach(st, "bs2", 1, MH1_MAC, 1.0, "test")
        p.ipf.complete(st, 1.1)
    due = p.timers.on_time(1.1 + p.state.hold_s)
    assert [[(e.switch, e.addr, e.action) for e in fx if isinstance(e, SetRoute)] for fx in due] == [
        [("bs1", p.state.mhs[name].host.address, None)] for name in ("mh1", "mh2")]
    assert [e for e, _ in p.logs].count("hold_expired") == 2
