"""CPU domains (p4handoff/reliability/cpu_domains.py): a process put in one runs only on its cores, at its weight,
its children follow it, and closing puts everything back and leaves no group behind."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from p4handoff.reliability.cpu_domains import ROOT, CpuDomain, CpuSplit, remove_stale, unavailable_reason

needs_cgroups = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))


def allowed_cpus(pid: int) -> str:
    return Path(f"/proc/{pid}/status").read_text().split("Cpus_allowed_list:")[1].split()[0]


def groups(pid: int) -> dict[str, str]:
    """{controller: the cgroup path} of `pid`, for the cpuset and cpu hierarchies."""
    out = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        for name in names.split(","):
            if name in ("cpuset", "cpu"):
                out[name] = path
    return out


def test_bad_domains_are_refused() -> None:
    with pytest.raises(ValueError, match="no CPUs"):
        CpuDomain("x", set(), 1024)
    with pytest.raises(ValueError, match="minimum of 2"):
        CpuDomain("x", {0}, 1)


def test_a_missing_hierarchy_is_named(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the root check comes first")
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cgroup.procs").write_text("")
    assert "cpuset" in str(unavailable_reason(tmp_path))


@needs_cgroups
def test_split_pins_moves_weights_and_cleans_up() -> None:
    everywhere = allowed_cpus(os.getpid())
    procs: list[subprocess.Popen] = []
    try:
        with CpuSplit(4096) as split:
            procs.append(subprocess.Popen(["sleep", "30"]))
            split.flood.add(procs[0].pid)
            assert allowed_cpus(procs[0].pid) == ",".join(str(c) for c in sorted(split.flood.cpus))
            assert groups(procs[0].pid) == {"cpuset": f"/p4h-{os.getpid()}-flood", "cpu": f"/p4h-{os.getpid()}-flood"}
            assert (ROOT / "cpu" / f"p4h-{os.getpid()}-flood" / "cpu.shares").read_text().strip() == "4096"
            split.control.add(os.getpid())
            assert allowed_cpus(os.getpid()) == str(min(split.control.cpus))
            procs.append(subprocess.Popen(["sleep", "30"]))     # forked inside: follows, and is released too
            assert allowed_cpus(procs[1].pid) == str(min(split.control.cpus))
            split.control.release(os.getpid())
            assert allowed_cpus(os.getpid()) == everywhere
        for p in procs:
            assert groups(p.pid) == {"cpuset": "/", "cpu": "/"}
            assert allowed_cpus(p.pid) == everywhere
        assert not any(p.name.startswith(f"p4h-{os.getpid()}-") for c in ("cpu", "cpuset") for p in (ROOT / c).iterdir())
    finally:
        for p in procs:
            p.kill()
            p.wait()


@needs_cgroups
def test_groups_of_a_killed_run_are_removed_and_live_ones_kept() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = [ROOT / c / f"p4h-{dead.pid}-flood" for c in ("cpu", "cpuset")]
    live = ROOT / "cpu" / f"p4h-{os.getpid()}-flood"
    try:
        for d in [*stale, live]:
            d.mkdir()
        assert set(stale) <= set(remove_stale())
        assert live.exists() and not any(d.exists() for d in stale)
    finally:
        for d in [*stale, live]:
            if d.exists():
                d.rmdir()
