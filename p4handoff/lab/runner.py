"""Run a scenario file: every variant at every sweep point, K repeats, one results directory.

    results/<scenario>/<run-id>/
      scenario.yaml            the document as run (before --set overrides; plan.yaml lists them)
      plan.yaml                source, backend, seed, repeats, overrides, sweep: what --resume reruns
      provenance.json          what produced it, per session: commit (+ dirty), command, versions, host
      metrics.json             every run's quantities, and mean/sd/min/max over repeats
      report.md                the paper-format comparison (p4handoff.lab.report), and where the runs ran
      plots/*.png              cwnd, sequence, queue, throughput vs ideal, sweeps (p4handoff.lab.plots)
      runs/<point>/<variant>/r<k>/
        trace-<flow>.csv.xz    the sender's per-ACK trace (cwnd, ssthresh, snd_una, ...), xz CSV (p4handoff.lab.compact)
        queues.csv.xz          queue samples (t, link, queue, data, dummy, avg), thinned to what a plot shows
        counters.json          per-link counters at the window edges and at the end
        timeline.txt           mobility events and notifications as they happened
        metrics.json           the run's quantities
        run.json               which host ran it, its wall and CPU time, its trace files, the backend's notes

Repeat k runs with seed `seed + k`; the seed changes only what is random
(random loss, RED), so deterministic scenarios repeat exactly, wherever
they run (p4handoff.lab.execute: this process, local worker processes, a Dask
cluster). A run's directory is written under `r<k>.partial` and renamed
when complete, so an interrupted sweep resumes from its finished runs.
"""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from p4handoff.lab import compact, provenance
from p4handoff.lab.backend import Backend
from p4handoff.lab.execute import InProcess, Pool, RunFailed, RunOutput, RunTask
from p4handoff.lab.results import Results, RunPlace, RunRecord, point_slug, slug
from p4handoff.lab.rundata import FlowData, RunData
from p4handoff.scenario.loader import ScenarioFile, SweepAxis, parse

RESULTS_ROOT = Path("results")   # in the working directory, as `make run` leaves it; --results changes it
QUEUES = "queues.csv.xz"
QUEUE_COLUMNS = ("t", "link", "queue", "data", "dummy", "avg")


class Progress:
    """One status line: runs done of all, how many are running, which scenario, and the wall time.

    A run in this process (lab, `--jobs 1`) also shows its simulated time;
    runs in worker processes or on a cluster report only their completion.
    """

    def __init__(self, total_runs: int, done: int, scenarios: int, slots: int, out: TextIO = sys.stderr,
                 width: int = 24) -> None:
        self.total, self.done, self.failed = total_runs, done, 0
        self.scenarios, self.slots = scenarios, slots
        self.out = out
        self.width = width
        self.tty = out.isatty()
        self.start = time.monotonic()
        self.scenario = (1, "")
        self.label = ""
        self.duration = 0.0
        self.sim_t: float | None = None
        self._last = 0.0

    def set_scenario(self, k: int, name: str) -> None:
        self.scenario = (k, name)

    def begin(self, label: str, duration: float) -> Callable[[float], None]:
        """A run (`<scenario>/<point>/<variant>/r<k>`) starts in this process: its sim time shows until it ends."""
        self.label, self.duration, self.sim_t = label.split("/", 1)[-1], duration, 0.0
        self.update(0.0, force=True)
        return self.update

    def update(self, sim_t: float | None = None, force: bool = False) -> None:
        if sim_t is not None and self.sim_t is not None:
            self.sim_t = sim_t
        now = time.monotonic()
        if not force and now - self._last < (0.1 if self.tty else 10.0):
            return
        self._last = now
        ended = self.done + self.failed
        running = min(self.slots, self.total - ended)
        filled = int(round(ended / max(self.total, 1) * self.width))
        k, name = self.scenario
        line = (f"[{'#' * filled}{'.' * (self.width - filled)}] runs {self.done}/{self.total} done"
                + (f", {self.failed} failed" if self.failed else "") + f", {running} running"
                + f" | scenario {k}/{self.scenarios} {name}"
                + (f" | {self.label} sim {self.sim_t:6.1f}/{self.duration:.0f} s" if self.sim_t is not None else "")
                + f" | wall {now - self.start:6.1f} s")
        if self.tty:
            self.out.write("\r" + line[:160].ljust(100))
        else:
            self.out.write(line + "\n")
        self.out.flush()

    def end_run(self, ok: bool) -> None:
        if ok:
            self.done += 1
        else:
            self.failed += 1
        self.sim_t = None
        self.update(force=True)

    def message(self, text: str) -> None:
        """A line of its own (a failed run), not overwritten by the status line."""
        self.out.write(("\n" if self.tty else "") + text.rstrip("\n") + "\n")
        self.out.flush()

    def finish(self) -> None:
        if self.tty:
            self.out.write("\n")
        self.out.flush()


PLAN = "plan.yaml"
RUN_INFO = "run.json"
PARTIAL = ".partial"


@dataclass(frozen=True)
class PlannedRun(RunPlace):
    """One run of the plan: its place, seed, resolved scenario and the directory it will have."""

    name: str                   # <scenario>/<point>/<variant>/r<k>: names it in progress lines and errors

    @property
    def partial(self) -> Path:
        """Where its files are written before the directory is renamed into place (complete or absent)."""
        return self.directory.with_name(self.directory.name + PARTIAL)

    def finished(self) -> bool:
        return (self.directory / "metrics.json").is_file()


@dataclass
class Sweep:
    """One scenario file's plan and results directory, new or resumed."""

    results: Results
    backend: Backend
    runs: list[PlannedRun]
    resumed: int = 0            # runs kept from an earlier, interrupted session


class SweepIncomplete(RuntimeError):
    """Some runs failed; the others' directories are complete, so `--resume` reruns only these."""

    def __init__(self, failures: list[tuple[Sweep, RunFailed]]) -> None:
        self.failures = failures
        dirs = sorted({str(s.results.directory) for s, _ in failures})
        super().__init__(f"{len(failures)} run(s) failed: {', '.join(f.run for _, f in failures)}; after fixing "
                         f"the cause, run the rest with `p4handoff run --resume DIR` ({', '.join(dirs)})")


def new_run_id(root: Path, backend: str, seed: int) -> str:
    base = f"{time.strftime('%Y%m%d-%H%M%S')}-{backend}-s{seed}"
    run_id, k = base, 1
    while (root / run_id).exists():
        k += 1
        run_id = f"{base}-{k}"
    return run_id


def _plan_runs(sf: ScenarioFile, out: Path, base_seed: int, repeats: int) -> list[PlannedRun]:
    runs = []
    for variant, point, scn in sf.runs():      # resolved when the file was read
        for k in range(repeats):
            rel = Path("runs") / point_slug(point) / slug(variant.label) / f"r{k}"
            runs.append(PlannedRun(variant.label, point, k, base_seed + k, out / rel, scn,
                                   f"{sf.name}/{rel.relative_to('runs').as_posix()}"))
    return runs


def plan_sweep(sf: ScenarioFile, backend: Backend, *, seed: int | None = None, repeats: int = 1,
               results_root: Path | None = None, run_id: str | None = None, backend_reason: str = "") -> Sweep:
    """A new results directory with the document as run and the plan `--resume` needs."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    base_seed = sf.plan[0].scenario.seed if seed is None else seed
    root = (results_root or RESULTS_ROOT) / sf.name
    run_id = run_id or new_run_id(root, backend.name, base_seed)
    out = root / run_id
    out.mkdir(parents=True, exist_ok=False)
    with (out / "scenario.yaml").open("w") as fh:
        fh.write(f"# {sf.source} as run" + (f", with --set {dict(sf.overrides)}" if sf.overrides else "") + "\n")
        yaml.safe_dump(dict(sf.doc), fh, sort_keys=False, allow_unicode=True)
    plan = {"source": sf.source, "backend": backend.name, "backend_reason": backend_reason, "seed": base_seed,
            "repeats": repeats, "overrides": [[p, v] for p, v in sf.overrides],
            "sweep": [{"path": a.path, "label": a.label, "values": list(a.values)} for a in sf.sweep]}
    (out / PLAN).write_text(yaml.safe_dump(plan, sort_keys=False, allow_unicode=True))
    res = Results(sf, backend.name, backend_reason, base_seed, repeats, run_id, out,
                  provenance=provenance.record(out, provenance.session()))
    return Sweep(res, backend, _plan_runs(sf, out, base_seed, repeats))


def read_plan(run_dir: Path) -> dict[str, Any]:
    """The plan of a results directory (ValueError if it is not one this runner wrote)."""
    try:
        plan = yaml.safe_load((run_dir / PLAN).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{run_dir} is not a results directory of `p4handoff run` ({PLAN}: {exc})") from None
    if not isinstance(plan, dict) or not {"source", "backend", "seed", "repeats"} <= plan.keys():
        raise ValueError(f"{run_dir / PLAN}: not a plan this runner wrote")
    return plan


def _planned_file(run_dir: Path, plan: dict[str, Any]) -> ScenarioFile:
    """The scenario file as the results directory ran it (its document, overrides and sweep)."""
    doc = yaml.safe_load((run_dir / "scenario.yaml").read_text())
    axes = tuple(SweepAxis(a["path"], a["label"], tuple(a["values"])) for a in plan["sweep"])
    return parse(doc, plan["source"], tuple((p, v) for p, v in plan["overrides"]), axes)


def load_results(run_dir: Path) -> Results:
    """A results directory's finished runs, read only (`p4handoff agree` compares two of them).

    ValueError if it is not a results directory or none of its runs finished."""
    plan = read_plan(run_dir)
    res = Results(_planned_file(run_dir, plan), plan["backend"], plan.get("backend_reason", ""), plan["seed"],
                  plan["repeats"], run_dir.name, run_dir)
    res.records = [_load_record(r, None) for r in _plan_runs(res.scenario_file, run_dir, plan["seed"],
                                                             plan["repeats"]) if r.finished()]
    if not res.records:
        raise ValueError(f"{run_dir}: no finished run to compare")
    return res


def resume_sweep(run_dir: Path, backend: Backend, *, allow_mixed_commits: bool = False) -> Sweep:
    """The plan of an interrupted results directory; finished runs are kept, partial ones removed.

    provenance.MixedCommits (before anything is touched) if this code is not the code that made its runs,
    unless `allow_mixed_commits`.
    """
    plan = read_plan(run_dir)
    sessions = provenance.record(run_dir, provenance.session(), allow_mixed=allow_mixed_commits)
    sf = _planned_file(run_dir, plan)
    res = Results(sf, backend.name, plan.get("backend_reason", ""), plan["seed"], plan["repeats"], run_dir.name,
                  run_dir, provenance=sessions)
    runs = _plan_runs(sf, run_dir, plan["seed"], plan["repeats"])
    for run in runs:
        if not run.finished() and run.partial.exists():
            shutil.rmtree(run.partial)
    return Sweep(res, backend, runs, resumed=sum(r.finished() for r in runs))


def run_scenario(sf: ScenarioFile, backend: Backend, *, seed: int | None = None, repeats: int = 1,
                 results_root: Path | None = None, run_id: str | None = None, backend_reason: str = "",
                 progress_out: TextIO | None = sys.stderr, make_plots: bool = True,
                 pool: Pool | None = None) -> Results:
    """Execute one scenario file's plan (in this process unless a pool is given) and write its report."""
    sweep = plan_sweep(sf, backend, seed=seed, repeats=repeats, results_root=results_root, run_id=run_id,
                       backend_reason=backend_reason)
    (res,) = execute_sweeps([sweep], pool or InProcess(), progress_out=progress_out, make_plots=make_plots)
    return res


def execute_sweeps(sweeps: list[Sweep], pool: Pool, *, progress_out: TextIO | None = sys.stderr,
                   make_plots: bool = True) -> Iterator[Results]:
    """Run every unfinished run of every sweep on `pool`; yield each sweep's results once its report is written.

    All runs are submitted at once, so workers go on with the next scenario
    while this process writes a finished one's report. A failed run is
    reported and the others go on; SweepIncomplete at the end lists them.
    """
    owner: dict[str, tuple[int, PlannedRun]] = {}
    tasks = []
    for i, sweep in enumerate(sweeps):
        for run in sweep.runs:
            if not run.finished():
                owner[run.name] = (i, run)
                tasks.append(RunTask(run.name, run.scenario, run.seed, sweep.backend, keep_data=run.repeat == 0,
                                     scratch=run.partial if pool.local else None))
    total = sum(len(s.runs) for s in sweeps)
    bar = Progress(total, total - len(tasks), len(sweeps), pool.slots, progress_out) if progress_out else None
    started = time.monotonic()
    open_runs = [sum(not r.finished() for r in s.runs) for s in sweeps]
    fresh: dict[Path, RunData] = {}
    failures: list[tuple[Sweep, RunFailed]] = []
    failed_sweeps: set[int] = set()

    def current() -> None:
        k = next((j for j, n in enumerate(open_runs) if n), len(sweeps) - 1)
        if bar:
            bar.set_scenario(k + 1, sweeps[k].results.scenario_file.name)

    def finish(i: int) -> Results:
        res = _finish(sweeps[i], fresh, time.monotonic() - started, pool.where, make_plots)
        current()
        return res

    current()
    for i, n in enumerate(open_runs):
        if not n:                  # resumed with nothing left to run
            yield finish(i)
    for task, outcome in pool.run(tasks, bar.begin if bar else None):
        i, run = owner[task.name]
        if isinstance(outcome, RunFailed):
            failures.append((sweeps[i], outcome))
            failed_sweeps.add(i)
            if bar:
                bar.message(f"{outcome}\n{outcome.trace}")
            else:
                print(f"{outcome}\n{outcome.trace}", file=sys.stderr)
        else:
            _write_run(run, outcome)
            if run.repeat == 0:
                fresh[run.directory] = outcome.data
        if bar:
            bar.end_run(not isinstance(outcome, RunFailed))
        open_runs[i] -= 1
        if not open_runs[i] and i not in failed_sweeps:
            yield finish(i)
        else:
            current()
    if bar:
        bar.finish()
    if failures:
        raise SweepIncomplete(failures)


def _write_run(run: PlannedRun, out: RunOutput) -> None:
    """Write a run's files into its `.partial` directory, then rename it into place: a run directory is complete."""
    part = run.partial
    if part.exists():
        shutil.rmtree(part)
    part.mkdir(parents=True)
    for name, blob in out.files.items():
        path = part / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(blob)
    data = out.data
    if data.queue_rows:
        text = io.StringIO()
        w = csv.writer(text, lineterminator="\n")
        w.writerow(QUEUE_COLUMNS)
        w.writerows(data.queue_rows)
        (part / QUEUES).write_bytes(compact.compact_csv(text.getvalue()))
    (part / "counters.json").write_text(json.dumps(
        {"at_window_edges": {f"{t:g}": c for t, c in sorted(data.link_snapshots.items())},
         "end": data.counters}, indent=1, default=str))
    with (part / "timeline.txt").open("w") as fh:
        for t, what in data.timeline:
            fh.write(f"{t:10.6f}  {what}\n")
        for t, what in data.notifications:
            fh.write(f"{t:10.6f}  notify {what}\n")
    (part / "metrics.json").write_text(out.metrics_json)
    (part / RUN_INFO).write_text(json.dumps({"host": out.host, "wall_seconds": round(out.wall_seconds, 3),
                                             "cpu_seconds": round(out.cpu_seconds, 3), "traces": out.traces,
                                             "notes": data.notes}, indent=1))
    os.rename(part, run.directory)


def _number(text: str) -> int | float:
    return int(text) if text.lstrip("-").isdigit() else float(text)


def _read_queues(path: Path) -> list[tuple[float, str, int, int, int, float]]:
    """queues.csv.xz as the rows the plots read (the same values the run held when it was written)."""
    if not path.exists():
        return []
    with compact.open_text(path) as fh:
        rows = list(csv.reader(fh))[1:]
    return [(float(t), link, _number(q), _number(d), _number(dm), float(avg))  # type: ignore[misc]
            for t, link, q, d, dm, avg in rows]


def _load_record(run: PlannedRun, fresh: RunData | None) -> RunRecord:
    """A finished run as the report and plots see it, from its directory (and its data if it ran just now)."""
    d = run.directory
    computed = json.loads((d / "metrics.json").read_text())
    info = json.loads((d / RUN_INFO).read_text())
    data = None
    if run.repeat == 0:
        edges = json.loads((d / "counters.json").read_text())["at_window_edges"]
        data = fresh or RunData(
            flows={n: FlowData(n, losses_known=f.get("losses_known", True)) for n, f in computed["flows"].items()},
            link_rates={}, queue_rows=_read_queues(d / QUEUES), notes=info["notes"],
            link_snapshots={float(t): c for t, c in edges.items()})
        for name, fd in data.flows.items():
            fd.trace = d / info["traces"][name] if name in info["traces"] else None
    return RunRecord(run.variant, run.point, run.repeat, run.seed, d, run.scenario, computed["quantities"],
                     computed, data, info["host"])


def _finish(sweep: Sweep, fresh: dict[Path, RunData], wall: float, where: str, make_plots: bool) -> Results:
    from p4handoff.lab import report
    res = sweep.results
    res.records = [_load_record(r, fresh.pop(r.directory, None)) for r in sweep.runs]
    res.wall_seconds = wall
    res.resumed = sweep.resumed
    _write_metrics(res)
    figures: list[str] = []
    if make_plots:
        from p4handoff.lab import plots  # matplotlib (the lab extra): imported only when figures are drawn
        figures = plots.make_all(res, res.directory / "plots")
    (res.directory / "report.md").write_text(report.render(res, figures) + _execution(sweep, where))
    return res


def _execution(sweep: Sweep, where: str) -> str:
    """Where the runs ran (which host ran each, when there was more than one)."""
    recs = sweep.results.records
    lines = ["", "## Execution", "", f"{len(recs) - sweep.resumed} run(s) on {where}"
             + (f"; {sweep.resumed} kept from an interrupted session (`--resume`)" if sweep.resumed else "") + "."]
    hosts = sorted({r.host for r in recs})
    if len(hosts) == 1:
        lines += ["", f"Every run ran on host `{hosts[0]}`."]
    else:
        lines += ["", "| run | host |", "|---|---|"]
        lines += [f"| {r.directory.relative_to(sweep.results.directory / 'runs')} | {r.host} |" for r in recs]
    return "\n".join(lines) + "\n"


def _write_metrics(res: Results) -> None:
    sf = res.scenario_file
    body = {
        "scenario": sf.name, "source": sf.source, "title": sf.title, "paper": sf.paper,
        "backend": res.backend, "seed": res.seed, "repeats": res.repeats, "provenance": res.provenance,
        "variants": sf.labels, "sweep": [{"path": a.path, "label": a.label, "values": list(a.values)} for a in sf.sweep],
        "runs": [{"variant": r.variant, "point": [[p, v] for p, v in r.point], "repeat": r.repeat, "seed": r.seed,
                  "dir": str(r.directory.relative_to(res.directory)), "host": r.host, "quantities": r.quantities,
                  "flows": r.detail["flows"], "ideal_bps": r.detail.get("ideal_bps")} for r in res.records],
        "summary": res.summary(),
    }
    (res.directory / "metrics.json").write_text(json.dumps(body, indent=1, sort_keys=False, default=str))
