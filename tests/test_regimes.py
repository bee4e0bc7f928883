"""Every regime file's effect guarded (issue 25): a shortened, deterministic version of each regime (one K,
one phase, fewer seconds) whose claims must come out as the full file's do, and the same with the mechanism
switched off in one variant (M-RED made to count the flush like RED, DSBP without its probes, DSBP's window
capped, Bandwidth-Aware's restart replaced by Reno), where the claim must then fail. Losing an effect
(IPF's collapse of RED, DSBP's gain, ...) fails the suite. Real simulator runs, seed 0, a few seconds each."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from p4handoff.lab.claims import verdicts
from p4handoff.lab.results import Results
from p4handoff.lab.runner import run_scenario
from p4handoff.lab.sim_backend import SimBackend
from p4handoff.scenario.loader import load

pytestmark = pytest.mark.slow
TRACES = Path(__file__).resolve().parent.parent / "traces"
K4 = tuple((path, 4) for path in ("topology.correspondents.0.count", "topology.links.0.count",
                                  "topology.mobile_hosts.0.count", "flows.0.count"))


def _run(tmp_path: Path, name: str, overrides: tuple[tuple[str, Any], ...]) -> Results:
    sf = load(TRACES / name, (("sweep", []), *overrides))
    return run_scenario(sf, SimBackend(), seed=None, repeats=1, results_root=tmp_path, run_id="r",
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
