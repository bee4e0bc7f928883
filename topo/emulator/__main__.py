"""`python -m p4handoff.topo.emulator --mh-side IF --bs-side IF --rate 2Mbps --delay 3ms ...`: run one emulated link.

Run it in the namespace that holds both interfaces (the lab does). It
bridges until SIGTERM/SIGINT or `quit` on stdin. On stdout, one JSON line
each: `{"ready": true}` once bridging, an answer per command read from
stdin (docs in topo/emulator/bridge.py), the statistics at the end. Exit status 2 on bad arguments,
1 if the interfaces cannot be opened.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from p4handoff.argtypes import optional, parsed_by, probability, real_number, whole_number
from p4handoff.topo.emulator.bridge import Bridge, parse_schedule
from p4handoff.topo.emulator.model import LinkParams
from p4handoff.scenario.units import parse_rate, parse_time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m p4handoff.topo.emulator", description=__doc__.splitlines()[0])
    p.add_argument("--mh-side", required=True, metavar="IF", help="interface towards the mobile host")
    p.add_argument("--bs-side", required=True, metavar="IF", help="interface towards the base station")
    p.add_argument("--rate", type=optional(parsed_by(parse_rate), "none", "0"), default=None,
                   help="downlink rate (b/s or e.g. 2Mbps; none = unlimited)")
    p.add_argument("--delay", type=parsed_by(parse_time), default=0.0, help="one-way delay, both directions (e.g. 3ms)")
    p.add_argument("--loss", type=probability, default=0.0, help="downlink random loss probability")
    p.add_argument("--limit", type=whole_number(1), default=1000, help="downlink queue (frames waiting)")
    p.add_argument("--up-rate", type=optional(parsed_by(parse_rate), "none", "0"),
                   help="uplink rate (default: the downlink's)")
    p.add_argument("--up-loss", type=probability, help="uplink loss (default: the downlink's)")
    p.add_argument("--up-limit", type=whole_number(1), default=1000, help="uplink queue (frames waiting)")
    p.add_argument("--down-at-start", action="store_true", help="start with the link down (not attached yet)")
    p.add_argument("--schedule", help="JSON list of timed events, e.g. '[{\"t\": 10, \"cmd\": \"down\"}]'")
    p.add_argument("--t0", type=real_number(0),
                   help="time origin of the schedule (CLOCK_MONOTONIC seconds; default now)")
    p.add_argument("--seed", type=whole_number(0), default=0)
    p.add_argument("--realtime", type=whole_number(0), default=0, metavar="PRIO",
                   help="run under SCHED_FIFO with this priority (needs root; sharper timing on a busy host)")
    args = p.parse_args(argv)
    try:
        schedule = parse_schedule(json.loads(args.schedule)) if args.schedule else []
    except (ValueError, json.JSONDecodeError) as exc:
        p.error(f"--schedule: {exc}")
    down = LinkParams(args.rate, args.delay, args.loss, args.limit)
    up = LinkParams(args.up_rate if args.up_rate is not None else args.rate, args.delay,
                    args.up_loss if args.up_loss is not None else args.loss, args.up_limit)
    if args.realtime:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(args.realtime))
        except (OSError, ValueError) as exc:
            print(f"emulator: cannot use SCHED_FIFO {args.realtime}: {exc}", file=sys.stderr)
    try:
        bridge = Bridge(args.mh_side, args.bs_side, down, up, seed=args.seed, schedule=schedule, t0=args.t0,
                        control=sys.stdin, reply=sys.stdout)
    except OSError as exc:
        print(f"emulator: cannot open {args.mh_side}/{args.bs_side}: {exc}", file=sys.stderr)
        return 1
    if args.down_at_start:
        bridge.apply("down")
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: bridge.stop())
    print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
    try:
        stats = bridge.run()
    finally:
        bridge.close()
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
