"""`make testgen` / `make testgen-tofino`: generate tests with P4Testgen, replay them on BMv2, print the figures.

    python -m p4handoff.testgen bmv2 [--max-tests N] [--runs SELECTION:SEED,...]
    python -m p4handoff.testgen tofino [tofino2] [--max-tests N]       # bs_tna.p4's tests through bs.p4

Each target runs p4testgen once per run (path selection and seed), at most N tests a run, and replays every
test; its statement coverage is the union over the runs (tool.union), each run's own figure printed beside it.

Needs p4testgen, BMv2, the compiled v1model program (make build) and root
(namespaces). Exit 2 when something is missing (one line says what), 1 when
a generated test fails (bmv2) or a disagreement is undocumented (tofino).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from p4handoff import netns
from p4handoff.argtypes import parsed_by, real_number, whole_number
from p4handoff.bmv2 import bmv2_available
from p4handoff.controller.p4runtime.entities import UpdateType
from p4handoff.controller.p4runtime.p4info import P4Info
from p4handoff.wire import load_constants

from . import cases, differential, tool, uncovered
from .replay import judge, replay_tests

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
V1MODEL_P4 = ROOT / "p4src" / "v1model" / "bs.p4"
TNA_P4 = ROOT / "p4src" / "tna" / "bs_tna.p4"
TESTGEN_DOC = ROOT / "docs" / "testgen.md"     # why each statement the bmv2 runs leave uncovered is not reached
P4INFO, BMV2_JSON = BUILD / "bs.p4info.txtpb", BUILD / "bs.json"
DATA_PORT_RANGE = "1:8"     # data ports P4Testgen may send to (the replay makes a veth for each)
DATA_PORTS = range(1, 9)
# docs/testgen.md: the TNA program with valid checksums assumed (P4Testgen models Checksum.verify() as taint)
TESTGEN_DEFINE = "BS_TESTGEN_CHECKSUMS_VALID"
# docs/testgen.md, "What P4Testgen cannot measure": BMv2 here is built without logging macros
PTF_COVERAGE_NOTE = ("not measurable: P4Testgen only covers the paths it generates itself, and this BMv2 is "
                     "built with --disable-logging-macros (no per-statement trace of the PTF suite's packets)")


def missing() -> str | None:
    """Why the harness cannot run here, or None."""
    ok, why = bmv2_available()
    for reason in (tool.available(), None if ok else why, netns.unavailable_reason()):
        if reason:
            return reason
    if not (P4INFO.exists() and BMV2_JSON.exists()):
        return f"{BMV2_JSON.relative_to(ROOT)} not built: run `make build`"
    return None


def switch_settings() -> tuple[int, int, int]:
    """(cpu_port, priority_queues, packet_out bytes) of the v1model program, from constants.p4."""
    c = load_constants()
    queues = [v for k, v in c.items() if k.startswith("QUEUE_PRIORITY_")]
    return c["CPU_PORT"], max(queues, default=0) + 1, c["PACKET_OUT_BYTES"]


# bmv2: the RED table p_a is left to its default (pa_certain, a certain drop) in every run. With an entry,
# p_a < 1 compares a random number P4Testgen cannot know (v1model `random` is its "unknown"), the drop is
# undecidable, and after 100 such paths P4Testgen ends the run (docs/testgen.md, "The random number").
BMV2_SKIP = ("red_pa",)
PATH_SELECTIONS = ("GREEDY_STATEMENT_SEARCH", "RANDOM_BACKTRACK", "DEPTH_FIRST")
# docs/testgen.md, "Several runs": the greedy selection never returns to the parser's data-port branch once the
# CPU port's subtree has statements left, so a second greedy run takes its inputs from data ports only (the
# precondition BS_TESTGEN_DATA_PORTS); random backtracking adds paths neither greedy run takes
BMV2_RUNS = "GREEDY_STATEMENT_SEARCH:1,GREEDY_STATEMENT_SEARCH:1:data-ports,RANDOM_BACKTRACK:1"
# tofino: greedy alone stops at 0.76-0.79; random backtracking adds paths (union 0.820 on both targets, docs/tofino.md)
TOFINO_RUNS = "GREEDY_STATEMENT_SEARCH:1,RANDOM_BACKTRACK:1"


@dataclass
class Generated:
    """One p4testgen run: where it wrote, what it said, the tests it wrote and those that do not read."""

    run: tool.Run
    out: Path
    report: tool.Report
    tests: list[cases.GeneratedTest]
    unreadable: list[tuple[str, str]]


def generate(target: tool.Target, program: Path, out: Path, args: argparse.Namespace, port_ranges: str,
             default_runs: str, skip: tuple[str, ...] = ()) -> list[Generated]:
    """Run p4testgen once per run, each in its own directory under `out`."""
    runs = [tool.Run(ps, seed, skip, data) for ps, seed, data in (args.runs or run_list(default_runs))]
    if target.name != "bmv2" and any(r.data_ports for r in runs):
        raise RuntimeError("a data-ports run needs the v1model program's precondition (bmv2 only)")
    done = []
    for run in runs:
        run_out = out / run.label
        cmd = tool.command(target, program, run_out, max_tests=args.max_tests, port_ranges=port_ranges, run=run)
        report = tool.of_the_program(tool.run(cmd, run_out / "p4testgen.log", args.timeout), run)
        done.append(Generated(run, run_out, report, *cases.load_dir(run_out)))
    return done


def coverage_text(covered: int, coverable: int) -> str:
    return f"{covered / coverable:.3f} ({covered}/{coverable})"


def readable(node: str) -> str:
    """A statement as P4Testgen names it, its file relative to the repository: '<file>\\<line>: <text>'."""
    where, sep, rest = node.partition("\\")
    path = os.path.normpath(where)
    return (os.path.relpath(path, ROOT) if os.path.isabs(path) else path) + sep + rest


def print_coverage(prefix: str, runs: Sequence[Generated], out: Path, why: dict[str, str] | None = None) -> float | None:
    """Each run's own figures, then the union over the runs and its uncovered statements, printed and in a
    file; with `why` (docs/testgen.md's table), each statement with its reason."""
    for g in runs:
        r = g.report
        own = coverage_text(r.covered, r.coverable) if r.coverable else "none reported"
        ended = r.stopped or "its --max-tests or no path left"
        print(f"{prefix}_run {g.run.label}: tests {len(g.tests) + len(g.unreadable)}, coverage {own}, "
              f"aborted paths {r.aborted} (output port unknown, no test), ended: {ended}")
        for message, n in Counter(r.unimplemented).most_common():
            print(f"  {prefix}_unimplemented: {n} x {message}")
    merged = tool.union([g.report for g in runs])
    if merged is None:
        print(f"{prefix}_statement_coverage: none reported")
        return None
    print(f"{prefix}_statement_coverage: {coverage_text(merged.covered, merged.coverable)}, union of {merged.runs} "
          f"run(s); best single run {max(g.report.coverage or 0 for g in runs):.3f}")
    listed = uncovered.explain((uncovered.printed(readable(n)) for n in merged.uncovered), why or {})
    (out / "uncovered.txt").write_text("".join(f"{e.statement}\n" for e in listed))
    unexplained = sum(e.why is None for e in listed)
    said = (f", {unexplained} without a reason in {TESTGEN_DOC.relative_to(ROOT)} ('{uncovered.HEADING[4:]}')"
            if why is not None else "")
    print(f"{prefix}_uncovered_statements: {len(listed)}{said}")
    for e in listed:
        print(f"  {e.statement}" + ("" if why is None else f"  [{e.why or 'NO REASON GIVEN'}]"))
    print(f"{prefix}_aborted_paths: {sum(g.report.aborted for g in runs)} (P4Testgen: output port unknown, no test)")
    return merged.coverage


def run_bmv2(args: argparse.Namespace) -> int:
    out = BUILD / "testgen" / "bmv2"
    cpu, queues, _ = switch_settings()
    runs = generate(tool.BMV2, V1MODEL_P4, out, args, f"{DATA_PORT_RANGE},{cpu}:{cpu}", BMV2_RUNS, BMV2_SKIP)
    p4info = P4Info.load(P4INFO)
    failed, total = [], 0
    for g in runs:
        results = replay_tests(g.tests, lambda t: [(UpdateType.INSERT, e) for e in cases.canonical_entities(t.entities, p4info)],
                               p4info=P4INFO, bmv2_json=BMV2_JSON, work_dir=g.out, cpu_port=cpu,
                               priority_queues=queues, ports=DATA_PORTS)
        total += len(g.tests) + len(g.unreadable)
        failed += [{"test": f"{g.run.label}/{name}", "why": f"unreadable: {why}"} for name, why in g.unreadable]
        for test, obs in zip(g.tests, results):
            why = obs if isinstance(obs, str) else (None if (verdict := judge(test, obs)).ok else verdict.why)
            if why is not None:
                failed.append({"test": f"{g.run.label}/{test.name}", "why": why})
    print(f"testgen_tests: {total}")
    print(f"testgen_passed: {total - len(failed)}")
    print(f"testgen_failed: {len(failed)}")
    for f in failed:
        print(f"  FAIL {f['test']}: {f['why'][:300]}")
    coverage = print_coverage("testgen", runs, out, uncovered.reasons_in(TESTGEN_DOC))
    print(f"ptf_suite_statement_coverage: {PTF_COVERAGE_NOTE}")
    (out / "summary.json").write_text(json.dumps({"tests": total, "failed": failed, "coverage": coverage,
                                                  "runs": {g.run.label: g.report.coverage for g in runs}}, indent=1))
    return 1 if failed else 0


def run_tofino(target_name: str, args: argparse.Namespace) -> int:
    target = {"tofino": tool.TOFINO, "tofino2": tool.TOFINO2}[target_name]
    out = BUILD / "testgen" / target_name
    tna_cpu = tool.TESTGEN_TNA_CPU_PORT
    cpu, queues, out_bytes = switch_settings()
    target = tool.Target(target.name, target.arch, target.backend, (*target.defines, TESTGEN_DEFINE))
    runs = generate(target, TNA_P4, out, args, f"{DATA_PORT_RANGE},{tna_cpu}:{tna_cpu}", TOFINO_RUNS)
    bmv2 = differential.Bmv2Side(P4INFO, BMV2_JSON, cpu, queues, out_bytes)
    comparisons: list[differential.Comparison] = []
    untranslated: list[tuple[str, str]] = []
    for g in runs:
        done, skipped = differential.compare(g.tests, bmv2, tna_cpu, g.out, DATA_PORTS)
        comparisons += [replace(c, name=f"{g.run.label}/{c.name}") for c in done]
        untranslated += [(f"{g.run.label}/{name}", why) for name, why in skipped]
        untranslated += [(f"{g.run.label}/{name}", f"unreadable: {why}") for name, why in g.unreadable]
    tna_tests = [t for g in runs for t in g.tests]
    unreadable = [u for g in runs for u in g.unreadable]
    p = target_name
    documented = [c for c in comparisons if not c.agree and c.difference is not None]
    artefacts = [c for c in comparisons if not c.agree and c.artefact]
    undocumented = [c for c in comparisons if not c.agree and c.difference is None and not c.artefact]
    print(f"{p}_tests: {len(tna_tests) + len(unreadable)}")
    print(f"{p}_agree: {sum(c.agree for c in comparisons)}")
    print(f"{p}_documented_differences: {len(documented)}")
    for number, n in sorted(Counter(c.difference for c in documented if c.difference is not None).items()):
        example = next(c for c in documented if c.difference == number)
        print(f"  difference {number} ({differential.DIFFERENCES[number]}): {n}, e.g. {example.name}: {example.why}")
    # difference 10 changes no packet and no counter: it shows only in P4Testgen's trace of a test both drop
    agreed = {c.name for c in comparisons if c.agree}
    traced = [(f"{g.run.label}/{t.name}", why) for g in runs for t in g.tests
              if t.expected is None and f"{g.run.label}/{t.name}" in agreed
              and (why := differential.fate_before_validity(t.traces))]
    print(f"{p}_difference_10_in_traces: {len(traced)} (agreeing drops; TNA's trace shows BsIngress deciding "
          "after the parser's verdict)" + (f", e.g. {traced[0][0]}: {traced[0][1]}" if traced else ""))
    print(f"{p}_p4testgen_artefacts: {len(artefacts)}")
    if artefacts:
        print(f"  e.g. {artefacts[0].name}: {artefacts[0].why}")
    print(f"{p}_undocumented: {len(undocumented)}")
    for c in undocumented:
        print(f"  UNDOCUMENTED {c.name}: {c.why[:300]}")
    print(f"{p}_not_replayed: {len(untranslated)}")
    for name, why in untranslated:
        print(f"  {name}: {why[:200]}")
    coverage = print_coverage(p, runs, out)
    (out / "summary.json").write_text(json.dumps({
        "tests": len(tna_tests), "comparisons": [c.__dict__ for c in comparisons],
        "not_replayed": untranslated, "difference_10_in_traces": traced, "coverage": coverage}, indent=1))
    return 1 if undocumented else 0


def run_list(text: str) -> list[tuple[str, int, bool]]:
    """'GREEDY_STATEMENT_SEARCH:1:data-ports,random_backtrack:5' -> [(selection, seed, data ports only), ...];
    ValueError saying what is wrong, and for the same run twice (it would add nothing)."""
    runs = []
    for item in text.split(","):
        selection, sep, rest = item.strip().partition(":")
        seed, _, focus = rest.partition(":")
        if not sep or selection.upper() not in PATH_SELECTIONS:
            raise ValueError(f"{item!r}: want SELECTION:SEED[:data-ports], SELECTION one of {', '.join(PATH_SELECTIONS)}")
        if not seed.strip().isdigit():
            raise ValueError(f"{item!r}: the seed must be a whole number >= 0")
        if focus.strip() not in ("", "data-ports"):
            raise ValueError(f"{item!r}: after the seed only ':data-ports' (inputs from data ports only)")
        runs.append((selection.upper(), int(seed), focus.strip() == "data-ports"))
    if len(set(runs)) != len(runs):
        raise ValueError(f"a run given twice: {text!r}")
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m p4handoff.testgen", description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+", choices=["bmv2", "tofino", "tofino2"])
    parser.add_argument("--max-tests", type=whole_number(0), default=100,
                        help="p4testgen --max-tests, per run (0: until no path is left)")
    parser.add_argument("--runs", type=parsed_by(run_list), default=None,
                        help=f"comma-separated SELECTION:SEED[:data-ports], SELECTION one of {', '.join(PATH_SELECTIONS)}; "
                             "data-ports: inputs from data ports only (bmv2) "
                             f"(default: bmv2 {BMV2_RUNS}; tofino {TOFINO_RUNS})")
    parser.add_argument("--timeout", type=real_number(0, above=True), default=3600.0, help="seconds for one p4testgen run")
    args = parser.parse_args(argv)
    reason = missing()
    if reason:
        print(f"testgen: cannot run: {reason}", file=sys.stderr)
        return 2
    rc = 0
    for target in args.targets:
        try:
            rc = max(rc, run_bmv2(args) if target == "bmv2" else run_tofino(target, args))
        except RuntimeError as exc:
            print(f"testgen {target}: {exc}", file=sys.stderr)
            rc = max(rc, 2)
    return rc


if __name__ == "__main__":
    sys.exit(main())
