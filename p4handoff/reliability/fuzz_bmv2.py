"""`make fuzz`: fuzzed frames into every port role of one BS on BMv2, every frame accounted for.

One simple_switch_grpc running p4src/v1model/bs.p4 as base station bs1 of a small
description (access port 1 with M-RED, peer ports 2 → gw and 3 → bs2, core
port 4 with a fixed host; one MH delivered, one buffering (punted), one
tunnelled priority-marked to bs2), programmed by the controller's own
Programmer. Frames (p4handoff/reliability/fuzz_frames.py) go in batches into one port role at
a time: access, peer, core, and the CPU port as packet-outs (direct, lookup,
priority mark, telemetry). After each batch, once the switch is quiet:

- **accounted**: frames sent = frames out of the data ports + packet-ins +
  Δ`malformed` + Δ`fwd_dropped` + Δ AQM drops (red, overflow, dummy), and
  packet-ins = Δ`punted` (docs/pipeline.md, "Counters");
- **no wrong port**: every frame out of port X is one the tables send to X
  (LPM on its effective destination: the inner one of our own tunnel), an ARP
  reply out of the port the request came in on, or a direct packet-out to X;
  and from access/core ports no priority mark leaves except on our tunnel
  with mark = 1;
- **alive**: the process runs and answers P4Runtime (reads back its entries);
- **drained**: every `occupancy` register cell is 0 (read over Thrift).

Prints `fuzz_seed`, `fuzz_frames`, `fuzz_unaccounted`, `fuzz_switch_failures`,
`fuzz_wrong_port`, `fuzz_occupancy_nonzero`. Needs root (namespaces) and BMv2.
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import random
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p4handoff.controller.intents import Deliver, Punt, Tunnel
from p4handoff.controller.network import Network, Switch, parse_network
from p4handoff.controller.p4runtime import P4RuntimeClient, P4RuntimeError, TableEntry
from p4handoff.controller.p4runtime._protos import p4runtime_pb2
from p4handoff.controller.p4runtime.entities import counter_entry
from p4handoff.controller.programmer import Programmer
from p4handoff.topo.testbed import HostPort
from p4handoff.argtypes import whole_number
from p4handoff.bmv2 import Bmv2Switch, veth_port
from p4handoff.netns import Sandbox
from p4handoff.paths import build_dir, pipeline_files
from p4handoff.wire import DSCP_IPF_PRIORITY_DEFAULT, IP_PROTO_IPIP, load_constants
from p4handoff.reliability.fuzz_frames import Addressing, Fuzzed, generate

_C = load_constants()
CPU_PORT, STRIDE, AQM_STRIDE = _C["CPU_PORT"], _C["REASON_STRIDE"], _C["AQM_CLASS_STRIDE"]
QUEUE_DEPTH = 4096
ROLES = (("access", 1), ("peer", 3), ("core", 4), ("cpu", CPU_PORT))
DATA_PORTS = (1, 2, 3, 4)
QUIET_S = 0.6          # a batch is over when nothing moved for this long
BATCH_TIMEOUT_S = 60.0

MH = {"delivered": ("10.0.1.1", "02:aa:00:00:00:01"), "buffering": ("10.0.1.2", "02:aa:00:00:00:02"),
      "tunnelled": ("10.0.1.3", "02:aa:00:00:00:03")}


def description() -> dict[str, Any]:
    aqm = {"mode": "mred", "limit": 256, "min_th": 64, "max_th": 192, "max_p": 0.1, "w_q": 0.001953125}
    def sw(name: str, role: str, addr: str, mac: str, ports: list[dict], **kw: Any) -> dict[str, Any]:
        # only bs1 runs; the others exist so its peer ports have a far end
        return {"name": name, "role": role, "grpc": f"127.0.0.1:{50050 + int(addr[-1])}", "device_id": 0,
                "address": addr, "mac": mac, "ports": ports, **kw}
    return {
        "controller": {"auth": "none"},      # no controller runs: the fuzzer programs bs1 itself (Programmer)
        "access_gateway": {"address": "10.0.1.254", "mac": "02:00:00:00:01:fe"},
        "switches": [
            sw("gw", "gateway", "192.168.100.1", "02:00:00:00:00:01",
               [{"number": 2, "role": "peer", "peer": "bs1"}, {"number": 3, "role": "peer", "peer": "bs2"}]),
            sw("bs1", "bs", "192.168.100.2", "02:00:00:00:00:02",
               [{"number": 1, "role": "access", "aqm": aqm}, {"number": 2, "role": "peer", "peer": "gw"},
                {"number": 3, "role": "peer", "peer": "bs2"}, {"number": 4, "role": "core"}], cell_id=1),
            sw("bs2", "bs", "192.168.100.3", "02:00:00:00:00:03",
               [{"number": 1, "role": "access"}, {"number": 2, "role": "peer", "peer": "gw"},
                {"number": 3, "role": "peer", "peer": "bs1"}], cell_id=2),
        ],
        "fixed_hosts": [{"name": "srv", "address": "10.0.5.1", "mac": "02:00:00:00:10:05", "switch": "bs1",
                         "port": 4}],
        "mobile_hosts": [{"name": f"mh{i + 1}", "address": a, "mac": m, "correspondents": ["srv"]}
                         for i, (a, m) in enumerate(MH.values())],
    }


@dataclass
class Batch:
    role: str
    port: int
    sent: int = 0
    refused: int = 0                   # the kernel would not send it (shorter than an Ethernet header)
    out: dict[int, int] = field(default_factory=dict)
    packet_ins: int = 0
    counted: dict[str, int] = field(default_factory=dict)
    wrong_port: list[str] = field(default_factory=list)

    @property
    def accounted(self) -> int:
        return sum(self.out.values()) + self.packet_ins + self.counted.get("malformed", 0) \
            + self.counted.get("fwd_dropped", 0) + self.counted.get("aqm_dropped", 0)

    @property
    def unaccounted(self) -> int:
        return abs(self.sent - self.accounted) + abs(self.packet_ins - self.counted.get("punted", 0))


def routes_of(entries: list[TableEntry]) -> dict[str, tuple[str, int | None, int]]:
    """`ipv4_fwd` entries as prefix -> (action, port, mark): what the oracle checks outputs against."""
    out: dict[str, tuple[str, int | None, int]] = {}
    for e in entries:
        if e.table != "ipv4_fwd":
            continue
        key = e.match.get("dst_addr")
        prefix = f"{ipaddress.IPv4Address(key[0])}/{key[1]}" if key else "0.0.0.0/0"
        if e.action is None:
            raise ValueError(f"ipv4_fwd entry for {prefix} has no action")
        out[prefix] = (e.action, e.params.get("port"), e.params.get("mark", 0))
    return out


@dataclass
class Oracle:
    """Which data port a frame may leave on, given the switch's routes (independent of the switch)."""

    routes: dict[str, tuple[str, int | None, int]]
    switch_addr: str

    def expected_port(self, dst: str) -> int | None:
        """Where the tables send `dst` (LPM); None if they punt or drop it."""
        addr = ipaddress.IPv4Address(dst)
        best = max((ipaddress.IPv4Network(p) for p in self.routes if addr in ipaddress.IPv4Network(p)),
                   key=lambda n: n.prefixlen, default=None)
        if best is None:
            return None
        action, port, _ = self.routes[str(best)]
        return port if action in ("deliver", "tunnel") else None

    def check(self, role: str, in_port: int, direct_ports: set[int], port: int, frame: bytes) -> str | None:
        """Why `frame`, seen leaving on `port` during a batch into `in_port` (`role`), should not have; or None.

        Allowed: what the tables send there (LPM on the destination; the inner one of this switch's own
        tunnel), an ARP reply out of the port the request came in on, a direct packet-out to that port.
        From access and core ports no priority mark leaves except on this switch's tunnel with mark = 1."""
        etype = frame[12:14] if len(frame) >= 14 else b""
        direct = role == "cpu" and port in direct_ports
        if etype == b"\x08\x06":
            return None if port == in_port or direct else f"ARP out of {port} (came in on {in_port})"
        if etype != b"\x08\x00" or len(frame) < 34:
            return None if direct else f"non-IPv4 frame (EtherType {etype.hex()}) out of {port}"
        ihl = (frame[14] & 0xF) * 4
        dst = str(ipaddress.IPv4Address(frame[30:34]))
        ours = frame[23] == IP_PROTO_IPIP and frame[26:30] == ipaddress.IPv4Address(self.switch_addr).packed
        if ours and len(frame) >= 14 + ihl + 20:
            dst = str(ipaddress.IPv4Address(frame[14 + ihl + 16:14 + ihl + 20]))
        want = self.expected_port(dst)
        if want != port and not direct:
            return f"to {dst} out of {port}, tables say {want}"
        if frame[15] >> 2 == DSCP_IPF_PRIORITY_DEFAULT and role in ("access", "core"):
            route = self.routes.get(f"{dst}/32")
            if not (ours and route is not None and route[0] == "tunnel" and route[2] == 1):
                return f"priority mark to {dst} out of {port} from the {role} port"
        return None


class FuzzBed:
    """The switch under test in a namespace, four host ports, and a P4Runtime session; `close()` always."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.net: Network = parse_network(description())
        self.sandbox = Sandbox("fuzz")
        self.switch: Bmv2Switch | None = None
        self.client: P4RuntimeClient | None = None
        self.hosts: dict[int, HostPort] = {}
        self.oracle = Oracle({}, self._switch("bs1").address)
        self.direct_ports: set[int] = set()
        self.entries = 0
        self.restarts = 0

    def start(self) -> "FuzzBed":
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.sw_ns = self.sandbox.namespace("sw")
        self.host_ns = self.sandbox.namespace("h")
        for p in DATA_PORTS:
            veth_port(f"s{p}", self.host_ns, f"h{p}", switch_netns=self.sw_ns)
        self.hosts = {p: HostPort(self.host_ns, f"h{p}") for p in DATA_PORTS}
        self._start_switch()
        return self

    def _start_switch(self) -> None:
        sock = self.workdir / f"bs1-{self.restarts}.grpc"
        self.switch = Bmv2Switch({p: f"s{p}" for p in DATA_PORTS}, netns=self.sw_ns, cpu_port=CPU_PORT,
                                 priority_queues=2, grpc_socket=sock,
                                 log_path=self.workdir / f"bs1-{self.restarts}.log").start()
        self.switch.cli.set_queue_depth(QUEUE_DEPTH)
        self.client = P4RuntimeClient(self.switch.grpc_addr, 0, (0, 1))
        self.client.set_pipeline(*pipeline_files())
        prog = Programmer(self.net)
        entries = prog.static_entries("bs1") + [
            prog.route_entry("bs1", MH["delivered"][0], Deliver(1, MH["delivered"][1])),
            prog.route_entry("bs1", MH["buffering"][0], Punt()),
            prog.route_entry("bs1", MH["tunnelled"][0], Tunnel("bs2", True))]
        self.client.insert(entries)
        self.client.modify(prog.ipf_config())     # a default entry: its MODIFY sets the default action
        self.oracle.routes = routes_of(entries)
        self.entries = len(self.client.read_table("port_role"))

    def _switch(self, name: str) -> Switch:
        """A switch of the bed's own description (`description()`: gw, bs1, bs2)."""
        sw = self.net.switch(name)
        if sw is None:
            raise ValueError(f"the fuzz description has no switch {name!r}")
        return sw

    def addressing(self) -> Addressing:
        bs1, bs2 = self._switch("bs1"), self._switch("bs2")
        return Addressing(bs1.mac, bs1.address, bs2.address, self.net.access_gateway.address,
                          self.net.controller.address, MH["delivered"][0], MH["buffering"][0],
                          MH["tunnelled"][0], "10.0.5.1")

    # ---------------------------------------------------------------- checks

    def alive(self) -> bool:
        """The process runs and reads its entries back over P4Runtime."""
        if self.switch is None or not self.switch.alive or self.client is None:
            return False
        try:
            return len(self.client.read_table("port_role")) == self.entries
        except P4RuntimeError:
            return False

    def restart(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.switch is not None:
            self.switch.stop()
        self.restarts += 1
        self._start_switch()

    def counters(self, port: int) -> dict[str, int]:
        """The accounting counters of one ingress port (and the AQM drops of every port), in one Read."""
        assert self.client is not None and self.client.p4info is not None
        cells = [(n, port * STRIDE + k) for n in ("malformed", "fwd_dropped", "punted") for k in range(STRIDE)]
        cells += [(n, p * AQM_STRIDE + c) for n in ("aqm_red_dropped", "aqm_overflow_dropped", "aqm_dummy_dropped")
                  for p in DATA_PORTS for c in range(3)]
        p4info = self.client.p4info
        replies = self.client.read([p4runtime_pb2.Entity(counter_entry=counter_entry(p4info, n, i)) for n, i in cells])
        by_id = {p4info.counter(n).preamble.id: n for n in {n for n, _ in cells}}
        out = {"malformed": 0, "fwd_dropped": 0, "punted": 0, "aqm_dropped": 0}
        for e in replies:
            name = by_id[e.counter_entry.counter_id]
            out["aqm_dropped" if name.startswith("aqm_") else name] += e.counter_entry.data.packet_count
        return out

    def occupancy_nonzero(self) -> int:
        assert self.switch is not None
        return sum(1 for v in self.switch.cli.register_read("occupancy") if v)

    # ---------------------------------------------------------------- a batch

    def run_batch(self, role: str, port: int, frames: list[Fuzzed], rng: random.Random, gap: float) -> Batch:
        client = self.client
        assert client is not None
        batch = Batch(role, port)
        before = self.counters(port)
        seen: dict[int, list[bytes]] = {p: [] for p in DATA_PORTS}
        stop = threading.Event()
        last = [time.monotonic()]

        def collect(p: int) -> None:
            while not stop.is_set():
                got = self.hosts[p].receive(0.1)
                if got:
                    seen[p] += got
                    last[0] = time.monotonic()

        def packet_ins() -> None:
            while not stop.is_set():
                try:
                    if client.packet_in(timeout=0.1) is not None:
                        batch.packet_ins += 1
                        last[0] = time.monotonic()
                except (P4RuntimeError, ValueError):
                    return
        threads = [threading.Thread(target=collect, args=(p,), daemon=True) for p in DATA_PORTS]
        threads.append(threading.Thread(target=packet_ins, daemon=True))
        for t in threads:
            t.start()
        self.direct_ports = set()
        for i, f in enumerate(frames):
            if role == "cpu":
                self._packet_out(f.frame, rng)
                batch.sent += 1
            else:
                try:
                    self.hosts[port].send(f.frame)
                    batch.sent += 1
                except OSError:
                    batch.refused += 1
            last[0] = time.monotonic()
            if gap and i % 8 == 7:
                time.sleep(gap * 8)
        deadline = time.monotonic() + BATCH_TIMEOUT_S
        while time.monotonic() - last[0] < QUIET_S and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        for t in threads:
            t.join(2)
        after = self.counters(port)
        batch.counted = {k: after[k] - before[k] for k in after}
        for p, got in seen.items():
            batch.out[p] = len(got)
            for frame in got:
                why = self.oracle.check(role, port, self.direct_ports, p, frame)
                if why is not None:
                    batch.wrong_port.append(why)
        return batch

    def _packet_out(self, frame: bytes, rng: random.Random) -> None:
        assert self.client is not None
        kind = rng.random()
        egress = rng.choice(DATA_PORTS)
        if kind < 0.1:
            self.client.packet_out(frame, egress_port=egress, mark_priority=0, lookup=0, telemetry=1)
        elif kind < 0.55:
            self.client.packet_out(frame, egress_port=egress, mark_priority=rng.randrange(2), lookup=1, telemetry=0)
        else:
            self.direct_ports.add(egress)
            self.client.packet_out(frame, egress_port=egress, mark_priority=rng.randrange(2), lookup=0, telemetry=0)

    def close(self) -> None:
        for h in self.hosts.values():
            h.close()
        if self.client is not None:
            self.client.close()
        if self.switch is not None:
            self.switch.stop()
        self.sandbox.close()


@dataclass
class FuzzResult:
    seed: int
    frames: int = 0
    refused: int = 0
    unaccounted: int = 0
    switch_failures: int = 0
    wrong_port: int = 0
    occupancy_nonzero: int = 0
    batches: list[dict[str, Any]] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [f"fuzz_seed: {self.seed}", f"fuzz_frames: {self.frames}", f"fuzz_unaccounted: {self.unaccounted}",
                f"fuzz_switch_failures: {self.switch_failures}", f"fuzz_wrong_port: {self.wrong_port}",
                f"fuzz_occupancy_nonzero: {self.occupancy_nonzero}", f"fuzz_refused_by_kernel: {self.refused}"]


def run(frames: int, seed: int, workdir: Path, batch_size: int = 500, gap: float = 0.001,
        log: Any = print) -> FuzzResult:
    """At least `frames` frames, spread over the port roles in batches; every batch checked."""
    result = FuzzResult(seed)
    bed = FuzzBed(workdir)
    try:
        bed.start()
        addressing = bed.addressing()
        rng = random.Random(seed)
        n = 0
        while result.frames < frames:
            role, port = ROLES[n % len(ROLES)]
            batch_frames = generate(rng.getrandbits(32), min(batch_size, max(1, frames - result.frames)), addressing)
            b = bed.run_batch(role, port, batch_frames, rng, gap)
            n += 1
            result.frames += b.sent
            result.refused += b.refused
            result.unaccounted += b.unaccounted
            result.wrong_port += len(b.wrong_port)
            result.examples += b.wrong_port[:3]
            alive = bed.alive()
            occupied = bed.occupancy_nonzero() if alive else 0
            result.occupancy_nonzero += occupied
            result.batches.append({"role": role, "port": port, "sent": b.sent, "out": b.out,
                                   "packet_ins": b.packet_ins, "counted": b.counted, "unaccounted": b.unaccounted,
                                   "wrong_port": len(b.wrong_port), "alive": alive, "occupancy_nonzero": occupied})
            log(f"batch {n:3d} {role:<6} sent={b.sent} out={sum(b.out.values())} packet_ins={b.packet_ins} "
                f"counted={b.counted} unaccounted={b.unaccounted} wrong_port={len(b.wrong_port)} "
                f"alive={alive} occupancy_nonzero={occupied}")
            if not alive:
                result.switch_failures += 1
                bed.restart()
    finally:
        bed.close()
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=whole_number(1), default=10_000)
    ap.add_argument("--seed", type=whole_number(0), default=None, help="default: random (printed)")
    ap.add_argument("--batch", type=whole_number(1), default=500)
    ap.add_argument("--workdir", type=Path, default=build_dir() / "fuzz")
    ap.add_argument("--json", type=Path, help="write the per-batch figures here")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().getrandbits(32)
    print(f"fuzz_seed: {seed}", flush=True)
    result = run(args.frames, seed, args.workdir, args.batch, log=lambda s: print(s, flush=True))
    for line in result.lines():
        print(line)
    for ex in result.examples[:10]:
        print("  wrong port:", ex)
    if args.json:
        args.json.write_text(json.dumps(result.__dict__, indent=1))
    bad = result.unaccounted or result.switch_failures or result.wrong_port or result.occupancy_nonzero
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
