"""Measure an emulated link on real packets: one-way delay, rate, loss and outages, in namespaces.

    with EmulatedPath(rate="10Mbps", delay="20ms") as path:
        delays = path.one_way_delays(20)          # seconds, per probe
        rate = path.saturated_rate(1.0)           # b/s of IP packets that came through

Three namespaces: `a` (10.9.0.1) — emulator namespace (interfaces `mh`,
`bs`) — `b` (10.9.0.2); the emulator bridges `mh` (towards a) and `bs`
(towards b), so a → b is the emulator's *up* direction and b → a its
*down* direction. Probes are UDP; both ends are sockets of this process,
so one CLOCK_MONOTONIC times both and the one-way delay needs no clock
synchronisation. Used by tests/test_emulator.py and bench/lab.py.
"""
from __future__ import annotations

import json
import select
import socket
import struct
import subprocess
import sys
import time
from typing import Any, Sequence

from p4handoff.hosts.net.rawio import SO_TIMESTAMPNS, TIMESPEC_SIZE, kernel_receive_time
from p4handoff.netns import Sandbox, Namespace, stop_process

PORT = 9999
UDP_IP_OVERHEAD = 28
_STAMP = struct.Struct("!Id")   # sequence number, send time


def _received_at(ancillary: list[tuple[int, int, bytes]]) -> float:
    """The kernel's receive time (CLOCK_REALTIME, seconds) of a datagram (SO_TIMESTAMPNS)."""
    at = kernel_receive_time(ancillary)
    if at is None:
        raise RuntimeError("a datagram arrived without its receive timestamp (SO_TIMESTAMPNS)")
    return at


_SENDER = r"""
import socket, struct, sys, time
dst, rate, seconds, size = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
payload = bytearray(size)
interval = (size + 28) * 8 / rate
start = time.monotonic()
seq = 0
while True:
    now = time.monotonic()
    if now - start >= seconds:
        break
    due = int((now - start) / interval) + 1
    while seq < due:
        struct.pack_into("!Id", payload, 0, seq, time.monotonic())
        try:
            s.sendto(payload, (dst, 9999))
        except BlockingIOError:
            pass
        seq += 1
    time.sleep(0.0005)
print(seq)
"""


class EmulatedPath:
    """Namespaces a — emulator — b with one emulator process; `close()` removes everything."""

    def __init__(self, *, rate: str | None = None, delay: str = "0ms", loss: float = 0.0, limit: int = 1000,
                 up_rate: str | None = None, up_loss: float | None = None, up_limit: int = 1000,
                 schedule: list[dict] | None = None,
                 down_at_start: bool = False, realtime: int = 0, extra: Sequence[str] = ()) -> None:
        self.sandbox = Sandbox("emu")
        try:
            self.a, self.e, self.b = self.sandbox.namespace("a"), self.sandbox.namespace("e"), self.sandbox.namespace("b")
            self.sandbox.veth(self.a, self.e, "10.9.0.1/24", "10.9.1.1/24", dev_a="veth0", dev_b="mh")
            self.sandbox.veth(self.b, self.e, "10.9.0.2/24", "10.9.1.2/24", dev_a="veth0", dev_b="bs")
            for dev in ("mh", "bs"):   # the emulator's ends carry frames, not IP
                self.e.run(["ip", "addr", "flush", "dev", dev])
                self.e.run(["sysctl", "-q", "-w", f"net.ipv6.conf.{dev}.disable_ipv6=1"])
            # static neighbours: no ARP through an emulated outage
            self.a.run(["ip", "neigh", "replace", "10.9.0.2", "lladdr", self._mac(self.b, "veth0"), "dev", "veth0"])
            self.b.run(["ip", "neigh", "replace", "10.9.0.1", "lladdr", self._mac(self.a, "veth0"), "dev", "veth0"])
            self.t0 = time.monotonic()
            args = [sys.executable, "-m", "p4handoff.topo.emulator", "--mh-side", "mh", "--bs-side", "bs",
                    "--rate", rate or "none", "--delay", delay, "--loss", str(loss), "--limit", str(limit),
                    "--up-limit", str(up_limit), "--t0", repr(self.t0)]
            if up_rate is not None:
                args += ["--up-rate", up_rate]
            if up_loss is not None:
                args += ["--up-loss", str(up_loss)]
            if schedule:
                args += ["--schedule", json.dumps(schedule)]
            if down_at_start:
                args.append("--down-at-start")
            if realtime:
                args += ["--realtime", str(realtime)]
            # stdin is the emulator's control stream (Namespace.start would let it inherit ours)
            self.proc = subprocess.Popen(["ip", "netns", "exec", self.e.name, *args, *extra], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         start_new_session=True)
            self.sandbox.processes.append(self.proc)
            line = self._readline(10.0)
            if not line.startswith('{"ready"'):
                raise RuntimeError(f"emulator did not start: {line!r} {self._stderr()}")
            self.tx = self.a.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.rx = self.b.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            self.rx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)   # arrival times by the kernel
            self.rx.bind(("10.9.0.2", PORT))
        except BaseException:
            self.sandbox.close()
            raise

    def command(self, line: str, timeout: float = 5.0) -> dict[str, Any]:
        """Send one control command to the emulator and return its JSON answer."""
        assert self.proc.stdin is not None
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()
        answer = self._readline(timeout)
        if not answer:
            raise RuntimeError(f"emulator: no answer to {line!r} within {timeout} s {self._stderr()}")
        return json.loads(answer)

    @staticmethod
    def _mac(ns: Namespace, dev: str) -> str:
        return ns.run(["cat", f"/sys/class/net/{dev}/address"]).stdout.strip()

    def _readline(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        return self.proc.stdout.readline().decode().strip() if ready else ""

    def _stderr(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return ""
        return self.proc.stderr.read().decode(errors="replace")[-2000:]

    def __enter__(self) -> "EmulatedPath":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> dict[str, Any]:
        """Stop the emulator and remove the namespaces; returns the emulator's final statistics."""
        stats: dict[str, Any] = {}
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            if self.proc.poll() is None:
                stop_process(self.proc)
            out = self.proc.stdout.read().decode() if self.proc.stdout else ""
            lines = [ln for ln in out.splitlines() if ln.startswith("{")]
            stats = json.loads(lines[-1]) if lines else {}
        finally:
            for s in (getattr(self, "tx", None), getattr(self, "rx", None)):
                if s is not None:
                    s.close()
            self.sandbox.close()
        return stats

    # -- probes ---------------------------------------------------------------------------------
    def one_way_delays(self, n: int, size: int = 64, spacing: float = 0.005,
                       timeout: float = 1.0) -> list[float]:
        """Send `n` probes a → b one at a time; the one-way delay of each that arrived (seconds).

        A probe's arrival is the time the kernel received it (SO_TIMESTAMPNS), so how late this process
        is woken on a busy machine does not count as delay of the path.
        """
        out = []
        self.rx.settimeout(timeout)
        payload = bytearray(max(size, _STAMP.size))
        for seq in range(n):
            sent = time.time()      # the clock of the kernel's receive timestamps
            _STAMP.pack_into(payload, 0, seq, sent)
            self.tx.sendto(payload, ("10.9.0.2", PORT))
            try:
                while True:
                    data, ancillary, _, _ = self.rx.recvmsg(65536, socket.CMSG_SPACE(TIMESPEC_SIZE))
                    if _STAMP.unpack_from(data)[0] == seq:
                        out.append(_received_at(ancillary) - sent)
                        break
            except socket.timeout:
                pass
            time.sleep(spacing)
        return out

    def saturated_rate(self, seconds: float, offered_bps: float, size: int = 1472,
                       settle: float = 0.2) -> tuple[float, int, int]:
        """Offer `offered_bps` of UDP a → b for `seconds`; (IP b/s that came out, sent, received).

        The rate is measured from arrival times after `settle` seconds, so
        the start-up (queue filling) does not count.
        """
        sender = self.a.start([sys.executable, "-c", _SENDER, "10.9.0.2", str(offered_bps), str(seconds), str(size)],
                              stdout=subprocess.PIPE)
        times: list[float] = []
        self.rx.settimeout(0.5)
        buf = bytearray(65536)
        deadline = time.monotonic() + seconds + 5.0
        try:
            while time.monotonic() < deadline:
                try:
                    n = self.rx.recv_into(buf)
                except socket.timeout:
                    if sender.poll() is not None:
                        break
                    continue
                if n == size:
                    times.append(time.monotonic())
        finally:
            out, _ = sender.communicate(timeout=10)
        sent = int(out.decode().strip() or 0)
        start = times[0] + settle if times else 0.0
        steady = [t for t in times if t >= start]
        if len(steady) < 10:
            return 0.0, sent, len(times)
        rate = (len(steady) - 1) * (size + UDP_IP_OVERHEAD) * 8 / (steady[-1] - steady[0])
        return rate, sent, len(times)

    def arrivals(self, seconds: float, interval: float, size: int = 64) -> tuple[list[float], list[float]]:
        """Send a probe every `interval` for `seconds`; (send times, arrival times) relative to the emulator's t0."""
        self.rx.setblocking(False)
        payload = bytearray(max(size, _STAMP.size))
        sent, got = [], []
        end = time.monotonic() + seconds
        seq = 0
        while time.monotonic() < end:
            now = time.monotonic()
            _STAMP.pack_into(payload, 0, seq, now)
            self.tx.sendto(payload, ("10.9.0.2", PORT))
            sent.append(now - self.t0)
            seq += 1
            while time.monotonic() < now + interval:
                try:
                    self.rx.recv(65536)
                    got.append(time.monotonic() - self.t0)
                except BlockingIOError:
                    time.sleep(0.0002)
        time.sleep(0.3)
        while True:
            try:
                self.rx.recv(65536)
                got.append(time.monotonic() - self.t0)
            except BlockingIOError:
                break
        self.rx.setblocking(True)
        return sent, got
