"""Run a scenario file: every variant at every sweep point, K repeats, one results directory.

    results/<scenario>/<run-id>/
      scenario.yaml            the document as run (overrides applied)
      metrics.json             every run's quantities, and mean/sd/min/max over repeats
      report.md                the paper-format comparison (topo.report)
      plots/*.png              cwnd, sequence, queue, throughput vs ideal, sweeps (topo.plots)
      runs/<point>/<variant>/r<k>/
        trace-<flow>.csv       the sender's per-ACK trace (cwnd, ssthresh, snd_una, ...)
        queues.csv             queue samples (t, link, queue, data, dummy, avg)
        counters.json          per-link counters at the window edges and at the end
        timeline.txt           mobility events and notifications as they happened

Repeat k runs with seed `seed + k`; the seed changes only what is random
(random loss, RED), so deterministic scenarios repeat exactly.
"""
from __future__ import annotations

import csv
import json
import math
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, TextIO

import yaml

from topo import metrics
from topo.rundata import RunData
from topo.scenario import Scenario, ScenarioFile

REPO_ROOT = Path(__file__).resolve().parent.parent


class Backend(Protocol):
    name: str

    def run(self, scn: Scenario, seed: int, out_dir: Path, progress: Callable[[float], None]) -> RunData: ...


@dataclass
class RunRecord:
    """One executed run: where it stands in the plan, its directory and its numbers."""

    variant: str
    point: tuple[tuple[str, Any], ...]
    repeat: int
    seed: int
    directory: Path
    scenario: Scenario
    quantities: dict[str, float]
    detail: dict[str, Any]
    data: RunData | None = None          # kept for repeat 0 only (the plots use it)


@dataclass
class Results:
    scenario_file: ScenarioFile
    backend: str
    backend_reason: str
    seed: int
    repeats: int
    run_id: str
    directory: Path
    records: list[RunRecord] = field(default_factory=list)
    wall_seconds: float = 0.0

    def summary(self) -> list[dict[str, Any]]:
        """Mean, sd, min, max and n of every quantity per (point, variant), in plan order."""
        out: list[dict[str, Any]] = []
        groups: dict[tuple, list[RunRecord]] = {}
        for r in self.records:
            groups.setdefault((r.point, r.variant), []).append(r)
        for (point, variant), recs in groups.items():
            stats = {}
            for key in recs[0].quantities:
                vals = [r.quantities[key] for r in recs if not math.isnan(r.quantities[key])]
                stats[key] = _stats(vals)
            out.append({"point": [[p, v] for p, v in point], "variant": variant, "quantities": stats})
        return out

    def _values(self, point: tuple, variant: str, key: str) -> list[float]:
        """The repeats' values of one quantity, without the n/a (NaN) ones: statistics.stdev raises on NaN."""
        return [r.quantities[key] for r in self.records
                if r.point == point and r.variant == variant and not math.isnan(r.quantities[key])]

    def mean(self, point: tuple, variant: str, key: str) -> float:
        vals = self._values(point, variant, key)
        return statistics.fmean(vals) if vals else math.nan

    def spread(self, point: tuple, variant: str, key: str) -> float:
        vals = self._values(point, variant, key)
        return statistics.stdev(vals) if len(vals) > 1 else 0.0


def _stats(vals: list[float]) -> dict[str, float]:
    if not vals:
        return {"mean": math.nan, "sd": math.nan, "min": math.nan, "max": math.nan, "n": 0}
    return {"mean": statistics.fmean(vals), "sd": statistics.stdev(vals) if len(vals) > 1 else 0.0,
            "min": min(vals), "max": max(vals), "n": len(vals)}


def slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._=-]+", "-", text).strip("-")
    return s or "x"


def point_slug(point: tuple[tuple[str, Any], ...]) -> str:
    if not point:
        return "base"
    return slug("_".join(f"{path.split('.')[-1]}={value}" for path, value in point))


def point_label(sf: ScenarioFile, point: tuple[tuple[str, Any], ...]) -> str:
    labels = {a.path: a.label for a in sf.sweep}
    return ", ".join(f"{labels.get(p, p)} = {v}" for p, v in point)


class Progress:
    """One status line: a bar over all runs, the current run, simulated and elapsed time."""

    def __init__(self, total_runs: int, out: TextIO = sys.stderr, width: int = 24) -> None:
        self.total = total_runs
        self.out = out
        self.width = width
        self.tty = out.isatty()
        self.start = time.monotonic()
        self.done = 0
        self.label = ""
        self.duration = 0.0
        self._last = 0.0

    def begin(self, label: str, duration: float) -> None:
        self.label, self.duration = label, duration
        self.update(0.0, force=True)

    def update(self, sim_t: float, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < (0.1 if self.tty else 10.0):
            return
        self._last = now
        done = self.done + (min(sim_t / self.duration, 1.0) if self.duration else 0.0)
        filled = int(round(done / max(self.total, 1) * self.width))
        line = (f"[{'#' * filled}{'.' * (self.width - filled)}] run {min(self.done + 1, self.total)}/{self.total} "
                f"{self.label} | sim {sim_t:6.1f}/{self.duration:.0f} s | wall {now - self.start:6.1f} s")
        if self.tty:
            self.out.write("\r" + line[:160].ljust(100))
        else:
            self.out.write(line + "\n")
        self.out.flush()

    def end_run(self) -> None:
        self.update(self.duration, force=True)
        self.done += 1

    def finish(self) -> None:
        if self.tty:
            self.out.write("\n")
        self.out.flush()


def new_run_id(root: Path, backend: str, seed: int) -> str:
    base = f"{time.strftime('%Y%m%d-%H%M%S')}-{backend}-s{seed}"
    run_id, k = base, 1
    while (root / run_id).exists():
        k += 1
        run_id = f"{base}-{k}"
    return run_id


def run_scenario(sf: ScenarioFile, backend: Backend, *, seed: int | None = None, repeats: int = 1,
                 results_root: Path | None = None, run_id: str | None = None, backend_reason: str = "",
                 progress_out: TextIO | None = sys.stderr, make_plots: bool = True) -> Results:
    """Execute the whole plan and write metrics.json, report.md and the plots; returns the results."""
    from topo import plots, report  # matplotlib is imported only when results are written

    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    plan = [(variant, point) for point in sf.points() for variant in sf.variants]
    first = sf.resolve(*plan[0])
    base_seed = first.seed if seed is None else seed
    root = (results_root or REPO_ROOT / "results") / sf.name
    run_id = run_id or new_run_id(root, backend.name, base_seed)
    out = root / run_id
    out.mkdir(parents=True, exist_ok=False)
    doc = dict(sf.doc)
    with (out / "scenario.yaml").open("w") as fh:
        fh.write(f"# {sf.source} as run" + (f", with --set {dict(sf.overrides)}" if sf.overrides else "") + "\n")
        yaml.safe_dump(doc, fh, sort_keys=False, allow_unicode=True)
    res = Results(sf, backend.name, backend_reason, base_seed, repeats, run_id, out)
    bar = Progress(len(plan) * repeats, progress_out) if progress_out is not None else None
    started = time.monotonic()
    for variant, point in plan:
        scn = sf.resolve(variant, point)
        for k in range(repeats):
            rdir = out / "runs" / point_slug(point) / slug(variant.label) / f"r{k}"
            rdir.mkdir(parents=True)
            label = variant.label + (f" {point_label(sf, point)}" if point else "") + (f" r{k}" if repeats > 1 else "")
            if bar:
                bar.begin(label, scn.duration)
            data = backend.run(scn, base_seed + k, rdir, bar.update if bar else (lambda t: None))
            if bar:
                bar.end_run()
            computed = metrics.compute(scn, data)
            _write_run(rdir, scn, data, computed)
            res.records.append(RunRecord(variant.label, point, k, base_seed + k, rdir, scn,
                                         computed["quantities"], computed, data if k == 0 else None))
    if bar:
        bar.finish()
    res.wall_seconds = time.monotonic() - started
    _write_metrics(res)
    figures = plots.make_all(res, out / "plots") if make_plots else []
    (out / "report.md").write_text(report.render(res, figures))
    return res


def _write_run(rdir: Path, scn: Scenario, data: RunData, computed: dict[str, Any]) -> None:
    if data.queue_rows:
        with (rdir / "queues.csv").open("w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(("t", "link", "queue", "data", "dummy", "avg"))
            w.writerows((round(t, 6), link, q, d, dm, round(avg, 4)) for t, link, q, d, dm, avg in data.queue_rows)
    (rdir / "counters.json").write_text(json.dumps(
        {"at_window_edges": {f"{t:g}": c for t, c in sorted(data.link_snapshots.items())},
         "end": data.counters}, indent=1, default=str))
    with (rdir / "timeline.txt").open("w") as fh:
        for t, what in data.timeline:
            fh.write(f"{t:10.6f}  {what}\n")
        for t, what in data.notifications:
            fh.write(f"{t:10.6f}  notify {what}\n")
    (rdir / "metrics.json").write_text(json.dumps(computed, indent=1, sort_keys=True))


def _write_metrics(res: Results) -> None:
    sf = res.scenario_file
    body = {
        "scenario": sf.name, "source": sf.source, "title": sf.title, "paper": sf.paper,
        "backend": res.backend, "seed": res.seed, "repeats": res.repeats,
        "variants": sf.labels, "sweep": [{"path": a.path, "label": a.label, "values": list(a.values)} for a in sf.sweep],
        "runs": [{"variant": r.variant, "point": [[p, v] for p, v in r.point], "repeat": r.repeat, "seed": r.seed,
                  "dir": str(r.directory.relative_to(res.directory)), "quantities": r.quantities,
                  "flows": r.detail["flows"], "ideal_bps": r.detail.get("ideal_bps")} for r in res.records],
        "summary": res.summary(),
    }
    (res.directory / "metrics.json").write_text(json.dumps(body, indent=1, sort_keys=False, default=str))
