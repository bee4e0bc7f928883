"""The lab's performance figures: simulator speed and the link emulator's accuracy.

Prints, on lines of their own:
  bench/sim_speed.py's lines   sim_speedup (goal >= 50), ipf_k4_wall_s, ns2_wall_s and sim_vs_ns2 (goal >= 0.5)
  emulator_rate_error_pct: N   worst |measured - asked| / asked over 1, 10, 20, 100 Mb/s (goal <= 5)
  emulator_delay_error_ms: N   worst |median one-way delay - (asked + probe serialisation)| over those
                               rates and 1, 10, 20, 70 ms (goal <= 1)
and one line per measured configuration. The emulator part needs root
(namespaces); without it those two lines say why they are missing.
Usage: python bench/lab.py [--quick] [--smoke] [--realtime PRIO]
(--smoke: sim_speed.py's smoke mode and one emulated rate and delay; the test suite's check that it runs)
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from p4handoff.argtypes import whole_number  # noqa: E402
from p4handoff.netns import unavailable_reason  # noqa: E402
from p4handoff.topo.emulator.measure import UDP_IP_OVERHEAD, EmulatedPath  # noqa: E402

RATES_MBPS = (1, 10, 20, 100)
DELAYS_MS = (1, 10, 20, 70)
PROBE = 64


def sim_speed(smoke: bool) -> str:
    """bench/sim_speed.py's figures (the simulator's benchmark, not a copy of it)."""
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "sim_speed.py"), "--smoke" if smoke else "--repeat=3"],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0 or not re.search(r"^sim_speedup: \S+$", done.stdout, re.M):
        raise RuntimeError(f"bench/sim_speed.py failed: {done.stderr.strip()[-500:]}")
    return done.stdout.rstrip("\n")


def emulator(quick: bool, smoke: bool, realtime: int) -> tuple[float, float]:
    worst_rate = worst_delay = 0.0
    rates = (10,) if smoke else (10, 100) if quick else RATES_MBPS
    delays = (1,) if smoke else (1, 70) if quick else DELAYS_MS
    for mbps in rates:
        for k, ms in enumerate(delays):
            with EmulatedPath(rate=f"{mbps}Mbps", up_rate=f"{mbps}Mbps", delay=f"{ms}ms", up_limit=300,
                              realtime=realtime) as path:
                samples = path.one_way_delays(20 if ms < 50 else 10, size=PROBE)
                expected = ms / 1e3 + (PROBE + UDP_IP_OVERHEAD) * 8 / (mbps * 1e6)
                err_ms = abs(statistics.median(samples) - expected) * 1e3
                p99_ms = (max(samples) - expected) * 1e3
                worst_delay = max(worst_delay, err_ms)
                line = f"emulator {mbps:>3} Mb/s {ms:>2} ms: delay error {err_ms:.3f} ms (max {p99_ms:.3f})"
                if k == 0:   # the rate does not depend on the delay: measure it once per rate
                    rate, sent, got = path.saturated_rate(0.3 if smoke else 2.0, offered_bps=mbps * 1e6 * 1.3)
                    err_pct = abs(rate - mbps * 1e6) / (mbps * 1e6) * 100
                    worst_rate = max(worst_rate, err_pct)
                    line += f", rate {rate / 1e6:.3f} Mb/s ({err_pct:.2f} %, {got}/{sent} packets through)"
                print(line, flush=True)
    return worst_rate, worst_delay


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two rates and two delays only")
    parser.add_argument("--smoke", action="store_true", help="the simulator's smoke mode, one rate and delay (tests)")
    parser.add_argument("--realtime", type=whole_number(0), default=10, metavar="PRIO",
                        help="SCHED_FIFO priority of the emulator, as the lab runs it (0: normal scheduling)")
    args = parser.parse_args()
    print(sim_speed(args.smoke), flush=True)
    reason = unavailable_reason()
    if reason is not None:
        print(f"emulator: not measured ({reason})")
        return 0
    rate_err, delay_err = emulator(args.quick, args.smoke, args.realtime)
    print(f"emulator_rate_error_pct: {rate_err:.2f}")
    print(f"emulator_delay_error_ms: {delay_err:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
