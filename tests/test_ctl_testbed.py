"""`p4handoff ctl testbed`: the README's controller walk-through, command by command, on real BMv2 switches.

Skipped, with the reason, where BMv2, the compiled program or network namespaces are missing.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.bmv2_support import BMV2_NETNS_MARKS, REPO

pytestmark = BMV2_NETNS_MARKS


def p4handoff(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "p4handoff", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def wait_line(proc: subprocess.Popen, needle: str, timeout: float) -> list[str]:
    """The lines `proc` printed up to the one containing `needle` (AssertionError if it ends or times out)."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"exited ({proc.wait(5)}) before {needle!r}: {lines}")
        lines.append(line.rstrip("\n"))
        if needle in line:
            return lines
    raise AssertionError(f"no {needle!r} within {timeout} s: {lines}")


def namespaces_of(pid: int) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(f"p4h-{pid}-")]


def test_the_readme_walkthrough_runs_as_written(tmp_path: Path) -> None:
    bed = subprocess.Popen([sys.executable, "-m", "p4handoff", "ctl", "testbed", "--dir", str(tmp_path)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)
    ctl = None
    try:
        printed = wait_line(bed, "Ctrl-C stops", 120)
        network = tmp_path / "network.yaml"
        assert f"network description: {network} (mobile hosts mh1, mh2; correspondent ch)" in printed
        assert len(namespaces_of(bed.pid)) == 3

        res = p4handoff("ctl", "validate", "--network", str(network))
        assert res.returncode == 0 and "valid (3 switches, 2 mobile hosts, 1 fixed hosts)" in res.stdout
        ctl = subprocess.Popen([sys.executable, "-m", "p4handoff", "ctl", "run", "--network", str(network),
                                "--log", str(tmp_path / "ctl.jsonl")], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, cwd=REPO)
        deadline = time.monotonic() + 60
        while True:
            res = p4handoff("ctl", "status", "--json", "--network", str(network))
            if res.returncode == 0 and all(s["state"] == "up" for s in json.loads(res.stdout)["switches"]):
                break
            assert time.monotonic() < deadline and ctl.poll() is None, res.stderr
            time.sleep(0.5)

        for mh, bs, said in (("mh1", "bs1", "mh1: attached at bs1"), ("mh2", "bs1", "mh2: attached at bs1"),
                             ("mh1", "bs2", "mh1: ")):
            res = p4handoff("ctl", "handoff", mh, "--to", bs, "--network", str(network))
            assert res.returncode == 0 and res.stdout.startswith(said), (res.stdout, res.stderr)
        res = p4handoff("ctl", "status", "--json", "--network", str(network))
        where = {m["mh"]: (m["bs"], m["handoffs"]) for m in json.loads(res.stdout)["mobile_hosts"]}
        assert where == {"mh1": ("bs2", 1), "mh2": ("bs1", 0)}
        res = p4handoff("ctl", "detach", "mh1", "--network", str(network))
        assert res.returncode == 0 and res.stdout.startswith("mh1: detached")
    finally:
        if ctl is not None:
            ctl.send_signal(signal.SIGINT)
            ctl.wait(30)
        bed.send_signal(signal.SIGINT)
        code = bed.wait(60)
    assert code == 0
    assert namespaces_of(bed.pid) == []      # everything it made is gone
