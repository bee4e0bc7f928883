"""`make testgen` / `make testgen-tofino`: generate tests with P4Testgen, replay them on BMv2, print the figures.

    python -m p4handoff.testgen bmv2 [--max-tests N] [--seed S]       # bs.p4, tests replayed as generated
    python -m p4handoff.testgen tofino [tofino2] [--max-tests N]       # bs_tna.p4's tests through bs.p4

Needs p4testgen, BMv2, the compiled v1model program (make build) and root
(namespaces). Exit 2 when something is missing (one line says what), 1 when
a generated test fails (bmv2) or a disagreement is undocumented (tofino).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from p4handoff import netns
from p4handoff.argtypes import real_number, whole_number
from p4handoff.bmv2 import bmv2_available
from p4handoff.controller.p4runtime.entities import UpdateType
from p4handoff.controller.p4runtime.p4info import P4Info
from p4handoff.wire import load_constants

from . import cases, differential, tool
from .replay import judge, replay_tests

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
V1MODEL_P4 = ROOT / "p4src" / "v1model" / "bs.p4"
TNA_P4 = ROOT / "p4src" / "tna" / "bs_tna.p4"
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


def generate(target: tool.Target, program: Path, out: Path, args: argparse.Namespace,
             port_ranges: str) -> tuple[tool.Report, list[cases.GeneratedTest], list[tuple[str, str]]]:
    """Run p4testgen; its report, the tests it wrote, and (file, why) of those that do not read."""
    cmd = tool.command(target, program, out, max_tests=args.max_tests, seed=args.seed, port_ranges=port_ranges)
    report = tool.run(cmd, out / "p4testgen.log", args.timeout)
    return (report, *cases.load_dir(out))


def print_coverage(prefix: str, report: tool.Report, out: Path) -> None:
    cov = report.coverage
    print(f"{prefix}_statement_coverage: " + (f"{cov:.3f} ({report.covered}/{report.coverable})" if cov is not None
                                             else "none reported"))
    (out / "uncovered.txt").write_text("".join(f"{n}\n" for n in report.uncovered))
    print(f"{prefix}_uncovered_statements: {len(report.uncovered)} (listed in {out.relative_to(ROOT)}/uncovered.txt)")
    print(f"{prefix}_aborted_paths: {report.aborted} (P4Testgen: output port unknown, no test)")
    if report.stopped:
        print(f"{prefix}_stopped: {report.stopped}")
    for message, n in Counter(report.unimplemented).most_common():
        print(f"{prefix}_unimplemented: {n} x {message}")


def run_bmv2(args: argparse.Namespace) -> int:
    out = BUILD / "testgen" / "bmv2"
    cpu, queues, _ = switch_settings()
    report, tests, unreadable = generate(tool.BMV2, V1MODEL_P4, out, args, f"{DATA_PORT_RANGE},{cpu}:{cpu}")
    p4info = P4Info.load(P4INFO)
    results = replay_tests(tests, lambda t: [(UpdateType.INSERT, e) for e in cases.canonical_entities(t.entities, p4info)],
                           p4info=P4INFO,
                           bmv2_json=BMV2_JSON, work_dir=out, cpu_port=cpu, priority_queues=queues, ports=DATA_PORTS)
    failed = [{"test": name, "why": f"unreadable: {why}"} for name, why in unreadable]
    for test, obs in zip(tests, results):
        why = obs if isinstance(obs, str) else (None if (verdict := judge(test, obs)).ok else verdict.why)
        if why is not None:
            failed.append({"test": test.name, "why": why})
    print(f"testgen_tests: {len(tests) + len(unreadable)}")
    print(f"testgen_passed: {len(tests) + len(unreadable) - len(failed)}")
    print(f"testgen_failed: {len(failed)}")
    for f in failed:
        print(f"  FAIL {f['test']}: {f['why'][:300]}")
    print_coverage("testgen", report, out)
    print(f"ptf_suite_statement_coverage: {PTF_COVERAGE_NOTE}")
    (out / "summary.json").write_text(json.dumps({"tests": len(tests), "failed": failed,
                                                  "coverage": report.coverage}, indent=1))
    return 1 if failed else 0


def run_tofino(target_name: str, args: argparse.Namespace) -> int:
    target = {"tofino": tool.TOFINO, "tofino2": tool.TOFINO2}[target_name]
    out = BUILD / "testgen" / target_name
    tna_cpu = tool.TESTGEN_TNA_CPU_PORT
    cpu, queues, out_bytes = switch_settings()
    target = tool.Target(target.name, target.arch, target.backend, (*target.defines, TESTGEN_DEFINE))
    report, tna_tests, unreadable = generate(target, TNA_P4, out, args, f"{DATA_PORT_RANGE},{tna_cpu}:{tna_cpu}")
    bmv2 = differential.Bmv2Side(P4INFO, BMV2_JSON, cpu, queues, out_bytes)
    comparisons, untranslated = differential.compare(tna_tests, bmv2, tna_cpu, out, DATA_PORTS)
    untranslated += [(name, f"unreadable: {why}") for name, why in unreadable]
    p = target_name
    documented = [c for c in comparisons if not c.agree and c.difference is not None]
    undocumented = [c for c in comparisons if not c.agree and c.difference is None]
    print(f"{p}_tests: {len(tna_tests) + len(unreadable)}")
    print(f"{p}_agree: {sum(c.agree for c in comparisons)}")
    print(f"{p}_documented_differences: {len(documented)}")
    for number, n in sorted(Counter(c.difference for c in documented if c.difference is not None).items()):
        example = next(c for c in documented if c.difference == number)
        print(f"  difference {number} ({differential.DIFFERENCES[number]}): {n}, e.g. {example.name}: {example.why}")
    print(f"{p}_undocumented: {len(undocumented)}")
    for c in undocumented:
        print(f"  UNDOCUMENTED {c.name}: {c.why[:300]}")
    print(f"{p}_not_replayed: {len(untranslated)}")
    for name, why in untranslated:
        print(f"  {name}: {why[:200]}")
    print_coverage(p, report, out)
    (out / "summary.json").write_text(json.dumps({
        "tests": len(tna_tests), "comparisons": [c.__dict__ for c in comparisons],
        "not_replayed": untranslated, "coverage": report.coverage}, indent=1))
    return 1 if undocumented else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m p4handoff.testgen", description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+", choices=["bmv2", "tofino", "tofino2"])
    parser.add_argument("--max-tests", type=whole_number(0), default=200, help="p4testgen --max-tests (0: until no path is left)")
    parser.add_argument("--seed", type=whole_number(0), default=1)
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
