"""The state machine on a network with a buffer service, against the in-memory network (tests/ctl_fakenet.py).

With `buffer_service` the controller is fed the service's arrivals through the same `Mobility.packet_in` and
releases every packet it can by tunnel from the service into the new BS (controller/bufsvc_path.py). To the
fake that is a punt and a tunnelled packet-out with the same latencies, so the ordering properties of the
packet-in path are asserted here again with the service's one difference: releases tunnel into any BS that
does not divert the MH, peered with the old one or not. BMv2: tests/test_bufsvc_bmv2.py.
"""
from __future__ import annotations

import copy
from pathlib import Path

import yaml

from p4handoff.controller.mh_state import Phase
from p4handoff.controller.mobility import Mobility
from p4handoff.controller.network import parse_network
from tests.ctl_fakenet import FakeNet
from tests.seq_support import overtaken

EXAMPLE = Path(__file__).resolve().parent.parent / "topo" / "three-switch.yaml"


def network(service: bool, bs3: bool = False) -> dict:
    raw = yaml.safe_load(EXAMPLE.read_text())
    if bs3:        # bs3 peered with the gateway and bs2 only, not with bs1
        raw["switches"][0]["ports"].append({"number": 4, "role": "peer", "peer": "bs3"})
        raw["switches"][2]["ports"].append({"number": 4, "role": "peer", "peer": "bs3"})
        raw["switches"].append({
            "name": "bs3", "role": "bs", "cell_id": 3, "grpc": "127.0.0.1:50054", "device_id": 0,
            "address": "192.168.100.4", "mac": "02:00:00:00:00:04",
            "ports": [{"number": 1, "role": "access"}, {"number": 2, "role": "peer", "peer": "gw"},
                      {"number": 4, "role": "peer", "peer": "bs2"}]})
    if service:
        for sw in raw["switches"]:
            sw["ports"].append({"number": 9, "role": "buffer"})
        raw["buffer_service"] = {"address": "192.168.100.9", "mac": "02:00:00:00:00:09",
                                 "control": "127.0.0.1:50999"}
    return raw


def make(raw: dict, latency: dict | None = None) -> tuple[FakeNet, Mobility, list]:
    net = parse_network(copy.deepcopy(raw))
    logs: list = []
    mob = Mobility(net, log=lambda e, f: logs.append((e, f)), seed=7)
    return FakeNet(net, mob, **(latency or {})), mob, logs


def stream(f: FakeNet, mh: str, start: float, count: int, gap: float) -> None:
    for i in range(count):
        f.send(mh, i, when=start + i * gap)




def test_a_fast_stream_through_the_service_is_complete_and_only_late_packets_are_overtaken():
    f, mob, _ = make(network(service=True))
    f.register("mh1", "bs1")
    f.run(0.01)
    stream(f, "mh1", 0.01, 300, 0.0005)
    f.run(0.05)
    f.apply(mob.detach("mh1", f.now))
    f.run(0.06)
    f.location["mh1"] = None
    f.run(0.08)
    f.register("mh1", "bs2")
    f.run(1.0)
    got = f.seqs("mh1")
    assert f.lost == [] and sorted(got) == list(range(300))
    assert overtaken(got) <= mob.mhs["mh1"].late
    assert {r.via for r in f.received["mh1"] if r.priority} == {"tunnel"}


def test_leaving_the_new_bs_mid_flush_brings_the_released_packets_back_first():
    f, mob, logs = make(network(service=True), latency={"link": 0.005})
    f.register("mh1", "bs1")
    f.run(0.01)
    f.apply(mob.detach("mh1", f.now))
    f.run(0.02)
    f.location["mh1"] = None
    stream(f, "mh1", 0.02, 30, 0.0005)
    f.run(0.05)
    f.register("mh1", "bs2", move=False)
    while mob.mhs["mh1"].phase is not Phase.HANDING_OFF:
        f.run(f.now + 0.0001)
    f.apply(mob.detach("mh1", f.now))
    f.run(0.1)
    assert ("marker_returned", "path") in [(e, fl.get("kind")) for e, fl in logs]
    f.register("mh1", "bs1")
    f.run(1.0)
    assert f.seqs("mh1") == list(range(30)) and f.lost == []


def test_between_unpeered_bss_the_service_tunnels_where_the_controller_path_goes_direct():
    """bs1 and bs3 are not peered: the controller path releases by packet-out at bs3's access port; the service
    reaches bs3 through its buffer port, so its releases arrive tunnelled and priority-marked. Both complete,
    in order."""
    for service, via in ((False, "packet-out"), (True, "tunnel")):
        f, mob, _ = make(network(service=service, bs3=True))
        f.register("mh1", "bs1")
        f.run(0.01)
        stream(f, "mh1", 0.01, 100, 0.002)
        f.run(0.05)
        f.apply(mob.detach("mh1", f.now))
        f.run(0.06)
        f.location["mh1"] = None
        f.run(0.1)
        f.register("mh1", "bs3")
        f.run(1.0)
        got = f.seqs("mh1")
        assert f.lost == [] and sorted(got) == list(range(100)), service
        assert overtaken(got) <= mob.mhs["mh1"].late
        assert {r.via for r in f.received["mh1"] if r.priority} == {via}, service
        assert mob.mhs["mh1"].bs == "bs3" and mob.mhs["mh1"].phase is Phase.ATTACHED
