"""CPU domains for a measurement: processes pinned to their own cores (cgroup v1 cpuset) at a chosen weight (cpu).

Why: the punt-flood figure asks whether a flood on one switch's port delays
registrations at the other switches and the controller. In a deployment the
flooded switch and the attacker run on hardware of their own; in the testbed
every process shares this machine's cores, so the flood's own cost (the
flooder, the kernel's veth path, the flooded BMv2) competes with the control
plane for CPU and the figure measures that contention. Two domains, one per
side, each with its own cores, make the only cost left on the control side
what crosses over from the flood: punts that pass the meter, and replies.

cgroup v1 (`/sys/fs/cgroup/cpuset` and `/sys/fs/cgroup/cpu`), as this
machine's kernel offers it. A domain's groups are named `p4h-<pid>-<name>`;
`close()` moves every process back to the root groups and removes them; a
run killed before that leaves them empty, and the next one removes them.
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("cpuset", "cpu")


def unavailable_reason(root: Path = ROOT) -> str | None:
    """Why CPU domains cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "CPU domains need root (cgroup writes)"
    missing = [c for c in CONTROLLERS if not (root / c / "cgroup.procs").exists()]
    if missing:
        return f"no cgroup v1 {' and '.join(missing)} hierarchy under {root} (this kernel mounts cgroup v2 only?)"
    if len(os.sched_getaffinity(0)) < 2:
        return "fewer than 2 CPUs: nothing to split"
    return None


def remove_stale(root: Path = ROOT) -> list[Path]:
    """Remove the empty `p4h-<pid>-*` groups of processes that are gone (a run killed before `close()`)."""
    removed = []
    for c in CONTROLLERS:
        for d in sorted((root / c).glob("p4h-*-*")):
            pid = d.name.split("-")[1]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists() and not (d / "cgroup.procs").read_text().split():
                d.rmdir()
                removed.append(d)
    return removed


class CpuDomain:
    """A cpuset (the cores its processes may run on) and a cpu group (their weight against the rest)."""

    def __init__(self, name: str, cpus: set[int], shares: int, root: Path = ROOT) -> None:
        if not cpus:
            raise ValueError(f"CPU domain {name}: no CPUs")
        if shares < 2:
            raise ValueError(f"CPU domain {name}: cpu.shares {shares} is below the kernel's minimum of 2")
        self.name, self.cpus, self.shares = name, set(cpus), shares
        self.root = root
        self._dirs = {c: root / c / f"p4h-{os.getpid()}-{name}" for c in CONTROLLERS}

    def create(self) -> "CpuDomain":
        cpuset, cpu = self._dirs["cpuset"], self._dirs["cpu"]
        cpuset.mkdir(exist_ok=True)
        cpu.mkdir(exist_ok=True)
        (cpuset / "cpuset.cpus").write_text(",".join(str(c) for c in sorted(self.cpus)))
        (cpuset / "cpuset.mems").write_text((self.root / "cpuset" / "cpuset.mems").read_text().strip())
        (cpu / "cpu.shares").write_text(str(self.shares))
        return self

    def add(self, pid: int) -> None:
        """Move process `pid` (every thread of it; threads it starts later follow) into this domain."""
        for d in self._dirs.values():
            (d / "cgroup.procs").write_text(str(pid))

    def release(self, pid: int) -> None:
        """Move `pid` back to the root groups (no-op if it has exited)."""
        for c in CONTROLLERS:
            try:
                (self.root / c / "cgroup.procs").write_text(str(pid))
            except ProcessLookupError:
                break

    def close(self) -> None:
        """Every process still inside (members, and children they forked inside) back to the root; groups removed."""
        for d in self._dirs.values():
            if d.exists():
                for pid in (d / "cgroup.procs").read_text().split():
                    self.release(int(pid))
                d.rmdir()


class CpuSplit:
    """Two domains on disjoint cores: `control` (CPU 0) and `flood` (the others); both at `shares`.

    `shares` well above a nice-0 task's 1,024 makes the machine's other work
    (other users, a compiler) yield to each side as it would not be there on
    the deployment's hardware, and stops the scheduler's balancing from
    moving that work onto the control side's core only while the flood's core
    is busy (which would charge the flood for it).
    """

    def __init__(self, shares: int, root: Path = ROOT) -> None:
        cpus = sorted(os.sched_getaffinity(0))
        self.control = CpuDomain("control", {cpus[0]}, shares, root)
        self.flood = CpuDomain("flood", set(cpus[1:]), shares, root)

    def __enter__(self) -> "CpuSplit":
        remove_stale(self.control.root)
        try:
            self.control.create()
            self.flood.create()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for d in (self.flood, self.control):
            d.close()
