"""The PTF suite (ptf-tests/test_*.py) against BMv2, each PTF test reported as its own pytest item.

One namespace holds everything: simple_switch_grpc with ports 1..N on veth
ends `swN`, and `ptf` sending and sniffing on the peer ends `ptfN` (PTF port
N = switch port N). Both talk gRPC/Thrift over that namespace's loopback, so
nothing touches the root namespace's network. The switch is started once and
restarted only if a test killed it; every PTF test pushes the pipeline
afresh in its setUp (ptf-tests/base.py), which resets all switch state.

Test names are found statically (AST), so a machine without BMv2 still lists
and skips each one by name. Each test runs as its own `ptf` process with a
time limit, inside a suite budget. Logs and pcaps: build/ptf/.
"""
from __future__ import annotations

import ast
import re
import shutil
import sys
import time
from pathlib import Path

import pytest

from p4handoff import netns
from p4handoff.wire import load_constants
from topo.bmv2 import Bmv2Switch, bmv2_available, veth_port

ROOT = Path(__file__).resolve().parents[1]
PTF_DIR = ROOT / "ptf-tests"
P4INFO = ROOT / "build" / "bs.p4info.txtpb"
BMV2_JSON = ROOT / "build" / "bs.json"
LOG_DIR = ROOT / "build" / "ptf"
PTF = Path(sys.executable).with_name("ptf")
N_PORTS = 4  # PTF/switch ports 1..N_PORTS
TEST_TIMEOUT_S = 120.0  # one PTF test, start-up included
SUITE_BUDGET_S = 540.0  # all PTF tests together (issue 2: under 10 minutes)


def discover(ptf_dir: Path = PTF_DIR) -> list[str]:
    """`module.Class` of every PTF test (a class with a runTest, own or from a class in its module)."""
    names = []
    for path in sorted(ptf_dir.glob("test_*.py")):
        classes = {node.name: node for node in ast.parse(path.read_text(), str(path)).body
                   if isinstance(node, ast.ClassDef)}

        def has_run_test(cls: ast.ClassDef, seen: frozenset[str] = frozenset()) -> bool:
            if any(isinstance(n, ast.FunctionDef) and n.name == "runTest" for n in cls.body):
                return True
            bases = [b.id for b in cls.bases if isinstance(b, ast.Name)]
            return any(b in classes and b not in seen and has_run_test(classes[b], seen | {cls.name})
                       for b in bases)

        names += [f"{path.stem}.{name}" for name, cls in classes.items() if has_run_test(cls)]
    return names


def skip_reason() -> str | None:
    """Why the PTF suite cannot run here, or None."""
    available, reason = bmv2_available()
    if not available:
        return reason
    if not PTF.exists() and shutil.which("ptf") is None:
        return "'ptf' is not installed (pip install ptf; make setup)"
    if not (P4INFO.exists() and BMV2_JSON.exists()):
        if shutil.which("p4c-bm2-ss") is None:
            return "'p4c-bm2-ss' (p4c for BMv2) is not on PATH, so build/bs.json cannot be built"
        return f"{BMV2_JSON.relative_to(ROOT)} or {P4INFO.relative_to(ROOT)} missing: run `make build` first"
    return netns.unavailable_reason()


def switch_settings() -> tuple[int, int]:
    """(cpu_port, priority_queues) the program expects, from p4src/include/constants.p4."""
    constants = load_constants()
    queues = [v for k, v in constants.items() if k.startswith("QUEUE_PRIORITY_")]
    return constants["CPU_PORT"], max(queues, default=0) + 1


class Rig:
    """The namespace, its veth pairs and the switch; restarts the switch if a test killed it."""

    def __init__(self, lab: netns.Lab) -> None:
        self.ns = lab.namespace("ptf")
        for n in range(1, N_PORTS + 1):
            veth_port(f"sw{n}", self.ns, f"ptf{n}", switch_netns=self.ns)
        cpu_port, queues = switch_settings()
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.switch = Bmv2Switch({n: f"sw{n}" for n in range(1, N_PORTS + 1)}, cpu_port=cpu_port,
                                 priority_queues=queues, netns=self.ns, log_path=LOG_DIR / "switch.log",
                                 grpc_port=9559, thrift_port=9090).start()
        self.deadline = time.monotonic() + SUITE_BUDGET_S

    def ensure_running(self) -> None:
        if not self.switch.alive:
            self.switch.start()

    def ptf_command(self, name: str) -> list[str]:
        sw = self.switch
        params = ";".join(f"{k}={v!r}" for k, v in {
            "grpc_addr": sw.grpc_addr, "device_id": sw.device_id, "p4info": str(P4INFO),
            "bmv2_json": str(BMV2_JSON), "thrift_port": sw.thrift_port, "cpu_port": sw.cpu_port}.items())
        interfaces = [arg for n in range(1, N_PORTS + 1) for arg in ("--interface", f"{n}@ptf{n}")]
        return [str(PTF) if PTF.exists() else "ptf", "--test-dir", str(PTF_DIR), *interfaces,
                "--test-params", params, "--log-file", str(LOG_DIR / f"{name}.log"), name]


@pytest.fixture(scope="module")
def rig():
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with netns.Lab("ptf") as lab:
        rig = Rig(lab)
        yield rig
        rig.switch.stop()


_RESULT_RE = re.compile(r" \.\.\. (ok|FAIL|ERROR|skipped '(.*)'|expected failure|unexpected success)$", re.M)
NAMES = discover()


@pytest.mark.bmv2
@pytest.mark.netns
@pytest.mark.parametrize("name", NAMES or [pytest.param(
    "none", marks=pytest.mark.skip(reason="no PTF tests yet: ptf-tests/ has no test_*.py with a runTest class"))])
def test_ptf(name: str, request: pytest.FixtureRequest) -> None:
    reason = skip_reason()
    if reason:
        pytest.skip(f"{name}: {reason}")
    rig: Rig = request.getfixturevalue("rig")
    left = rig.deadline - time.monotonic()
    if left <= 0:
        pytest.fail(f"{name}: not run, the PTF suite used up its {SUITE_BUDGET_S:.0f} s budget")
    rig.ensure_running()
    timeout = min(TEST_TIMEOUT_S, left)
    try:
        done = rig.ns.run(rig.ptf_command(name), timeout=timeout, check=False)
    except netns.NetnsError as exc:
        pytest.fail(f"{name}: {exc} (log {LOG_DIR / name}.log)")
    output = done.stdout + done.stderr
    results = _RESULT_RE.findall(output)
    if len(results) != 1:
        pytest.fail(f"{name}: ptf exited {done.returncode} without one test result:\n{output[-4000:]}")
    outcome, skip_why = results[0]
    if outcome.startswith("skipped"):
        pytest.skip(f"{name}: {skip_why}")
    if outcome not in ("ok", "expected failure") or done.returncode != 0:
        switch_note = "" if rig.switch.alive else (
            f"\nsimple_switch_grpc died; its log ({rig.switch.log_path}):\n{rig.switch.log_tail()}")
        pytest.fail(f"{name}: {outcome}\n{output[-6000:]}{switch_note}", pytrace=False)
