"""Every benchmark runs (issue 24): each bench/ script's smoke mode, as `make bench-*` would start it.

A benchmark that nothing runs breaks without anyone noticing (`make bench-lab`
once imported `tests.sim_papers`, which a clean install does not have). So
each script runs here in its smoke mode (tiny sizes, seconds), from a
directory outside the checkout, and must print its figures; the ones that
need root, BMv2 or other tools skip by name and reason where those are
missing. Benchmarks import only the product and bench/'s own helpers.
"""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from p4handoff.bmv2 import bmv2_available
from p4handoff.netns import unavailable_reason

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
HELPERS = {"bmv2_bench.py", "ctl_profile.py", "ctl_inmemory.py"}          # modules the scripts import, not benchmarks


def needs_bmv2() -> str | None:
    ok, why = bmv2_available()
    if not ok:
        return why
    if not (REPO / "build" / "bs.json").exists():
        return "build/bs.json missing (make build)"
    return unavailable_reason()


def needs_valgrind() -> str | None:
    missing = [t for t in ("valgrind", "callgrind_control", "callgrind_annotate") if shutil.which(t) is None]
    return f"{', '.join(missing)} not installed" if missing else needs_bmv2()


# script -> (its figures, what it needs beyond Python: a function giving the reason it cannot run, or None)
SMOKE = {
    "sim_speed.py": (("simulator_build", "sim_speedup", "ipf_k4_wall_s"), None),
    "lab.py": (("sim_speedup", "ipf_k4_wall_s"), None),
    "scale.py": (("sweep_speedup", "results_mb_per_run"), None),
    "spool.py": ((), None),
    "hosts_goodput.py": (("host_goodput_mbps", "host_vs_kernel_ratio"), unavailable_reason),
    "controller.py": (("handoff_p99_ms", "handoff_p99_ms_service", "punt_to_release_pps", "handoffs_per_s", "group_handoff_ms_k8_p99",
                       "release_pps", "pipeline_pps", "buffer_path_vs_pipeline", "buffer_path_vs_pipeline_controller"),
                      needs_bmv2),
    "punt_flood_cost.py": (("flood_punt_p99_ratio", "flood_malformed_p99_ratio", "flood_unswitched_p99_ratio",
                            "flood_busy_p99_ratio", "flood_thread_p99_ratio", "isolation_split_p99_ratio",
                            "isolation_shared_p99_ratio"), needs_bmv2),
    "pipeline_pps.py": (("pipeline_pps", "minimal_pps", "pipeline_pps_ratio"), needs_bmv2),
    "packet_out_burst.py": (("delivered_burst_d64", "delivered_credit_d64", "pps_credit_d4096", "in_order"),
                            needs_bmv2),
    "pipeline_instructions.py": (("total_instr_ratio",), needs_valgrind),
}


def test_every_benchmark_has_a_smoke_run() -> None:
    scripts = {p.name for p in BENCH.glob("*.py")} - HELPERS
    assert scripts == set(SMOKE)


def test_every_make_bench_target_runs_a_listed_benchmark() -> None:
    targets = dict(re.findall(r"^(bench-[\w-]+):.*?\n\t\$\(PY\) (bench/\S+\.py)", (REPO / "Makefile").read_text(),
                              re.M | re.S))
    assert set(targets) == {"bench-pipeline", "bench-pipeline-instructions", "bench-hosts", "bench-controller",
                            "bench-punt-flood", "bench-scale", "bench-lab"}
    assert {Path(s).name for s in targets.values()} <= set(SMOKE)


def test_benchmarks_import_only_the_product_and_their_helpers() -> None:
    allowed_local = {Path(h).stem for h in HELPERS}
    for script in BENCH.glob("*.py"):
        for node in ast.walk(ast.parse(script.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                top = name.split(".")[0]
                assert top != "tests", f"{script.name} imports {name}"
                assert top in allowed_local or top == "p4handoff" or top in sys.stdlib_module_names \
                    or top in {"scapy", "google"}, f"{script.name} imports {name}"


# benchmarks that pace real packets through namespaces run in the namespace tests' serial group (tests/conftest.py):
# beside the other namespace tests, a half-second transfer could end before its connection was up; and those that
# drive BMv2 (one floods a switch) beside the chaos testbed made its fault-free reference run lose datagrams
SERIAL = {"hosts_goodput.py"} | {s for s, (_, needs) in SMOKE.items() if needs in (needs_bmv2, needs_valgrind)}


@pytest.mark.slow
@pytest.mark.parametrize("script", [pytest.param(s, marks=pytest.mark.netns) if s in SERIAL else s for s in sorted(SMOKE)])
def test_smoke(script: str, tmp_path: Path) -> None:
    figures, needs = SMOKE[script]
    reason = needs() if needs is not None else None
    if reason:
        pytest.skip(f"{script}: {reason}")
    env = {**os.environ, "P4HANDOFF_BUILD": str(REPO / "build")}      # the checkout's compiled program, from tmp
    done = subprocess.run([sys.executable, str(BENCH / script), "--smoke"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = dict(re.findall(r"^(\w+): (.+)$", done.stdout, re.M))
    assert [f for f in figures if f not in printed] == [], done.stdout
    if script == "spool.py":
        assert len(re.findall(r"us per packet", done.stdout)) == 3, done.stdout
    if script == "controller.py":      # a group's losses, and how many of them the new cell counted
        for tag in ("", "_service"):
            lost = re.search(rf"^group_k8{tag}_lost: (\d+) of 160 \((\d+) counted at the new cell's M-RED limit\)$",
                             done.stdout, re.M)
            assert lost and int(lost[2]) <= int(lost[1]), done.stdout


def test_controller_inmemory_smoke(tmp_path: Path) -> None:
    """`bench/controller.py --inmemory`: the in-memory handoff path runs without root or BMv2."""
    if not (REPO / "build" / "bs.p4info.txtpb").exists():
        pytest.skip("build/bs.p4info.txtpb missing (make build)")
    env = {**os.environ, "P4HANDOFF_BUILD": str(REPO / "build")}
    done = subprocess.run([sys.executable, str(BENCH / "controller.py"), "--smoke", "--inmemory"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = dict(re.findall(r"^(\w+): (.+)$", done.stdout, re.M))
    assert float(printed["inmem_handoff_us"]) > 0 and 0 < float(printed["inmem_encode_share"]) < 1, done.stdout
    # the profiled round handled its 20 registrations, each one's route entries encoded
    assert re.search(r"^# inmem +registration: parse, authenticate, decide +20 ", done.stdout, re.M), done.stdout


@pytest.mark.slow
def test_controller_profile_smoke(tmp_path: Path) -> None:
    """`bench/controller.py --profile`: the daemon's own profile, per stage, of both profiled runs."""
    if reason := needs_bmv2():
        pytest.skip(f"controller.py --profile: {reason}")
    env = {**os.environ, "P4HANDOFF_BUILD": str(REPO / "build")}
    done = subprocess.run([sys.executable, str(BENCH / "controller.py"), "--smoke", "--profile"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = dict(re.findall(r"^(\w+): (.+)$", done.stdout, re.M))
    assert float(printed["profile_single_us"]) > 0 and float(printed["profile_rate_us"]) > 0, done.stdout
    # the registrations were seen in the profiled phase (SIGUSR1 cleared only what came before)
    registrations = re.findall(r"^# +registration: parse, authenticate, decide +(\d+)", done.stdout, re.M)
    assert [int(n) for n in registrations] == [3, 10], done.stdout
