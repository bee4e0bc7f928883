"""Time dilation in the lab (`lab.time_scale`, docs/lab.md "Time dilation"): the scenario's setting, the stretched
network the lab builds, the run's clock and the endpoints' clock. The endpoints on real packets are in
tests/test_net_cli.py, the timeline in tests/test_lab_timeline.py, a whole lab run in tests/test_lab_bmv2.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from p4handoff.hosts.net import timescale
from p4handoff.hosts.net.timescale import ScaledClock
from p4handoff.lab.mininet.clock import RunClock
from p4handoff.scenario.loader import load
from p4handoff.scenario.units import ScenarioError
from p4handoff.topo.plan import plan

TRACES = Path(__file__).resolve().parent.parent / "traces"


class FakeMonotonic:
    """The machine's monotonic clock, moved by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_scaled_clock_passes_slower_from_its_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    machine = FakeMonotonic(100.0)
    monkeypatch.setattr(timescale.time, "monotonic", machine)
    clock = ScaledClock(2.0)
    assert clock() == 100.0                      # the same instant as the machine's at its origin
    machine.now = 103.0
    assert clock() == pytest.approx(101.5)       # 3 s of the machine's are 1.5 s of this clock's
    assert clock.real(0.25) == 0.5 and clock.scaled(0.5) == 0.25
    assert ScaledClock()() == 103.0               # unscaled: the machine's clock itself


@pytest.mark.parametrize("scale", [0.5, 0.0, 101.0])
def test_a_time_scale_outside_1_to_100_is_refused(scale: float) -> None:
    with pytest.raises(ValueError, match="time scale must be in"):
        ScaledClock(scale)


def test_the_run_clock_maps_scenario_time_onto_the_machines_clocks() -> None:
    clock = RunClock(2.0)
    clock.t0, clock.t0_wall = 1000.0, 5000.0
    assert clock.instant(12.0) == 1024.0
    assert clock.at_monotonic(1024.0) == 12.0
    assert clock.at_wall(5003.0) == 1.5


def lab_point(scale: float | None):
    sets = () if scale is None else (("lab", {"time_scale": scale}),)
    sf = load(TRACES / "combined-group-handoff-lab.yaml", overrides=sets)
    return next(s for v, _, s in sf.runs() if v.label == "Reno / IPF")


def test_the_scenario_says_how_much_slower_the_lab_plays_it() -> None:
    sf = load(TRACES / "combined-group-handoff.yaml")              # no `lab:` section: real time
    assert {s.lab_time_scale for _, _, s in sf.runs()} == {1.0}
    assert lab_point(None).lab_time_scale == 2.0                      # the lab point's file plays at half speed
    assert lab_point(2.5).lab_time_scale == 2.5
    with pytest.raises(ScenarioError, match=r"lab.time_scale: 0.5 is out of range \[1.0, 100.0\]"):
        lab_point(0.5)


def test_a_dilated_lab_divides_every_rate_and_multiplies_every_delay() -> None:
    """Queue depths, losses and RED's per-packet settings stay: each packet meets the same network, later."""
    base, slow = plan(lab_point(1.0)), plan(lab_point(2.0))
    rates = {(q.switch, q.port): (q.pps, q.depth) for q in base.queues}
    assert {k: (max(1, round(pps / 2)), depth) for k, (pps, depth) in rates.items()} == \
           {(q.switch, q.port): (q.pps, q.depth) for q in slow.queues}
    assert len(base.wires) == len(slow.wires)
    for w, v in zip(base.wires, slow.wires):
        assert (w.emu is None) == (v.emu is None)
        if w.emu is None or v.emu is None:
            continue
        for a, b in ((w.emu.down, v.emu.down), (w.emu.up, v.emu.up)):
            assert b.delay == pytest.approx(2 * a.delay) and (b.loss, b.limit) == (a.loss, a.limit)
            assert b.rate_bps == (None if a.rate_bps is None else pytest.approx(a.rate_bps / 2))

    def aqm(p):
        return next(port["aqm"] for sw in p.network["switches"] for port in sw["ports"]
                    if port.get("aqm", {}).get("mode") == "mred")
    fast, dilated = aqm(base), aqm(slow)
    assert dilated["mean_pkt_time_us"] == pytest.approx(2 * fast["mean_pkt_time_us"], rel=1e-6)
    assert {k: v for k, v in dilated.items() if k != "mean_pkt_time_us"} == \
           {k: v for k, v in fast.items() if k != "mean_pkt_time_us"}
    assert any("2 times slower" in n for n in slow.notes) and not any("times slower" in n for n in base.notes)
