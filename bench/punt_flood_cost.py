"""Where a punt flood's cost goes: registration latency at bs2 while bs1's cell is flooded, per kind of flood.

    sudo .venv/bin/python bench/punt_flood_cost.py [--blocks B] [--budget PPS BURST] [--smoke]

One testbed (topo/testbed.py, keys and TLS on), one run. For each kind of
flood, mh2's refreshes at bs2 are timed (and a `ctl status` after each: the
controller's event-loop latency) in blocks of 25, alternately without and
with the flood, B times (p4handoff.reliability.punt_flood.FloodBench.paired:
the machine is shared, its load drifts, alternating puts the drift on both
sides). The floods, all of the same 256 frames:

- `punt`:        registrations for mh1 from a process of its own, as fast as
                 it can (what `make security` measures); P = the rate it reached;
- `malformed@P`: the same frames with IPv4 version 5 at P frames/s: BMv2's
                 parser rejects them, nothing is metered or punted;
- `unswitched@P`: the same frames at P onto a veth pair with no switch behind
                 it: the flooding process and its kernel path alone;
- `busy@C`:      no packets: a process spinning C of one core, C = the CPU the
                 `punt` flood added (bs1, the flooder, the controller's increase);
- `thread`:      the registrations from a thread of this process, as fast as it
                 can (how `make security` flooded before issue 23's second round).

Printed per flood: its rate, how many frames reached the controller, p50/p99
without and with it, p99's ratio, and the CPU each process used (cores).

`--isolation R`: the registration flood only, R repeats of `make security`'s
measurement: both placements (p4handoff.reliability.punt_flood.PLACEMENTS:
`shared` cores, and `split`: bs1 and the flooder on a core of their own)
alternated block by block, per repeat the p99s, their ratio and the load.

`--split` (needs tcpdump): the registration flood again, each round trip cut
in three by the P4Runtime segments on bs2's gRPC port (tcpdump on the fabric
namespace's loopback, the same clock): `bs2_in` (request sent → packet-in
leaves bs2), `controller` (→ packet-out reaches bs2's port), `bs2_out` (→
reply received), p50/p90/p99 of each without and with the flood.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from p4handoff.argtypes import whole_number
from p4handoff.controller.registration import ReplyCode
from p4handoff.reliability.cpu_domains import unavailable_reason as split_unavailable
from p4handoff.reliability.punt_flood import BLOCKS, PER_BLOCK, PLACEMENTS, SPLIT_SHARES, Burner, FloodBench, Flooder, Phase, \
    ThreadFlooder, flood_figures, flood_frames, goal_met, load_average, percentile


def run(blocks: int, per_block: int, seed: int, budget: dict[str, int] | None = None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    rng = random.Random(seed)
    frames = {kind: flood_frames(kind, rng) for kind in ("punt", "malformed")}
    with tempfile.TemporaryDirectory(prefix="p4h-floodcost-") as tmp, FloodBench(Path(tmp), budget) as bench:
        def pair(name: str, make: Callable[[], Flooder | ThreadFlooder]) -> Phase:
            base, loaded = bench.paired(name, make, blocks, per_block)["shared"]
            b99, l99 = (percentile(p.registrations_ms, 0.99) if p.registrations_ms else None for p in (base, loaded))
            row: dict[str, Any] = {"flood": name, "unloaded": base.row(), "flooded": loaded.row(),
                                   "p99_ratio": round(l99 / b99, 2) if b99 and l99 else None}
            rows.append(row)
            print(json.dumps(row), flush=True)
            return loaded

        punt = pair("punt", lambda: Flooder(bench.socket_for("punt"), frames["punt"]))
        pps = punt.flood_pps
        share = round(sum(punt.cores.get(k, 0.0) for k in ("bs1", "flooder", "controller"))
                      - rows[-1]["unloaded"]["cores"].get("controller", 0.0), 2)
        pair(f"busy@{share}", lambda: Burner(share))
        pair(f"malformed@{pps}", lambda: Flooder(bench.socket_for("malformed"), frames["malformed"], pps))
        pair(f"unswitched@{pps}", lambda: Flooder(bench.socket_for("unswitched"), frames["punt"], pps))
        pair("thread", lambda: ThreadFlooder(bench.socket_for("punt"), frames["punt"]))
    return rows


def isolation(repeats: int, blocks: int, per_block: int, seed: int, budget: dict[str, int] | None,
              shares: int = SPLIT_SHARES) -> list[dict]:
    """`repeats` times `make security`'s flood measurement in one testbed: per repeat, both placements
    (`split`: bs1 and the flooder on a core of their own; `shared`) alternated block by block, with the load."""
    rows = []
    frames = flood_frames("punt", random.Random(seed))
    why = split_unavailable()
    with tempfile.TemporaryDirectory(prefix="p4h-floodiso-") as tmp, FloodBench(Path(tmp), budget, shares) as bench:
        for k in range(repeats):
            load0 = load_average()
            phases = bench.paired("punt", lambda: Flooder(bench.socket_for("punt"), frames), blocks, per_block,
                                  PLACEMENTS if why is None else ("shared",))
            row: dict[str, Any] = {"repeat": k + 1, "load_average": f"{load0} / {load_average()}",
                                   **({} if why is None else {"split": f"not measured ({why})"})}
            for placement, (base, loaded) in phases.items():
                figures = flood_figures(base, loaded)
                row[placement] = {**figures, "goal_met": goal_met(figures),
                                  "unloaded_cores": base.row()["cores"]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def _timed(bench: FloodBench, flooder: Callable[[], Flooder] | None, n: int) -> list[tuple[float, float]]:
    """(sent, replied) wall-clock times of `n` accepted refreshes of mh2 at bs2, with `flooder` running."""
    out = []
    flood = flooder().start() if flooder is not None else None
    time.sleep(0.5 if flood is not None else 0.0)
    for _ in range(n):
        t0 = time.time()
        reply = bench.tb.register(1, "bs2", bench.next_ident(), wait_reply=2.0)
        if reply is not None and reply.code is ReplyCode.ACCEPTED:
            out.append((t0, time.time()))
        time.sleep(0.02)
    if flood is not None:
        flood.stop()
    return out


def split(blocks: int, per_block: int, seed: int, budget: dict[str, int] | None) -> dict[str, dict[str, Any]]:
    """p50/p90/p99 ms of bs2_in, controller and bs2_out, without and under the registration flood."""
    frames = flood_frames("punt", random.Random(seed))
    with tempfile.TemporaryDirectory(prefix="p4h-floodsplit-") as tmp, FloodBench(Path(tmp), budget) as bench:
        port = int(bench.tb.switches["bs2"].grpc_addr.rsplit(":", 1)[1])
        dump = subprocess.Popen(["ip", "netns", "exec", bench.tb.fab.name, "tcpdump", "-i", "lo", "-n", "-tt", "-l",
                                 "-q", f"tcp port {port} and (tcp[tcpflags] & tcp-push != 0)"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(dump.stdout or []), daemon=True)
        reader.start()
        time.sleep(1.0)
        timed: dict[str, list[tuple[float, float]]] = {"unloaded": [], "punt": []}
        for _ in range(blocks):
            timed["unloaded"] += _timed(bench, None, per_block)
            timed["punt"] += _timed(bench, lambda: Flooder(bench.socket_for("punt"), frames), per_block)
        time.sleep(0.5)
        dump.terminate()
        dump.wait(5)
        reader.join(5)
    segs = sorted((float(f[0]), f[2].endswith(f".{port}")) for f in (line.split() for line in lines) if len(f) > 4)
    out: dict[str, dict[str, Any]] = {}
    for name, regs in timed.items():
        parts: dict[str, list[float]] = {"bs2_in": [], "controller": [], "bs2_out": []}
        for t0, t1 in regs:
            pin = next((t for t, from_bs2 in segs if from_bs2 and t0 <= t <= t1), None)
            pout = next((t for t, from_bs2 in segs if not from_bs2 and pin is not None and pin <= t <= t1), None)
            if pin is not None and pout is not None:
                parts["bs2_in"].append((pin - t0) * 1000)
                parts["controller"].append((pout - pin) * 1000)
                parts["bs2_out"].append((t1 - pout) * 1000)
        out[name] = {"split": f"{len(parts['bs2_in'])}/{len(regs)}",
                     **{k: [round(percentile(v, q), 2) for q in (0.5, 0.9, 0.99)] for k, v in parts.items() if v}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=whole_number(1), default=BLOCKS, help="alternations of 25 registrations without/with")
    ap.add_argument("--seed", type=whole_number(0), default=23)
    ap.add_argument("--budget", type=whole_number(1), nargs=2, metavar=("PPS", "BURST"),
                    help="the description's punt_budget (default: its default)")
    ap.add_argument("--smoke", action="store_true", help="one alternation of 5 registrations per flood")
    ap.add_argument("--split", action="store_true", help="only the round trip's parts under the registration flood")
    ap.add_argument("--isolation", type=whole_number(1), metavar="R",
                    help="only the registration flood, R repeats, each with both placements (shared cores; bs1 and "
                         "the flooder on a core of their own) alternated block by block")
    ap.add_argument("--shares", type=whole_number(2), default=SPLIT_SHARES,
                    help="with --isolation: each CPU domain's cpu.shares (a nice-0 task has 1024)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    budget = {"packets_per_s": args.budget[0], "burst": args.budget[1]} if args.budget else None
    if args.isolation or args.smoke:
        reps = isolation(args.isolation or 1, 1 if args.smoke else args.blocks, 5 if args.smoke else PER_BLOCK,
                         args.seed, budget, args.shares)
        for r in reps:
            figures = {p: r[p] if isinstance(r[p], str) else
                       f"p99 {r[p]['registration_p99_ms_unloaded']} -> {r[p]['registration_p99_ms_under_flood']} ms "
                       f"({r[p]['registration_p99_ratio']}x, goal {'met' if r[p]['goal_met'] else 'missed'})"
                       for p in PLACEMENTS}
            print(f"repeat {r['repeat']} (load {r['load_average']}): "
                  + ", ".join(f"{p} {f}" for p, f in figures.items()))
            for p in PLACEMENTS:
                print(f"isolation_{p}_p99_ratio: {r[p] if isinstance(r[p], str) else r[p]['registration_p99_ratio']}")
        if args.isolation:
            if args.json:
                args.json.write_text(json.dumps(reps, indent=1))
            return
    if args.split or (args.smoke and shutil.which("tcpdump")):        # the smoke run tries both modes
        parts = split(1 if args.smoke else args.blocks, 5 if args.smoke else PER_BLOCK, args.seed, budget)
        for name, row in parts.items():
            print(json.dumps({"phase": name, **row}), flush=True)
        for k in ("bs2_in", "controller", "bs2_out"):
            a, b = parts["unloaded"].get(k), parts["punt"].get(k)
            print(f"split_{k}_p50_ratio: {round(b[0] / a[0], 2) if a and b and a[0] else None}")
        if args.split:
            return
    rows = run(1 if args.smoke else args.blocks, 5 if args.smoke else PER_BLOCK, args.seed, budget)
    for r in rows:
        print(f"flood_{r['flood'].split('@')[0]}_p99_ratio: {r['p99_ratio']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
