"""A claim over repeats holds only where it holds on the means and in a majority of the repeats (issue 25),
paired by seed; the rule is the claim's (`repeats: majority | all | means`), and the worst repeat of a claim
that fails in any repeat is shown. The rule is decided on the repeats' numbers, so these tests give the
report the numbers of five repeats and check what it concludes; one real repeated run checks the output."""
from __future__ import annotations

from pathlib import Path

import pytest

from p4handoff.lab.claims import check, claims_console, verdicts
from p4handoff.lab.results import Results, RunRecord
from p4handoff.lab.runner import run_scenario
from p4handoff.lab.sim_backend import SimBackend
from p4handoff.scenario.loader import ScenarioFile, load
from p4handoff.scenario.units import ScenarioError

ROOT = Path(__file__).resolve().parent.parent
VH = ROOT / "traces" / "vh-wlan-to-3g.yaml"
SHORT = (("duration", 16), ("measure.plot_range", [8, 16]),
         ("measure.table", [{"metric": "throughput", "flow": "main"}]))
KEY = "throughput[main]@handoff"


def _file(*claims: dict) -> ScenarioFile:
    base = {"metric": "throughput", "flow": "main", "window": "handoff"}
    return load(VH, (*SHORT, ("published.expect", [{**base, **c} for c in claims])), (), ("newreno", "bwaware"))


def _results(sf: ScenarioFile, tmp_path: Path, values: dict[str, list[float]]) -> Results:
    """Five repeats' throughput (Mb/s) per variant, as the runner would have recorded them."""
    scn = sf.plan[0].scenario
    n = len(next(iter(values.values())))
    res = Results(sf, "sim", "", 7, n, "r", tmp_path)
    res.records = [RunRecord(label, (), k, 7 + k, tmp_path / label / f"r{k}", scn, {KEY: v * 1e6}, {})
                   for label, vs in values.items() for k, v in enumerate(vs)]
    return res


def test_a_claim_that_holds_on_the_means_but_not_in_most_repeats_does_not_hold(tmp_path: Path) -> None:
    # the case: "M-RED <= 160" held on a mean of 159.6 while 3 of 5 repeats exceeded 160
    sf = _file({"claim": "at most 160", "variant": "TCP/mm", "at_most": 160e6},
               {"claim": "at most 160 on the means", "variant": "TCP/mm", "at_most": 160e6, "repeats": "means"})
    res = _results(sf, tmp_path, {"TCP/mm": [158.0, 150.0, 161.0, 164.0, 165.0],
                                  "Bandwidth-Aware": [1.0] * 5})
    strict, lenient = verdicts(res)
    assert strict.word == "does not hold" and strict.in_repeats == "holds in 2 of 5 repeats"
    assert "holds on the means but in 2 of 5 repeats" in strict.example
    assert strict.worst == "repeat 4 (seed 11): 165.000 Mb/s"      # the farthest beyond the bound
    assert lenient.word == "holds" and lenient.in_repeats == "holds in 2 of 5 repeats"


def test_variants_are_compared_repeat_by_repeat_paired_by_seed(tmp_path: Path) -> None:
    # on the means Bandwidth-Aware (3.0) beats TCP/mm (2.2); seed by seed it wins only 2 of 5 times
    sf = _file({"claim": "BA beats TCP/mm", "order": ["Bandwidth-Aware", "TCP/mm"]},
               {"claim": "BA beats TCP/mm in every repeat", "order": ["Bandwidth-Aware", "TCP/mm"], "repeats": "all"})
    res = _results(sf, tmp_path, {"Bandwidth-Aware": [9.0, 2.0, 1.0, 1.0, 2.0],
                                  "TCP/mm": [1.0, 1.0, 3.0, 3.0, 3.0]})
    c = check(res, sf.published.expect[0], ())
    assert c.on_means is True and (c.held_repeats, c.measured_repeats) == (2, 5) and c.holds is False
    assert c.worst is not None and c.worst.repeat in (2, 3)           # 1 vs 3: the largest reversal
    majority, every = verdicts(res)
    assert majority.word == every.word == "does not hold"
    res = _results(sf, tmp_path, {"Bandwidth-Aware": [9.0, 2.0, 4.0, 4.0, 2.0],
                                  "TCP/mm": [1.0, 1.0, 3.0, 3.0, 3.0]})
    majority, every = verdicts(res)
    assert majority.word == "holds" and majority.in_repeats == "holds in 4 of 5 repeats"
    assert every.word == "does not hold"
    assert majority.worst.startswith("repeat 4 (seed 11): Bandwidth-Aware 2.000 < TCP/mm 3.000")


def test_a_claim_that_fails_on_the_means_fails_whatever_the_repeats(tmp_path: Path) -> None:
    sf = _file({"claim": "at least 5", "variant": "TCP/mm", "at_least": 5e6})
    res = _results(sf, tmp_path, {"TCP/mm": [5.0, 5.0, 5.0, 0.0, 0.0], "Bandwidth-Aware": [1.0] * 5})
    (v,) = verdicts(res)
    assert v.word == "does not hold" and v.in_repeats == "holds in 3 of 5 repeats"


def test_an_unknown_repeat_rule_is_refused() -> None:
    with pytest.raises(ScenarioError) as exc:
        _file({"claim": "x", "variant": "TCP/mm", "at_least": 1, "repeats": "most"})
    assert "published.expect[0].repeats" in str(exc.value.errors)


@pytest.mark.slow
def test_console_and_report_count_the_repeats(tmp_path: Path) -> None:
    """A real run with two repeats (the case has nothing random: both repeats agree)."""
    sf = _file({"claim": "BA beats TCP/mm", "order": ["Bandwidth-Aware", "TCP/mm"]},
               {"claim": "TCP/mm beats BA", "order": ["TCP/mm", "Bandwidth-Aware"]})
    res = run_scenario(sf, SimBackend(), repeats=2, results_root=tmp_path, run_id="r", progress_out=None,
                       make_plots=False)
    console = claims_console(res)
    assert "HOLDS" in console and "holds in 2 of 2 repeats" in console
    assert "holds in 0 of 2 repeats" in console and "worst repeat: repeat " in console
    report = (res.directory / "report.md").read_text()
    assert "| BA beats TCP/mm | **holds** (holds in 2 of 2 repeats) |" in report
    assert "more than half of the repeats" in report
    row = next(line for line in report.splitlines() if line.startswith("| TCP/mm beats BA |"))
    assert "| 0 of 2 | repeat " in row and row.endswith("| **no** |")
