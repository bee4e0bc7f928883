"""`ctl status` never reads counters on the daemon's thread.

In the lab, status rounds polled back to back read ~40 counter cells one RPC
at a time on the daemon's thread, and a registration waited behind them for
up to ~0.9 s. Here a client whose Read blocks until released stands in for a
slow switch (a fake in addition to the BMv2 status checks in
tests/test_ctl_bmv2.py): serving the status request must return while the
read is still blocked, the loop must keep handling requests meanwhile, and
every reply (also of a round overlapping another) must carry the counters
once they arrive.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import yaml

from p4handoff.controller.control import ControlRequest
from p4handoff.controller.daemon import Daemon
from p4handoff.controller.status_rounds import AQM_CLASS_STRIDE, CLASSES
from p4handoff.controller.network import PORT_ACCESS, parse_network
from p4handoff.controller.p4runtime import P4Info
from p4handoff.controller.p4runtime._protos import p4runtime_pb2
from p4handoff.controller.port_counters import PORT_COUNTERS, CounterReader
from p4handoff.controller.switch_state import SwitchState

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "topo" / "three-switch.yaml"
P4INFO = REPO / "build" / "bs.p4info.txtpb"

pytestmark = pytest.mark.skipif(not P4INFO.is_file(), reason="build/bs.p4info.txtpb missing (run 'make build')")


class SlowSwitch:
    """A switch whose Read answers every counter cell with its index + 7, once `release` is set."""

    def __init__(self, p4info: P4Info, release: threading.Event) -> None:
        self.p4info = p4info
        self.release = release
        self.read_threads: list[str] = []
        self.read_spans: list[tuple[float, float]] = []   # wall clock: entered, returned
        self.probes: list[int] = []

    def read(self, entities, timeout=None):
        self.read_threads.append(threading.current_thread().name)
        entered = time.time()
        if not self.release.wait(5.0):
            raise AssertionError("read never released")
        time.sleep(0.05)      # a read that takes time: its counts are stamped with the midpoint
        self.read_spans.append((entered, time.time()))
        out = []
        for e in entities:
            reply = p4runtime_pb2.Entity()
            reply.counter_entry.CopyFrom(e.counter_entry)
            reply.counter_entry.data.packet_count = e.counter_entry.index.index + 7
            out.append(reply)
        return out

    def packet_out(self, payload: bytes, **meta) -> None:
        self.probes.append(meta["egress_port"])

    def write(self, updates) -> None:
        pass


def test_status_counters_are_read_off_the_daemon_thread_and_merged_into_the_reply():
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["controller"].update(auth="none", keys=None)     # the status plumbing, not authentication
    net = parse_network(raw)
    logs: list = []
    d = Daemon(net, log=lambda e, f: logs.append((e, f)))
    release = threading.Event()
    p4info = P4Info.load(P4INFO)
    fakes = {}
    for sw in net.switches:
        fakes[sw.name] = SlowSwitch(p4info, release)
        d.sessions[sw.name].client = fakes[sw.name]
        d.sessions[sw.name].state = "up"
        d.states[sw.name] = SwitchState([])
    d.counter_reader = CounterReader(d.events.put)
    try:
        status = ControlRequest("status", {})
        d._handle(status)                           # must not block on the reads (they wait for `release`)
        assert status.wait(0)["kind"] == "timeout"  # not answered yet: counters outstanding
        overlapping = ControlRequest("status", {})  # the lab polls from two threads: rounds overlap
        d._handle(overlapping)
        deadline = time.monotonic() + 5
        while not any(f.read_threads for f in fakes.values()) and time.monotonic() < deadline:
            time.sleep(0.01)
        threads = {t for f in fakes.values() for t in f.read_threads}
        assert threads == {"status-counters"}, threads
        # the loop is free meanwhile: an operator request is answered while the read still blocks
        refused = ControlRequest("detach", {"mh": "nobody"})
        d._handle(refused)
        assert refused.wait(0)["kind"] == "refused" and not release.is_set()
        release.set()
        deadline = time.monotonic() + 5
        while d.status_rounds.pending and time.monotonic() < deadline:
            d._step()
        replies = [status.wait(0), overlapping.wait(0)]
    finally:
        release.set()
        d.counter_reader.stop()
    for reply in replies:
        check_reply(net, reply)
    # every port's counts carry the instant the switch held them: inside one of its switch's Read calls,
    # not when the reply was sent (the lab's utilisation divides by the time between two such reads)
    for p in replies[0]["ports"] + replies[1]["ports"]:
        at = p["counters_read_at"]
        assert any(a < at < b for a, b in fakes[p["switch"]].read_spans), (p, fakes[p["switch"]].read_spans)
    assert {port for f in fakes.values() for port in f.probes} == {p["port"] for p in replies[0]["ports"]}


def check_reply(net, reply: dict) -> None:
    assert reply["ok"] and reply["counters_missing"] == []
    bs_ports = {(sw.name, p.number) for sw in net.switches for p in sw.ports if p.role == PORT_ACCESS}
    assert {(p["switch"], p["port"]) for p in reply["ports"]} == bs_ports
    for p in reply["ports"]:
        c = p["counters"]
        assert set(c) == set(PORT_COUNTERS) | {"priority_admitted"}
        assert c["aqm_dequeued"]["prio"] == p["port"] * AQM_CLASS_STRIDE + CLASSES["prio"] + 7
        assert c["priority_admitted"] == p["port"] + 7
    gw = next(s for s in reply["switches"] if s["name"] == "gw")
    assert gw["sanitised"] == {1: 8, 2: 9, 3: 10}
