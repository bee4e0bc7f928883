"""`make chaos`: kill -9 a base station's BMv2, the gateway's, or the controller before, during and after a
WLAN → 3G handoff with IPF, and measure what it cost.

Two places to run it, one way to judge it:

- `--where lab` (default, `p4handoff.reliability.chaos_lab`): the Mininet lab running
  traces/chaos-wlan-to-3g.yaml — TCP flows from the host endpoints, emulated
  cells, the real controller — plus sequence-numbered UDP probes to every
  host in a cell;
- `--where testbed` (`p4handoff.reliability.chaos_testbed`, `make chaos-testbed`, ~2.5 min):
  the controller's three-switch BMv2 testbed with three UDP flows.

Each run kills one element (SIGKILL, by PID) at one instant and starts it
again at once; a run without a fault is the reference. Per run:
**recovery** (restart → forwarding again through the restarted element;
for the controller: serving with every switch up), **bytes lost** per flow
(UDP: sent and never received; TCP: bytes retransmitted, see
docs/reliability.md), **stale entries** (any switch whose entries, read back
at the end, differ from the reference run's). `bytes_lost_non_moving` sums
the flows to hosts that never move and whose path does not cross the
killed element (what a killed switch held is lost with it, and reported per
flow, not hidden). Prints `recovery_ms_p99: N` and `bytes_lost_non_moving: N`.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from p4handoff.reliability.chaos_runs import FaultRun, Mode


def p99(values: list[float]) -> float:
    """The 99th percentile by nearest rank (the largest of fewer than 100 values); NaN for none."""
    vals = sorted(values)
    return vals[min(len(vals) - 1, math.ceil(0.99 * len(vals)) - 1)] if vals else math.nan


def summary(runs: list[FaultRun]) -> dict[str, Any]:
    return {"chaos_runs": len(runs),
            "recovery_ms_p99": p99([r.recovery_ms for r in runs if r.recovery_ms is not None]),
            "bytes_lost_non_moving": sum(f.lost_bytes for r in runs for f in r.counted()),
            "stale_entries_runs": sum(1 for r in runs if r.stale_switches),
            "incomplete_runs": sum(1 for r in runs if not r.handoff_complete)}


def line(r: FaultRun) -> str:
    """One run in one line: what was killed when, recovery, each flow's loss, stale switches."""
    what = f"kill {r.target:<10} {r.instant:<6}" if r.target else "reference        "
    rec = f"recovery_ms={r.recovery_ms:.0f}" if r.recovery_ms is not None else "recovery_ms=-"
    lost = " ".join(f"{f.flow}={f.lost_bytes}" + (f"/{f.stall_s:.2f}s" if f.stall_s is not None else "")
                    for f in r.flows)
    if "error" in r.details:
        return f"{what} FAILED: {r.details['error']}"
    return f"{what} {rec} lost[{lost}] stale={r.stale_switches or 'none'}" + (
        "" if r.handoff_complete else " HANDOFF-INCOMPLETE")


def run_matrix(mode: Mode, workdir: Path, targets: list[str], instants: list[str]) -> tuple[FaultRun, list[FaultRun]]:
    """The reference run, then one run per (target, instant), each compared with the reference's entries."""
    reference, ref_entries = mode.one_run(workdir / "reference", None, None)
    print(line(reference), flush=True)
    runs = []
    for target in targets:
        for instant in instants:
            try:
                res, entries = mode.one_run(workdir / f"{target}-{instant}", target, instant)
            except Exception as exc:    # a run the fault broke is a result: reported, and the matrix goes on
                res = FaultRun(target, instant, math.inf, details={"error": f"{type(exc).__name__}: {exc}"})
            else:
                res.stale_switches = sorted(n for n in set(entries) | set(ref_entries)
                                            if entries.get(n) != ref_entries.get(n))
            runs.append(res)
            print(line(res), flush=True)
    return reference, runs


def _mode(where: str, args: argparse.Namespace) -> Mode:
    if where == "lab":
        from p4handoff.reliability.chaos_lab import LabChaos
        return LabChaos(args.scenario, lock=args.lock)
    from p4handoff.reliability.chaos_testbed import TestbedChaos
    return TestbedChaos()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--where", choices=("lab", "testbed"), default="lab")
    ap.add_argument("--scenario", type=Path, default=Path("traces/chaos-wlan-to-3g.yaml"), help="lab only")
    ap.add_argument("--lock", type=Path, help="lab only: hold this file's flock during each run "
                                              "(a lab machine shared with other experiments)")
    ap.add_argument("--targets", help="comma-separated elements to kill (default: the old BS, the gateway, "
                                      "the controller)")
    ap.add_argument("--instants", help="comma-separated, of before, during, after (default: all three)")
    ap.add_argument("--workdir", type=Path, default=Path("build/chaos"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    mode = _mode(args.where, args)
    targets = args.targets.split(",") if args.targets else mode.targets()
    instants = args.instants.split(",") if args.instants else mode.instants()
    bad = [t for t in targets if t not in mode.elements()] + [i for i in instants if i not in mode.instants()]
    if bad:
        ap.error(f"unknown target or instant: {', '.join(bad)} (targets: {', '.join(mode.elements())}; "
                 f"instants: {', '.join(mode.instants())})")
    reference, runs = run_matrix(mode, args.workdir, targets, instants)
    s = summary(runs)
    for key, value in s.items():
        print(f"{key}: {value:.0f}" if isinstance(value, float) else f"{key}: {value}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"where": args.where, "reference": asdict(reference),
                                         "runs": [asdict(r) for r in runs], **s}, indent=1))
    return 0 if s["bytes_lost_non_moving"] == 0 and not s["stale_entries_runs"] and not s["incomplete_runs"] else 1


if __name__ == "__main__":
    sys.exit(main())
