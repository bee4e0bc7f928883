"""The buffer service on BMv2: the testbed with `buffer_service` on port 4 of every switch.

The real `p4handoff ctl bufsvc` and `p4handoff ctl run` against the compiled
pipeline (topo/testbed.py). Skipped, with the reason, where BMv2, the
compiled program or network namespaces are missing.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from p4handoff.controller.bufsvc_wire import HELLO, NONCE, Channel, ChannelError
from p4handoff.topo.testbed import BUFSVC_CONTROL, Collector, HostPort, mh_ip, received_seqs
from p4handoff.wire import DSCP_IPF_PRIORITY_DEFAULT, IP_PROTO_IPIP
from tests.bmv2_support import BMV2_NETNS_MARKS, attach, running_testbed, send_stream
from tests.seq_support import overtaken

pytestmark = BMV2_NETNS_MARKS




@pytest.fixture
def tb(tmp_path):
    with running_testbed(tmp_path, n_mobiles=2, buffer_service=True) as bed:
        yield bed


def test_a_stream_handed_off_through_the_service_arrives_complete_in_order_and_priority_marked(tb):
    """The diverted packets go to the service (not the controller: no buffer packet-ins), come back
    tunnelled from it into bs2 priority-marked, and reach the MH complete and in order."""
    attach(tb, 0, "bs1", 1)
    svc_tap = HostPort(tb.fab, "b4")                      # bs2's buffer port: what the service releases into it
    cells = {c: Collector(tb.hosts[c]) for c in ("cell1", "cell2")}
    tap = Collector(svc_tap)
    n, gap = 300, 0.01
    sender = send_stream(tb, 0, range(n), gap)
    time.sleep(1.0)
    assert tb.ctl({"cmd": "detach", "mh": "mh1"})["phase"] == "detached-buffering"
    time.sleep(0.5)
    tb.register(0, "bs2", 2, wait_reply=0)
    sender.join(10)
    time.sleep(1.0)
    got1 = [s for s, _ in received_seqs(cells["cell1"].stop(), mh_ip(0))]
    got2 = [s for s, _ in received_seqs(cells["cell2"].stop(), mh_ip(0))]
    tapped = tap.stop()
    svc_tap.close()
    got = got1 + got2
    st = tb.mh_status(0)
    assert st["phase"] in ("attached", "attached-new") and st["bs"] == "bs2"
    assert sorted(got) == list(range(n)), f"missing {sorted(set(range(n)) - set(got))}"
    assert overtaken(got) <= st["late"]
    status = tb.ctl({"cmd": "status"})
    svc = status["buffer_service"]
    assert svc["up"] and svc["arrivals"] >= 30 and svc["released"] >= 30
    marked = []
    for f in tapped:
        if len(f) > 34 and f[12:14] == b"\x08\x00" and f[23] == IP_PROTO_IPIP and f[34 + 16:34 + 20] == \
                socket.inet_aton(mh_ip(0)):
            assert f[15] >> 2 == DSCP_IPF_PRIORITY_DEFAULT
            marked.append(int.from_bytes(f[34 + 28:34 + 32], "big"))
    assert len(marked) >= 30 and marked == sorted(marked)
    port = next(p for p in status["ports"] if p["switch"] == "bs2" and p["port"] == 1)
    assert port["counters"]["priority_admitted"] >= len(marked)
    # nothing of the MH's went through the controller's packet-in path
    assert not tb.log_events("punt_dropped")
    assert status["counters"]["packet_in"] < 30
    shown = subprocess.run([sys.executable, "-m", "p4handoff", "ctl", "status", "--socket", tb.socket_path],
                           capture_output=True, text=True, timeout=30).stdout
    assert "buffer service: up" in shown


def test_a_stranger_on_the_service_port_is_refused(tb):
    """A client with a wrong key is refused at the handshake and logged; one that connects and stays silent
    is dropped after 2 s and stalls nothing meanwhile; the controller's own connection is unaffected."""
    host, port = BUFSVC_CONTROL.rsplit(":", 1)

    def attempt(key: bytes) -> bytes:
        def run() -> bytes:
            s = socket.create_connection((host, int(port)), timeout=3)
            try:
                chan = Channel(key, "controller")
                hello = s.recv(4096)
                assert hello[4] == HELLO and len(hello) == 4 + 9 + NONCE
                _, reply = chan.feed(hello)
                s.sendall(reply)
                try:
                    return s.recv(4096)
                except OSError:
                    return b""
            finally:
                s.close()
        return tb.fab.call(run)

    assert attempt(b"\x00" * 32) == b""                    # closed on us: refused
    refused = tb.log_events_of(tb.bufsvc_log, "bufsvc_peer_refused")
    assert refused and "does not check" in refused[-1]["reason"]
    with pytest.raises(ChannelError):
        Channel(b"\x01" * 32, "controller").feed(b"\x00\x00\x00\x09" + bytes([3]) + bytes(8))
    # a stranger who connects and says nothing holds up nothing: a buffered handoff goes through meanwhile
    silent = tb.fab.call(lambda: socket.create_connection((host, int(port)), timeout=3))
    try:
        attach(tb, 0, "bs1", 1)
        cell2 = Collector(tb.hosts["cell2"])
        assert tb.ctl({"cmd": "detach", "mh": "mh1"})["phase"] == "detached-buffering"
        for seq in range(10):
            tb.hosts["ch"].send(tb.data_frame(0, seq))
        tb.wait_for(lambda s: s["mobile_hosts"][0]["buffer"] == 10, timeout=5)
        tb.register(0, "bs2", 2, wait_reply=0)
        tb.wait_for(lambda s: s["mobile_hosts"][0]["bs"] == "bs2" and s["mobile_hosts"][0]["phase"] == "attached")
        time.sleep(0.5)
        assert [s for s, _ in received_seqs(cell2.stop(), mh_ip(0))] == list(range(10))
        deadline = time.monotonic() + 5
        while not any("no valid handshake" in e["reason"]
                      for e in tb.log_events_of(tb.bufsvc_log, "bufsvc_peer_refused")):
            assert time.monotonic() < deadline, "the silent connection was never dropped"
            time.sleep(0.1)
    finally:
        silent.close()
    assert tb.ctl({"cmd": "status"})["buffer_service"]["up"]        # the controller's link was never disturbed


def test_packets_diverted_while_the_controller_is_down_survive_it_and_a_service_restart(tb):
    """The controller is killed (-9) while mh1 is detached; 40 packets are diverted meanwhile (with the
    packet-in path BMv2 drops them: nobody reads the packet-ins). The service keeps them, journaled; it is
    killed (-9) and restarted too, restores them from its spool, and hands them to the new controller, which
    flushes them to bs2 complete and in order."""
    n = 40
    attach(tb, 0, "bs1", 1)
    assert tb.ctl({"cmd": "detach", "mh": "mh1"})["phase"] == "detached-buffering"
    tb.stop_controller(kill=True)
    for seq in range(n):
        tb.hosts["ch"].send(tb.data_frame(0, seq))
        time.sleep(0.005)
    time.sleep(0.5)
    tb.stop_bufsvc(kill=True)
    assert (tb.workdir / "bufsvc.spool").stat().st_size > 0
    tb.start_bufsvc()
    assert tb.log_events_of(tb.bufsvc_log, "bufsvc_restored")[-1]["packets"] == n
    tb.start_controller()
    st = tb.wait_for(lambda s: s["mobile_hosts"][0]["buffer"] == n, timeout=10)["mobile_hosts"][0]
    assert st["phase"] == "detached-buffering"
    cell2 = Collector(tb.hosts["cell2"])
    tb.register(0, "bs2", 2, wait_reply=0)
    tb.wait_for(lambda s: s["mobile_hosts"][0]["bs"] == "bs2" and s["mobile_hosts"][0]["phase"] == "attached",
                timeout=10)
    time.sleep(1.0)
    assert [s for s, _ in received_seqs(cell2.stop(), mh_ip(0))] == list(range(n))
    time.sleep(0.3)
    assert (tb.workdir / "bufsvc.spool").stat().st_size == 0       # acknowledged: the service forgot them
