"""A registration flood from one cell, and how long the other cell's registrations take meanwhile (BMv2).

The controller's testbed (topo/testbed.py: gateway, bs1, bs2, keys and TLS
on). mh1 is attached at bs1, mh2 at bs2. Authentic refreshes of mh2 at bs2
are timed (request sent to reply received) in blocks of `PER_BLOCK`,
alternately without load and while another process floods bs1's access port
with well-formed, unauthenticated registrations as fast as it can send them,
`BLOCKS` times each (the machine is shared: alternating puts its drifting
load on both sides alike). Reported: the offered flood rate
(`punt_flood_pps`), how many flood frames reached the controller (the rest
were dropped by bs1's punt budget), the p50/p99 of the timed registrations
without and under flood (goal: p99 under flood within 2x the unloaded
p99), and the CPU each process used while flooded, and softirq time per CPU.

The flooder is a process of its own, as an attacker is another host: a
thread of the measuring process (what this module used until issue 23's
second round) holds the interpreter lock the timing thread needs to take a
reply off its socket, and its switch interval (5 ms) was charged to the
victim's latency (bench/punt_flood_cost.py shows the difference).

Besides the registration flood (`punt`: the punt budget drops it), two
floods of the same frames separate what costs what (bench/punt_flood_cost.py):
`malformed` (IPv4 version 5: BMv2's parser rejects every frame, nothing is
metered or punted) and `unswitched` (onto a veth pair with no switch behind
it: the flooding process and its kernel path alone); and a `Burner`, no
packets at all, only the CPU a flood took.

Placements (`PLACEMENTS`), alternated block by block in one run: `shared`,
every process on every core as the scheduler likes (two cores shared with
whatever else runs on this machine: the flood's own cost competes with the
control plane), and `split` (p4handoff.reliability.cpu_domains): bs1 and the
flooder on their own core, the gateway, bs2, the controller and the measuring
MH on another, as in a deployment where the flooded switch and the attacker
are machines of their own. The goal is judged on `split`; `shared` is
printed beside it.
"""
from __future__ import annotations

import multiprocessing
import os
import random
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from p4handoff.controller.packets import ethernet, udp_packet
from p4handoff.controller.registration import RegistrationRequest, ReplyCode
from p4handoff.topo.testbed import CELL_IFACE, SWITCH_IP, Testbed, mh_ip
from p4handoff.wire import UDP_PORT_MIP_REGISTRATION
from p4handoff.ntptime import ntp_time
from p4handoff.reliability.cpu_domains import CpuSplit, unavailable_reason as split_unavailable

BLOCKS, PER_BLOCK = 8, 25        # 200 timed registrations without and under flood
GOAL_RATIO = 2.0
FLOODS = ("punt", "malformed", "unswitched")
PLACEMENTS = ("shared", "split")
SPLIT_SHARES = 16 * 1024         # each side's weight in `split`: 16 nice-0 tasks (p4handoff.reliability.cpu_domains)
_BATCH = 64                       # frames between a flooder's looks at the clock and the stop flag


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def flood_frames(kind: str, rng: random.Random) -> list[bytes]:
    """256 registrations for mh1's address, unsigned, fresh identifications; `malformed`: IPv4 version 5."""
    victim = mh_ip(0)                 # mh1's address: the flood is also a takeover attempt
    frames = [ethernet("ff:ff:ff:ff:ff:ff", "02:bb:00:00:00:%02x" % rng.randrange(256), udp_packet(
        victim, "255.255.255.255", UDP_PORT_MIP_REGISTRATION, UDP_PORT_MIP_REGISTRATION,
        RegistrationRequest(victim, victim, SWITCH_IP["gw"], 0xFFFF, ntp_time(time.time()) + k).encode()))
        for k in range(256)]
    if kind == "malformed":
        frames = [f[:14] + bytes([0x55]) + f[15:] for f in frames]
    return frames


def _flood(sock: socket.socket, frames: list[bytes], pps: int, stop: Any, sent: Any) -> None:
    """The flooder process's body: `frames` round robin on `sock` until `stop`; `pps` 0: as fast as it can."""
    t0, n = time.monotonic(), 0
    while not stop.value:
        for k in range(_BATCH):
            try:
                sock.send(frames[(n + k) % len(frames)])
            except OSError:          # ENOBUFS: the interface's queue is full; the frame is not sent
                continue
        n += _BATCH
        sent.value = n
        if pps:
            ahead = n / pps - (time.monotonic() - t0)
            if ahead > 0:
                time.sleep(ahead)


class Flooder:
    """A forked process flooding `sock` with `frames` (at `pps`, or as fast as it can) until `stop()`."""

    def __init__(self, sock: socket.socket, frames: list[bytes], pps: int = 0) -> None:
        ctx = multiprocessing.get_context("fork")
        self._stop, self._sent = ctx.Value("b", 0, lock=False), ctx.Value("q", 0, lock=False)
        self.proc = ctx.Process(target=_flood, args=(sock, frames, pps, self._stop, self._sent), daemon=True)

    def start(self) -> "Flooder":
        self.proc.start()
        return self

    @property
    def sent(self) -> int:
        return int(self._sent.value)

    def stop(self) -> int:
        self._stop.value = 1
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        return self.sent


def _burn(share: float, stop: Any, sent: Any) -> None:
    """The burner process's body: busy `share` of every 10 ms, asleep the rest, until `stop`."""
    while not stop.value:
        t0 = time.monotonic()
        while time.monotonic() - t0 < share * 0.01:
            pass
        time.sleep((1.0 - share) * 0.01)


class Burner(Flooder):
    """No packets at all: a process spinning `share` of one core (a flood's CPU cost without the flood)."""

    def __init__(self, share: float) -> None:
        ctx = multiprocessing.get_context("fork")
        self._stop, self._sent = ctx.Value("b", 0, lock=False), ctx.Value("q", 0, lock=False)
        self.proc = ctx.Process(target=_burn, args=(min(1.0, share), self._stop, self._sent), daemon=True)


class ThreadFlooder:
    """The same flood from a thread of this process (the measurement before issue 23's second round)."""

    def __init__(self, sock: socket.socket, frames: list[bytes]) -> None:
        self._stop = threading.Event()
        self._n = 0
        self._t = threading.Thread(target=self._run, args=(sock, frames), daemon=True)

    def _run(self, sock: socket.socket, frames: list[bytes]) -> None:
        while not self._stop.is_set():
            sock.send(frames[self._n % len(frames)])
            self._n += 1

    def start(self) -> "ThreadFlooder":
        self._t.start()
        return self

    @property
    def sent(self) -> int:
        return self._n

    def stop(self) -> int:
        self._stop.set()
        self._t.join(5)
        return self._n


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of process `pid` (all its threads) so far; 0 if it is gone."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def softirq_seconds() -> dict[str, float]:
    """Softirq time per CPU so far (`/proc/stat`): the kernel's packet path, which this kernel counts apart
    from the process it ran in."""
    hz = os.sysconf("SC_CLK_TCK")
    return {f[0]: int(f[7]) / hz for f in (line.split() for line in Path("/proc/stat").read_text().splitlines())
            if f[0].startswith("cpu") and f[0] != "cpu"}


@dataclass
class Phase:
    """One timed phase: registration and controller round trips, the flood, and the CPU used per part."""

    name: str
    registrations_ms: list[float]
    status_ms: list[float]                     # `ctl status` round trips: the controller's event loop latency
    flood_pps: int = 0
    flood_frames: int = 0
    reached_controller: int = 0
    cores: dict[str, float] = field(default_factory=dict)     # CPU seconds per wall second, per process; softirq per CPU
    tried: int = PER_BLOCK
    seconds: float = 0.0

    @staticmethod
    def merged(blocks: list["Phase"]) -> "Phase":
        """Blocks of one condition as one phase: samples pooled, rates and cores over their total time."""
        total = sum(b.seconds for b in blocks) or 1.0
        names = {k for b in blocks for k in b.cores}
        return Phase(blocks[0].name, [x for b in blocks for x in b.registrations_ms],
                     [x for b in blocks for x in b.status_ms],
                     round(sum(b.flood_frames for b in blocks) / total), sum(b.flood_frames for b in blocks),
                     sum(b.reached_controller for b in blocks),
                     {k: sum(b.cores.get(k, 0.0) * b.seconds for b in blocks) / total for k in sorted(names)},
                     sum(b.tried for b in blocks), total)

    def row(self) -> dict[str, Any]:
        reg, st = self.registrations_ms, self.status_ms
        return {"phase": self.name, "flood_pps": self.flood_pps, "flood_frames": self.flood_frames,
                "reached_controller": self.reached_controller, "answered": f"{len(reg)}/{self.tried}",
                "registration_p50_ms": round(percentile(reg, 0.5), 2) if reg else None,
                "registration_p99_ms": round(percentile(reg, 0.99), 2) if reg else None,
                "status_p50_ms": round(percentile(st, 0.5), 2) if st else None,
                "status_p99_ms": round(percentile(st, 0.99), 2) if st else None,
                "cores": {k: round(v, 2) for k, v in self.cores.items()}}


class FloodBench:
    """The testbed with mh1 at bs1 and mh2 at bs2, and timed phases of mh2's registrations at bs2."""

    def __init__(self, workdir: Path, budget: dict[str, int] | None = None, split_shares: int = SPLIT_SHARES) -> None:
        """`split_shares`: each CPU domain's cpu.shares in the `split` placement."""
        self.tb = Testbed(workdir, n_mobiles=2, punt_budget=budget)
        self._split_shares = split_shares
        self._ident = 10
        self._senders: dict[str, socket.socket] = {}
        self._split: CpuSplit | None = None

    def __enter__(self) -> "FloodBench":
        try:
            self.tb.start()
            self.tb.start_controller()
            self.tb.register(0, "bs1", 1)
            self.tb.register(1, "bs2", 1)
        except BaseException:
            self.tb.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._split is not None:
                self._split.close()
        finally:
            for sock in self._senders.values():
                sock.close()
            self.tb.close()

    def socket_for(self, kind: str) -> socket.socket:
        """A send-only socket for a flood of `kind`: onto bs1's access port, or (`unswitched`) a veth pair with
        nothing behind it. Its own, blocking, receiving nothing (protocol 0): the host port's socket has a
        timeout, which makes every send a poll(2) before the send(2)."""
        iface = "fl0" if kind == "unswitched" else CELL_IFACE["bs1"]
        if iface not in self._senders:
            if kind == "unswitched":
                self.tb.sandbox.veth(self.tb.mh_ns, self.tb.mh_ns, "10.99.0.1/30", "10.99.0.2/30",
                                     dev_a="fl0", dev_b="fl1")
            sock = self.tb.mh_ns.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            sock.bind((iface, 0))
            self._senders[iface] = sock
        return self._senders[iface]

    def place(self, placement: str, flooder_pid: int | None = None) -> None:
        """Put the processes where `placement` says: `shared` (the root groups: any core), or `split`: bs1
        and the flooder in one CPU domain, the gateway, bs2, the controller and this (the measuring MH)
        in another (p4handoff.reliability.cpu_domains)."""
        if placement not in PLACEMENTS:
            raise ValueError(f"placement {placement!r}: not one of {', '.join(PLACEMENTS)}")
        control = [p for p in (self.tb.switches["gw"].pid, self.tb.switches["bs2"].pid, self._pids()["controller"],
                               os.getpid()) if p is not None]
        flood = [p for p in (self.tb.switches["bs1"].pid, flooder_pid) if p is not None]
        if placement == "shared":
            if self._split is not None:
                for pid in control:
                    self._split.control.release(pid)
                for pid in flood:
                    self._split.flood.release(pid)
            return
        if self._split is None:
            why = split_unavailable()
            if why is not None:
                raise RuntimeError(f"placement split: {why}")
            self._split = CpuSplit(self._split_shares).__enter__()
        for pid in control:
            self._split.control.add(pid)
        for pid in flood:
            self._split.flood.add(pid)

    def next_ident(self) -> int:
        """A new identification for mh2's next refresh (the testbed turns it into a fresh timestamp)."""
        self._ident += 1
        return self._ident

    def _pids(self) -> dict[str, int | None]:
        pids = {name: sw.pid for name, sw in self.tb.switches.items()}
        pids["controller"] = self.tb.controller.pid if self.tb.controller is not None else None
        return pids

    def _unauthenticated(self) -> int:
        return sum(self.tb.ctl({"cmd": "status", "counters": False})["registrations_unauthenticated"].values())

    def paired(self, name: str, flooder: Callable[[], Flooder | ThreadFlooder], blocks: int = BLOCKS,
               per_block: int = PER_BLOCK, placements: tuple[str, ...] = ("shared",)) -> dict[str, tuple[Phase, Phase]]:
        """{placement: (without flood, under `flooder`)}: `blocks` alternations, each timing `per_block`
        registrations without and then with the flood in every placement in turn."""
        got: dict[str, tuple[list[Phase], list[Phase]]] = {p: ([], []) for p in placements}
        for _ in range(blocks):
            for placement, (base, loaded) in got.items():
                base.append(self.phase("unloaded", None, per_block, placement))
                loaded.append(self.phase(name, flooder, per_block, placement))
        return {p: (Phase.merged(base), Phase.merged(loaded)) for p, (base, loaded) in got.items()}

    def phase(self, name: str, flooder: Callable[[], Flooder | ThreadFlooder] | None = None,
              registrations: int = PER_BLOCK, placement: str = "shared") -> Phase:
        """Time `registrations` refreshes of mh2 at bs2 (and a `ctl status` after each), with `flooder` running,
        the processes placed as `placement` says."""
        self.place(placement)
        before = self._unauthenticated()
        pids = self._pids()
        flood = flooder().start() if flooder is not None else None
        if isinstance(flood, Flooder):
            pids["flooder"] = flood.proc.pid
            self.place(placement, flood.proc.pid)
        time.sleep(0.5 if flood is not None else 0.0)
        cpu0 = {k: cpu_seconds(p) for k, p in pids.items()}
        soft0 = softirq_seconds()
        cpu0["measurer"] = time.process_time()
        t0, sent0 = time.monotonic(), flood.sent if flood is not None else 0
        regs: list[float] = []
        status: list[float] = []
        for _ in range(registrations):
            start = time.monotonic()
            reply = self.tb.register(1, "bs2", self.next_ident(), wait_reply=2.0)
            if reply is not None and reply.code is ReplyCode.ACCEPTED:
                regs.append((time.monotonic() - start) * 1000)
            start = time.monotonic()
            self.tb.ctl({"cmd": "status", "counters": False})
            status.append((time.monotonic() - start) * 1000)
            time.sleep(0.02)
        elapsed = time.monotonic() - t0
        cores = {k: (cpu_seconds(p) - cpu0[k]) / elapsed for k, p in pids.items()}
        cores["measurer"] = (time.process_time() - cpu0["measurer"]) / elapsed
        cores.update({f"softirq_{cpu}": (t - soft0.get(cpu, 0.0)) / elapsed for cpu, t in softirq_seconds().items()})
        sent = (flood.sent - sent0) if flood is not None else 0
        if flood is not None:
            flood.stop()
            time.sleep(1.0)          # the last punts reach the controller before it is asked
        return Phase(name, regs, status, round(sent / elapsed), sent, self._unauthenticated() - before, cores,
                     registrations, elapsed)


def flood_figures(unloaded: Phase, loaded: Phase, suffix: str = "") -> dict[str, Any]:
    """One placement's figures, each name ending in `suffix`; `registration_p99_ratio`: under flood / unloaded."""
    p99_0 = percentile(unloaded.registrations_ms, 0.99)
    p99_1 = percentile(loaded.registrations_ms, 0.99) if loaded.registrations_ms else float("inf")
    figures = {"punt_flood_pps": loaded.flood_pps, "punt_flood_frames": loaded.flood_frames,
               "punt_flood_reached_controller": loaded.reached_controller,
               "registration_p50_ms_unloaded": round(percentile(unloaded.registrations_ms, 0.5), 2),
               "registration_p99_ms_unloaded": round(p99_0, 2),
               "registration_p50_ms_under_flood": round(percentile(loaded.registrations_ms, 0.5), 2)
               if loaded.registrations_ms else None,
               "registration_p99_ms_under_flood": round(p99_1, 2),
               "registration_p99_ratio": round(p99_1 / p99_0, 2),
               "registrations_answered_under_flood": f"{len(loaded.registrations_ms)}/{loaded.tried}",
               "punt_flood_cores": loaded.row()["cores"]}
    return {f"{k}{suffix}": v for k, v in figures.items()}


def goal_met(figures: dict[str, Any]) -> bool:
    """Every timed registration answered under flood, and its p99 within `GOAL_RATIO` of the unloaded p99."""
    answered, tried = figures["registrations_answered_under_flood"].split("/")
    return answered == tried and figures["registration_p99_ms_under_flood"] <= \
        GOAL_RATIO * figures["registration_p99_ms_unloaded"]


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, as `uptime` prints them."""
    return ", ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure_flood(seed: int, budget: dict[str, int] | None = None) -> dict[str, Any]:
    """`make security`'s flood figures, both placements alternated in one run: `split` (the goal's, no suffix)
    and `shared` (suffix `_shared_cores`). `budget`: the description's punt_budget (None: its default)."""
    why = split_unavailable()
    load0 = load_average()
    with tempfile.TemporaryDirectory(prefix="p4h-flood-") as tmp, FloodBench(Path(tmp), budget) as bench:
        frames = flood_frames("punt", random.Random(seed))
        phases = bench.paired("punt", lambda: Flooder(bench.socket_for("punt"), frames),
                              placements=PLACEMENTS if why is None else ("shared",))
    out: dict[str, Any] = {"punt_flood_load_average": f"{load0} at start, {load_average()} at end"}
    if why is None:
        out.update(flood_figures(*phases["split"]))
        out["registration_p99_goal_met"] = goal_met(out)
    else:
        out.update({k: f"not measured ({why})" for k in flood_figures(*phases["shared"])})
        out["registration_p99_goal_met"] = f"not measured ({why})"
    out.update(flood_figures(*phases["shared"], suffix="_shared_cores"))
    return out
