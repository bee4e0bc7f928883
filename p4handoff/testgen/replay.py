"""Replay generated tests on simple_switch_grpc, through the project's P4Runtime client.

One namespace holds the switch and one veth pair per port the tests use
(`tg<N>` is switch port N, its peer `tp<N>` is where the replay sends and
sniffs with AF_PACKET). P4Runtime runs over a Unix socket, reachable from
this process. Per test: push the pipeline again (BMv2 then starts from empty
tables, registers, counters and meters, the state P4Testgen assumes), write
the test's entities, send its packet (on the CPU port: as a PacketOut whose
`packet_out` fields are the packet's first bytes), and collect what comes
out of every port and as PacketIn (re-serialised with its `packet_in`
header in front, as P4Testgen expects it on the CPU port).
"""
from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from p4handoff import netns
from p4handoff.bmv2 import Bmv2Switch, veth_port
from p4handoff.controller.p4runtime import P4RuntimeClient, P4RuntimeError
from p4handoff.controller.p4runtime.entities import UpdateType
from p4handoff.controller.p4runtime.p4info import P4Info

from .cases import GeneratedTest

ETH_P_ALL = 0x0003
PORT_LIMIT = 511        # BMv2 ports are 0..510 (511 is its drop port)
PACKET_OUTGOING = 4
MIN_FRAME = 14          # AF_PACKET refuses a frame shorter than the Ethernet header
FIRST_WAIT_S = 0.6      # how long to wait for the first output of a packet
QUIET_S = 0.15          # then: no more output for this long ends the collection


@dataclass(frozen=True)
class Observed:
    """What came out for one input: (port, bytes) in arrival order; the CPU port's packets re-serialised."""

    packets: tuple[tuple[int, bytes], ...]


@dataclass(frozen=True)
class Verdict:
    ok: bool
    why: str


def header_fields(p4info: P4Info, header: str) -> list[tuple[str, int]]:
    """(name, bit width) of a controller header's fields, in order."""
    return [(m.name, m.bitwidth) for m in p4info.controller_metadata(header).metadata]


def split_header(fields: Sequence[tuple[str, int]], data: bytes) -> tuple[dict[str, int], bytes]:
    """A controller header at the front of `data` decoded by `fields`; (values by name, the rest)."""
    bits = sum(w for _, w in fields)
    if bits % 8:
        raise ValueError(f"controller header of {bits} bits is not whole bytes")
    size = bits // 8
    if len(data) < size:
        raise ValueError(f"packet of {len(data)} bytes is shorter than its {size}-byte controller header")
    value, shift, out = int.from_bytes(data[:size], "big"), bits, {}
    for name, width in fields:
        shift -= width
        out[name] = (value >> shift) & ((1 << width) - 1)
    return out, data[size:]


def join_header(fields: Sequence[tuple[str, int]], values: dict[str, int], payload: bytes) -> bytes:
    """The inverse of `split_header`; fields not in `values` (padding) are 0."""
    bits = sum(w for _, w in fields)
    value = 0
    for name, width in fields:
        value = (value << width) | (values.get(name, 0) & ((1 << width) - 1))
    return value.to_bytes(bits // 8, "big") + payload


def judge(test: GeneratedTest, observed: Observed) -> Verdict:
    """Does what BMv2 did match P4Testgen's expectation? (exactly the expected packet, or nothing)"""
    if test.expected is None:
        return Verdict(not observed.packets, "expected a drop" + (
            f", got {len(observed.packets)} packet(s), first on port {observed.packets[0][0]}"
            if observed.packets else ""))
    exp = test.expected
    if len(observed.packets) != 1:
        return Verdict(False, f"expected one packet on port {exp.port}, got "
                       f"{[(p, len(d)) for p, d in observed.packets] or 'none'}")
    port, data = observed.packets[0]
    if port != exp.port:
        return Verdict(False, f"expected port {exp.port}, got port {port}")
    if not exp.matches(data):
        return Verdict(False, f"port {port}: packet differs: got {data.hex()}, expected {exp.data.hex()} "
                       f"mask {exp.mask.hex()}")
    return Verdict(True, "")


class Bmv2Replay:
    """A switch and its ports in a namespace of `sandbox`; `run(test)` replays one test."""

    def __init__(self, sandbox: netns.Sandbox, p4info: Path, bmv2_json: Path, ports: Iterable[int],
                 work_dir: Path, cpu_port: int, priority_queues: int) -> None:
        self.p4info_path, self.bmv2_json, self.cpu_port = p4info, bmv2_json, cpu_port
        self.p4info = P4Info.load(p4info)
        self.out_fields = header_fields(self.p4info, "packet_out")
        self.in_fields = header_fields(self.p4info, "packet_in")
        self.ns = sandbox.namespace("tg")
        data_ports = sorted(set(ports) - {cpu_port})
        for port in data_ports:
            veth_port(f"tg{port}", self.ns, f"tp{port}", switch_netns=self.ns)
        work_dir.mkdir(parents=True, exist_ok=True)
        self.switch = Bmv2Switch({p: f"tg{p}" for p in data_ports}, cpu_port=cpu_port,
                                 priority_queues=priority_queues, netns=self.ns,
                                 log_path=work_dir / "switch.log", grpc_socket=work_dir / "p4rt.sock").start()
        self.socks: dict[int, socket.socket] = {}
        for port in data_ports:
            sock = self.ns.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            sock.bind((f"tp{port}", 0))
            sock.setblocking(False)
            self.socks[port] = sock
        self.client = P4RuntimeClient(self.switch.grpc_addr, self.switch.device_id)

    def close(self) -> None:
        self.client.close()
        for sock in self.socks.values():
            sock.close()
        self.switch.stop()

    def __enter__(self) -> "Bmv2Replay":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def install(self, updates: Sequence[tuple[UpdateType, Any]]) -> None:
        """A fresh pipeline, then the test's writes."""
        self.client.set_pipeline(self.p4info_path, self.bmv2_json)
        for update in updates:   # one by one: a refused write names itself
            self.client.write([update])

    def send(self, port: int, packet: bytes) -> None:
        if port == self.cpu_port:
            values, payload = split_header(self.out_fields, packet)
            pads = {n for n in values if n.startswith("_pad")}
            self.client.packet_out(payload, **{n: v for n, v in values.items() if n not in pads})
            return
        if port not in self.socks:
            raise ValueError(f"port {port} has no veth (ports: {sorted(self.socks)})")
        if len(packet) < MIN_FRAME:
            raise ValueError(f"a {len(packet)}-byte frame cannot be sent (AF_PACKET needs {MIN_FRAME})")
        self.socks[port].send(packet)

    def collect(self) -> Observed:
        """Everything that comes out until the switch is quiet."""
        got: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + FIRST_WAIT_S
        by_fd = {s.fileno(): p for p, s in self.socks.items()}
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select(list(self.socks.values()), [], [], min(left, 0.05))
            for sock in ready:
                while True:
                    try:
                        data, addr = sock.recvfrom(65535)
                    except BlockingIOError:
                        break
                    if addr[2] != PACKET_OUTGOING:
                        got.append((by_fd[sock.fileno()], data))
                        deadline = time.monotonic() + QUIET_S
            while (pin := self.client.packet_in(timeout=0)) is not None:
                got.append((self.cpu_port, join_header(self.in_fields, pin.metadata, pin.payload)))
                deadline = time.monotonic() + QUIET_S
        return Observed(tuple(got))

    def drain(self) -> None:
        """Forget anything still arriving (a previous test's stragglers)."""
        self.collect()


Writes = Callable[[GeneratedTest], Sequence[tuple[UpdateType, Any]]]


def replay_tests(tests: Sequence[GeneratedTest], writes_of: Writes, *, p4info: Path, bmv2_json: Path, work_dir: Path,
                 cpu_port: int, priority_queues: int, ports: Iterable[int] = ()) -> list[Observed | str]:
    """Each test's observation on one BMv2 switch, a fresh pipeline per test; a str says why a test could not
    be replayed (a write the switch or the translation refused, a port BMv2 does not have, a short frame).
    Every port a test names gets a veth, and so do `ports` (where an unexpected packet could appear)."""
    wanted = set(ports) | {t.port for t in tests} | {t.expected.port for t in tests if t.expected}
    with netns.Sandbox("tg") as sandbox, Bmv2Replay(sandbox, p4info, bmv2_json, {p for p in wanted if 0 <= p < PORT_LIMIT},
                                                 work_dir, cpu_port, priority_queues) as rig:
        results: list[Observed | str] = []
        for test in tests:
            try:
                rig.install(writes_of(test))
                rig.drain()
                rig.send(test.port, test.packet)
            except (ValueError, P4RuntimeError) as exc:   # Untranslatable is a ValueError
                results.append(f"not replayed: {exc}")
                continue
            results.append(rig.collect())
    return results
