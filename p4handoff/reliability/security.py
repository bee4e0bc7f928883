"""`make security`: the figures of issue 23, forged signalling and (on BMv2) the control channels under attack.

In-process (p4handoff/reliability/forgery.py, seeded: `--seed` replays a
run): `forged_registrations_tried` / `_accepted` (every kind, `--per-kind`
each, default 10,000), `replays_after_restart_accepted`,
`forged_notifications_accepted`. The figures that need switches
(`punt_flood_pps`, `registration_p99_ms_under_flood`,
`tls_unauthenticated_clients_accepted`) come from
p4handoff/reliability/security_bmv2.py where BMv2 and namespaces are here,
else are printed as not measured, with the reason. The flood figures come in
two placements (p4handoff/reliability/punt_flood.py): the flooded switch and
the attacker on a core of their own (no suffix: the goal's) and every process
on shared cores (`_shared_cores`). Exit status 1 when a goal is missed.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from p4handoff.argtypes import whole_number
from p4handoff.reliability.forgery import run as forge


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-kind", type=whole_number(1), default=10_000, help="forged registrations and notifications per kind")
    ap.add_argument("--seed", type=whole_number(0), default=None, help="default: random (printed)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().getrandbits(32)
    figures = forge(args.per_kind, seed)
    for line in figures.lines():
        print(line, flush=True)
    bad = (figures.forged_registrations_accepted or figures.replays_after_restart_accepted
           or figures.forged_notifications_accepted or figures.legit_accepted != figures.legit_sent)
    result = dict(figures.__dict__)
    from p4handoff.reliability.security_bmv2 import measure
    channels = measure(seed)
    for key, value in channels.items():
        print(f"{key}: {value}", flush=True)
    result.update(channels)
    tls_accepted = channels.get("tls_unauthenticated_clients_accepted")
    bad = bad or (isinstance(tls_accepted, int) and tls_accepted > 0) or channels.get("registration_p99_goal_met") is False
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
