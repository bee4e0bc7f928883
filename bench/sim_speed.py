"""How fast the simulator runs the 60 s vertical-handoff case (simulated seconds per wall second).

Prints `sim_speedup: R` (goal ≥ 50) on a line of its own, plus the case's
figures so a regression in the model is visible next to a speed change,
and the same ratio per CPU second (steadier when the machine is busy).
Usage: python bench/sim_speed.py [--scheme bwaware] [--repeat 3] [--profile]
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time


from tests.sim_papers import vertical_handoff  # noqa: E402

SIM_SECONDS = 60.0


def one_run(scheme: str) -> tuple[float, float, float]:
    exp = vertical_handoff(scheme)
    start, cpu_start = time.perf_counter(), time.process_time()
    exp.run(SIM_SECONDS)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return wall, cpu, exp.flows[0].stats.throughput_bps(10.0, 15.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scheme", default="bwaware")
    parser.add_argument("--repeat", type=int, default=3, help="runs; the fastest counts")
    parser.add_argument("--profile", action="store_true", help="print the top functions of one run")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(one_run, args.scheme)
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)
    walls, cpus = [], []
    for _ in range(args.repeat):
        wall, cpu, tput = one_run(args.scheme)
        walls.append(wall)
        cpus.append(cpu)
    best = min(walls)
    print(f"sim_case: vertical handoff 20 Mb/s -> 384 kb/s, 0.5 s outage at 10 s, {SIM_SECONDS:.0f} s, {args.scheme}")
    print(f"sim_wall_s: {best:.3f}")
    print(f"sim_throughput_10_15_kbps: {tput / 1e3:.1f}")
    print(f"sim_cpu_speedup: {SIM_SECONDS / min(cpus):.1f}")  # the same per CPU second: steadier on a busy machine
    print(f"sim_speedup: {SIM_SECONDS / best:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
