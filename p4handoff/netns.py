"""Throwaway Linux network namespaces joined by veth pairs, for tests and benchmarks.

Everything the project runs on real packets outside Mininet (host driver
tests, benchmarks) needs the same few steps: make namespaces with names that
cannot clash with anyone else's, join them with veth pairs, set addresses,
MTU and offloads, run commands and long-lived processes inside, and remove
all of it afterwards even when a test fails. `Sandbox` does exactly that; every
wait has a timeout and every process it starts is stopped by its own id.

    with Sandbox("demo") as sandbox:
        a, b = sandbox.namespace("a"), sandbox.namespace("b")
        link = sandbox.veth(a, b, "10.0.0.1/24", "10.0.0.2/24", mtu=9000)
        server = sandbox.start(b, ["python3", "-m", "http.server", "8000"])
        a.run(["curl", "-s", "http://10.0.0.2:8000/"], timeout=5)

Names are `p4h-<pid>-<tag><n>`; veth ends are created directly inside their
namespaces, so interface names (default `veth0`) never clash in the root
namespace.
"""
from __future__ import annotations

import ctypes
import functools
import ipaddress
import itertools
import os
import shutil
import signal
import socket
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence, TypeVar

PREFIX = "p4h"
NETNS_DIR = Path("/run/netns")
DEFAULT_TIMEOUT = 30.0  # generous: namespace creation/removal queue behind every other namespace's teardown
_CLONE_NEWNET = 0x40000000
_counter = itertools.count()
_counter_lock = threading.Lock()
T = TypeVar("T")


class NetnsError(RuntimeError):
    """A namespace operation failed; the message carries the command and its stderr."""


def unavailable_reason() -> str | None:
    """Why namespaces cannot be used here (for a pytest skip), or None if they can."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "nft", "ethtool", "tc"):
        if shutil.which(tool) is None:
            return f"'{tool}' (iproute2/nftables/ethtool) is not installed"
    probe = f"{PREFIX}-{os.getpid()}-probe"
    try:
        _run(["ip", "netns", "add", probe], timeout=DEFAULT_TIMEOUT)
    except NetnsError as exc:
        return f"cannot create a network namespace: {exc}"
    _run(["ip", "netns", "del", probe], timeout=DEFAULT_TIMEOUT, check=False)
    return None


def _run(args: Sequence[str], *, timeout: float, check: bool = True,
         input: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, input=input)
    except subprocess.TimeoutExpired as exc:
        raise NetnsError(f"{' '.join(args)}: no answer within {timeout} s") from exc
    except FileNotFoundError as exc:
        raise NetnsError(f"{args[0]}: not installed") from exc
    if check and done.returncode != 0:
        raise NetnsError(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return done


def enter(netns_fd: int) -> None:
    """Move the calling thread into the network namespace open as `netns_fd`.

    Also usable as a subprocess `preexec_fn`, to run a tool in a namespace
    known only by a file descriptor (e.g. one saved from
    /proc/thread-self/ns/net by code that was started inside it).
    """
    if _libc().setns(netns_fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def stop_process(proc: subprocess.Popen, timeout: float = 5.0) -> int:
    """Stop a process started by `Namespace.start` (its own process group): TERM, then KILL.

    Returns its exit status. The group is the one `start` created for this
    process, so nothing else is signalled.
    """
    if proc.poll() is None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                return proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                continue
        return proc.wait(timeout=timeout)
    return proc.returncode


@dataclass(frozen=True)
class Namespace:
    """A named network namespace (`ip netns` name)."""

    name: str

    def run(self, args: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, check: bool = True,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run a command inside the namespace and wait for it (text output captured)."""
        return _run(["ip", "netns", "exec", self.name, *args], timeout=timeout, check=check, input=input)

    def start(self, args: Sequence[str], *, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
              env: dict[str, str] | None = None, cwd: str | os.PathLike | None = None) -> subprocess.Popen:
        """Start a long-lived process inside the namespace, in a process group of its own.

        `ip netns exec` execs the command, so the returned Popen's pid is the
        command itself; stop it with `stop_process` (or let `Sandbox` do it).
        """
        return subprocess.Popen(["ip", "netns", "exec", self.name, *args], stdout=stdout, stderr=stderr,
                                env=env, cwd=cwd, start_new_session=True)

    def call(self, fn: Callable[[], T], timeout: float = DEFAULT_TIMEOUT) -> T:
        """Run `fn` in a thread that has entered the namespace, and return its result.

        Sockets keep the namespace they were created in, so
        `ns.call(lambda: socket.socket(...))` gives this process a socket
        inside the namespace without a subprocess.
        """
        result: list[T] = []
        error: list[BaseException] = []

        def body() -> None:
            try:
                fd = os.open(NETNS_DIR / self.name, os.O_RDONLY)
                try:
                    enter(fd)
                finally:
                    os.close(fd)
                result.append(fn())
            except BaseException as exc:  # handed to the caller's thread
                error.append(exc)

        worker = threading.Thread(target=body, name=f"netns-{self.name}", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            raise NetnsError(f"call in namespace {self.name}: no result within {timeout} s")
        if error:
            raise error[0]
        return result[0]

    def socket(self, family: int = socket.AF_INET, type: int = socket.SOCK_STREAM, proto: int = 0) -> socket.socket:
        """A socket that lives in this namespace."""
        return self.call(lambda: socket.socket(family, type, proto))

    def set_offloads(self, dev: str, enabled: bool) -> None:
        """Switch checksum offload, TSO, GSO, GRO and scatter-gather on or off.

        Off makes every frame on the wire a real, fully checksummed packet of
        at most the MTU, which is what a raw-socket TCP and a software switch
        need to see.
        """
        state = "on" if enabled else "off"
        self.run(["ethtool", "-K", dev, "rx", state, "tx", state, "sg", state,
                  "tso", state, "gso", state, "gro", state])

    def set_mtu(self, dev: str, mtu: int) -> None:
        self.run(["ip", "link", "set", "dev", dev, "mtu", str(mtu)])

    def rate_limit(self, dev: str, rate_kbit: int, *, burst_bytes: int = 32_000,
                   limit_bytes: int = 100_000) -> None:
        """Shape egress of `dev` with tbf: a rate limit in front of a byte-limited drop-tail queue.

        (No netem: kernels built without it are common in CI sandboxes.)
        """
        self.run(["tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", f"{rate_kbit}kbit",
                  "burst", str(burst_bytes), "limit", str(limit_bytes)])


@dataclass(frozen=True)
class Veth:
    """One veth pair: end `a` in one namespace, end `b` in another."""

    ns_a: Namespace
    dev_a: str
    addr_a: str
    ns_b: Namespace
    dev_b: str
    addr_b: str

    def ends(self) -> tuple[tuple[Namespace, str], tuple[Namespace, str]]:
        return (self.ns_a, self.dev_a), (self.ns_b, self.dev_b)

    def set_mtu(self, mtu: int) -> None:
        for ns, dev in self.ends():
            ns.set_mtu(dev, mtu)

    def set_offloads(self, enabled: bool) -> None:
        for ns, dev in self.ends():
            ns.set_offloads(dev, enabled)


class Sandbox:
    """Owner of namespaces and processes; `close()` (or leaving `with`) removes them all."""

    def __init__(self, tag: str) -> None:
        if not tag.replace("_", "").isalnum():
            raise ValueError(f"Sandbox tag must be alphanumeric, got {tag!r}")
        self.tag = tag
        self.namespaces: list[Namespace] = []
        self.processes: list[subprocess.Popen] = []

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def namespace(self, tag: str = "ns") -> Namespace:
        """Create a namespace with a unique `p4h-<pid>-<labtag><tag><n>` name and loopback up."""
        while True:
            with _counter_lock:
                n = next(_counter)
            name = f"{PREFIX}-{os.getpid()}-{self.tag}{tag}{n}"
            if not (NETNS_DIR / name).exists():
                break
        _run(["ip", "netns", "add", name], timeout=DEFAULT_TIMEOUT)
        ns = Namespace(name)
        self.namespaces.append(ns)
        ns.run(["ip", "link", "set", "dev", "lo", "up"])
        return ns

    def attach(self, tag: str, pid: int) -> Namespace:
        """Name the network namespace of process `pid` (e.g. a Mininet node's shell) `p4h-<pid>-<labtag><tag>`.

        `close()` removes the name only; the namespace lives as long as the
        processes in it (whoever started them ends them).
        """
        name = f"{PREFIX}-{os.getpid()}-{self.tag}{tag}"
        _run(["ip", "netns", "attach", name, str(pid)], timeout=DEFAULT_TIMEOUT)
        ns = Namespace(name)
        self.namespaces.append(ns)
        return ns

    def veth(self, a: Namespace, b: Namespace, addr_a: str, addr_b: str, *, dev_a: str = "veth0",
             dev_b: str = "veth0", mtu: int = 1500, offloads: bool = False) -> Veth:
        """Join `a` and `b` with a veth pair, addresses in CIDR form ("10.0.0.1/24"), links up.

        Offloads are off by default (see `Namespace.set_offloads`).
        """
        for addr in (addr_a, addr_b):
            ipaddress.IPv4Interface(addr)  # ValueError with the bad text
        _run(["ip", "link", "add", dev_a, "netns", a.name, "type", "veth", "peer", "name", dev_b,
              "netns", b.name], timeout=DEFAULT_TIMEOUT)
        link = Veth(a, dev_a, addr_a.split("/")[0], b, dev_b, addr_b.split("/")[0])
        for (ns, dev), addr in zip(link.ends(), (addr_a, addr_b)):
            ns.run(["ip", "addr", "add", addr, "dev", dev])
            ns.set_mtu(dev, mtu)
            if not offloads:
                ns.set_offloads(dev, False)
            ns.run(["ip", "link", "set", "dev", dev, "up"])
        return link

    def start(self, ns: Namespace, args: Sequence[str], **kwargs) -> subprocess.Popen:
        """`Namespace.start`, remembered so `close()` stops it."""
        proc = ns.start(args, **kwargs)
        self.processes.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen, timeout: float = 5.0) -> int:
        status = stop_process(proc, timeout)
        if proc in self.processes:
            self.processes.remove(proc)
        return status

    def close(self) -> None:
        """Stop every process started here, then delete every namespace made (or named) here."""
        errors: list[str] = []
        for proc in list(self.processes):
            try:
                self.stop(proc)
            except subprocess.TimeoutExpired:
                errors.append(f"process {proc.pid} did not exit")
        for ns in reversed(self.namespaces):
            try:
                done = _run(["ip", "netns", "del", ns.name], timeout=DEFAULT_TIMEOUT, check=False)
            except NetnsError as exc:  # keep going: the others must still be removed
                errors.append(str(exc))
                continue
            if done.returncode != 0 and (NETNS_DIR / ns.name).exists():
                errors.append(f"{ns.name}: {done.stderr.strip()}")
        self.namespaces.clear()
        if errors:
            raise NetnsError("teardown incomplete: " + "; ".join(errors))


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)
