"""The state every part of the handoff shares (`MobilityState`): wanted routes, the timer heap, markers, lookups."""
from __future__ import annotations

import pytest

from p4handoff.controller.intents import Deliver, Punt, SetRoute
from p4handoff.controller.mh_state import MobilityError
from p4handoff.controller.mobility_state import Markers, MobilityState, RouteTable, TimerHeap
from tests.ctl_parts import example_net


def test_a_route_write_is_emitted_only_when_the_wanted_route_changes():
    table = RouteTable(["gw", "bs1"])
    fx: list = []
    table.set(fx, "bs1", "10.0.1.1", Punt())
    table.set(fx, "bs1", "10.0.1.1", Punt())
    table.set(fx, "gw", "10.0.1.1", None)                    # nothing there to remove
    table.set(fx, "bs1", "10.0.1.1", None)
    assert fx == [SetRoute("bs1", "10.0.1.1", Punt()), SetRoute("bs1", "10.0.1.1", None)]
    assert table.on("10.0.1.1") == {}
    table.adopt("gw", {"10.0.1.1": Deliver(1, "02:00:00:00:00:09")})
    assert table.snapshot() == {"gw": {"10.0.1.1": Deliver(1, "02:00:00:00:00:09")}, "bs1": {}}


def test_the_heap_wakes_each_due_mh_once_and_keeps_the_rest():
    heap = TimerHeap()
    for mh, when in (("b", 2.0), ("a", 1.0), ("a", 1.5), ("c", None), ("c", 3.0)):
        heap.schedule(mh, when)
    assert heap.next_deadline() == 1.0
    assert heap.pop_due(2.0) == {"a", "b"}
    assert heap.next_deadline() == 3.0 and heap.pop_due(2.5) == set()


def test_markers_are_one_seeded_sequence_each_owned_by_its_mh_until_claimed_or_forgotten():
    first, second = Markers(TimerHeap(), 0.2, seed=7), Markers(TimerHeap(), 0.2, seed=7)
    a, b = first.issue("mh1", 0.0), first.issue("mh2", 0.0)
    assert (a, b) == (second.issue("x", 0.0), second.issue("y", 0.0)) and b == a + 1
    assert first.claim(a) == "mh1" and first.claim(a) is None
    first.forget(b)
    assert first.claim(b) is None


def test_lookups_by_name_or_address_and_cells():
    state = MobilityState(example_net())
    assert state.state("mh1") is state.state("10.0.1.1")
    with pytest.raises(MobilityError, match="unknown mobile host"):
        state.state("mh9")
    assert (state.cell("bs2"), state.cell(None)) == (2, 0)
    assert {"10.0.1.1", "10.0.12.1", "10.0.1.2"} <= state.managed_addresses()
    assert state.marker_s == 0.2 and state.hold_s == 0.5
