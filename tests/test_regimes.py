"""Every regime file's effect guarded (issue 25): a shortened, deterministic version of each regime (one K,
one phase, fewer seconds) whose claims must come out as the full file's do, and the same with the mechanism
switched off (M-RED made to count the flush like RED, DSBP without its probes or its pacing, DSBP's window
capped, Bandwidth-Aware's restart replaced by Reno, the old BS without IPF, UCC without its one-way delays,
CDG and CHD without their delay back-off), where the claim must then fail. Losing an effect (IPF's collapse
of RED, DSBP's gain, UCC's gain, ...) fails the suite. Real simulator runs, seed 0, a few seconds each."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from p4handoff.hosts.cc import SCHEMES, CongestionControl
from p4handoff.hosts.cc.cdg import Cdg
from p4handoff.hosts.cc.chd import Chd
from p4handoff.hosts.cc.ucc import Ucc
from p4handoff.lab.claims import verdicts
from p4handoff.lab.results import Results
from p4handoff.lab.runner import run_scenario
from p4handoff.lab.sim_backend import SimBackend
from p4handoff.scenario.loader import load, parse, read_document

pytestmark = pytest.mark.slow
TRACES = Path(__file__).resolve().parent.parent / "traces"
K4 = tuple((path, 4) for path in ("topology.correspondents.0.count", "topology.links.0.count",
                                  "topology.mobile_hosts.0.count", "flows.0.count"))


def _run(tmp_path: Path, name: str, overrides: tuple[tuple[str, Any], ...], run_id: str = "r") -> Results:
    """One run per variant of `name` without its sweep; variants given in `overrides` replace its schemes."""
    doc = read_document(TRACES / name)
    if any(path == "variants" for path, _ in overrides):
        doc.pop("schemes", None)
    sf = parse(doc, name, (("sweep", []), *overrides))
    return run_scenario(sf, SimBackend(), seed=None, repeats=1, results_root=tmp_path, run_id=run_id,
                        progress_out=None, make_plots=False)


def _words(res: Results, relabel: dict[str, str] | None = None) -> dict[str, str]:
    """Each claim's verdict; with `relabel`, on the claim with those variants replaced (the broken one)."""
    if relabel:
        sf = res.scenario_file
        pub = sf.published
        assert pub is not None
        swapped = tuple(dataclasses.replace(e, variants=tuple(relabel.get(v, v) for v in e.variants))
                        for e in pub.expect)
        res = dataclasses.replace(res, scenario_file=dataclasses.replace(sf, published=dataclasses.replace(
            pub, expect=swapped)))
    return {v.claim: v.word for v in verdicts(res)}


IPF_SHORT = (*K4, ("duration", 14), ("measure.plot_range", [10, 14]),
             ("measure.windows", [{"name": "before", "from": 6, "to": 12}, {"name": "after", "from": 12, "to": 14}]))
#: M-RED made to count the flush: the IPF column's cell runs RED (its BS still buffers and flushes)
BROKEN_MRED: dict[str, Any] = {"label": "IPF, M-RED counting priority", "set": {"topology.cells.new.queue.aqm": "red"}}


def test_ipf_group_burst_collapses_red_and_not_mred(tmp_path: Path) -> None:
    variants = [{"label": "RED"}, {"label": "IPF", "set": {"topology.cells.new.queue.aqm": "mred"}}, BROKEN_MRED]
    res = _run(tmp_path, "ipf-group-burst.yaml", (*IPF_SHORT, ("variants", variants)))
    words = _words(res)
    assert words["RED's average crosses max_th (160) after the flush"] == "holds"
    assert words["RED's queue runs empty after the flush (synchronisation)"] == "holds"
    assert words["M-RED's (non-priority) average stays below max_th (160)"] == "holds"
    assert words["utilisation of the new cell after the flush: IPF > RED"] == "holds"
    broken = _words(res, {"IPF": BROKEN_MRED["label"]})
    assert broken["M-RED's (non-priority) average stays below max_th (160)"] == "does not hold"
    assert broken["utilisation of the new cell after the flush: IPF > RED"] == "does not hold"


def test_ipf_group_visits_red_crosses_max_th_at_a_group_visit_and_mred_does_not(tmp_path: Path) -> None:
    one_visit = (("duration", 20), ("topology.mobile_hosts.0.moves.0.at.from.first", 12),
                 ("topology.mobile_hosts.0.moves.0.at.from.step", 0),
                 ("topology.mobile_hosts.0.moves.0.at.to", 13), ("topology.mobile_hosts.0.moves.0.at.count", 1),
                 ("topology.mobile_hosts.0.moves.0.stay", 6), ("measure.plot_range", [10, 20]),
                 ("measure.windows", [{"name": "run", "from": 6, "to": 20}, {"name": "visits", "from": 12, "to": 20}]))
    step = {"topology.mobile_hosts.0.moves.0.at.from.step": 0}
    variants = [{"label": "RED", "set": step}, {"label": "IPF", "set": {**step, "topology.cells.new.queue.aqm": "mred"}},
                {**BROKEN_MRED, "set": {**step, "topology.cells.new.queue.aqm": "red"}}]
    res = _run(tmp_path, "ipf-group-visits.yaml", (*one_visit, ("variants", variants)))
    words = _words(res)
    assert words["RED's average exceeds max_th (200) at the group's visits"] == "holds"
    assert words["IPF's average queue stays below max_th (200)"] == "holds"
    broken = _words(res, {"IPF": BROKEN_MRED["label"]})
    assert broken["IPF's average queue stays below max_th (200)"] == "does not hold"


def test_combined_flag_aware_senders_stop_fighting_ipf(tmp_path: Path) -> None:
    """The file's finding (issue 20): told that the network forwards its flight, Bandwidth-Aware senders no longer
    restart it go-back-N, so over IPF they beat the signal-less Bandwidth-Aware on the cell and on the existing
    connections, and resend nothing the flush carried; without the signal the restart resends the flight."""
    res = _run(tmp_path, "combined-group-handoff.yaml", IPF_SHORT)
    words = _words(res)
    for claim in ("flag-aware combination ≥ Bandwidth-Aware / IPF on utilisation",
                  "flag-aware combination ≥ Bandwidth-Aware / IPF on the existing connections' throughput",
                  "without the signal, the restart sends forwarded segments again (Bandwidth-Aware / IPF)"):
        assert words[claim] == "holds", (claim, words)
    # the broken variant: the signal ignored (the signal-less column read as the flag-aware one): the restart's
    # second copies are back and the combination loses to Reno / IPF on the cell and the existing connections
    broken = _words(res, {"flag-aware Bandwidth-Aware / IPF": "Bandwidth-Aware / IPF"})
    for claim in ("no forwarded segment is sent twice (flag-aware, IPF)",
                  "flag-aware combination ≥ Reno / IPF on utilisation",
                  "flag-aware combination ≥ Reno / IPF on the existing connections' throughput"):
        assert words[claim] == "holds" and broken[claim] == "does not hold", (claim, words[claim], broken[claim])


DSBP_PHASE = (("topology.cells.new.rate", "11Mbps"), ("topology.mobile_hosts.mh.moves.0.enter", 10.13))


def test_dsbp_loaded_cell_gains_after_the_handoff(tmp_path: Path) -> None:
    gain: dict[str, Any] = {"claim": "DSBP gains at least 10 % after the handoff", "ratio": ["DSBP", "NewReno"], "metric": "throughput",
            "flow": "main", "window": "after", "at_least": 1.1}
    res = _run(tmp_path, "dsbp-loaded-cell.yaml", (*DSBP_PHASE, ("schemes", ["newreno", "dsbp"]),
                                                   ("published.expect", [gain])))
    assert _words(res) == {gain["claim"]: "holds"}
    # the broken one: DSBP with its probing switched off is NewReno (the same run: the simulator is deterministic).
    # (A new cell that drops dummies above one waiting packet does not break it: the new cell is idle, so the
    # probes pass.)
    assert _words(res, {"DSBP": "NewReno"}) == {gain["claim"]: "does not hold"}


def test_dsbp_window_gain_over_a_capped_baseline_is_the_window(tmp_path: Path) -> None:
    capped: dict[str, Any] = {"label": "DSBP rwnd 128, capped at 20", "scheme": "dsbp", "tcp": {"window": 20}}    # the broken one
    res = _run(tmp_path, "dsbp-window.yaml", (("topology.cells.new.rate", "11Mbps"),
                                              ("variants", [*load(TRACES / "dsbp-window.yaml").doc["variants"], capped])))
    words = _words(res)
    gain = "DSBP (rwnd 128) gains more than 100 % over NewReno at ns-2's default window (ratio above 2)"
    assert words[gain] == "holds"
    assert words["the window alone does as much: NewReno at 128 gains more than 100 % over NewReno at 20"] == "holds"
    assert words["at equal windows DSBP gains more than 200 % over NewReno (ratio above 3)"] == "does not hold"
    assert _words(res, {"DSBP rwnd 128": capped["label"]})[gain] == "does not hold"


def test_ipf_group_map_mred_crosses_max_th_when_whole_windows_follow_the_flush(tmp_path: Path) -> None:
    """The map's finding at a cell where it holds in 5 of 5 repeats (150 ms outage, K = 4): M-RED's average
    crosses max_th and IPF's queue runs empty, because the flushed flights' ACKs release K windows of unmarked
    data behind the flush (docs/lab.md). With that cause removed — the MHs' windows capped at 16 segments,
    so little follows the flush — the same claims hold: the test sees the mechanism, not just a number."""
    at9 = {"topology.mobile_hosts.0.moves.0.at": 9, "topology.mobile_hosts.0.moves.0.outage": "150ms"}
    mred = {**at9, "topology.cells.new.queue.aqm": "mred"}
    capped: dict[str, Any] = {"label": "IPF, MHs' windows 16", "set": {**mred, "flows.0.window": 16}}
    res = _run(tmp_path, "ipf-group-map.yaml", (*K4, ("variants", [{"label": "RED", "set": at9},
                                                                    {"label": "IPF", "set": mred}, capped])))
    words = _words(res)
    assert words["RED's average crosses max_th (160) after the flush"] == "holds"
    assert words["RED's queue runs empty after the flush (synchronisation)"] == "holds"
    assert words["M-RED's (non-priority) average stays below max_th (160)"] == "does not hold"
    assert words["IPF's queue does not run empty after the flush"] == "does not hold"
    without_cause = _words(res, {"IPF": capped["label"]})
    assert without_cause["M-RED's (non-priority) average stays below max_th (160)"] == "holds"
    assert without_cause["IPF's queue does not run empty after the flush"] == "holds"


DSBP_SMALL_BUFFERS = (("topology.cells.new.rate", "11Mbps"), ("tcp.window", 128),
                      ("topology.cells.old.queue.limit", 10), ("topology.cells.new.queue.limit", 10))


def test_dsbp_search_pacing_keeps_dsbp_level_with_newreno_at_small_buffers(tmp_path: Path) -> None:
    """dsbp-search at rwnd 128, 10-packet buffers, old path kept: paced DSBP >= NewReno (1.06); the same
    scheme without its pacing (`dsbp-unpaced`, the broken one) overflows the 10-packet buffer (0.68).
    "More than 200 %" fails, as at every point of the file."""
    res = _run(tmp_path, "dsbp-search.yaml", DSBP_SMALL_BUFFERS)
    words = _words(res)
    assert words == {"DSBP gains more than 200 % over NewReno (ratio above 3)": "does not hold",
                     "DSBP's throughput is at least NewReno's": "holds",
                     "pacing after the handoff: DSBP at least DSBP unpaced": "holds"}
    assert _words(res, {"DSBP": "DSBP unpaced"})["DSBP's throughput is at least NewReno's"] == "does not hold"


def test_dsbp_over_ipf_gains_only_with_the_old_bs_forwarding(tmp_path: Path) -> None:
    """dsbp-over-ipf at rwnd 128, 50-packet buffers (single binding): with the old BS forwarding the lost
    path's flight DSBP gains 21 % over NewReno; the broken variant, the old BS without IPF (dsbp-search's
    dropped case), leaves 1.4 %."""
    no_ipf = {"topology.base_stations.0.ipf": False}
    variants = [{"label": "NewReno", "scheme": "newreno"}, {"label": "DSBP", "scheme": "dsbp"},
                {"label": "NewReno, old BS without IPF", "scheme": "newreno", "set": no_ipf},
                {"label": "DSBP, old BS without IPF", "scheme": "dsbp", "set": no_ipf}]
    gain: dict[str, Any] = {"claim": "DSBP over IPF gains at least 10 % over NewReno over IPF",
                            "ratio": ["DSBP", "NewReno"], "metric": "throughput", "flow": "main", "at_least": 1.1}
    res = _run(tmp_path, "dsbp-over-ipf.yaml", (("topology.cells.new.rate", "11Mbps"), ("tcp.window", 128),
                                                ("variants", variants), ("published.expect", [gain])))
    assert _words(res) == {gain["claim"]: "holds"}
    assert _words(res, {"DSBP": "DSBP, old BS without IPF", "NewReno": "NewReno, old BS without IPF"}) == {
        gain["claim"]: "does not hold"}


UCC_30S = (("duration", 30), ("measure.windows", [{"name": "run", "from": 0, "to": 30}]))
#: UCC without timestamps has no one-way delays, so its utilisation reads 1 and it halves on every loss
UCC_BLIND: dict[str, Any] = {"label": "UCC without timestamps", "scheme": "ucc", "tcp": {"timestamps": False}}


def test_ucc_loss_gains_half_again_over_newreno_on_a_lossy_link(tmp_path: Path) -> None:
    variants = [{"label": "NewReno", "scheme": "newreno"}, {"label": "UCC", "scheme": "ucc"}, UCC_BLIND]
    res = _run(tmp_path, "ucc-loss.yaml", (*UCC_30S, ("topology.cells.bottleneck.loss", 0.01),
                                           ("variants", variants)))
    words = _words(res)
    assert words == {"UCC gets at least 1.5x NewReno's total over lossy links": "holds",
                     "UCC gets at least NewReno's total": "holds"}
    assert _words(res, {"UCC": UCC_BLIND["label"]})["UCC gets at least 1.5x NewReno's total over lossy links"] \
        == "does not hold"


def test_ucc_friendliness_keeps_newreno_its_share_and_gains_on_a_lossy_link(tmp_path: Path) -> None:
    """At 1 % loss both of the file's claims hold. The total's claim (at least NewReno + NewReno's) sits at 1.0,
    where a UCC reduced to NewReno lands too (0.96 here), so its effect is guarded with a margin: at least 1.2x
    (measured 1.61), which UCC without its one-way delays does not reach. (Friendliness barely needs UCC's
    rule on a lossy link: the link is not full, so UCC's utilisation rarely exceeds alpha; with the rule
    removed, alpha = 1, NewReno keeps about the same share: 0.79x vs 0.83x at 1 %, 1.10x vs 1.08x at 2 %,
    0.94x both at 5 %, 30 s runs.)"""
    gain: dict[str, Any] = {"claim": "the total with UCC is at least 1.2x the total with NewReno",
                            "ratio": ["UCC", "NewReno"], "metric": "total_throughput", "at_least": 1.2}
    doc = read_document(TRACES / "ucc-friendliness.yaml")
    variants = [{"label": "NewReno", "scheme": "newreno"}, {"label": "UCC", "scheme": "ucc"}, UCC_BLIND]
    res = _run(tmp_path, "ucc-friendliness.yaml", (*UCC_30S, ("topology.cells.bottleneck.loss", 0.01),
                                                   ("variants", variants),
                                                   ("published.expect", [*doc["published"]["expect"], gain])))
    assert _words(res) == {"NewReno next to UCC keeps at least 70 % of what it gets next to NewReno": "holds",
                           "the total with UCC is at least the total with NewReno": "holds", gain["claim"]: "holds"}
    assert _words(res, {"UCC": UCC_BLIND["label"]})[gain["claim"]] == "does not hold"


@dataclasses.dataclass(frozen=True)
class _Tuned:
    """A scheme built with parameters a scenario file cannot set: the broken variants of the UCC family."""

    cls: type[CongestionControl]
    params: tuple[tuple[str, float], ...]

    @property
    def randomised(self) -> bool:
        return bool(getattr(self.cls, "randomised", False))

    def __call__(self) -> CongestionControl:
        return self.cls(**dict(self.params))


def test_ucc_friendliness_lossfree_pushes_delay_based_schemes_aside(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Loss-free, 30 s: CDG and CHD back off on NewReno's queue (0.45x, 0.34x), NewReno next to UCC keeps its
    share, and the total with UCC stays just below NewReno + NewReno's (the file's failing claim, 0.98 here,
    0.995 over 100 s). Broken: CDG never backing off on delay (backoff_factor 0), CHD nearly never (pmax 1e-9),
    UCC never halving on a busy link (alpha 1): the pushed-aside claims fail, and NewReno's share next to UCC
    falls below 95 % (1.18 -> 0.83; the file's 0.7 bound does not see that)."""
    share: dict[str, Any] = {"claim": "NewReno next to UCC keeps at least 95 % of what it gets next to NewReno",
                             "ratio": ["UCC", "NewReno"], "metric": "throughput", "flow": "f2", "at_least": 0.95}
    doc = read_document(TRACES / "ucc-friendliness-lossfree.yaml")
    overrides = (*UCC_30S, ("topology.cells.bottleneck.loss", 0.0),
                 ("published.expect", [*doc["published"]["expect"], share]))
    pushed = ("CDG at N1 gets at most 0.7x what NewReno gets there (pushed aside by NewReno)",
              "CHD at N1 gets at most 0.7x what NewReno gets there (pushed aside by NewReno)")
    words = _words(_run(tmp_path, "ucc-friendliness-lossfree.yaml", overrides))
    assert words == {**dict.fromkeys(pushed, "holds"),
                     "NewReno next to UCC keeps at least 70 % of what it gets next to NewReno": "holds",
                     "the total with UCC is at least the total with NewReno": "does not hold",
                     share["claim"]: "holds"}
    for name, tuned in (("cdg", _Tuned(Cdg, (("backoff_factor", 0.0),))), ("chd", _Tuned(Chd, (("pmax", 1e-9),))),
                        ("ucc", _Tuned(Ucc, (("alpha", 1.0),)))):
        monkeypatch.setitem(SCHEMES, name, tuned)
    broken = _words(_run(tmp_path, "ucc-friendliness-lossfree.yaml", overrides, run_id="broken"))
    assert [broken[c] for c in (*pushed, share["claim"])] == ["does not hold"] * 3, broken
