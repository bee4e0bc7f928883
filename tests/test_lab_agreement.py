"""`p4handoff agree`: a sweep against another, claim by claim (Fisher's exact test on how often each holds per
repeat) and quantity by quantity (the reference's spread, Mann-Whitney). The tests are checked against textbook
values, given numbers whose answer is known, and one real pair of simulator sweeps read back from disk."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from p4handoff.cli.main import main
from p4handoff.lab.agreement import compare, fisher_exact, mann_whitney, render
from p4handoff.lab.results import Results, RunRecord
from p4handoff.lab.runner import load_results, run_scenario
from p4handoff.lab.sim_backend import SimBackend
from p4handoff.scenario.loader import ScenarioFile, load

ROOT = Path(__file__).resolve().parent.parent
VH = ROOT / "traces" / "vh-wlan-to-3g.yaml"
KEY = "throughput[main]@handoff"
CLAIM = {"claim": "BA beats TCP/mm", "order": ["Bandwidth-Aware", "TCP/mm"], "metric": "throughput",
         "flow": "main", "window": "handoff"}


def _file(duration: int = 16) -> ScenarioFile:
    short = (("duration", duration), ("measure.plot_range", [8, duration]),
             ("measure.table", [{"metric": "throughput", "flow": "main"}]), ("published.expect", [CLAIM]))
    return load(VH, short, (), ("newreno", "bwaware"))


def _results(sf: ScenarioFile, where: Path, seed: int, values: dict[str, list[float]]) -> Results:
    """Repeats' throughput (Mb/s) per variant, as the runner would have recorded them."""
    scn = sf.plan[0].scenario
    n = len(next(iter(values.values())))
    res = Results(sf, "sim", "", seed, n, where.name, where)
    res.records = [RunRecord(label, (), k, seed + k, where / label / f"r{k}", scn, {KEY: v * 1e6}, {})
                   for label, vs in values.items() for k, v in enumerate(vs)]
    return res


def test_fisher_exact_gives_the_textbook_p_values() -> None:
    assert fisher_exact(1, 9, 11, 3) == pytest.approx(0.002759, abs=1e-6)     # R: fisher.test(matrix(c(1,11,9,3),2))
    assert fisher_exact(3, 1, 1, 3) == pytest.approx(0.4857, abs=1e-4)        # the lady tasting tea
    assert fisher_exact(5, 0, 5, 0) == 1.0                                    # both always hold: nothing differs
    assert fisher_exact(0, 0, 0, 0) == 1.0
    with pytest.raises(ValueError):
        fisher_exact(-1, 2, 3, 4)


def test_mann_whitney_follows_the_normal_approximation_with_ties_and_continuity() -> None:
    # apart: U = 0, mean 50, variance 10·10·21/12 = 175, z = (50 - 0.5)/√175
    p = mann_whitney([float(v) for v in range(1, 11)], [float(v) for v in range(11, 21)])
    assert p == pytest.approx(math.erfc(49.5 / math.sqrt(175) / math.sqrt(2)), rel=1e-12)
    assert p < 0.001
    assert mann_whitney([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) == 1.0             # the same sample
    assert mann_whitney([2.0, 2.0], [2.0, 2.0, 2.0]) == 1.0                  # all tied: no evidence either way
    # ties get their average rank: x = [1, 2, 2], y = [2, 3]: ranks 1, 3, 3 | 3, 5; U = 7 - 6 = 1
    var = 3 * 2 / 12 * (6 - (3 ** 3 - 3) / (5 * 4))
    assert mann_whitney([1.0, 2.0, 2.0], [2.0, 3.0]) == pytest.approx(
        math.erfc((3 - 1 - 0.5) / math.sqrt(var) / math.sqrt(2)), rel=1e-12)
    assert mann_whitney([], [1.0]) == 1.0


def test_a_set_whose_claim_holds_far_less_often_differs_and_one_like_the_reference_is_consistent(
        tmp_path: Path) -> None:
    sf = _file()
    ref = _results(sf, tmp_path / "ref", 0, {"Bandwidth-Aware": [3.0] * 10, "TCP/mm": [1.0] * 10})
    flipped = _results(sf, tmp_path / "lab1", 100, {"Bandwidth-Aware": [1.0, 1.0, 3.0], "TCP/mm": [2.0, 2.0, 1.0]})
    again = _results(sf, tmp_path / "lab2", 200, {"Bandwidth-Aware": [1.0, 1.5, 3.0], "TCP/mm": [2.0, 2.0, 1.0]})
    (c,), quantities = compare(ref, [flipped, again])
    assert c.pooled == (2, 6) and c.same_verdicts == 0
    assert c.p_value == pytest.approx(fisher_exact(10, 0, 2, 4))
    assert c.p_value < 0.05
    ba = next(q for q in quantities if q.variant == "Bandwidth-Aware")
    assert ba.others == (1e6, 1e6, 3e6, 1e6, 1.5e6, 3e6) and ba.inside == 2          # only the 3.0s are in [3, 3]
    like = _results(sf, tmp_path / "lab3", 300, {"Bandwidth-Aware": [2.9, 3.0, 3.0], "TCP/mm": [1.0, 1.1, 1.0]})
    (c,), _ = compare(ref, [like])
    assert c.pooled == (3, 3) and c.same_verdicts == 1 and c.p_value == 1.0
    text = render(ref, [like])
    assert "| BA beats TCP/mm | holds, 10 of 10 | holds | 3 of 3 | 1 of 1 | 1.000 | consistent |" in text
    assert "**differs**" in render(ref, [flipped])


def test_sets_that_share_nothing_are_refused_with_the_reason(tmp_path: Path) -> None:
    sf = _file()
    ref = _results(sf, tmp_path / "ref", 0, {"Bandwidth-Aware": [3.0], "TCP/mm": [1.0]})
    other = load(VH, (("duration", 16), ("measure.plot_range", [8, 16]),
                      ("measure.windows", [{"name": "late", "from": 12, "to": 16}]),
                      ("measure.table", [{"metric": "throughput", "flow": "main"}]),
                      ("published.window", "late"),
                      ("published.expect", [{**CLAIM, "claim": "another claim", "window": "late"}])),
                 (), ("newreno", "bwaware"))
    res = _results(other, tmp_path / "other", 0, {"Bandwidth-Aware": [3.0], "TCP/mm": [1.0]})
    res.records = [RunRecord(r.variant, r.point, r.repeat, r.seed, r.directory, r.scenario,
                             {"throughput[main]@late": v}, {}) for r in res.records for v in r.quantities.values()]
    with pytest.raises(ValueError, match="share no claim and no measured quantity"):
        compare(ref, [res])
    with pytest.raises(ValueError, match="at least one other"):
        compare(ref, [])


@pytest.mark.slow
def test_two_real_sweeps_read_back_from_disk_and_compared_on_the_command_line(tmp_path: Path, capsys) -> None:
    sf = _file()
    first = run_scenario(sf, SimBackend(), repeats=2, results_root=tmp_path, run_id="a", progress_out=None,
                         make_plots=False)
    second = run_scenario(sf, SimBackend(), seed=5, repeats=1, results_root=tmp_path, run_id="b", progress_out=None,
                          make_plots=False)
    back = load_results(first.directory)
    assert (back.backend, back.seed, back.repeats) == ("sim", first.seed, 2)
    assert sorted((r.variant, r.repeat, r.quantities[KEY]) for r in back.records) == sorted(
        (r.variant, r.repeat, r.quantities[KEY]) for r in first.records)
    assert main(["agree", str(first.directory), str(second.directory)]) == 0
    out = capsys.readouterr().out
    c = check_row(out, "| BA beats TCP/mm |")
    assert "of 2 |" in c and "of 1 |" in c                 # the reference's two repeats, the other's one
    assert f"| {KEY} | Bandwidth-Aware |" in out
    assert main(["agree", str(first.directory), str(tmp_path)]) == 1       # not a results directory
    assert "is not a results directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["agree", str(first.directory), str(second.directory), "--alpha", "5"])
    assert exc.value.code == 2


def check_row(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))
