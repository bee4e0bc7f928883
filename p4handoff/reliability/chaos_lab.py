"""`make chaos` in the Mininet lab: a scenario run with one element killed -9 and restarted (p4handoff/reliability/chaos.py).

The scenario (default traces/chaos-wlan-to-3g.yaml) runs as `p4handoff run
--backend lab` runs it (`p4handoff.lab.mininet.backend.LabRun`: BMv2 switches, the
controller, the host TCP endpoints, the link emulators), with a fault
schedule of one `p4handoff.lab.mininet.faults.Fault`. The instants come from the moving
MH's first handoff: *before* = 4 s before it leaves its cell, *during* =
midway through its outage (its old BS is diverting its packets into the
controller's buffer), *after* = 3.5 s after its registration at the new BS.

Measured per run, beside the TCP flows (bytes retransmitted, longest stall,
bytes delivered; `p4handoff.reliability.chaos_runs.FlowLoss`): sequence-numbered UDP probes from
the correspondent to every host in a cell (`PROBE_RATE` per second each,
64-byte payloads), whose losses are exact. **Recovery** of a switch =
restart → arrival of the first probe sent after the restart through it (to
a host that does not move, if one is behind it; the probe rate bounds the
resolution: 1/(rate × such hosts)); of the controller = restart → serving
with every switch up. After the run the hosts get `SETTLE_TIMEOUT` to be
where they last registered (repeating a registration nobody answered, as a
Mobile IP MH does) with empty buffers; then every switch's entries are read.
"""
from __future__ import annotations

import contextlib
import fcntl
import math
import selectors
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from p4handoff.reliability.chaos_runs import FaultRun, FlowLoss
from p4handoff.lab.mininet.faults import CONTROLLER, Fault, register_again
from p4handoff.topo.rig import LabRig
from p4handoff.lab.rundata import FlowData
from p4handoff.scenario.loader import Scenario, load

PROBE_PORT = 7001
PROBE_RATE = 10.0          # datagrams/s to each host: 10 of the 3G cell's 46 packets/s per host there
PROBE_PAYLOAD = 64         # bytes, the first 4 the sequence number
PROBE_DRAIN = 3.0          # seconds to wait for probes still queued (the 3G cell: up to 100 packets at 46/s)
SETTLE_TIMEOUT = 30.0
REGISTER_AGAIN_EVERY = 2.0
BEFORE, AFTER = 4.0, 3.5   # seconds before the MH leaves its cell / after it registers at the new one


class UdpProbes:
    """Sequence-numbered UDP datagrams from `src` to each of `dsts`, `rate` per second each, on two threads."""

    def __init__(self, rig: LabRig, src: str, dsts: list[str], rate: float = PROBE_RATE) -> None:
        self.rate = rate
        self.dsts = dsts
        self.addr = {d: rig.plan.hosts[d].address for d in dsts}
        self.sent: dict[str, list[float]] = {d: [] for d in dsts}                # send instant of each seq
        self.arrivals: dict[str, list[tuple[float, int]]] = {d: [] for d in dsts}  # (arrival, seq)
        self._tx = rig.ns[src].socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._rx: dict[socket.socket, str] = {}
        for d in dsts:
            s = rig.ns[d].socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("0.0.0.0", PROBE_PORT))
            s.setblocking(False)
            self._rx[s] = d
        self._stop_tx, self._stop_rx = threading.Event(), threading.Event()
        self._closed = False
        self._threads = [threading.Thread(target=self._send, daemon=True),
                         threading.Thread(target=self._receive, daemon=True)]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def _send(self) -> None:
        start, k = time.monotonic(), 0
        while not self._stop_tx.is_set():
            payload = k.to_bytes(4, "big") + bytes(PROBE_PAYLOAD - 4)
            for d in self.dsts:
                try:
                    self._tx.sendto(payload, (self.addr[d], PROBE_PORT))
                except OSError:      # no route / neighbour while the gateway is down: sent and lost
                    pass
                self.sent[d].append(time.monotonic())
            k += 1
            self._stop_tx.wait(max(0.0, start + k / self.rate - time.monotonic()))

    def _receive(self) -> None:
        with selectors.DefaultSelector() as sel:
            for s in self._rx:
                sel.register(s, selectors.EVENT_READ)
            while not self._stop_rx.is_set():
                for key, _ in sel.select(0.1):
                    now = time.monotonic()
                    sock: socket.socket = key.fileobj  # type: ignore[assignment]
                    while True:
                        try:
                            data = sock.recv(2048)
                        except BlockingIOError:
                            break
                        if len(data) >= 4:
                            self.arrivals[self._rx[sock]].append((now, int.from_bytes(data[:4], "big")))

    def stop_sending(self) -> None:
        self._stop_tx.set()
        self._threads[0].join(5)

    def stop(self) -> None:
        """Stop sending, wait `PROBE_DRAIN` for what is queued, stop receiving, close the sockets (once)."""
        if self._closed:
            return
        self._closed = True
        self.stop_sending()
        time.sleep(PROBE_DRAIN)
        self._stop_rx.set()
        self._threads[1].join(5)
        for s in (self._tx, *self._rx):
            s.close()

    def lost(self, d: str) -> list[int]:
        """The sequence numbers sent to `d` and never received."""
        got = {seq for _, seq in self.arrivals[d]}
        return [seq for seq in range(len(self.sent[d])) if seq not in got]

    def first_sent_after(self, dsts: list[str], t: float) -> float | None:
        """Arrival of the first datagram to any of `dsts` sent at or after `t` (None if none arrived)."""
        got = [at for d in dsts for at, seq in self.arrivals[d] if seq < len(self.sent[d]) and self.sent[d][seq] >= t]
        return min(got) if got else None


def tcp_stall(fd: FlowData, end: float) -> float:
    """The longest time without delivery progress, from the first delivery to `end` (the flow's end)."""
    points = [t for t in fd.ack_times if t <= end] + [end]
    return max((b - a for a, b in zip(points, points[1:])), default=end)


class LabChaos:
    """The Mininet lab as a chaos `Mode` (p4handoff/reliability/chaos.py) for one scenario."""

    def __init__(self, scenario: Path, lock: Path | None = None,
                 overrides: tuple[tuple[str, Any], ...] = ()) -> None:
        sf = load(scenario, overrides)
        self.scn: Scenario = sf.resolve(sf.variants[0], sf.points()[0])
        self.lock = lock
        ops = self.scn.mobility
        leave = next((op for op in ops if op.op == "detach"), None)
        if leave is None:
            raise ValueError(f"{scenario}: no MH leaves a cell, so there is no handoff to put faults around")
        arrive = next(op for op in ops if op.op == "handoff" and op.mh == leave.mh and op.at >= leave.at)
        self.mover = leave.mh
        self.at = {"before": leave.at - BEFORE, "during": (leave.at + arrive.at) / 2, "after": arrive.at + AFTER}
        if self.at["before"] < 1.0 or self.at["after"] > self.scn.duration - 5.0:
            raise ValueError(f"{scenario}: the handoff at {leave.at:g}-{arrive.at:g} s leaves no room for faults "
                             f"{BEFORE:g} s before and {AFTER:g} s after it (and 5 s to recover) in "
                             f"{self.scn.duration:g} s")
        from p4handoff.topo.plan import plan
        self.plan = plan(self.scn)
        start = next(m.start for m in self.scn.topology.mobile_hosts if m.name == self.mover)
        self.old_bs = self.plan.cell_ports[start[1]][0] if start else self.plan.switches[1].name

    def targets(self) -> list[str]:
        return [self.old_bs, self.plan.switches[0].name, CONTROLLER]

    def elements(self) -> list[str]:
        return [s.name for s in self.plan.switches] + [CONTROLLER]

    def instants(self) -> list[str]:
        return list(self.at)

    def path(self, host: str) -> list[str]:
        """The switches `host`'s packets cross (a host in a cell: the gateway and every BS it is ever at)."""
        bss = {self.plan.cell_ports[k.split("/", 1)[1]][0] for k in self.plan.hosts[host].devices
               if self.plan.hosts[host].kind != "fixed"}
        return [self.plan.switches[0].name, *sorted(bss)]

    def moving(self, host: str) -> bool:
        return any(op.mh == host for op in self.scn.mobility)

    @contextlib.contextmanager
    def _held(self) -> Iterator[None]:
        if self.lock is None:
            yield
            return
        with open(self.lock, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            yield

    def one_run(self, workdir: Path, target: str | None, instant: str | None) -> tuple[FaultRun, dict[str, Any]]:
        from p4handoff.lab.mininet.backend import LabRun
        workdir.mkdir(parents=True, exist_ok=True)
        faults = [Fault(target, self.at[instant or "during"])] if target else []
        res = FaultRun(target, instant)
        with self._held():
            run = LabRun(self.scn, self.scn.seed, workdir, faults)
            probes: UdpProbes | None = None
            try:
                run.start()
                src = next(n for n, h in self.plan.hosts.items() if h.kind == "fixed")
                probes = UdpProbes(run.rig, src, sorted(n for n, h in self.plan.hosts.items() if h.kind != "fixed"))
                probes.start()
                data = run.run(lambda _t: None)
                probes.stop_sending()
                res.handoff_complete, status, again = self._settle(run.rig)
                probes.stop()
                entries = {s.name: run.rig.request({"cmd": "entries", "switch": s.name})["entries"]
                           for s in self.plan.switches}
            finally:
                if probes is not None:
                    probes.stop()
                run.close()
        for f in self.scn.flows:
            fd = data.flows[f.name]
            if fd.retransmits is None:
                raise RuntimeError(f"flow {f.name}: the sender reported no retransmission count ({data.notes})")
            end = f.stop if f.stop is not None else self.scn.duration
            res.flows.append(FlowLoss(f.name, "tcp", self.moving(f.dst) or self.moving(f.src),
                                      list(dict.fromkeys(self.path(f.src) + self.path(f.dst))),
                                      fd.retransmits * f.tcp.packet_size, round(tcp_stall(fd, end), 3),
                                      fd.ack_bytes[-1] if fd.ack_bytes else 0))
        for d in probes.dsts:
            res.flows.append(FlowLoss(f"udp:{d}", "udp", self.moving(d), self.path(d),
                                      len(probes.lost(d)) * PROBE_PAYLOAD))
        res.details = {"probe_rate": probes.rate, "probes_sent": {d: len(v) for d, v in probes.sent.items()},
                       "probes_lost_sent_at": {d: [round(run.clock.at_monotonic(probes.sent[d][seq]), 3) for seq in probes.lost(d)]
                                               for d in probes.dsts},
                       "registered_again_after_run": again, "buffer_total": status.get("buffer_total"),
                       "notes": data.notes}
        if run.fault_log:
            rec = run.fault_log[0]
            res.details["fault"] = {"at": rec.at, "kill_to_start_ms": round((rec.restarted - rec.killed) * 1000, 1),
                                    "start_to_serving_ms": round((rec.serving - rec.restarted) * 1000, 1),
                                    "registered_again": rec.registered_again}
            if rec.target == CONTROLLER:
                res.recovery_ms = (rec.serving - rec.restarted) * 1000
            else:
                behind = [d for d in probes.dsts if rec.target in self.path(d)]
                first = probes.first_sent_after([d for d in behind if not self.moving(d)] or behind, rec.restarted)
                res.recovery_ms = (first - rec.restarted) * 1000 if first is not None else math.inf
        return res, entries

    def _settle(self, rig: LabRig) -> tuple[bool, dict[str, Any], list[str]]:
        """Wait until every host is attached where it last registered, nothing held or buffered, every
        switch up; a host nobody answered registers again every `REGISTER_AGAIN_EVERY` s."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        again_at = time.monotonic() + REGISTER_AGAIN_EVERY
        again: list[str] = []
        while True:
            st = rig.request({"cmd": "status", "counters": False})
            where = {m["mh"]: m for m in st["mobile_hosts"]}
            done = st["buffer_total"] == 0 and all(s["state"] == "up" for s in st["switches"]) and all(
                where[h]["bs"] == rig.plan.bs_of_device(h, dev) and where[h]["phase"] == "attached"
                and not where[h]["holds"] for h, dev in rig.registered.items())
            if done or time.monotonic() > deadline:
                return done, st, again
            if time.monotonic() > again_at:
                again += register_again(rig)
                again_at += REGISTER_AGAIN_EVERY
            time.sleep(0.2)
