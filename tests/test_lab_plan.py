"""The lab plan: every scenario file maps onto switches, emulators and a controller description the controller accepts."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.lab_support import run_desc
from p4handoff.controller.network import parse_network
from p4handoff.topo.plan import BUFFER_SERVICE, LabError, plan, pps
from p4handoff.scenario.loader import load, read_document, parse

TRACES = Path(__file__).resolve().parent.parent / "traces"


@pytest.mark.parametrize("path", sorted(TRACES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_trace_file_has_a_lab_the_controller_accepts(path: Path) -> None:
    sf = load(path)
    scn = sf.resolve(sf.variants[-1], sf.points()[-1])
    p = plan(scn)
    net = parse_network(run_desc(p), str(path))
    assert {s.name for s in net.switches} == {s.name for s in p.switches}
    for cell in scn.topology.cells:
        bs, port = p.cell_ports[cell.name]
        sw = next(s for s in net.switches if s.name == bs)
        assert sw.port(port).role == "access" and sw.port(port).aqm.limit == cell.queue.limit
    # every wire joins Mininet nodes; a cell's bridge and its hosts' emulators live in the cell's BS switch
    nodes = {s.name for s in p.switches} | set(p.hosts)
    for w in p.wires:
        assert w.a[0] in nodes and w.b[0] in nodes and w.emu_node in nodes
        if w.kind == "host-bridge":
            cell = w.key.split("/")[2]
            assert w.b == (p.cell_ports[cell][0], p.bridges[cell]) and w.emu_node == p.cell_ports[cell][0]
        if w.kind in ("switch-switch", "host-switch"):
            assert w.emu_node in {s.name for s in p.switches}


def test_cell_bottleneck_is_the_bs_egress_queue_in_packets_per_second() -> None:
    sf = load(TRACES / "vh-wlan-to-3g.yaml")
    p = plan(sf.resolve(sf.variants[0]))
    rates = {(q.switch, q.port): (q.pps, q.depth) for q in p.queues}
    bs, port = p.cell_ports["g3"]
    assert rates[(bs, port)] == (round(384e3 / (8 * 1052)), 10)        # 46 packets/s of 1052 B, 10 deep
    assert rates[("gw", 2)] == (pps(10e6, 1052), 50)                    # the wired 10 Mb/s bottleneck
    emus = {w.key: w.emu for w in p.wires if w.kind == "host-bridge"}
    g3 = emus["mh/g3/g3"]
    assert g3.down.rate_bps is None and g3.down.delay == pytest.approx(0.070)
    assert g3.up.rate_bps == 384e3
    starts = {w.key: w.up_at_start for w in p.wires if w.kind == "host-bridge"}
    assert starts == {"mh/wlan/wlan": True, "mh/g3/g3": False}


@pytest.mark.parametrize("w_q, k", [(0.002, 9), (0.0029, 9), (2.0 ** -4, 4), (1e-6, 16), (0.9, 1)])
def test_a_scenario_w_q_runs_in_the_lab_as_the_nearest_power_of_two_the_controller_takes(w_q: float, k: int) -> None:
    """docs/lab.md: the scenario states the paper's w_q (the simulator runs it); the lab runs the nearest 2**-k
    by value, k 1..16 (0.0029 is nearer 2**-9 than 2**-8, 1e-6 nearest 2**-16), and the report notes it."""
    doc = read_document(TRACES / "ipf-burst.yaml")
    doc["topology"]["cells"][1]["queue"]["w_q"] = w_q
    sf = parse(doc)
    scn = sf.resolve(sf.variants[0])
    assert next(c for c in scn.topology.cells if c.name == "new").queue.w_q == w_q      # the simulator's
    p = plan(scn)
    net = parse_network(run_desc(p), "ipf-burst.yaml")                               # the controller takes it
    bs, port = p.cell_ports["new"]
    assert next(s for s in net.switches if s.name == bs).port(port).aqm.w_q == 2.0 ** -k
    noted = [n for n in p.notes if "w_q" in n]
    assert noted == ([] if w_q == 2.0 ** -k else [f"cell new: w_q {w_q:g} runs as 2^-{k} = {2.0 ** -k:g} "
                                                   "(the switch's EWMA is shift-only)"])


def test_dsbp_probe_address_reaches_the_description() -> None:
    sf = load(TRACES / "dsbp-capacity.yaml")
    p = plan(sf.resolve(sf.variants[0], sf.points()[0]))
    mh = next(m for m in p.network["mobile_hosts"] if m["name"] == "mh")
    assert mh["cell_addresses"] == {"bs2": "10.0.2.9"} and mh["correspondents"] == ["ch"]


def test_unsupported_topologies_are_refused_with_reasons() -> None:
    doc = read_document(TRACES / "vh-wlan-to-3g.yaml")
    doc["topology"]["routers"].append({"name": "r2"})
    scn = parse(doc).resolve(parse(doc).variants[0])
    with pytest.raises(LabError, match="exactly one router"):
        plan(scn)
    doc = read_document(TRACES / "vh-wlan-to-3g.yaml")
    doc["topology"]["links"][0] = {"between": ["ch", "ar"], "rate": None, "delay": 0}
    sf = parse(doc)
    with pytest.raises(LabError, match="must hang off the gateway"):
        plan(sf.resolve(sf.variants[0]))


def test_a_buffer_service_gets_one_port_on_every_switch_and_a_description_the_controller_accepts() -> None:
    """`topology.buffer_service`: one more port on every switch, the `buffer` port of the controller's
    description, whose `buffer_service` section the rig completes (control address, interfaces)."""
    sf = load(TRACES / "combined-group-handoff.yaml")
    scn = sf.resolve(sf.variants[3], sf.points()[3])
    assert not scn.topology.buffer_service
    without = plan(scn)
    with_service = plan(dataclasses.replace(scn, topology=dataclasses.replace(scn.topology, buffer_service=True)))
    assert without.service_ports == {} and "buffer_service" not in without.network
    for a, b in zip(without.switches, with_service.switches):
        assert set(b.ports) - set(a.ports) == {with_service.service_ports[b.name]}
    net = parse_network(run_desc(with_service), "combined-group-handoff.yaml")
    assert net.buffer_service is not None and net.buffer_service.address == BUFFER_SERVICE[0]
    for sw in net.switches:
        assert [p.number for p in sw.ports if p.role == "buffer"] == [with_service.service_ports[sw.name]]


def test_a_revision_1_base_station_tells_the_labs_controller_not_to_signal() -> None:
    """A column with `signal_forwarding: false` on the old BS runs the lab's controller with revision-1 HANDOFFs
    after that BS's flush; the flag-aware column leaves every BS at the default (signal)."""
    sf = load(TRACES / "combined-group-handoff.yaml")
    silent = next(v for v in sf.variants if v.label == "Bandwidth-Aware / IPF")
    p = plan(sf.resolve(silent, sf.points()[0]))
    assert {s["name"]: s.get("signal_forwarding") for s in p.network["switches"]} == \
        {"gw": None, "bs_old": False, "bs_new": None}
    net = parse_network(run_desc(p), "combined-group-handoff.yaml")
    assert [s.signal_forwarding for s in net.switches] == [True, False, True]
    flagged = next(v for v in sf.variants if v.label == "flag-aware Bandwidth-Aware / IPF")
    assert all("signal_forwarding" not in s for s in plan(sf.resolve(flagged, sf.points()[0])).network["switches"])


@pytest.mark.parametrize("field, says", [("route_delay", "route_delay is the simulator's stand-in"),
                                         ("forward_delay", "forward_delay is not emulated in the lab")])
def test_a_simulator_only_delay_is_refused_in_the_lab(field: str, says: str) -> None:
    """`route_delay` stands in for the controller's handoff time in the simulator (the lab has the real one);
    `forward_delay` has no lab counterpart: a lab run must not silently run without either."""
    sf = load(TRACES / "combined-group-handoff-lab.yaml", ((f"topology.base_stations.bs_old.{field}", "150ms"),), (), ())
    with pytest.raises(LabError, match=f"bs_old: {says}"):
        plan(sf.resolve(sf.variants[0], sf.points()[0]))
