"""The controller on BMv2: gateway + two BSs (simple_switch_grpc) in namespaces, raw-frame hosts.

Runs the real `p4handoff ctl run` against the compiled pipeline
(topo/testbed.py). Skipped, with the reason, where BMv2, the compiled
program (p4c) or network namespaces are missing.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import yaml

from p4handoff.bmv2 import DEFAULT_QUEUE_DEPTH
from p4handoff.controller.registration import FLAG_D, FLAG_S, ReplyCode
from p4handoff.topo.testbed import Collector, HostPort, Testbed, cell_ip, mh_ip, mh_name, parse_udp_frame, received_seqs
from p4handoff.notify import Event, Notification
from p4handoff.wire import DSCP_IPF_PRIORITY_DEFAULT, IP_PROTO_IPIP, UDP_PORT_HANDOFF_NOTIFY
from tests.bmv2_support import BMV2_NETNS_MARKS, REPO, attach, running_testbed, send_stream
from tests.seq_support import overtaken

pytestmark = BMV2_NETNS_MARKS



def notes(frames: list[bytes]) -> list[Notification]:
    out = []
    for f in frames:
        u = parse_udp_frame(f)
        if u is not None and u.dport == UDP_PORT_HANDOFF_NOTIFY:
            out.append(Notification.decode(u.payload))
    return out




@pytest.fixture
def tb(tmp_path):
    with running_testbed(tmp_path, n_mobiles=2) as bed:
        yield bed


def test_full_handoff_of_a_stream(tb):
    """Buffered packets reach the MH complete and in order, priority-marked on the BS-to-BS hop,
    counted as priority at the new BS; correspondent told DETACH then HANDOFF."""
    attach(tb, 0, "bs1", 1)
    tunnel_tap = HostPort(tb.fab, "b3")                   # bs1 → bs2 link, bs2's end
    cells = {c: Collector(tb.hosts[c]) for c in ("cell1", "cell2")}
    ch = Collector(tb.hosts["ch"])
    tap = Collector(tunnel_tap)
    n, gap = 300, 0.01
    sender = send_stream(tb, 0, range(n), gap)
    time.sleep(1.0)
    assert tb.ctl({"cmd": "detach", "mh": "mh1"})["phase"] == "detached-buffering"
    time.sleep(0.5)                                       # ~50 packets buffered at bs1
    tb.register(0, "bs2", 2, wait_reply=0)
    sender.join(10)
    time.sleep(1.0)
    got1 = [s for s, _ in received_seqs(cells["cell1"].stop(), mh_ip(0))]
    got2 = [s for s, _ in received_seqs(cells["cell2"].stop(), mh_ip(0))]
    tapped = tap.stop()
    tunnel_tap.close()
    got = got1 + got2
    st = tb.mh_status(0)
    assert st["phase"] in ("attached", "attached-new") and st["bs"] == "bs2"
    assert sorted(got) == list(range(n)), f"missing {sorted(set(range(n)) - set(got))}"
    assert overtaken(got) <= st["late"]
    assert got1 == sorted(got1) and max(got1) < min(got2)
    # the buffered packets crossed bs1 → bs2 tunnelled, outer DSCP = the IPF codepoint
    marked = []
    for f in tapped:
        if len(f) > 34 and f[12:14] == b"\x08\x00" and f[23] == IP_PROTO_IPIP:
            inner = parse_udp_frame(f[:14] + f[34:])
            if inner is not None and inner.dst == mh_ip(0):
                assert f[15] >> 2 == DSCP_IPF_PRIORITY_DEFAULT
                marked.append(int.from_bytes(inner.payload[:4], "big"))
    assert len(marked) >= 30 and marked == sorted(marked)
    assert st["buffered"] >= len(marked) and st["dropped_overflow"] == 0
    port = next(p for p in tb.ctl({"cmd": "status"})["ports"] if p["switch"] == "bs2" and p["port"] == 1)
    assert port["counters"]["priority_admitted"] >= len(marked)
    events = [(x.event, x.old_cell, x.new_cell) for x in notes(ch.stop()) if x.mh_addr == mh_ip(0)]
    assert events == [(Event.DETACH, 1, 0), (Event.HANDOFF, 1, 2)]
    done = tb.log_events("handoff_complete")
    assert len(done) == 1 and not done[0]["forced"]
    phases = [e["event"] for e in tb.log_events() if e.get("mh") == "mh1"]
    for phase in ("attached", "detached", "handoff_start", "delivery_installed", "gateway_diverted",
                  "marker_sent", "flush", "marker_returned", "rerouted", "notified", "handoff_complete",
                  "handoff_active"):
        assert phase in phases


@pytest.mark.parametrize("service", [
    pytest.param(False, id="controller", marks=pytest.mark.xfail(
        strict=False, reason="known loss on the controller's path: the release credit counts what ingress has read, "
        "not what egress has sent; on a quiet machine 581 of 600 arrived (docs/controller.md, 'Not yet a "
        "guarantee')")),
    pytest.param(True, id="service", marks=pytest.mark.xfail(
        strict=False, reason="known loss on the service's path too: its echo passes the new BS's ingress and "
        "buffer-port egress, not the MH port's egress queue (depth 64 here), so ingress can outpace that queue; "
        "the first quiet-machine CI run lost packets 519-529 of 600 (docs/controller.md, 'Pacing')")),
])
def test_a_big_flush_arrives_complete_and_in_order_through_default_depth_queues(tmp_path, service):
    """600 buffered packets released at once, through egress queues of BMv2's default depth (64). The
    controller's releases are credit-limited to what the switch has read (release_credit.py): without the
    credit 4-23 % of them were lost (2 runs); with it none under load, 19 on a quiet machine. The buffer
    service writes them straight into the new BS's buffer port, at most a window (32) not yet echoed back
    through that BS's ingress (bufsvc_pacer.py). Neither bounds the MH port's egress queue, so neither is strict
    (docs/controller.md)."""
    n = 600
    bed = Testbed(tmp_path, n_mobiles=1, per_mh_packets=1000, buffer_service=service)
    try:
        bed.start()
        for name in ("gw", "bs1", "bs2") if service else ("bs1", "bs2"):
            for port in bed.switches[name].ports:
                bed.switches[name].cli.set_queue_depth(DEFAULT_QUEUE_DEPTH, port=port)
        bed.start_controller()
        attach(bed, 0, "bs1", 1)
        cell2 = Collector(bed.hosts["cell2"])
        assert bed.ctl({"cmd": "detach", "mh": "mh1"})["phase"] == "detached-buffering"
        send_stream(bed, 0, range(n), 0.002).join(10)
        bed.wait_for(lambda s: s["mobile_hosts"][0]["buffered"] >= n, timeout=10)
        bed.register(0, "bs2", 2, wait_reply=0)
        bed.wait_for(lambda s: s["mobile_hosts"][0]["phase"] == "attached" and s["mobile_hosts"][0]["bs"] == "bs2",
                     timeout=20)
        time.sleep(1.0)
        got = [s for s, _ in received_seqs(cell2.stop(), mh_ip(0))]
        assert got == list(range(n)), f"{len(got)} of {n} arrived, missing {sorted(set(range(n)) - set(got))[:20]}"
        status = bed.ctl({"cmd": "status"})
        if service:
            assert status["buffer_service"]["released"] == n + 1 and status["counters"]["packet_out"] < 10   # + the marker
        else:
            assert status["counters"]["credit_waits"] >= n // 32 - 1        # the flush did wait for the switch
        assert not bed.log_events("marker_timeout")                     # the drain marker followed the flush
    finally:
        bed.close()


def test_forged_priority_mark_from_the_core_is_sanitised(tb):
    attach(tb, 0, "bs1", 1)
    cell = Collector(tb.hosts["cell1"])
    for seq in range(5):
        tb.hosts["ch"].send(tb.data_frame(0, seq, dscp=DSCP_IPF_PRIORITY_DEFAULT))
    time.sleep(1.0)
    got = received_seqs(cell.stop(), mh_ip(0))
    assert [s for s, _ in got] == list(range(5)) and all(dscp == 0 for _, dscp in got)
    gw = next(s for s in tb.ctl({"cmd": "status"})["switches"] if s["name"] == "gw")
    assert gw["sanitised"] == {"1": 5}


def test_killed_switch_comes_back_with_identical_state(tb):
    attach(tb, 0, "bs1", 1)
    attach(tb, 1, "bs2", 1)
    attach(tb, 1, "bs1", 2)                               # mh2 moved: bs2 held a tunnel for a while
    tb.wait_for(lambda s: all(m["phase"] == "attached" and not m["holds"] for m in s["mobile_hosts"]))
    before = {name: tb.ctl({"cmd": "entries", "switch": name})["entries"] for name in ("gw", "bs1", "bs2")}
    tb.restart_switch("bs1")
    tb.wait_for(lambda s: next(x for x in s["switches"] if x["name"] == "bs1")["connects"] == 2
                and all(x["state"] == "up" for x in s["switches"]), timeout=30)
    after = {name: tb.ctl({"cmd": "entries", "switch": name})["entries"] for name in ("gw", "bs1", "bs2")}
    assert after == before
    keys = [(e[0], str(e[1]), e[2]) for e in after["bs1"]]
    assert len(keys) == len(set(keys))
    cell = Collector(tb.hosts["cell1"])
    for seq in range(5):
        tb.hosts["ch"].send(tb.data_frame(0, seq))
        tb.hosts["ch"].send(tb.data_frame(1, seq))
    time.sleep(1.0)
    frames = cell.stop()
    assert [s for s, _ in received_seqs(frames, mh_ip(0))] == list(range(5))
    assert [s for s, _ in received_seqs(frames, mh_ip(1))] == list(range(5))
    assert [e for e in tb.log_events("switch_up") if e["switch"] == "bs1"][-1]["pipeline"] == "pushed"


def test_controller_restart_does_not_disturb_traffic(tb):
    attach(tb, 0, "bs1", 1)
    cell = Collector(tb.hosts["cell1"])
    n, gap = 300, 0.01
    sender = send_stream(tb, 0, range(n), gap)
    time.sleep(0.5)
    tb.stop_controller(kill=True)                          # a crash: no clean shutdown
    tb.start_controller()
    sender.join(10)
    time.sleep(0.5)
    assert [s for s, _ in received_seqs(cell.stop(), mh_ip(0))] == list(range(n))
    restarts = [i for i, e in enumerate(tb.log_events()) if e["event"] == "controller_start"]
    assert len(restarts) == 2
    after = tb.log_events()[restarts[1]:]
    assert {e["pipeline"] for e in after if e["event"] == "switch_up"} == {"kept"}
    rec = [e for e in after if e["event"] == "reconciled"]
    assert len(rec) == 3 and all(e["inserted"] == e["modified"] == e["deleted"] == 0 for e in rec)
    assert next(e for e in after if e["event"] == "recovered" and e["mh"] == "mh1")["phase"] == "attached"
    # the new controller hands off as well
    attach(tb, 0, "bs2", 2)                                # a new identification: 1 again would be a replay
    cell2 = Collector(tb.hosts["cell2"])
    for seq in range(5):
        tb.hosts["ch"].send(tb.data_frame(0, seq))
    time.sleep(1.0)
    assert [s for s, _ in received_seqs(cell2.stop(), mh_ip(0))] == list(range(5))


def test_dsbp_probe_path(tb):
    attach(tb, 0, "bs1", 1)
    ch = Collector(tb.hosts["ch"])
    probe = cell_ip(0, "bs2")
    reply = tb.register(0, "bs2", 2, care_of=probe, flags=FLAG_S | FLAG_D)
    assert reply is not None and reply.code is ReplyCode.ACCEPTED
    cell2 = Collector(tb.hosts["cell2"])
    for seq in range(3):
        tb.hosts["ch"].send(tb.data_frame(0, seq, dst=probe))
    time.sleep(1.0)
    assert [s for s, _ in received_seqs(cell2.stop(), probe)] == [0, 1, 2]
    up = [x for x in notes(ch.stop()) if x.event is Event.PROBE_UP]
    assert len(up) == 1 and up[0].path_addr == probe and (up[0].old_cell, up[0].new_cell) == (1, 2)


@pytest.mark.timeout(600)
def test_twenty_mobile_hosts_hand_off_concurrently(tmp_path):
    """Twenty overlapping handoffs, ten buffered packets each: every MH's flush arrives complete, in order, once.

    The new cell has room for the whole group's flush (256 > 200). With the testbed's default limit of 64 the
    M-RED limit at bs2's access port dropped priority releases, counted as `aqm_overflow_dropped`, in 2 of 90
    runs at three tests in parallel (7 and 101 packets) and once in CI: nothing paces the releases to that
    port's drain, and on a starved core BMv2's egress thread falls behind its ingress (docs/controller.md).
    That is the cell's designed overflow, not the controller's concern here."""
    n_mh, per = 20, 10
    cell = {"mode": "mred", "limit": 256, "min_th": 16, "max_th": 48, "max_p": 0.1, "w_q": 0.001953125}
    bed = Testbed(tmp_path, n_mobiles=n_mh, aqm=cell)
    try:
        bed.start()
        bed.start_controller()
        for i in range(n_mh):
            bed.register(i, "bs1", 1, wait_reply=0)
        bed.wait_for(lambda s: all(m["phase"] == "attached" and m["bs"] == "bs1" for m in s["mobile_hosts"]),
                     timeout=30)
        for i in range(n_mh):
            assert bed.ctl({"cmd": "detach", "mh": mh_name(i)})["ok"]
        cell2 = Collector(bed.hosts["cell2"])
        for seq in range(per):
            for i in range(n_mh):
                bed.hosts["ch"].send(bed.data_frame(i, seq))
        bed.wait_for(lambda s: all(m["buffer"] == per for m in s["mobile_hosts"]), timeout=20)
        for i in range(n_mh):
            bed.register(i, "bs2", 2, wait_reply=0)      # back to back: all handoffs overlap
        bed.wait_for(lambda s: all(m["bs"] == "bs2" and m["phase"].startswith("attached")
                                   for m in s["mobile_hosts"]), timeout=60)
        cell2.wait(lambda frames: all(len(received_seqs(frames, mh_ip(i))) >= per for i in range(n_mh)), 15)
        time.sleep(0.2)  # a duplicate would come right behind
        frames = cell2.stop()
        assert bed.hosts["cell2"].drops() == 0           # the test's own socket kept up: what is missing, the net lost
        port = next(p for p in bed.ctl({"cmd": "status"})["ports"] if p["switch"] == "bs2" and p["port"] == 1)
        for i in range(n_mh):
            assert [s for s, _ in received_seqs(frames, mh_ip(i))] == list(range(per)), (mh_name(i), port["counters"])
        done = bed.log_events("handoff_complete")
        assert len(done) == n_mh and not any(d["forced"] for d in done)
        print("handoff durations ms:", sorted(d["duration_ms"] for d in done))
    finally:
        bed.close()


@pytest.mark.timeout(600)
def test_a_group_handoff_with_one_refused_entry_completes_the_others(tmp_path):
    """Four MHs' registrations at bs2 together: their Deliver routes go to bs2 in one Write. bs2 already holds
    an entry for mh2's address, put there behind the controller's back (Thrift), so that update alone is refused
    (CONTINUE_ON_ERROR): the other three are applied and their handoffs complete in order."""
    n_mh, per = 4, 5
    bed = Testbed(tmp_path, n_mobiles=n_mh)
    try:
        bed.start()
        bed.start_controller()
        for i in range(n_mh):
            bed.register(i, "bs1", 1, wait_reply=0)
        bed.wait_for(lambda s: all(m["phase"] == "attached" for m in s["mobile_hosts"]), timeout=30)
        bed.switches["bs2"].cli.run([f"table_add ipv4_fwd fwd_drop {mh_ip(1)}/32 =>"])
        for i in range(n_mh):
            assert bed.ctl({"cmd": "detach", "mh": mh_name(i)})["ok"]
        cell2 = Collector(bed.hosts["cell2"])
        for seq in range(per):
            for i in range(n_mh):
                bed.hosts["ch"].send(bed.data_frame(i, seq))
        bed.wait_for(lambda s: all(m["buffer"] == per for m in s["mobile_hosts"]), timeout=20)
        writes = bed.ctl({"cmd": "status", "counters": False})["counters"]["writes"]
        for i in range(n_mh):
            bed.register(i, "bs2", 2, wait_reply=0)
        bed.wait_for(lambda s: sum(m["bs"] == "bs2" and m["phase"].startswith("attached")
                                   for m in s["mobile_hosts"]) == n_mh, timeout=60)
        time.sleep(1.0)
        frames = cell2.stop()
        failed = bed.log_events("route_write_failed")
        assert [(f["switch"], f["addr"]) for f in failed] == [("bs2", mh_ip(1))], failed
        print("refused:", failed[0]["code"], failed[0]["error"])      # PI reports BMv2's duplicate as UNKNOWN
        for i in (0, 2, 3):
            assert [s for s, _ in received_seqs(frames, mh_ip(i))] == list(range(per)), mh_name(i)
        assert received_seqs(frames, mh_ip(1)) == []          # the foreign entry drops them: it was kept
        status = bed.ctl({"cmd": "status", "counters": False})
        assert all(sw["state"] == "up" and sw["entries"] is not None for sw in status["switches"])
        assert status["counters"]["write_errors"] == 1 and status["counters"]["writes"] > writes
    finally:
        bed.close()


def test_bad_description_is_refused_before_any_switch_is_touched(tmp_path):
    bed = Testbed(tmp_path, n_mobiles=1)
    try:
        bed.start()
        bad = dict(bed.description())
        bad["switches"] = bad["switches"][:2]             # bs2 missing: bs1 peers with an unknown switch
        bad_file = tmp_path / "bad.yaml"
        bad_file.write_text(yaml.safe_dump(bad))
        env = dict(os.environ, PYTHONPATH=str(REPO))
        done = subprocess.run(["ip", "netns", "exec", bed.fab.name, sys.executable, "-m", "p4handoff", "ctl",
                               "run", "--network", str(bad_file)],
                              capture_output=True, text=True, timeout=60, env=env, cwd=str(REPO))
        assert done.returncode == 3
        assert "unknown switch 'bs2'" in done.stderr
        bed.start_controller()
        assert {e["pipeline"] for e in bed.log_events("switch_up")} == {"pushed"}    # nothing was there
    finally:
        bed.close()
