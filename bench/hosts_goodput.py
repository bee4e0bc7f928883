"""Benchmark: our user-space TCP sender vs the Linux kernel's TCP, same veth pair, same run.

Two namespaces joined by one veth pair (MTU 9000 by default, offloads off on
both ends: no TSO/GSO/GRO, no checksum offload, for both runs). The
receiver is the same in both runs: a plain Linux TCP socket server in the
receiver namespace, which measures goodput from its first byte to EOF.
Run 1: `p4handoff host send --seconds T` (our sender, raw sockets) in the
sender namespace. Run 2: a kernel TCP socket sending for T seconds from the
same namespace. Prints `name: value` lines, among them `host_goodput_mbps`
and `host_vs_kernel_ratio`. Needs root.

    make bench-hosts            # or: .venv/bin/python bench/hosts_goodput.py --mtu 1500
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from p4handoff.argtypes import real_number, whole_number  # noqa: E402
from p4handoff import netns  # noqa: E402

SENDER, RECEIVER, PORT = "10.0.9.1", "10.0.9.2", 5001
WAIT = 120.0


class Sink:
    """A Linux TCP receiver that times one connection from its first byte to EOF."""

    def __init__(self, ns: netns.Namespace) -> None:
        self.server = ns.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind((RECEIVER, PORT))
        self.server.listen(1)
        self.server.settimeout(WAIT)
        self.bytes = 0
        self.seconds = 0.0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        conn.settimeout(WAIT)
        buf = bytearray(4 << 20)
        first = None
        with conn:
            while n := conn.recv_into(buf):
                if first is None:
                    first = time.perf_counter()
                self.bytes += n
        self.seconds = time.perf_counter() - first if first is not None else 0.0
        self.server.close()

    def goodput_mbps(self) -> float:
        self.thread.join(WAIT)
        if self.thread.is_alive() or self.seconds <= 0:
            raise RuntimeError("the receiver got no complete transfer")
        return self.bytes * 8 / self.seconds / 1e6


def ours(sandbox: netns.Sandbox, a: netns.Namespace, b: netns.Namespace, seconds: float, scheme: str) -> tuple[float, dict]:
    sink = Sink(b)
    done = subprocess.run(["ip", "netns", "exec", a.name, sys.executable, "-m", "p4handoff", "host", "send",
                           "--to", f"{RECEIVER}:{PORT}", "--seconds", str(seconds), "--scheme", scheme,
                           "--notify-port", "0", "--time-wait", "0.1"],
                          capture_output=True, text=True, timeout=WAIT + seconds)
    if done.returncode != 0:
        raise RuntimeError(f"our sender failed: {done.stderr.strip()}")
    report = {k: v.strip() for k, _, v in (line.partition(":") for line in done.stdout.splitlines())}
    return sink.goodput_mbps(), report


def kernel(a: netns.Namespace, b: netns.Namespace, seconds: float) -> float:
    sink = Sink(b)
    client = a.socket()
    client.settimeout(WAIT)
    client.connect((RECEIVER, PORT))
    chunk = memoryview(os.urandom(1 << 20))
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        client.sendall(chunk)
    client.close()
    return sink.goodput_mbps()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mtu", type=whole_number(68), default=9000, help="veth MTU for both runs (default 9000)")
    parser.add_argument("--seconds", type=real_number(0, above=True), default=3.0, help="length of each run (default 3)")
    parser.add_argument("--scheme", default="newreno", help="our sender's scheme (default newreno)")
    parser.add_argument("--smoke", action="store_true", help="one-second runs (tests)")
    args = parser.parse_args()
    if args.smoke:
        args.seconds = 1.0
    reason = netns.unavailable_reason()
    if reason is not None:
        print(f"bench-hosts: cannot run: {reason}", file=sys.stderr)
        return 2
    with netns.Sandbox("bench") as sandbox:
        a, b = sandbox.namespace("snd"), sandbox.namespace("rcv")
        sandbox.veth(a, b, SENDER + "/24", RECEIVER + "/24", mtu=args.mtu)
        host_mbps, report = ours(sandbox, a, b, args.seconds, args.scheme)
        kernel_mbps = kernel(a, b, args.seconds)
    print(f"mtu: {args.mtu}")
    print(f"mss: {report.get('mss')}")
    print("offloads: off (tx/rx checksum, sg, tso, gso, gro) on both veth ends, both runs")
    print(f"scheme: {args.scheme}")
    print(f"seconds_per_run: {args.seconds}")
    print(f"host_retransmits: {report.get('retransmits')}")
    print(f"kernel_goodput_mbps: {kernel_mbps:.1f}")
    print(f"host_goodput_mbps: {host_mbps:.1f}")
    print(f"host_vs_kernel_ratio: {host_mbps / kernel_mbps:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
