"""Hostile registrations through real switches: BMv2 punts them, the real `ctl run` refuses each, nothing changes.

Gateway + two BSs on simple_switch_grpc (topo/testbed.py). Skipped, with
the reason, where BMv2, the compiled program or namespaces are missing. The
same inputs in bulk, without a switch: tests/test_ctl_hostile.py and
tests/test_ctl_hostile_daemon.py.
"""
from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4handoff.controller.network import parse_network
from p4handoff.controller.packets import ethernet, udp_packet
from p4handoff.topo.testbed import mh_mac
from p4handoff.wire import UDP_PORT_MIP_REGISTRATION
from tests.hostile_inputs import hostile_registration_payload
from tests.bmv2_support import BMV2_NETNS_MARKS, attach, running_testbed

pytestmark = BMV2_NETNS_MARKS
N = 200


@pytest.fixture
def tb(tmp_path):
    with running_testbed(tmp_path, n_mobiles=2) as bed:
        yield bed


@settings(max_examples=1, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_hostile_registrations_through_bmv2_change_nothing(tb, data):
    attach(tb, 0, "bs1", 1)
    attach(tb, 1, "bs2", 1)
    net = parse_network(tb.description())
    payloads = data.draw(st.lists(hostile_registration_payload(net), min_size=N, max_size=N))
    before = {n: tb.ctl({"cmd": "entries", "switch": n})["entries"] for n in ("gw", "bs1", "bs2")}
    model = tb.ctl({"cmd": "status", "counters": False})["mobile_hosts"]

    def refused() -> int:
        """Refused by Mobility (one line each) or before it, by authentication (counted; lines rate-bounded)."""
        counts = tb.ctl({"cmd": "status", "counters": False})["registrations_unauthenticated"]
        return len(tb.log_events("registration_rejected")) + sum(counts.values())
    rejected = refused()
    for k, (src, payload, _) in enumerate(payloads):
        cell = tb.hosts["cell1" if k % 2 else "cell2"]
        cell.send(ethernet("ff:ff:ff:ff:ff:ff", mh_mac(k % 2), udp_packet(
            src, "255.255.255.255", UDP_PORT_MIP_REGISTRATION, UDP_PORT_MIP_REGISTRATION, payload)))
        time.sleep(0.002)
    deadline = time.monotonic() + 20
    while refused() - rejected < N:
        assert time.monotonic() < deadline, "not every hostile registration reached the controller and was refused"
        time.sleep(0.1)
    time.sleep(0.5)
    assert refused() - rejected == N
    assert all(e.get("reason") for e in tb.log_events("registration_rejected"))
    assert tb.ctl({"cmd": "status", "counters": False})["mobile_hosts"] == model
    assert {n: tb.ctl({"cmd": "entries", "switch": n})["entries"] for n in ("gw", "bs1", "bs2")} == before
    assert not tb.log_events("internal_error")
