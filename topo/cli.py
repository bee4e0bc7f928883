"""`p4handoff run SCENARIO.yaml`: run a scenario file and write its report.

Backends: `sim` (the deterministic simulator), `lab` (Mininet: BMv2
switches, the controller, host endpoints and link emulators, on real
packets), `auto` (lab when root, BMv2, Mininet and the compiled P4 program
are here, else sim; it says which). Sweeps come from
the file (`sweep:`) or from `--sweep PATH=V1,V2,...`; `--set PATH=VALUE`
changes any field first (values are YAML: 20, 10ms, [a, b], true).
Exit codes: 0 done, 1 runtime error, 2 usage, 3 invalid scenario.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from p4handoff.argtypes import whole_number
from p4handoff.interrupt import sigterm_as_interrupt
from topo.runner import REPO_ROOT, Backend, run_scenario
from topo.scenario import SweepAxis, load
from topo.units import ScenarioError

EXIT_INVALID = 3


def _assignment(text: str) -> tuple[str, Any]:
    path, sep, value = text.partition("=")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"expected PATH=VALUE, got {text!r}")
    try:
        return path.strip(), yaml.safe_load(value)
    except yaml.YAMLError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: value is not YAML: {exc}") from None


def _sweep(text: str) -> SweepAxis:
    path, sep, values = text.partition("=")
    if not sep or not path or not values:
        raise argparse.ArgumentTypeError(f"expected PATH=V1,V2,..., got {text!r}")
    try:
        parsed = tuple(yaml.safe_load(v) for v in values.split(","))
    except yaml.YAMLError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: a value is not YAML: {exc}") from None
    return SweepAxis(path.strip(), path.strip().split(".")[-1], parsed)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a scenario file (traces/*.yaml) and write its report",
                       description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 1)[1],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", type=Path, nargs="+", help="scenario file(s)")
    p.add_argument("--backend", choices=("auto", "sim", "lab"), default="auto")
    p.add_argument("--seed", type=whole_number(0), help="seed of the first repeat (default: the file's seed)")
    p.add_argument("--repeat", type=whole_number(1), default=1, metavar="K", help="repeats per run, seeds seed..seed+K-1")
    p.add_argument("--set", type=_assignment, action="append", default=[], metavar="PATH=VALUE",
                   help="override a field, e.g. topology.cells.g3.queue.limit=20")
    p.add_argument("--sweep", type=_sweep, action="append", default=[], metavar="PATH=V1,V2",
                   help="sweep a field over values (adds to / replaces the file's sweep of that path)")
    p.add_argument("--schemes", type=lambda t: tuple(s.strip() for s in t.split(",") if s.strip()), default=(),
                   help="compare these schemes instead of the file's variants (comma-separated)")
    p.add_argument("--results", type=Path, default=REPO_ROOT / "results", help="results root (default results/)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    p.add_argument("--check", action="store_true", help="only validate the file(s) and list the planned runs")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--mininet-cli", nargs="?", const=True, default=False, type=Path, metavar="SCRIPT",
                   help="lab: open Mininet's CLI when each run's network is up, before traffic (`exit` starts "
                        "the run); with SCRIPT, run its CLI commands instead")
    p.set_defaults(func=_run)


def choose_backend(name: str, mininet_cli: bool | Path = False) -> tuple[Backend, str]:
    """The backend object and why it was chosen (ValueError if `lab` is asked for but cannot run)."""
    from topo.sim_backend import SimBackend
    if name == "sim":
        return SimBackend(), "asked for"
    from topo import lab_backend
    ok, reason = lab_backend.available()
    if name == "lab":
        if not ok:
            raise ValueError(f"the lab backend cannot run here: {reason}")
        return lab_backend.LabBackend(mininet_cli), "asked for"
    if ok:
        return lab_backend.LabBackend(mininet_cli), "auto: root, BMv2, Mininet and build/bs.json are available"
    return SimBackend(), f"auto: lab unavailable — {reason}"


def _run(args: argparse.Namespace) -> int:
    files = []
    for path in args.scenario:
        try:
            files.append(load(path, tuple(args.set), tuple(args.sweep), args.schemes))
        except ScenarioError as exc:
            print(exc, file=sys.stderr)
            return EXIT_INVALID
    if args.check:
        for sf in files:
            print(f"{sf.source}: valid — {len(sf.variants)} variant(s) × {len(sf.points())} sweep point(s): "
                  f"{', '.join(sf.labels)}")
        return 0
    if isinstance(args.mininet_cli, Path) and not args.mininet_cli.is_file():
        print(f"p4handoff run: --mininet-cli {args.mininet_cli}: no such file", file=sys.stderr)
        return 2
    backend, reason = choose_backend(args.backend, args.mininet_cli)
    sigterm_as_interrupt()   # a lab stopped by SIGTERM still tears its network down
    if args.mininet_cli and backend.name != "lab":
        print("p4handoff run: --mininet-cli needs the lab backend", file=sys.stderr)
        return 2
    print(f"backend: {backend.name} ({reason})", file=sys.stderr)
    from topo.report import claims_console, summary_table
    for sf in files:
        try:
            res = run_scenario(sf, backend, seed=args.seed, repeats=args.repeat, results_root=args.results,
                               backend_reason=reason, progress_out=None if args.quiet else sys.stderr,
                               make_plots=not args.no_plots)
        except RuntimeError as exc:   # a lab process that failed to start or died; the lab is already torn down
            print(f"p4handoff run: {sf.source}: {exc}", file=sys.stderr)
            return 1
        print(f"\n## {sf.title}\n")
        print(summary_table(res))
        claims = claims_console(res)
        if claims:
            print("\n" + claims)
        print(f"\nresults: {res.directory}\nreport:  {res.directory / 'report.md'}")
    return 0
