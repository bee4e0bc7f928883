"""A controller killed (-9) mid-handoff on BMv2 loses no buffered packet: the spool (controller/spool.py).

Gateway + two BSs (simple_switch_grpc) in namespaces and the real `p4handoff ctl
run` (topo/testbed.py). Skipped, with the reason, where BMv2, the compiled
program or network namespaces are missing. The same restarts on the in-memory
network: tests/test_ctl_spool.py.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from p4handoff.controller.release_fence import FENCE_TIMEOUT
from p4handoff.controller.spool import decode_all
from p4handoff.topo.testbed import Collector, Testbed, mh_ip, mh_name, received_seqs
from tests.bmv2_support import BMV2_NETNS_MARKS, attach, running_testbed

pytestmark = BMV2_NETNS_MARKS
N = 40


@pytest.fixture
def tb(tmp_path):
    with running_testbed(tmp_path, n_mobiles=1) as bed:
        yield bed


def buffer_stream(tb: Testbed) -> None:
    """mh1 attached at bs1, then detached: N packets from the correspondent wait in its buffer."""
    attach(tb, 0, "bs1", 1)
    assert tb.ctl({"cmd": "detach", "mh": mh_name(0)})["phase"] == "detached-buffering"
    for seq in range(N):
        tb.hosts["ch"].send(tb.data_frame(0, seq))
        time.sleep(0.005)
    tb.wait_for(lambda s: s["mobile_hosts"][0]["buffer"] == N, timeout=10)


def test_killed_while_buffering_the_restarted_controller_flushes_everything(tb):
    buffer_stream(tb)
    spool = Path(tb.socket_path).with_suffix(".spool")
    assert spool.stat().st_size > 0
    tb.stop_controller(kill=True)
    tb.start_controller()
    st = tb.wait_for(lambda s: s["mobile_hosts"][0]["buffer"] == N, timeout=10)["mobile_hosts"][0]
    assert st["phase"] == "detached-buffering"
    restored = [e for e in tb.log_events("spool_restored") if e["mh"] == mh_name(0)]
    assert restored and restored[-1]["packets"] == N
    cell1, cell2 = Collector(tb.hosts["cell1"]), Collector(tb.hosts["cell2"])
    tb.register(0, "bs2", 2, wait_reply=0)           # the collectors take the reply
    tb.wait_for(lambda s: s["mobile_hosts"][0]["bs"] == "bs2" and s["mobile_hosts"][0]["buffer"] == 0, timeout=10)
    time.sleep(1.0)
    assert [s for s, _ in received_seqs(cell2.stop(), mh_ip(0))] == list(range(N))
    assert received_seqs(cell1.stop(), mh_ip(0)) == []
    tb.wait_for(lambda s: s["buffer_total"] == 0)
    # emptied once the last release's fence is answered (at the latest when it expires)
    deadline = time.monotonic() + FENCE_TIMEOUT + 1.0
    while spool.stat().st_size and time.monotonic() < deadline:
        time.sleep(0.05)
    assert spool.stat().st_size == 0, f"left in the spool: {decode_all(spool.read_bytes())[0]}"


def test_killed_as_the_handoff_starts_nothing_buffered_is_lost(tb):
    """The kill lands just after the registration at bs2 reached the controller (or just before: then the MH
    registers again, as an MH without a reply does). Everything buffered arrives; a packet whose
    packet-out left before the kill but whose release was not yet journaled may come twice, never missing."""
    buffer_stream(tb)
    cell2 = Collector(tb.hosts["cell2"])
    tb.register(0, "bs2", 2, wait_reply=0)
    time.sleep(0.005)
    tb.stop_controller(kill=True)
    tb.start_controller()
    st = tb.mh_status(0)
    if st["bs"] != "bs2":
        tb.register(0, "bs2", 3, wait_reply=0)
    tb.wait_for(lambda s: s["mobile_hosts"][0]["bs"] == "bs2" and s["mobile_hosts"][0]["phase"] == "attached"
                and s["mobile_hosts"][0]["buffer"] == 0, timeout=15)
    time.sleep(1.0)
    got = [s for s, _ in received_seqs(cell2.stop(), mh_ip(0))]
    first = list(dict.fromkeys(got))
    assert sorted(first) == list(range(N)), f"missing {sorted(set(range(N)) - set(got))}"
    assert first == list(range(N)), "first copies in order"
    print(f"duplicates after the kill: {len(got) - len(first)}")
