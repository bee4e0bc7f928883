"""Shared pieces of the real-network host tests (a two-namespace path, a Linux TCP sink, the CLI,
a RST watch, a packet injector), imported by tests/test_net_*.py; tests/test_net_support.py shows
these instruments can fail."""
from __future__ import annotations

import hashlib
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from p4handoff.hosts.net.rawio import ETH_P_IP, SOL_PACKET, PacketReceiver, attach_filter
from p4handoff import netns

ROOT = Path(__file__).resolve().parent.parent
SENDER, RECEIVER = "10.0.9.1", "10.0.9.2"
CLI_TIMEOUT = 60.0


@dataclass
class Path2:
    """Sender namespace `a` and receiver namespace `b` joined by one veth pair."""

    sandbox: netns.Sandbox
    a: netns.Namespace
    b: netns.Namespace
    link: netns.Veth


def make_path(sandbox: netns.Sandbox, mtu: int = 1500) -> Path2:
    a, b = sandbox.namespace("snd"), sandbox.namespace("rcv")
    return Path2(sandbox, a, b, sandbox.veth(a, b, SENDER + "/24", RECEIVER + "/24", mtu=mtu))


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "p4handoff", "host", *args]


def parse(output: str) -> dict[str, str]:
    """The `name: value` lines of `p4handoff host` output."""
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in output.splitlines()) if v}


def run_cli(ns: netns.Namespace, *args: str, timeout: float = CLI_TIMEOUT) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(["ip", "netns", "exec", ns.name, *cli(*args)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


class OurReceiver:
    """`p4handoff host recv` running in a namespace; `finish()` returns its parsed report."""

    def __init__(self, path: Path2, *args: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.path = path
        self.proc = path.sandbox.start(path.b, cli("recv", "--timeout", "60", *args), stdout=subprocess.PIPE,
                                   env=env, cwd=ROOT)
        line = _readline(self.proc, 20.0)
        if not line.startswith(b"listening:"):
            raise RuntimeError(f"receiver did not start: {line!r} {self.proc.stderr.read(4000)!r}")

    def finish(self, timeout: float = 30.0) -> dict[str, str]:
        return _report(self.path, self.proc, timeout)


class OurSender:
    """`p4handoff host send --to RECEIVER` running in the sender namespace; `finish()` returns its parsed report."""

    def __init__(self, path: Path2, *args: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.path = path
        self.proc = path.sandbox.start(path.a, cli("send", "--to", RECEIVER, "--time-wait", "0.2", *args),
                                   stdout=subprocess.PIPE, env=env, cwd=ROOT)

    def running(self) -> bool:
        return self.proc.poll() is None

    def finish(self, timeout: float = CLI_TIMEOUT) -> dict[str, str]:
        return _report(self.path, self.proc, timeout)


def _report(path: Path2, proc: subprocess.Popen, timeout: float) -> dict[str, str]:
    """Wait for a host process, insist it succeeded, parse its report."""
    out, err = proc.communicate(timeout=timeout)
    path.sandbox.processes.remove(proc)
    assert proc.returncode == 0, err.decode()
    return parse(out.decode())


def _readline(proc: subprocess.Popen, timeout: float) -> bytes:
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return got[0] if got else b""


@dataclass
class LinuxSink:
    """An unmodified Linux TCP receiver: a plain socket server in the receiver namespace."""

    path: Path2
    port: int = 5001
    data: bytearray = field(default_factory=bytearray)
    error: list[BaseException] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.server = self.path.b.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind((RECEIVER, self.port))
        self.server.listen(1)
        self.server.settimeout(CLI_TIMEOUT)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.server.accept()
            conn.settimeout(CLI_TIMEOUT)
            with conn:
                while chunk := conn.recv(1 << 20):
                    self.data += chunk
        except BaseException as exc:  # reported by result()
            self.error.append(exc)
        finally:
            self.server.close()

    def result(self, timeout: float = 30.0) -> bytes:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "Linux receiver still reading"
        if self.error:
            raise self.error[0]
        return bytes(self.data)


class RstWatch:
    """Counts every TCP segment with RST set that crosses the path, in either direction.

    One capture socket per end, each seeing what arrives there (an
    ETH_P_IP packet socket only sees incoming packets), so every packet on
    the link is counted exactly once, however it was sent (kernel, raw
    socket, qdisc-bypassing injector). A classic-BPF filter keeps
    everything else out, so a busy transfer cannot crowd a RST out of the
    socket buffer.
    """

    PROGRAM = [
        (0x30, 0, 0, 9), (0x15, 0, 4, 6),        # ldb [9]; jeq TCP else drop
        (0xB1, 0, 0, 0), (0x50, 0, 0, 13),       # ldx IP header length; ldb [x+13] (TCP flags)
        (0x45, 0, 1, 0x04),                      # jset RST else drop
        (0x06, 0, 0, 0xFFFF), (0x06, 0, 0, 0),
    ]

    def __init__(self, path: "Path2") -> None:
        self.socks = [ns.call(lambda: socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_IP)))
                      for ns in (path.a, path.b)]
        for sock in self.socks:
            attach_filter(sock, self.PROGRAM)
            sock.setblocking(False)
        self._drain()  # whatever slipped in before the filter

    def _drain(self) -> list[bytes]:
        got = []
        for sock in self.socks:
            while True:
                try:
                    got.append(sock.recv(65535))
                except BlockingIOError:
                    break
        return got

    def resets(self) -> list[bytes]:
        time.sleep(0.2)
        return self._drain()

    def close(self) -> None:
        for sock in self.socks:
            sock.close()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def mac_of(ns: netns.Namespace, dev: str) -> bytes:
    text = ns.run(["cat", f"/sys/class/net/{dev}/address"]).stdout.strip()
    return bytes.fromhex(text.replace(":", ""))


class Injector:
    """Puts arbitrary IPv4 packets (even malformed ones) on a veth, addressed to the peer's MAC.

    They bypass the interface's qdisc: an injected segment must not wait
    behind a rate limiter's queue, or the sequence numbers it was built from
    are stale when it arrives.
    """

    PACKET_QDISC_BYPASS = 20

    def __init__(self, ns: netns.Namespace, dev: str, peer_mac: bytes) -> None:
        self.sock = ns.call(lambda: socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, 0))
        self.sock.setsockopt(SOL_PACKET, self.PACKET_QDISC_BYPASS, 1)
        self.dev, self.mac = dev, peer_mac

    def send(self, packet: bytes) -> None:
        self.sock.sendto(packet, (self.dev, ETH_P_IP, 0, 0, self.mac))

    def close(self) -> None:
        self.sock.close()


REASON = netns.unavailable_reason()
needs_netns = [pytest.mark.netns, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


def closed_port() -> int:
    """A loopback TCP port nothing listens on (bound, then closed again)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


NOTIFY = 15434        # the notification port the scheme tests' hosts listen on


def records(trace_file: Path) -> list[dict]:
    """The JSON lines of a sender's trace file."""
    return [json.loads(line) for line in trace_file.read_text().splitlines()]


def wait_for_data(ns: netns.Namespace, timeout: float = 10.0) -> None:
    """Until a data segment (over 100 bytes) reaches port 5001 in `ns` (AssertionError after `timeout`)."""
    tap = ns.call(lambda: PacketReceiver(5001))
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            select.select([tap], [], [], 0.2)
            if any(len(r.packet) > 100 for r in tap.receive()):
                return
        raise AssertionError("the transfer did not start")
    finally:
        tap.close()
