"""Reports tell the truth loudly (issue 9): a verdict per claim, no rounding that hides a failure,
one unit per value, published values for any metric and at sweep points, utilisation ≤ 100 %."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from p4handoff.hosts.sim.engine import Simulator
from p4handoff.hosts.sim.link import Link
from p4handoff.hosts.sim.packet import Packet
from p4handoff.lab.claims import Verdict, claims_console, required, verdicts
from p4handoff.lab.formats import fmt_apart
from p4handoff.lab.runner import run_scenario
from p4handoff.scenario.loader import SweepAxis, load
from p4handoff.lab.sim_backend import SimBackend
from p4handoff.scenario.units import ScenarioError

ROOT = Path(__file__).resolve().parent.parent
VH = ROOT / "traces" / "vh-wlan-to-3g.yaml"
# the WLAN at 2 Mb/s: a tenth of the packets of the 20 Mb/s file; the verdicts are on the 3G window after the handoff
SHORT = (("duration", 16), ("measure.plot_range", [8, 16]), ("topology.cells.wlan.rate", "2Mbps"),
         ("measure.table", [{"metric": "throughput", "flow": "main"}, {"metric": "loss_rate", "flow": "main"}]))
CLAIMS = [
    {"claim": "Bandwidth-Aware beats TCP/mm", "order": ["Bandwidth-Aware", "TCP/mm"], "metric": "throughput",
     "flow": "main", "window": "handoff"},
    {"claim": "TCP/mm beats Bandwidth-Aware", "order": ["TCP/mm", "Bandwidth-Aware"], "metric": "throughput",
     "flow": "main", "window": "handoff"},
    {"claim": "TCP/mm loses almost nothing", "variant": "TCP/mm", "metric": "loss_rate", "flow": "main",
     "window": "handoff", "at_most": "0.1%"},
]


def _run(tmp_path: Path, overrides: tuple = (), sweep: tuple = ()):
    sf = load(VH, (*SHORT, ("published.expect", CLAIMS), *overrides), sweep, ("newreno", "bwaware"))
    return run_scenario(sf, SimBackend(), seed=None, repeats=1, results_root=tmp_path, run_id="r",
                        progress_out=None, make_plots=False)


def test_every_claim_gets_a_verdict_on_the_console_and_in_the_report(tmp_path: Path) -> None:
    res = _run(tmp_path)
    words = {v.claim: v.word for v in verdicts(res)}
    assert words["Bandwidth-Aware beats TCP/mm"] == "holds"
    assert words["TCP/mm beats Bandwidth-Aware"] == "does not hold"
    console = claims_console(res)
    assert "HOLDS" in console and "DOES NOT HOLD" in console
    assert console.count("\n") >= len(CLAIMS)
    report = (res.directory / "report.md").read_text()
    assert "| Bandwidth-Aware beats TCP/mm | **holds** |" in report
    assert "| TCP/mm beats Bandwidth-Aware | **does not hold** |" in report
    claims = report[report.index("## The paper's claims"):report.index("## Measured")]
    assert all(claims.count(f"| {c['claim']} |") == 1 for c in CLAIMS)     # one table: each claim listed once
    # the loss-rate bound is shown in the unit of the value beside it: percent, not a fraction
    assert "≤ 0.10 %" in report and "≤ 0.001" not in report


def test_a_sweep_verdict_counts_the_points_where_the_claim_holds(tmp_path: Path) -> None:
    res = _run(tmp_path, sweep=(SweepAxis("topology.cells.g3.queue.limit", "3G buffer", (5, 40)),))
    points = res.scenario_file.points()
    key = res.records[0].scenario.measure.table[0].key
    a, b = (res.mean(p, "TCP/mm", key) for p in points)
    assert a != b
    bound = (a + b) / 2   # TCP/mm's throughput lies above this bound at exactly one of the two points
    claim = dataclasses.replace(res.scenario_file.published.expect[2], claim="between",
                                quantity=res.records[0].scenario.measure.table[0], at_most=None, at_least=bound)
    pub = dataclasses.replace(res.scenario_file.published, expect=(claim,))
    res.scenario_file = dataclasses.replace(res.scenario_file, published=pub)
    (v,) = verdicts(res)
    assert (v.held, v.measured, v.points) == (1, 2, 2) and v.word == "holds at 1 of 2 points"
    assert v.example.startswith("fails at 3G buffer = ")


def test_verdict_words() -> None:
    assert Verdict("c", 0, 0, 3, "").word == "not measurable here"
    assert Verdict("c", 2, 2, 3, "").word == "holds"
    assert Verdict("c", 0, 2, 2, "").word == "does not hold"


def test_values_that_differ_never_read_the_same() -> None:
    assert fmt_apart("utilization", [0.994712, 0.994741]) == ["99.471", "99.474"]
    assert fmt_apart("throughput", [2.0e6, 2.0e6]) == ["2.000", "2.000"]  # equal values may read the same
    assert fmt_apart("drops", [21.0, 19.0]) == ["21", "19"]


def test_bounds_are_written_in_the_values_unit() -> None:
    sf = load(VH, (*SHORT, ("published.expect", CLAIMS)), (), ("newreno", "bwaware"))
    assert required(sf.published.expect[2]) == "≤ 0.10 %"


def test_published_values_for_any_metric_and_at_sweep_points() -> None:
    sweep = (SweepAxis("topology.cells.g3.queue.limit", "3G buffer", (5, 40)),)
    sf = load(VH, (*SHORT, ("published.values", {"TCP/mm": {"throughput": "117kbps", "loss_rate": "2%"}}),
                   ("published.points", [{"at": {"3G buffer": 5}, "values": {"TCP/mm": {"throughput": 0.1e6}}}])),
              sweep, ("newreno", "bwaware"))
    assert sf.published.values["TCP/mm"] == {"throughput": 117e3, "loss_rate": 0.02}
    assert sf.published.points == (((("topology.cells.g3.queue.limit", 5),), "TCP/mm", "throughput", 0.1e6),)
    with pytest.raises(ScenarioError) as exc:
        load(VH, (*SHORT, ("published.points", [{"at": {"buffer": 7}, "values": {}}])), sweep, ("newreno",))
    assert "published.points[0].at.buffer" in str(exc.value.errors)


def test_a_claim_on_a_quantity_the_report_does_not_measure_is_refused() -> None:
    claim = {**CLAIMS[2], "metric": "data_losses"}
    with pytest.raises(ScenarioError) as exc:
        load(VH, (*SHORT, ("published.expect", [claim])), (), ("newreno",))
    assert "not in measure.table" in str(exc.value.errors)


def test_utilisation_counts_only_what_was_serialised_by_the_edge() -> None:
    sim = Simulator()
    sink = type("Sink", (), {"receive": lambda self, pkt, link: None})()
    link = Link(sim, "l", 1e6, 0.001, sink)
    for _ in range(20):
        link.send(Packet(None, 1000, "a", "b"))
    edge = 0.0123  # in the middle of the 2nd packet's transmission
    sim.at(edge, lambda: seen.append(link.counters()["bytes_sent"]))
    seen: list[float] = []
    sim.run(1.0)
    assert seen[0] == pytest.approx(1e6 / 8 * edge)
    assert seen[0] < 2 * 1000  # two packets have started, not two finished


@pytest.mark.slow
def test_report_shows_what_the_cell_admitted_by_class_and_dropped_by_cause(tmp_path: Path) -> None:
    windows = [{"name": "burst", "from": 10, "to": 15}, {"name": "after", "from": 10, "to": 16}]
    table = [{"metric": m, "link": "new", "window": "burst"} for m in ("max_avg_queue", "drops", "priority_admitted")]
    sf = load(ROOT / "traces" / "ipf-burst.yaml", (("duration", 16), ("measure.windows", windows),
                                                   ("measure.plot_range", [8, 16]), ("measure.table", table)), (), ())
    res = run_scenario(sf, SimBackend(), seed=None, repeats=1, results_root=tmp_path, run_id="r",
                       progress_out=None, make_plots=False)
    report = (res.directory / "report.md").read_text()
    section = report[report.index("## Cell queues"):]
    rows = {line.split(" | ")[0].lstrip("| "): line for line in section.splitlines()
            if line.startswith("| ") and "| new | burst |" in line}
    flush, gradual = rows["handoff flush, IPF (M-RED)"], rows["new connection, RED"]
    assert int(flush.split(" | ")[4]) > 0      # the flush arrived marked priority
    assert int(gradual.split(" | ")[4]) == 0   # a new connection's packets are not
    # the metric is the same counter: the report's table and the run's quantities agree with the section
    for r in res.records:
        admitted = r.quantities["priority_admitted[new]@burst"]
        assert admitted == int(rows[r.variant].split(" | ")[4])
        assert (admitted > 0) == r.variant.startswith("handoff flush")   # marked by the old BS, whatever the AQM


def test_a_quantity_not_measured_has_no_spread() -> None:
    """A lab loss rate is not observable per flow: the table says n/a, not "n/a ± 0.00"."""
    from p4handoff.lab.report import _ours

    class Repeated:                      # the two numbers _ours reads from a Results, over three repeats
        repeats = 3

        def __init__(self, mean: float) -> None:
            self._mean = mean

        def mean(self, point, variant, key) -> float:
            return self._mean

        def spread(self, point, variant, key) -> float:
            return 0.0

    assert _ours(Repeated(float("nan")), (), "DSBP", "k", "loss_rate") == "n/a"
    assert _ours(Repeated(0.002), (), "DSBP", "k", "loss_rate") == "0.20 ± 0.00"


def test_the_headline_compares_the_metric_the_paper_gives_a_sum_where_it_gives_a_sum(tmp_path: Path) -> None:
    """A two-flow file whose published values are totals: "Ours vs published" compares total_throughput."""
    from p4handoff.lab.report import summary_table
    pub = {"NewReno": {"total_throughput": "9.325Mbps"}, "UCC": {"total_throughput": "9.276Mbps"}}
    sf = load(ROOT / "traces" / "ucc-loss.yaml",
              (("duration", 4), ("measure.windows", [{"name": "run", "from": 0, "to": 4}]),
               ("measure.plot_range", [0, 4]), ("sweep", []), ("published.values", pub)), (), ("newreno", "ucc"))
    res = run_scenario(sf, SimBackend(), seed=None, repeats=1, results_root=tmp_path, run_id="r",
                       progress_out=None, make_plots=False)
    table = summary_table(res)
    assert "total throughput" in table and "no published number" not in table
    row = next(line for line in table.splitlines() if line.startswith("| UCC |"))
    assert "| 9.276 |" in row
    ours = res.mean((), "UCC", "total_throughput[all]@run")
    assert f"| {ours / 1e6:.3f} |" in row
    report = (res.directory / "report.md").read_text()
    assert table in report


def test_a_ratio_near_one_is_printed_with_the_digits_that_keep_it_apart() -> None:
    from p4handoff.lab.report import _ratio_text
    assert _ratio_text(0.9998, 1.0) == "0.9998"
    assert _ratio_text(1.25, 1.0) == "1.25" and _ratio_text(2.0, 2.0) == "1.00"


def test_priority_admitted_needs_a_queue_that_counts_admissions() -> None:
    """A link whose counters carry no admissions by class (the lab reads them only at a cell's queue) gets a
    clear error naming the link, not a KeyError or a zero."""
    from p4handoff.lab.metrics import value
    from p4handoff.lab.rundata import RunData
    from p4handoff.scenario.loader import Quantity

    sf = load(ROOT / "traces" / "ipf-burst.yaml", (), (), ())
    _, _, scn = next(sf.runs())
    counted = {"bytes_sent": 0, "drops": {}, "admitted": {"np": 5, "prio": 2, "dummy": 0}}
    later = {"bytes_sent": 0, "drops": {}, "admitted": {"np": 9, "prio": 30, "dummy": 1}}
    data = RunData(flows={}, link_rates={}, link_snapshots={10.0: {"new": counted}, 15.0: {"new": later}})
    assert value(scn, data, Quantity("priority_admitted", "burst", link="new")) == 28.0
    data.link_snapshots = {10.0: {"new": {"bytes_sent": 0, "drops": {}}}, 15.0: {"new": later}}
    with pytest.raises(ValueError, match="no admission counters for link 'new'"):
        value(scn, data, Quantity("priority_admitted", "burst", link="new"))
