"""`p4handoff agree REFERENCE OTHER...`: does a sweep (a lab set, say) agree with another (the simulator's)?

Both are results directories of `p4handoff run` for scenarios that make the
same claims and measure the same quantities (e.g. the lab file run once with
`--backend sim --repeat 40` and once or more with `--backend lab`). Prints,
as Markdown, per claim how often it holds repeat by repeat in each and
Fisher's exact test of the difference, and per quantity and variant where
the others' runs fall in the reference's spread, with a Mann-Whitney test
(docs/lab.md, "Agreement"). Several OTHER directories are pooled.
Exit codes: 0 done, 1 a directory that is not a results directory or
shares nothing with the reference, 2 usage.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from p4handoff.argtypes import probability
from p4handoff.lab.agreement import ALPHA, render
from p4handoff.lab.runner import load_results


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("agree", help="compare two sweeps' results (a lab set against the simulator)",
                       description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 1)[1],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reference", type=Path, help="results directory to compare against (e.g. the simulator's)")
    p.add_argument("others", type=Path, nargs="+", metavar="other", help="results directory (several are pooled)")
    p.add_argument("--alpha", type=probability, default=ALPHA,
                   help=f"significance level below which a difference is called one (default {ALPHA})")
    p.set_defaults(func=_agree)


def _agree(args: argparse.Namespace) -> int:
    print(render(load_results(args.reference), [load_results(d) for d in args.others], args.alpha))
    return 0
