"""The runner on the `sim` backend, end to end: results directory, report, plots, determinism, CLI."""
from __future__ import annotations

import json
import lzma
import math
import subprocess
import sys
from pathlib import Path

import pytest

from p4handoff.cli.main import main
from tests.sim_papers import vertical_handoff
from p4handoff.lab.results import Results, RunRecord
from p4handoff.lab.runner import run_scenario
from p4handoff.scenario.loader import SweepAxis, load
from p4handoff.lab.sim_backend import SimBackend

ROOT = Path(__file__).resolve().parent.parent
VH = ROOT / "traces" / "vh-wlan-to-3g.yaml"
SHORT = (("duration", 16), ("measure.plot_range", [8, 16]))
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# random loss on the 3G cell for seeds to matter; the WLAN at 2 Mb/s (a tenth of its packets): these tests
# compare runs with each other, not with the paper
LOSSY = (*SHORT, ("topology.cells.g3.loss", 0.02), ("topology.cells.wlan.rate", "2Mbps"))


def run(tmp_path: Path, path: Path = VH, overrides=SHORT, schemes=("newreno", "bwaware"), seed=None,
        repeats=1, sweep=(), plots=True, run_id="r"):
    sf = load(path, overrides, sweep, schemes)
    return run_scenario(sf, SimBackend(), seed=seed, repeats=repeats, results_root=tmp_path, run_id=run_id,
                        progress_out=None, make_plots=plots)


@pytest.mark.slow
def test_short_vertical_handoff_end_to_end(tmp_path: Path) -> None:
    res = run(tmp_path)
    out = tmp_path / "vh-wlan-to-3g" / "r"
    assert res.directory == out
    body = json.loads((out / "metrics.json").read_text())
    q = {r["variant"]: r["quantities"] for r in body["runs"]}
    # the scenario maps onto the simulator exactly as the simulator's own setup of this case
    for scheme, label in (("newreno", "TCP/mm"), ("bwaware", "Bandwidth-Aware")):
        exp = vertical_handoff(scheme)
        exp.run(16)
        assert q[label]["throughput[main]@handoff"] == exp.flows[0].stats.throughput_bps(10, 15)
    assert q["Bandwidth-Aware"]["throughput[main]@handoff"] > 2 * q["TCP/mm"]["throughput[main]@handoff"]
    report = (out / "report.md").read_text()
    # the report's row for TCP/mm, built from what the run measured and what the file publishes
    ours, pct = q["TCP/mm"]["throughput[main]@handoff"], q["TCP/mm"]["percent_of_ideal[main]@handoff"]
    assert pct == pytest.approx(100 * ours / 384e3)    # the ideal: 3G's 384 kb/s, the outage credited
    published = res.scenario_file.published.values["TCP/mm"]
    row = (f"| TCP/mm | {ours / 1e6:.3f} | {pct:.1f} | {published['throughput'] / 1e6:.3f} | "
           f"{published['percent_of_ideal']:.1f} | {ours / published['throughput']:.2f} |")
    assert row in report, (row, report)
    assert "reproduced" in report and "minimum RTO | 1 s" in report and "drop-tail, 10 packets" in report
    for name in ("throughput.png", "cwnd-base.png", "seq-base.png", "queue-base.png"):
        png = out / "plots" / name
        assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 10_000
        assert f"plots/{name}" in report
    run_dir = out / "runs" / "base" / "TCP-mm" / "r0"
    trace = lzma.decompress((run_dir / "trace-main.csv.xz").read_bytes()).decode().splitlines()
    assert trace[0].startswith("time,conn,event") and len(trace) > 1000
    header, *rows = lzma.decompress((run_dir / "queues.csv.xz").read_bytes()).decode().splitlines()
    assert header == "t,link,queue,data,dummy,avg" and len(rows) >= 16 / 0.01   # every 10 ms of the 16 s
    samples = [r.split(",") for r in rows]
    assert {s[1] for s in samples} == {"g3"} and float(samples[0][0]) == 0.0
    assert all(0 <= int(s[2]) <= 10 for s in samples) and max(int(s[2]) for s in samples) == 10  # the 10-packet buffer fills
    assert "detach mh.wlan wlan" in (run_dir / "timeline.txt").read_text()
    counters = json.loads((run_dir / "counters.json").read_text())
    assert set(counters["at_window_edges"]) == {"10", "15"}


def test_same_seed_same_results_other_seed_differs(tmp_path: Path) -> None:
    a = run(tmp_path, overrides=LOSSY, schemes=("bwaware",), seed=3, plots=False, run_id="a")
    b = run(tmp_path, overrides=LOSSY, schemes=("bwaware",), seed=3, plots=False, run_id="b")
    c = run(tmp_path, overrides=LOSSY, schemes=("bwaware",), seed=4, plots=False, run_id="c")
    ma, mb, mc = (json.loads((r.directory / "metrics.json").read_text())["runs"] for r in (a, b, c))
    assert ma == [dict(r, dir=r["dir"]) for r in mb]
    assert ma[0]["quantities"] != mc[0]["quantities"]
    ta, tb = (r.directory / "runs/base/Bandwidth-Aware/r0/trace-main.csv.xz" for r in (a, b))
    assert ta.read_bytes() == tb.read_bytes()


def test_repeats_and_sweeps_give_mean_and_spread(tmp_path: Path) -> None:
    res = run(tmp_path, overrides=LOSSY, schemes=("newreno",), repeats=2, plots=False,
              sweep=(SweepAxis("topology.cells.g3.queue.limit", "3G buffer", (5, 20)),))
    summary = json.loads((res.directory / "metrics.json").read_text())["summary"]
    assert [s["point"] for s in summary] == [[["topology.cells.g3.queue.limit", 5]],
                                             [["topology.cells.g3.queue.limit", 20]]]
    stats = summary[0]["quantities"]["throughput[main]@handoff"]
    assert stats["n"] == 2 and stats["min"] <= stats["mean"] <= stats["max"] and stats["sd"] >= 0
    seeds = sorted({r.seed for r in res.records})
    assert seeds == [0, 1]
    report = (res.directory / "report.md").read_text()
    assert "| 3G buffer | TCP/mm: Mb/s (% ideal, × published) |" in report
    assert " ± " in report


def test_background_hosts_and_time_stop(tmp_path: Path) -> None:
    """A fixed receiver in a cell (UCC's dumbbell) and a flow that stops early."""
    res = run(tmp_path, path=ROOT / "traces" / "ucc-loss.yaml", schemes=("newreno",), plots=False,
              overrides=(("duration", 4), ("measure.windows.0.to", 4), ("flows.f2.stop", 2),
                         ("measure.plot_range", [0, 4])),
              sweep=(SweepAxis("topology.cells.bottleneck.loss", "loss", (0.0,)),))
    flows = json.loads((res.directory / "metrics.json").read_text())["runs"][0]["flows"]
    assert flows["f1"]["delivered_bytes"] > 1_000_000
    rec = res.records[0].data
    assert rec is not None
    f2 = rec.flows["f2"]
    # the application stops writing at 2 s: what it had handed over (at most a window) drains, then nothing
    assert 0 < f2.delivered(4.0) - f2.delivered(2.0) <= 256 * 1000
    assert f2.delivered(4.0) == f2.delivered(3.8) and rec.flows["f1"].delivered(4.0) > rec.flows["f1"].delivered(3.8)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "p4handoff", "run", *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def test_cli_check_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    def run_cli(*args: str) -> tuple[int | str | None, str, str]:
        """`p4handoff run ARGS` in this process (nothing here runs a simulation; a subprocess takes 1 s to start)."""
        try:
            code: int | str | None = main(["run", *args])
        except SystemExit as exc:
            code = exc.code
        out = capsys.readouterr()
        return code, out.out, out.err

    code, out, _ = run_cli(str(VH), "--check")
    assert code == 0 and "3 variant(s) × 1 sweep point(s)" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenario: Bad Name\n")
    code, _, err = run_cli(str(bad), "--check")
    assert code == 3 and "(top).scenario" in err and "topology: required" in err
    code, _, err = run_cli(str(VH), "--set", "topology.cells.g5.rate=1", "--check")
    assert code == 3 and "no item named 'g5'" in err
    code, _, err = run_cli(str(VH), "--repeat", "0")
    assert code == 2 and "--repeat: must be >= 1, got 0" in err
    code, _, err = run_cli(str(VH), "--seed", "x")
    assert code == 2 and "--seed: not a whole number: 'x'" in err
    code, _, err = run_cli(str(tmp_path / "missing.yaml"))
    assert code == 3 and err == f"{tmp_path / 'missing.yaml'}: no such file\n"


@pytest.mark.slow
def test_cli_runs_and_prints_the_table(tmp_path: Path) -> None:
    res = cli(str(VH), "--backend", "sim", "--set", "duration=16", "--schemes", "newreno,bwaware",
              "--results", str(tmp_path), "--no-plots", "--quiet")
    assert res.returncode == 0, res.stderr
    assert "backend: sim (asked for)" in res.stderr
    assert "| Bandwidth-Aware | 0.294 |" in res.stdout


def test_repeat_statistics_skip_quantities_a_run_could_not_measure():
    """A lab repeat with an n/a (NaN) quantity once crashed the report (statistics.stdev raises on NaN)."""
    recs = [RunRecord("v", (), k, k, Path("."), None, {"q": v}, {}) for k, v in enumerate([1.0, math.nan, 3.0])]
    res = Results(None, "lab", "", 0, 3, "id", Path("."), recs)
    assert res.mean((), "v", "q") == 2.0 and res.spread((), "v", "q") == pytest.approx(math.sqrt(2))
    nan_only = Results(None, "lab", "", 0, 1, "id", Path("."), recs[1:2])
    assert math.isnan(nan_only.mean((), "v", "q")) and nan_only.spread((), "v", "q") == 0.0


def _vh_results(backend: str, runs: dict[str, list[float]]) -> tuple[Results, object]:
    """Results of the WLAN -> 3G file with given throughputs per scheme label (one record per repeat)."""
    sf = load(VH)
    key = "throughput[main]@handoff"
    recs = [RunRecord(label, (), k, k, Path("."), None, {key: v}, {})
            for label, values in runs.items() for k, v in enumerate(values)]
    res = Results(sf, backend, "", 0, max(len(v) for v in runs.values()), "id", Path("."), recs)
    tq = next(q for q in sf.resolve(sf.variants[0]).measure.table if q.key == key)
    return res, tq


def test_ordering_sentence_says_which_neighbours_the_repeats_cannot_tell_apart():
    from p4handoff.lab.report import _gap_sentence
    pub = load(VH).published.values
    res, tq = _vh_results("lab", {"TCP/mm": [120e3, 180e3], "Immediate": [130e3, 190e3],
                                  "Bandwidth-Aware": [300e3, 296e3]})
    text = _gap_sentence(res, (), tq, pub)
    assert "— reproduced (Immediate and TCP/mm differ by less than their spread over 2 repeats: not resolved)" in text
    res, tq = _vh_results("lab", {"TCP/mm": [120e3, 122e3], "Immediate": [150e3, 152e3],
                                  "Bandwidth-Aware": [300e3, 296e3]})
    assert "every step of it larger than the spread over 2 repeats" in _gap_sentence(res, (), tq, pub)
    res, tq = _vh_results("lab", {"TCP/mm": [171e3], "Immediate": [133e3], "Bandwidth-Aware": [302e3]})
    text = _gap_sentence(res, (), tq, pub)
    assert "NOT reproduced (one real-time run: its run-to-run spread is unknown" in text
    res.backend = "sim"
    assert "NOT reproduced. Largest gap" in _gap_sentence(res, (), tq, pub)


def test_a_flows_start_jitter_is_where_the_simulator_starts_it(tmp_path: Path) -> None:
    """Each repeat's flow connects at its own drawn start (FlowSpec.start_at of that repeat's seed)."""
    overrides = (("duration", 2), ("measure.windows.0.to", 2), ("measure.plot_range", [0, 2]),
                 ("flows.f1.start_jitter", "500ms"))
    sweep = (SweepAxis("topology.cells.bottleneck.loss", "loss", (0.0,)),)
    res = run(tmp_path, path=ROOT / "traces" / "ucc-loss.yaml", schemes=("newreno",), plots=False,
              overrides=overrides, sweep=sweep, seed=3, repeats=2)
    sf = res.scenario_file
    flow = sf.resolve(sf.variants[0], sf.points()[0]).flow("f1")
    established = {}
    for r in (0, 1):
        trace = next(res.directory.glob(f"runs/*/*/r{r}/trace-f1.csv.xz"))
        first = lzma.decompress(trace.read_bytes()).decode().splitlines()[1].split(",")
        assert first[2] == "established"
        established[r] = float(first[0])
        rtt = float(first[7])                               # the handshake's sample
        assert established[r] == pytest.approx(flow.start_at(3 + r) + rtt, abs=0.005)
    assert flow.start_at(3) != flow.start_at(4)


def test_a_total_throughput_sums_the_flows_its_patterns_match(tmp_path: Path) -> None:
    """`flows: [...]` on total_throughput: names or patterns, summed; without it, measure.flows."""
    table = [{"metric": "total_throughput"}, {"metric": "total_throughput", "flows": ["f*"]},
             {"metric": "total_throughput", "flows": ["f2"]},
             {"metric": "throughput", "flow": "f1"}, {"metric": "throughput", "flow": "f2"}]
    res = run(tmp_path, path=ROOT / "traces" / "ucc-loss.yaml", schemes=("newreno",), plots=False,
              overrides=(("duration", 3), ("measure.windows.0.to", 3), ("measure.plot_range", [0, 3]),
                         ("measure.table", table), ("published.expect", [])),
              sweep=(SweepAxis("topology.cells.bottleneck.loss", "loss", (0.0,)),))
    q = json.loads((res.directory / "metrics.json").read_text())["runs"][0]["quantities"]
    [window] = {k.rsplit("@", 1)[1] for k in q}
    f1, f2 = q[f"throughput[f1]@{window}"], q[f"throughput[f2]@{window}"]
    assert f1 > 0 and f2 > 0
    assert q[f"total_throughput[f*]@{window}"] == pytest.approx(f1 + f2)
    assert q[f"total_throughput[f2]@{window}"] == pytest.approx(f2)
    assert q[f"total_throughput[all]@{window}"] == pytest.approx(f1 + f2)     # ucc-loss measures both
