"""`p4handoff run SCENARIO.yaml`: run a scenario file and write its report.

Backends: `sim` (the deterministic simulator), `lab` (Mininet: BMv2
switches, the controller, host endpoints and link emulators, on real
packets), `auto` (lab when root, BMv2, Mininet and the compiled P4 program
are here, else sim; it says which). Sweeps come from
the file (`sweep:`) or from `--sweep PATH=V1,V2,...`; `--set PATH=VALUE`
changes any field first (values are YAML: 20, 10ms, [a, b], true).

Simulator runs go to `--jobs N` local worker processes (default: every
core this process may use) with results identical to `--jobs 1`; lab runs
take the whole machine, one at a time. `--cluster ADDRESS` sends the runs
to a Dask scheduler instead (lab runs: one per worker that offers the `lab`
resource). `--resume RESULTS_DIR` finishes an interrupted sweep: its
finished runs are kept, the others run, the report is rebuilt.
Exit codes: 0 done, 1 runtime error or a run failed, 2 usage, 3 invalid scenario (or a file that is
none: missing, a directory, empty, binary, bad YAML).
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path


from p4handoff.hosts.cc import SCHEMES, scheme_summary
from p4handoff.argtypes import name_list, whole_number, yaml_assignment, yaml_values
from p4handoff.interrupt import sigterm_as_interrupt
from p4handoff.lab.execute import cpu_count, make_pool
from p4handoff.lab.backend import Backend
from p4handoff.lab.provenance import MixedCommits
from p4handoff.lab.runner import RESULTS_ROOT, SweepIncomplete, execute_sweeps, plan_sweep, read_plan, resume_sweep
from p4handoff.scenario.loader import SweepAxis, load
from p4handoff.scenario.units import ScenarioError

EXIT_INVALID = 3


def _schemes_help() -> str:
    """The schemes a flow or --schemes may name, one per line, from the scheme registry."""
    width = max(map(len, SCHEMES))
    return "Schemes (--schemes, a flow's `scheme:`):\n" + "\n".join(
        f"  {name:<{width}}  {scheme_summary(name)}" for name in SCHEMES)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a scenario file (traces/*.yaml) and write its report",
                       description=__doc__.splitlines()[0],
                       epilog=__doc__.split("\n\n", 1)[1] + "\n" + _schemes_help(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", type=Path, nargs="*", help="scenario file(s)")
    p.add_argument("--backend", choices=("auto", "sim", "lab"),
                   help="sim: the deterministic simulator (any machine, all cores); lab: Mininet with BMv2 "
                        "switches, the controller and our TCP on real packets (root, BMv2, Mininet, `make "
                        "build`); auto: lab when it can run here, else sim, and it says which "
                        "(default: auto; with --resume: the backend of that run)")
    p.add_argument("--seed", type=whole_number(0), help="seed of the first repeat (default: the file's seed)")
    p.add_argument("--repeat", type=whole_number(1), metavar="K",
                   help="repeats per run, seeds seed..seed+K-1 (default 1)")
    p.add_argument("--jobs", type=whole_number(1), metavar="N",
                   help=f"simulator runs at once in local processes (default: the cores available, here {cpu_count()})")
    p.add_argument("--cluster", metavar="ADDRESS", help="run on the Dask scheduler at ADDRESS, e.g. tcp://host:8786")
    p.add_argument("--resume", type=Path, metavar="RESULTS_DIR",
                   help="finish an interrupted run: results/<scenario>/<run-id> (its plan, seed and overrides)")
    p.add_argument("--allow-mixed-commits", action="store_true",
                   help="with --resume: finish the sweep with this code although its runs so far were made by other "
                        "code (another commit or other uncommitted changes); the report lists both")
    p.add_argument("--set", type=yaml_assignment, action="append", default=[], metavar="PATH=VALUE",
                   help="override a field, e.g. topology.cells.g3.queue.limit=20")
    p.add_argument("--sweep", type=yaml_values, action="append", default=[], metavar="PATH=V1,V2",
                   help="sweep a field over values (adds to / replaces the file's sweep of that path)")
    p.add_argument("--schemes", type=name_list(SCHEMES, "scheme"), default=(),
                   help="compare these schemes instead of the file's variants (comma-separated; listed below)")
    p.add_argument("--results", type=Path, default=RESULTS_ROOT, help="results root (default: results/ in the working directory)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    p.add_argument("--check", action="store_true", help="only validate the file(s) and list the planned runs")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--mininet-cli", nargs="?", const=True, default=False, type=Path, metavar="SCRIPT",
                   help="lab: open Mininet's CLI when each run's network is up, before traffic (`exit` starts "
                        "the run); with SCRIPT, run its CLI commands instead")
    p.set_defaults(func=_run)


def choose_backend(name: str, mininet_cli: bool | Path = False, cluster: bool = False) -> tuple[Backend, str]:
    """The backend object and why it was chosen (ValueError if `lab` is asked for but cannot run).

    With a cluster, `lab` runs on the workers that offer the lab resource: this machine needs no lab.
    """
    from p4handoff.lab.sim_backend import SimBackend
    if name == "sim":
        return SimBackend(), "asked for"
    from p4handoff.lab.mininet import backend as mininet
    if name == "lab" and cluster:
        return mininet.LabBackend(mininet_cli), "asked for, on the cluster's lab workers"
    ok, reason = mininet.available()
    if name == "lab":
        if not ok:
            raise ValueError(f"the lab backend cannot run here: {reason}")
        return mininet.LabBackend(mininet_cli), "asked for"
    if ok:
        return mininet.LabBackend(mininet_cli), "auto: root, BMv2, Mininet and build/bs.json are available"
    return SimBackend(), f"auto: lab unavailable — {reason}"


def _usage(message: str) -> int:
    print(f"p4handoff run: {message}", file=sys.stderr)
    return 2


def _usage_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the combination of options, if anything (checked before any work)."""
    if args.resume is not None:
        fixed = [o for o, given in (("scenario files", args.scenario), ("--seed", args.seed is not None),
                                    ("--repeat", args.repeat is not None), ("--set", args.set),
                                    ("--sweep", args.sweep), ("--schemes", args.schemes), ("--check", args.check))
                 if given]
        if fixed:
            return f"--resume takes the plan from the results directory; drop {', '.join(fixed)}"
    elif not args.scenario:
        return "give scenario file(s), or --resume RESULTS_DIR"
    elif args.allow_mixed_commits:
        return "--allow-mixed-commits is for --resume RESULTS_DIR"
    if args.cluster and args.jobs is not None:
        return "--jobs is for local runs; with --cluster the scheduler's workers set how many run at once"
    if args.mininet_cli and (args.cluster or (args.jobs or 1) > 1):
        return "--mininet-cli is interactive: it needs local runs one at a time (no --cluster, --jobs 1)"
    if isinstance(args.mininet_cli, Path) and not args.mininet_cli.is_file():
        return f"--mininet-cli {args.mininet_cli}: no such file"
    if not (args.no_plots or args.check) and importlib.util.find_spec("matplotlib") is None:
        return "the figures need matplotlib, which is not installed: pip install 'p4handoff[lab]', or pass --no-plots"
    return None


def _run(args: argparse.Namespace) -> int:
    problem = _usage_problem(args)
    if problem:
        return _usage(problem)
    files, plan = [], None
    if args.resume is not None:
        try:
            plan = read_plan(args.resume)
        except ValueError as exc:
            return _usage(f"--resume: {exc}")
        if args.backend not in (None, plan["backend"]):
            return _usage(f"--resume: {args.resume} ran on the {plan['backend']} backend, not {args.backend}")
    sweep = tuple(SweepAxis(field, field.split(".")[-1], values) for field, values in args.sweep)
    for path in args.scenario:
        try:
            files.append(load(path, tuple(args.set), sweep, args.schemes))
        except ScenarioError as exc:
            print(exc, file=sys.stderr)
            return EXIT_INVALID
    if args.check:
        for sf in files:
            print(f"{sf.source}: valid — {len(sf.variants)} variant(s) × {len(sf.points())} sweep point(s): "
                  f"{', '.join(sf.labels)}")
        return 0
    backend, reason = choose_backend(plan["backend"] if plan else args.backend or "auto", args.mininet_cli,
                                     cluster=bool(args.cluster))
    if args.mininet_cli and backend.name != "lab":
        return _usage("--mininet-cli needs the lab backend")
    if backend.name == "sim" and (args.repeat or 1) > 1:
        for sf in files:
            if not sf.random_elements():
                print(f"p4handoff run: warning: {sf.source} has no random element (random loss, RED/M-RED queue "
                      f"or randomised scheme): the simulator's {args.repeat} repeats will be identical",
                      file=sys.stderr)
    lab = backend.name == "lab"
    if lab and not args.cluster and (args.jobs or 1) > 1:
        return _usage("--jobs: lab runs need the whole machine and run one at a time here "
                      "(--cluster spreads them over machines)")
    pool = make_pool(args.jobs or cpu_count(), args.cluster, lab)   # first: an unreachable cluster leaves no directory
    try:
        if plan:
            sweeps = [resume_sweep(args.resume, backend, allow_mixed_commits=args.allow_mixed_commits)]
        else:
            sweeps = [plan_sweep(sf, backend, seed=args.seed, repeats=args.repeat or 1, results_root=args.results,
                                 backend_reason=reason) for sf in files]
        sigterm_as_interrupt()   # a lab stopped by SIGTERM still tears its network down; workers are stopped
        print(f"backend: {backend.name} ({reason}); runs on {pool.where}", file=sys.stderr)
        from p4handoff.lab.claims import claims_console
        from p4handoff.lab.report import summary_table
        for res in execute_sweeps(sweeps, pool, progress_out=None if args.quiet else sys.stderr,
                                  make_plots=not args.no_plots):
            print(f"\n## {res.scenario_file.title}\n")
            print(summary_table(res))
            claims = claims_console(res)
            if claims:
                print("\n" + claims)
            print(f"\nresults: {res.directory}\nreport:  {res.directory / 'report.md'}")
    except SweepIncomplete as exc:
        print(f"p4handoff run: {exc}", file=sys.stderr)
        return 1
    except MixedCommits as exc:        # --resume with other code than made the directory's runs
        return _usage(f"--resume: {exc}")
    except ScenarioError as exc:       # --resume of a document this version no longer accepts
        print(exc, file=sys.stderr)
        return EXIT_INVALID
    finally:
        pool.close()
    return 0
