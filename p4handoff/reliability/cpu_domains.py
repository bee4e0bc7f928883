"""CPU domains for a measurement: processes pinned to their own cores (cpuset) at a chosen weight (cpu).

Why: the punt-flood figure asks whether a flood on one switch's port delays
registrations at the other switches and the controller. In a deployment the
flooded switch and the attacker run on hardware of their own; in the testbed
every process shares this machine's cores, so the flood's own cost (the
flooder, the kernel's veth path, the flooded BMv2) competes with the control
plane for CPU and the figure measures that contention. Two domains, one per
side, each with its own cores, make the only cost left on the control side
what crosses over from the flood: punts that pass the meter, and replies.

Both cgroup layouts: v1 (`/sys/fs/cgroup/cpuset` and `/sys/fs/cgroup/cpu`,
one hierarchy per controller; weight `cpu.shares`) and v2 (one hierarchy with
the `cpuset` and `cpu` controllers, as Debian 12 mounts it by default; weight
`cpu.weight`, 100 where v1 has 1,024). A domain's groups are named
`p4h-<pid>-<name>`; `close()` moves every process back to the root group and
removes them; a run killed before that leaves them empty, and the next one
removes them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("cpuset", "cpu")
V1_DEFAULT_SHARES = 1024   # a nice-0 task's weight in v1 ...
V2_DEFAULT_WEIGHT = 100    # ... and in v2
V2_WEIGHT_MAX = 10_000


@dataclass(frozen=True)
class Layout:
    """Where the cpuset and cpu controllers are: `roots` are the root groups a process is moved into and out of."""

    version: int
    roots: tuple[Path, ...]

    def groups(self, name: str) -> tuple[Path, ...]:
        return tuple(r / name for r in self.roots)


def layout(root: Path = ROOT) -> Layout | None:
    """The cgroup layout offering both controllers under `root` (v1 first, as a hybrid machine binds them there)."""
    if all((root / c / "cgroup.procs").exists() for c in CONTROLLERS):
        return Layout(1, tuple(root / c for c in CONTROLLERS))
    controllers = root / "cgroup.controllers"
    if controllers.exists() and set(CONTROLLERS) <= set(controllers.read_text().split()):
        return Layout(2, (root,))
    return None


def v2_weight(shares: int) -> int:
    """v1's `cpu.shares` as v2's `cpu.weight` (same ratio to a nice-0 task), within the kernel's 1..10,000."""
    return max(1, min(V2_WEIGHT_MAX, round(shares * V2_DEFAULT_WEIGHT / V1_DEFAULT_SHARES)))


def unavailable_reason(root: Path = ROOT) -> str | None:
    """Why CPU domains cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "CPU domains need root (cgroup writes)"
    if layout(root) is None:
        missing = [c for c in CONTROLLERS if not (root / c / "cgroup.procs").exists()]
        return (f"no cgroup v1 {' and '.join(missing)} hierarchy under {root}, and no cgroup v2 there with the "
                f"{' and '.join(CONTROLLERS)} controllers")
    if len(os.sched_getaffinity(0)) < 2:
        return "fewer than 2 CPUs: nothing to split"
    return None


def remove_stale(root: Path = ROOT) -> list[Path]:
    """Remove the empty `p4h-<pid>-*` groups of processes that are gone (a run killed before `close()`)."""
    found = layout(root)
    removed: list[Path] = []
    for r in found.roots if found else ():
        for d in sorted(r.glob("p4h-*-*")):
            pid = d.name.split("-")[1]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists() and not (d / "cgroup.procs").read_text().split():
                d.rmdir()
                removed.append(d)
    return removed


class CpuDomain:
    """A cpuset (the cores its processes may run on) and a cpu weight against the rest of the machine."""

    def __init__(self, name: str, cpus: set[int], shares: int, root: Path = ROOT) -> None:
        if not cpus:
            raise ValueError(f"CPU domain {name}: no CPUs")
        if shares < 2:
            raise ValueError(f"CPU domain {name}: cpu.shares {shares} is below the kernel's minimum of 2")
        self.name, self.cpus, self.shares = name, set(cpus), shares
        found = layout(root)
        if found is None:
            raise OSError(unavailable_reason(root) or f"no cgroup layout under {root}")
        self.layout = found
        self._dirs = found.groups(f"p4h-{os.getpid()}-{name}")

    def create(self) -> "CpuDomain":
        cpus = ",".join(str(c) for c in sorted(self.cpus))
        if self.layout.version == 1:
            cpuset, cpu = self._dirs
            cpuset.mkdir(exist_ok=True)
            cpu.mkdir(exist_ok=True)
            (cpuset / "cpuset.cpus").write_text(cpus)
            (cpuset / "cpuset.mems").write_text((self.layout.roots[0] / "cpuset.mems").read_text().strip())
            (cpu / "cpu.shares").write_text(str(self.shares))
        else:
            root, (group,) = self.layout.roots[0], self._dirs
            enabled = set((root / "cgroup.subtree_control").read_text().split())
            todo = [c for c in CONTROLLERS if c not in enabled]
            if todo:   # the root group may hold processes whatever its children's controllers
                try:
                    (root / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in todo))
                except OSError as exc:
                    raise OSError(f"cannot enable {' and '.join(todo)} for the children of {root} ({exc}); cgroup "
                                  "v2 refuses the cpu controller while a realtime process is outside the root "
                                  "group") from exc
            group.mkdir(exist_ok=True)
            (group / "cpuset.cpus").write_text(cpus)
            (group / "cpu.weight").write_text(str(v2_weight(self.shares)))
        return self

    def add(self, pid: int) -> None:
        """Move process `pid` (every thread of it; threads it starts later follow) into this domain."""
        for d in self._dirs:
            (d / "cgroup.procs").write_text(str(pid))

    def release(self, pid: int) -> None:
        """Move `pid` back to the root group(s) (no-op if it has exited)."""
        for r in self.layout.roots:
            try:
                (r / "cgroup.procs").write_text(str(pid))
            except ProcessLookupError:
                break

    def close(self) -> None:
        """Every process still inside (members, and children they forked inside) back to the root; groups removed."""
        for d in self._dirs:
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
        self.root = root
        self.control = CpuDomain("control", {cpus[0]}, shares, root)
        self.flood = CpuDomain("flood", set(cpus[1:]), shares, root)

    def __enter__(self) -> "CpuSplit":
        remove_stale(self.root)
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
