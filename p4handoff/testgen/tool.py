"""Running p4testgen and reading its report: how many tests, how many it aborted, its statement coverage
and the statements it did not cover.

The figures come from p4testgen's own output (p4c 1.2.5.16,
backends/p4tools/modules/testgen/lib/test_backend.cpp and midend/coverage.cpp):
`============ Test N: Nodes covered: C (v/n) ============` per emitted test
(with `--track-coverage STATEMENTS`), `Output port tainted - Aborting Test`
per aborted path, and with `--print-coverage` a `Not covered program nodes:`
list after each test, one `\\t<file>\\<line>: <statement>` per node.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

P4TESTGEN = "p4testgen"
# p4testgen ends a run with an internal error once more than 100 paths reached an output-port guard it could
# not satisfy (MAX_GUARD_VIOLATIONS, core/small_step/small_step.h); in our programs these are paths whose port
# is tainted by the AQM's queue depth, registers or random numbers. The tests written until then are complete.
GUARD_LIMIT = 100
GUARD_LIMIT_MESSAGE = "exceeded the maximum number of permitted guard violations"


@dataclass(frozen=True)
class Target:
    """One P4Testgen target as we run it: what to pass and which back end writes what we read."""

    name: str                   # --target
    arch: str                   # --arch
    backend: str                # --test-backend
    defines: tuple[str, ...] = ()


# The TNA CPU port is a build constant (docs/tofino.md, difference 11). P4Testgen's Tofino STF back end only
# uses ports below 64 (pipe 0; targets/tofino/shared_program_info.cpp, getBackendConstraint), so the default
# 64 would make every punt and packet-out path untestable: the harness builds with port 9 (data ports 1..8).
TESTGEN_TNA_CPU_PORT = 9
# BS_TESTGEN_DEFINED_READS: reads of a field of an invalid header give 0 to P4Testgen instead of its "unknown"
# (include/headers.p4, BS_READ; docs/testgen.md, "Unspecified reads"); the real programs are compiled without it.
# Both programs share the reads (include/), so every target's runs pass it.
DEFINED_READS = "BS_TESTGEN_DEFINED_READS"
BMV2 = Target("bmv2", "v1model", "PROTOBUF", (DEFINED_READS,))
# p4testgen's tna.p4/t2na.p4 pick their specs by __TARGET_TOFINO__, which bf-p4c defines and p4testgen does not
TOFINO = Target("tofino", "tna", "STF", (f"TNA_CPU_PORT={TESTGEN_TNA_CPU_PORT}", "__TARGET_TOFINO__=1", DEFINED_READS))
TOFINO2 = Target("tofino2", "t2na", "STF", (f"TNA_CPU_PORT={TESTGEN_TNA_CPU_PORT}", "__TARGET_TOFINO__=2", DEFINED_READS))


@dataclass
class Report:
    """What one p4testgen run printed about itself."""

    tests: int = 0              # tests written
    aborted: int = 0            # paths ended with a tainted output port: no test
    covered: int = 0            # statements covered / coverable, P4Testgen's own count
    coverable: int = 0
    uncovered: list[str] = field(default_factory=list)   # "<file>\\<line>: <statement>"
    unimplemented: list[str] = field(default_factory=list)  # warnings: paths given up on
    stopped: str | None = None  # why p4testgen ended before --max-tests, having written valid tests

    @property
    def coverage(self) -> float | None:
        return self.covered / self.coverable if self.coverable else None


_TEST_RE = re.compile(r"=+ Test (\d+): Nodes covered: [0-9.e+-]+ \((\d+)/(\d+)\) =+")
_PLAIN_TEST_RE = re.compile(r"=+ Test (\d+)(?:: No coverable nodes)? =+$")
_ABORT_RE = re.compile(r"=+ Test \d+: Output port tainted - Aborting Test =+")
_UNIMPL_RE = re.compile(r"Path encountered unimplemented feature\. Message: (.*)")
_NODE_RE = re.compile(r"(\S+\\\d+: .*)$")


def parse_report(output: str) -> Report:
    """The figures of one run's combined stdout and stderr."""
    report = Report()
    nodes: list[str] | None = None
    located = False     # the last unimplemented-feature message named only its source file: its text follows
    for line in output.splitlines():
        if located and line.strip():
            report.unimplemented[-1] = line.strip()
            located = False
            continue
        if m := _TEST_RE.search(line):
            report.tests += 1
            report.covered, report.coverable = int(m.group(2)), int(m.group(3))
        elif _PLAIN_TEST_RE.search(line):
            report.tests += 1
        elif _ABORT_RE.search(line):
            report.aborted += 1
        elif m := _UNIMPL_RE.search(line):
            report.unimplemented.append(m.group(1).strip())
            located = m.group(1).startswith("In file:")
        if "Not covered program nodes:" in line:
            nodes = []
            report.uncovered = nodes
        elif nodes is not None and (m := _NODE_RE.search(line)) and "Covered program nodes" not in line:
            nodes.append(m.group(1))
        elif "Covered program nodes:" in line or "=====" in line:
            nodes = None
    return report


# v1model/bs.p4 under this define assumes an input from a data port (`testgen_assume(sm.ingress_port != CPU_PORT)`,
# P4Testgen's precondition extern, testgen.p4): one statement more, which P4Testgen counts and every path runs
DATA_PORTS_DEFINE = "BS_TESTGEN_DATA_PORTS"
DATA_PORTS_STATEMENTS = 1


@dataclass(frozen=True)
class Run:
    """One p4testgen run of a target: how it selects paths, its seed, the tables it leaves to their
    default action (--skip-control-plane-entities), and whether its inputs come from data ports only."""

    path_selection: str = "GREEDY_STATEMENT_SEARCH"
    seed: int = 1
    skip: tuple[str, ...] = ()
    data_ports: bool = False

    @property
    def label(self) -> str:
        return f"{self.path_selection.lower()}-seed{self.seed}" + ("-data-ports" if self.data_ports else "")


def of_the_program(report: Report, run: Run) -> Report:
    """The report counted over the real program's statements: a data-port run's precondition is P4Testgen's
    own statement (covered by every path), not one of ours, and would make the runs' counts differ."""
    if not run.data_ports or not report.coverable:
        return report
    extra = DATA_PORTS_STATEMENTS
    return replace(report, covered=report.covered - extra, coverable=report.coverable - extra)


@dataclass(frozen=True)
class Union:
    """Statement coverage of several runs of one program: covered if any run covered it."""

    covered: int
    coverable: int
    uncovered: list[str]
    runs: int

    @property
    def coverage(self) -> float:
        return self.covered / self.coverable


def union(reports: Sequence[Report]) -> Union | None:
    """The union of the runs' coverage, or None if no run reported any. P4Testgen prints no covered list,
    only the coverable count and, after each test, the statements not yet covered (file, line and text); a
    statement is uncovered by all runs iff it is in every run's last list. Counted as a multiset: two
    statements of one line can print alike. Runs must be of one program (the same coverable count), and each
    list must hold all of its run's uncovered statements, or the union would count too much."""
    counted = [r for r in reports if r.coverable]
    if not counted:
        return None
    if len({r.coverable for r in counted}) != 1:
        raise ValueError(f"runs of different programs: coverable {sorted({r.coverable for r in counted})}")
    for r in counted:
        if len(r.uncovered) != r.coverable - r.covered:
            raise ValueError(f"a run lists {len(r.uncovered)} uncovered statements for {r.covered}/{r.coverable}")
    common = Counter(counted[0].uncovered)
    for r in counted[1:]:
        common &= Counter(r.uncovered)
    uncovered = sorted(common.elements())
    coverable = counted[0].coverable
    return Union(coverable - len(uncovered), coverable, uncovered, len(counted))


def available() -> str | None:
    """Why p4testgen cannot run here, or None."""
    if shutil.which(P4TESTGEN) is None:
        return (f"'{P4TESTGEN}' is not on PATH (p4c's backends/p4tools; `make toolchain-tofino` builds it, "
                "README 'P4 toolchain')")
    return None


def command(target: Target, program: Path, out_dir: Path, *, max_tests: int, port_ranges: str,
            run: Run = Run(), packet_bits: str = "112:12000",
            include_dirs: Sequence[Path] = ()) -> list[str]:
    """The p4testgen command line. Statement coverage, path selection and seed as `run` says (the default,
    greedy, aims at statements not yet covered); ports restricted to those the replay has; packets at least
    an Ethernet header long (AF_PACKET cannot send less)."""
    args = [P4TESTGEN, "--target", target.name, "--arch", target.arch, "--std", "p4-16",
            "--test-backend", target.backend, "--out-dir", str(out_dir), "--max-tests", str(max_tests),
            "--seed", str(run.seed), "--track-coverage", "STATEMENTS", "--print-coverage",
            "--path-selection", run.path_selection, "--port-ranges", port_ranges,
            "--packet-size-range", packet_bits, "--test-name", program.stem]
    if run.skip:
        args += ["--skip-control-plane-entities", ",".join(run.skip)]
    args += [f"-D{d}" for d in (*target.defines, *((DATA_PORTS_DEFINE,) if run.data_ports else ()))]
    args += [a for d in include_dirs for a in ("-I", str(d))]
    return [*args, str(program)]


def run(args: Sequence[str], log: Path, timeout: float) -> Report:
    """Run p4testgen, keep its output in `log`, return its report; RuntimeError if it failed."""
    out_dir = Path(args[args.index("--out-dir") + 1])
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.iterdir():   # tests of an earlier run must not be replayed with this one's report
        if old.suffix in (".txtpb", ".stf"):
            old.unlink()
    try:
        done = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        partial = "".join(o.decode(errors="replace") if isinstance(o, bytes) else o or "" for o in (exc.stdout, exc.stderr))
        log.write_text(f"{' '.join(args)}\n(timed out after {timeout} s)\n{partial}")
        raise RuntimeError(f"p4testgen did not finish within {timeout:.0f} s (log: {log})") from None
    output = done.stdout + done.stderr
    log.write_text(f"{' '.join(args)}\n{output}")
    if done.returncode != 0 and GUARD_LIMIT_MESSAGE in output:
        report = parse_report(output)
        report.stopped = (f"P4Testgen's limit of {GUARD_LIMIT} unsatisfiable or tainted output-port guards "
                          "(small_step.cpp; docs/testgen.md): the tests written before it are kept")
        return report
    if done.returncode != 0:
        tail = "\n".join(output.splitlines()[-15:])
        raise RuntimeError(f"p4testgen exited {done.returncode} (log: {log}):\n{tail}")
    return parse_report(output)
