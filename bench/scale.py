"""How much faster a simulator sweep runs on all cores than on one, and how much disk a run takes.

Runs the same sweep twice through `p4handoff run` (report and plots
included, as a user runs it): `--jobs 1`, then `--jobs N` (default: the
cores available). Prints `sweep_speedup: R` (goal ≥ 0.85 × cores) and
`results_mb_per_run: X` (goal ≤ 0.2) on lines of their own, with the load
average before and after: the machine may be shared, and other work takes
cores from the parallel run first (with the kernel's autogroup scheduling
a session's processes share one slice however many there are), so it also
prints how many cores each run kept busy on average.
Usage: python bench/scale.py [--scenario traces/X.yaml] [--jobs N] [--set PATH=VALUE ...] [--no-plots] [--smoke]
(--smoke: ucc-loss.yaml's 7 points, NewReno only, 1 s each, no plots: the test suite's check that it runs)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from p4handoff.argtypes import whole_number  # noqa: E402
from p4handoff.lab.execute import cpu_count  # noqa: E402

DEFAULT_SCENARIO = ROOT / "traces" / "vh-wlan-to-3g-buffers.yaml"   # 3 schemes × 10 points, 60 s each
SMOKE_SCENARIO = ROOT / "traces" / "ucc-loss.yaml"
SMOKE_SETTINGS = ["--schemes", "newreno", "--set", "duration=1", "--set", "measure.windows.run.to=1", "--no-plots"]


def results_of(metrics: Path) -> dict:
    """A sweep's metrics.json without its provenance, which names the command line (and so the job count)."""
    return {**json.loads(metrics.read_text()), "provenance": None}


def sweep(scenario: Path, jobs: int, results: Path, extra: list[str]) -> tuple[float, float]:
    """Wall seconds of one `p4handoff run` of the sweep, and the CPU seconds its runs took (raises if it fails)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "p4handoff", "run", str(scenario), "--backend", "sim", "--quiet",
                    "--jobs", str(jobs), "--results", str(results), *extra], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    return wall, sum(json.loads(p.read_text())["cpu_seconds"] for p in results.glob("*/*/runs/*/*/r*/run.json"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO)
    parser.add_argument("--jobs", type=whole_number(1), default=cpu_count(), help="the parallel run's workers (default: cores)")
    parser.add_argument("--set", action="append", default=[], metavar="PATH=VALUE", help="passed to p4handoff run")
    parser.add_argument("--no-plots", action="store_true", help="time the runs and report only")
    parser.add_argument("--smoke", action="store_true", help="a 7-run sweep of 1 s runs (tests)")
    args = parser.parse_args()
    if args.smoke:
        args.jobs = max(args.jobs, 2)
    if args.jobs < 2:
        parser.error(f"--jobs must be at least 2 to compare with one job (this machine offers {cpu_count()} cores)")
    extra = [a for s in args.set for a in ("--set", s)] + (["--no-plots"] if args.no_plots else [])
    if args.smoke:
        args.scenario, extra = SMOKE_SCENARIO, SMOKE_SETTINGS
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        serial, parallel = Path(tmp) / "serial", Path(tmp) / "parallel"
        t1, cpu1 = sweep(args.scenario, 1, serial, extra)
        tn, cpun = sweep(args.scenario, args.jobs, parallel, extra)
        (run_dir,) = parallel.glob("*/*")
        runs = len(list(run_dir.glob("runs/*/*/r*/metrics.json")))
        size = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
        same = results_of(next(serial.glob("*/*/metrics.json"))) == results_of(run_dir / "metrics.json")
    load_after = os.getloadavg()
    print(f"sweep: {args.scenario.name}, {runs} runs; jobs 1: {t1:.1f} s, jobs {args.jobs}: {tn:.1f} s; "
          f"metrics.json identical: {'yes' if same else 'NO'}")
    print(f"the runs' CPU time: jobs 1: {cpu1:.1f} s, jobs {args.jobs}: {cpun:.1f} s; cores they kept busy "
          f"(CPU s / wall s): {cpu1 / t1:.2f} and {cpun / tn:.2f} (fewer than the jobs: other work had the cores, "
          "or the report and plots took the time)")
    print(f"load average (1/5/15 min) before: {' '.join(f'{x:.2f}' for x in load_before)}, "
          f"after: {' '.join(f'{x:.2f}' for x in load_after)} on {cpu_count()} cores")
    print(f"results: {size / 1e6:.2f} MB in {run_dir.name} (report, plots and every run's files)")
    print(f"sweep_speedup: {t1 / tn:.2f}")
    print(f"results_mb_per_run: {size / 1e6 / runs:.3f}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
