"""How fast the simulator runs, on its own and beside ns-2 on the same experiment (issue 24).

Prints, one `name: value` per line:
  simulator_build: compiled | pure Python (why)    p4handoff/speedups.py's verdict
  sim_speedup: R       simulated s per wall s, traces/vh-wlan-to-3g.yaml (60 s, Bandwidth-Aware, no
                       trace; goal >= 50)
  ipf_k4_wall_s: W     one run of traces/ipf-group-burst.yaml at K = 4 (RED, 25 s) as `p4handoff run`
                       does it: sender traces and queue samples written
  ns2_wall_s: W        ns-2.35 running bench/ipf_group_burst.tcl, the same experiment for the same simulated
                       seconds with the same outputs (only where Debian's `ns` is installed)
  sim_vs_ns2: R        ns2_wall_s / ipf_k4_wall_s (goal >= 0.5), rounds alternating the two in this run,
                       the best of each; sim_vs_ns2_cpu: the same per CPU second (steadier on a busy machine)
Usage: python bench/sim_speed.py [--repeat 3] [--smoke] [--profile]
"""
from __future__ import annotations

import argparse
import cProfile
import dataclasses
import gc
import pstats
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from p4handoff.argtypes import whole_number
from p4handoff import speedups
from p4handoff.lab import sim_backend
from p4handoff.scenario.loader import load
from p4handoff.scenario.model import Scenario

ROOT = Path(__file__).resolve().parent.parent
VH = ROOT / "traces" / "vh-wlan-to-3g.yaml"
IPF = ROOT / "traces" / "ipf-group-burst.yaml"
NS2_SCRIPT = ROOT / "bench" / "ipf_group_burst.tcl"
SMOKE_SECONDS = 2.0


def scenario(path: Path, variant: str, duration: float | None,
             overrides: tuple[tuple[str, object], ...] = ()) -> Scenario:
    """One run of a scenario file (its first sweep point), optionally cut to `duration` simulated seconds."""
    sf = load(path, overrides)
    scn = sf.resolve(next(v for v in sf.variants if v.label == variant), sf.points()[0])
    return scn if duration is None else dataclasses.replace(scn, duration=duration)


def ours(scn: Scenario, traces: bool) -> tuple[float, float]:
    """Wall and CPU seconds of one simulator run (network built, run, traces written and closed)."""
    gc.collect()     # the previous runs' networks (cyclic garbage) are not collected on this run's time
    with tempfile.TemporaryDirectory(prefix="bench-sim-") as tmp:
        start, cpu = time.perf_counter(), time.process_time()
        sim_backend.run(scn, scn.seed, Path(tmp) if traces else None)
        return time.perf_counter() - start, time.process_time() - cpu


def ns2(seconds: float) -> tuple[float, float]:
    """Wall and CPU seconds of `ns bench/ipf_group_burst.tcl` for `seconds` simulated seconds."""
    with tempfile.TemporaryDirectory(prefix="bench-ns2-") as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(["ns", str(NS2_SCRIPT), tmp, str(seconds)], capture_output=True, text=True,
                              timeout=600)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0 or not (Path(tmp) / "queues.tr").exists():
            raise RuntimeError(f"ns-2 failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=whole_number(1), default=3, help="rounds; the fastest of each counts")
    parser.add_argument("--smoke", action="store_true", help=f"one round of {SMOKE_SECONDS:.0f} simulated s (tests)")
    parser.add_argument("--profile", action="store_true", help="print the top functions of one K = 4 run")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    rounds, cut = (1, SMOKE_SECONDS) if args.smoke else (args.repeat, None)
    vh = scenario(VH, "Bandwidth-Aware", cut)
    ipf = scenario(IPF, "RED", cut, (("sweep.0.values", [4]),))
    print(f"simulator_build: {speedups.status}")
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(ours, ipf, True)
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    peer = shutil.which("ns")
    walls: dict[str, list[float]] = {"vh": [], "ipf": [], "ns2": []}
    cpus: dict[str, list[float]] = {"vh": [], "ipf": [], "ns2": []}
    for _ in range(rounds):
        for name, measure in (("vh", lambda: ours(vh, False)), ("ipf", lambda: ours(ipf, True)),
                              ("ns2", lambda: ns2(ipf.duration))):
            if name == "ns2" and peer is None:
                continue
            wall, cpu = measure()
            walls[name].append(wall)
            cpus[name].append(cpu)
    print(f"sim_speedup: {vh.duration / min(walls['vh']):.1f}")
    print(f"sim_cpu_speedup: {vh.duration / min(cpus['vh']):.1f}")
    print(f"ipf_k4_wall_s: {min(walls['ipf']):.3f}")
    if peer is None:
        print("sim_vs_ns2: not measured (ns-2 is not installed: apt-get install ns2)")
        return 0
    print(f"ns2_wall_s: {min(walls['ns2']):.3f}")
    print(f"sim_vs_ns2_cpu: {min(cpus['ns2']) / min(cpus['ipf']):.2f}")
    print(f"sim_vs_ns2: {min(walls['ns2']) / min(walls['ipf']):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
