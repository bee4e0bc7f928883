"""Faults in a running lab (`make chaos`, p4handoff/reliability/chaos.py): the judging logic without a switch, and one fault
each on the BMv2 testbed and in the Mininet lab (skipped by name where they cannot run).

The full matrix (old BS, gateway, controller × before, during, after) is `make chaos` (lab) and
`make chaos-testbed`.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, TypeVar

import pytest

from tests.bmv2_support import BMV2_NETNS_MARKS, LAB_MARKS
from p4handoff.reliability.chaos import main, p99, run_matrix, summary
from p4handoff.reliability.chaos_lab import LabChaos, tcp_stall
from p4handoff.reliability.chaos_runs import FaultRun, FlowLoss
from p4handoff.lab.mininet.faults import Fault, check_faults
from p4handoff.lab.rundata import FlowData

F = TypeVar("F", bound=Callable[..., None])
SCENARIO = Path(__file__).resolve().parent.parent / "traces" / "chaos-wlan-to-3g.yaml"


def _run(target: str | None, recovery: float | None, **lost: int) -> FaultRun:
    paths = {"mh": ["gw", "bs1", "bs2"], "b1": ["gw", "bs1"], "b2": ["gw", "bs2"]}
    return FaultRun(target, "during", recovery, [FlowLoss(n, "udp", n == "mh", paths[n], b) for n, b in lost.items()],
                    handoff_complete=True)


def test_non_moving_loss_counts_only_flows_that_avoid_the_killed_element() -> None:
    runs = [_run("bs1", 1500.0, mh=640, b1=1280, b2=64),     # b1 is behind bs1: reported, not counted
            _run("gw", 900.0, mh=10, b1=20, b2=30),          # everything crosses the gateway
            _run("controller", 700.0, mh=2112, b1=0, b2=128)]
    s = summary(runs)
    assert s["bytes_lost_non_moving"] == 64 + 128
    assert s["recovery_ms_p99"] == 1500.0 and s["chaos_runs"] == 3 and s["stale_entries_runs"] == 0
    assert [f.flow for f in runs[0].counted()] == ["b2"]


def test_p99_is_the_nearest_rank() -> None:
    assert p99([3.0, 1.0, 2.0]) == 3.0
    assert p99([float(k) for k in range(1, 201)]) == 198.0
    assert math.isnan(p99([]))


def test_tcp_stall_is_the_longest_time_without_delivery_progress() -> None:
    fd = FlowData("f", ack_times=[0.1, 0.2, 0.3, 2.8, 2.9], ack_bytes=[1, 2, 3, 4, 5])
    assert tcp_stall(fd, 10.0) == pytest.approx(7.1)          # stuck from 2.9 s to the end
    assert tcp_stall(fd, 3.0) == pytest.approx(2.5)
    assert tcp_stall(FlowData("none"), 5.0) == 5.0


def test_a_fault_must_name_an_element_of_the_lab_and_an_instant_in_the_run() -> None:
    assert check_faults([Fault("gw", 1.0), Fault("controller", 3.0)], ["gw", "bs1"], 10.0)
    with pytest.raises(ValueError) as info:
        check_faults([Fault("bs9", 1.0), Fault("gw", 12.0)], ["gw", "bs1"], 10.0)
    assert "bs9" in str(info.value) and "outside the run" in str(info.value)


def test_the_lab_instants_targets_and_paths_come_from_the_scenario() -> None:
    mode = LabChaos(SCENARIO)
    assert mode.at == {"before": 6.0, "during": 10.25, "after": 14.0}
    assert mode.targets() == ["bs_wlan", "gw", "controller"]
    assert mode.path("mh") == ["gw", "bs_g3", "bs_wlan"] and mode.moving("mh")
    assert mode.path("b1") == ["gw", "bs_wlan"] and not mode.moving("b1")
    assert mode.path("ch") == ["gw"]
    with pytest.raises(ValueError, match="no room"):
        LabChaos(SCENARIO, overrides=(("topology.mobile_hosts.0.moves.0.at", 2),))


def test_an_unknown_target_is_refused_before_anything_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--targets", "bs_nowhere", "--workdir", "/nonexistent"])
    assert info.value.code == 2 and "bs_nowhere" in capsys.readouterr().err


def _needs(marks: list[pytest.MarkDecorator]) -> Callable[[F], F]:
    """Apply a list of marks (BMv2, namespaces, ...) to one test of a module that also has tests without them."""
    def apply(fn: F) -> F:
        for m in marks:
            fn = m(fn)
        return fn
    return apply


@pytest.mark.timeout(240)
@_needs(BMV2_NETNS_MARKS)
def test_testbed_controller_killed_during_the_handoff_costs_the_other_flows_nothing(tmp_path: Path) -> None:
    from p4handoff.reliability.chaos_testbed import PAYLOAD, RATE, TestbedChaos
    reference, runs = run_matrix(TestbedChaos(), tmp_path, ["controller"], ["during"])
    res = runs[0]
    lost = {f.flow: f.lost_bytes for f in res.flows}
    assert res.handoff_complete
    assert all(f.lost_bytes == 0 for f in reference.flows), reference.flows
    assert lost["mh2"] == lost["mh3"] == 0, lost
    # the moving MH loses at most what its old BS punted while no controller was connected
    assert res.recovery_ms is not None and res.recovery_ms < 30_000
    assert lost["mh1"] <= (res.recovery_ms / 1000 + 0.5) * RATE * PAYLOAD, lost
    assert not res.stale_switches, "stale or missing entries after recovery"


@pytest.mark.timeout(400)
@_needs(LAB_MARKS)
def test_lab_controller_killed_during_the_handoff_costs_the_hosts_that_stay_nothing(tmp_path: Path) -> None:
    """traces/chaos-wlan-to-3g.yaml in the lab: the reference run, then the controller killed -9 while mh's
    old BS diverts its packets into the controller's buffer (~1.5 min)."""
    reference, runs = run_matrix(LabChaos(SCENARIO), tmp_path, ["controller"], ["during"])
    res = runs[0]
    print([(f.flow, f.lost_bytes, f.stall_s) for f in reference.flows], [(f.flow, f.lost_bytes, f.stall_s)
                                                                         for f in res.flows], res.details)
    ref = {f.flow: f for f in reference.flows}
    assert reference.handoff_complete and res.handoff_complete
    # the scenario's buffers hold every window: without a fault the hosts that stay lose nothing
    assert all(f.lost_bytes == 0 for f in reference.flows if not f.moving), reference.flows
    assert all(f.delivered_bytes for f in reference.flows if f.kind == "tcp")
    # with the controller killed: nothing for them either, and they never stall longer than without it
    assert [(f.flow, f.lost_bytes) for f in res.counted()] == [(f.flow, 0) for f in res.counted()]
    assert {f.flow for f in res.counted()} == {"wlan_stays", "g3_stays", "udp:b1", "udp:b2"}
    for f in res.counted():
        if f.kind == "tcp":
            assert f.stall_s <= ref[f.flow].stall_s + 0.5, (f, ref[f.flow])
    assert res.recovery_ms is not None and 0 < res.recovery_ms < 30_000
    assert not res.stale_switches, "stale or missing entries after recovery"
    assert res.details["buffer_total"] == 0
