"""CPU domains (p4handoff/reliability/cpu_domains.py): a process put in one runs only on its cores, at its weight,
its children follow it, and closing puts everything back and leaves no group behind."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from p4handoff.reliability.cpu_domains import (ROOT, CpuDomain, CpuSplit, Layout, layout, remove_stale,
                                                unavailable_reason, v2_weight)

needs_cgroups = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))
HERE = layout()


def allowed_cpus(pid: int) -> str:
    return Path(f"/proc/{pid}/status").read_text().split("Cpus_allowed_list:")[1].split()[0]


def groups(pid: int) -> dict[str, str]:
    """{controller: the cgroup path} of `pid`, for the cpuset and cpu controllers (v1: their hierarchies; v2: the
    one hierarchy, line `0::<path>`)."""
    out = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        hid, names, path = line.split(":", 2)
        if HERE is not None and HERE.version == 2:
            if hid == "0":
                out = {"cpuset": path, "cpu": path}
            continue
        for name in names.split(","):
            if name in ("cpuset", "cpu"):
                out[name] = path
    return out


def weight_file(group: str) -> tuple[Path, str]:
    """The weight file of group `group` here, and what `shares` 4096 reads as in it."""
    assert HERE is not None
    if HERE.version == 1:
        return ROOT / "cpu" / group / "cpu.shares", "4096"
    return ROOT / group / "cpu.weight", "400"


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
            path, expected = weight_file(f"p4h-{os.getpid()}-flood")
            assert path.read_text().strip() == expected
            split.control.add(os.getpid())
            assert allowed_cpus(os.getpid()) == str(min(split.control.cpus))
            procs.append(subprocess.Popen(["sleep", "30"]))     # forked inside: follows, and is released too
            assert allowed_cpus(procs[1].pid) == str(min(split.control.cpus))
            split.control.release(os.getpid())
            assert allowed_cpus(os.getpid()) == everywhere
        for p in procs:
            assert groups(p.pid) == {"cpuset": "/", "cpu": "/"}
            assert allowed_cpus(p.pid) == everywhere
        assert HERE is not None
        assert not any(p.name.startswith(f"p4h-{os.getpid()}-") for r in HERE.roots for p in r.iterdir())
    finally:
        for p in procs:
            p.kill()
            p.wait()


@needs_cgroups
def test_groups_of_a_killed_run_are_removed_and_live_ones_kept() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert HERE is not None
    stale = list(HERE.groups(f"p4h-{dead.pid}-flood"))
    live = HERE.roots[-1] / f"p4h-{os.getpid()}-flood"
    try:
        for d in [*stale, live]:
            d.mkdir()
        assert set(stale) <= set(remove_stale())
        assert live.exists() and not any(d.exists() for d in stale)
    finally:
        for d in [*stale, live]:
            if d.exists():
                d.rmdir()


def test_v1_shares_become_v2_weights_in_the_same_ratio() -> None:
    assert [v2_weight(s) for s in (1024, 4096, 16384, 2, 10**7)] == [100, 400, 1600, 1, 10_000]


def test_v1_is_preferred_and_v2_needs_both_controllers(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset io memory\n")
    assert layout(tmp_path) is None, "v2 without the cpu controller"
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory\n")
    assert layout(tmp_path) == Layout(2, (tmp_path,))
    for c in ("cpuset", "cpu"):
        (tmp_path / c).mkdir()
        (tmp_path / c / "cgroup.procs").write_text("")
    assert layout(tmp_path) == Layout(1, (tmp_path / "cpuset", tmp_path / "cpu"))


def test_a_v2_domain_enables_the_controllers_and_writes_cpus_and_weight(tmp_path: Path) -> None:
    """A fake v2 tree (the kernel's files as plain files): in addition to the real tests above, which run on the
    layout this machine has; this one shows what is written on the other."""
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("memory\n")
    d = CpuDomain("flood", {1}, 16384, tmp_path).create()
    group = tmp_path / f"p4h-{os.getpid()}-flood"
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpuset +cpu"
    assert (group / "cpuset.cpus").read_text() == "1" and (group / "cpu.weight").read_text() == "1600"
    d.add(4242)
    assert (group / "cgroup.procs").read_text() == "4242"
    (tmp_path / "cgroup.subtree_control").write_text("cpuset cpu memory\n")
    CpuDomain("control", {0}, 1024, tmp_path).create()
    assert (tmp_path / "cgroup.subtree_control").read_text() == "cpuset cpu memory\n", "enabled once, not again"
