"""Start, drive and stop one BMv2 `simple_switch_grpc`, in the root namespace or in a netns.

The switch starts with `--no-p4`; the program arrives over P4Runtime
(`p4handoff.controller.p4runtime.P4RuntimeClient.set_pipeline`). What P4Runtime cannot
do on BMv2 goes over its Thrift runtime through `simple_switch_CLI`
(`ThriftCli`): egress queue rates and depths, and registers (BMv2's
P4Runtime server answers UNIMPLEMENTED for RegisterEntry reads and writes).

    with Bmv2Switch({1: "veth1", 2: "veth2"}, cpu_port=255, priority_queues=3,
                    log_path=Path("build/s1.log")) as sw:
        client = P4RuntimeClient(sw.grpc_addr, sw.device_id)
        sw.cli.set_queue_rate(1000, port=1)
"""
from __future__ import annotations

import itertools
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence, overload

from p4handoff.netns import Namespace, stop_process

SIMPLE_SWITCH_GRPC = "simple_switch_grpc"
SIMPLE_SWITCH_CLI = "simple_switch_CLI"
P4C = "p4c-bm2-ss"
DEFAULT_QUEUE_DEPTH = 64  # packets: simple_switch's built-in depth of every egress queue
_ids = itertools.count()
# Run as `python -c` inside the switch's namespace (gRPC sockets cannot be moved across namespaces);
# exits 0 once the server answers, non-zero (uncaught timeout) if it does not.
_GRPC_PROBE = """
import sys, grpc
if len(sys.argv) > 3:   # TLS: CA, client certificate, client key, the switch's name
    ca, cert, key = (open(p, "rb").read() for p in sys.argv[3:6])
    channel = grpc.secure_channel(sys.argv[1], grpc.ssl_channel_credentials(ca, key, cert),
                                  options=[("grpc.ssl_target_name_override", sys.argv[6])])
else:
    channel = grpc.insecure_channel(sys.argv[1])
grpc.channel_ready_future(channel).result(timeout=float(sys.argv[2]))
"""


@dataclass(frozen=True)
class SwitchTls:
    """P4Runtime over TLS, clients required to present a certificate from `ca` (mutual authentication).

    `cert`/`key`: the switch's own, for `name`; `probe_cert`/`probe_key`: a client's, for the start-up check.
    """

    ca: Path
    cert: Path
    key: Path
    name: str
    probe_cert: Path
    probe_key: Path

    def args(self) -> list[str]:
        return ["--grpc-server-ssl", "--grpc-server-cacert", str(self.ca), "--grpc-server-cert", str(self.cert),
                "--grpc-server-key", str(self.key), "--grpc-server-with-client-auth"]

    def probe_args(self) -> list[str]:
        return [str(self.ca), str(self.probe_cert), str(self.probe_key), self.name]


class Bmv2Error(RuntimeError):
    """BMv2 is missing, failed to start, or refused a runtime (Thrift) command."""


def bmv2_available() -> tuple[bool, str]:
    """(True, "") if simple_switch_grpc and simple_switch_CLI are on PATH, else (False, why) for a skip."""
    for tool in (SIMPLE_SWITCH_GRPC, SIMPLE_SWITCH_CLI):
        if shutil.which(tool) is None:
            return False, f"'{tool}' is not on PATH (BMv2 is not installed; see README, 'P4 toolchain')"
    return True, ""


def compile_p4(source: str | Path, out_dir: str | Path, include_dirs: Sequence[str | Path] = (),
               timeout: float = 600.0) -> tuple[Path, Path]:
    """Compile a v1model program with p4c-bm2-ss; returns (P4Info text file, BMv2 JSON)."""
    source, out_dir = Path(source), Path(out_dir)
    if shutil.which(P4C) is None:
        raise Bmv2Error(f"'{P4C}' (p4c for BMv2) is not on PATH; see README, 'P4 toolchain'")
    out_dir.mkdir(parents=True, exist_ok=True)
    p4info, config = out_dir / f"{source.stem}.p4info.txtpb", out_dir / f"{source.stem}.json"
    args = [P4C, "--arch", "v1model", "--std", "p4-16", "-o", str(config), "--p4runtime-files", str(p4info)]
    args += [arg for d in include_dirs for arg in ("-I", str(d))]
    try:
        done = subprocess.run([*args, str(source)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Bmv2Error(f"{P4C} {source}: not done within {timeout} s") from None
    if done.returncode != 0:
        raise Bmv2Error(f"{P4C} {source} failed (exit {done.returncode}):\n{done.stderr.strip()}")
    return p4info, config


def free_port(netns: Namespace | None = None) -> int:
    """A TCP port nobody listens on right now (in `netns`, or the root namespace)."""
    def pick() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    return netns.call(pick) if netns is not None else pick()


def _in_netns(netns: Namespace | None, args: Sequence[str]) -> list[str]:
    return ["ip", "netns", "exec", netns.name, *args] if netns is not None else list(args)


def _run(netns: Namespace | None, args: Sequence[str], timeout: float = 10.0) -> None:
    try:
        done = subprocess.run(_in_netns(netns, args), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Bmv2Error(f"{' '.join(args)}: no answer within {timeout} s") from None
    if done.returncode != 0:
        raise Bmv2Error(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")


def veth_port(switch_ifname: str, peer: Namespace, peer_ifname: str, *,
              switch_netns: Namespace | None = None, mtu: int = 9000) -> None:
    """One switch port: a veth pair, switch end in `switch_netns` (None = root), other end in `peer`.

    No addresses; IPv6 off (no router solicitations or MLD reports to
    confuse a test counting packets); offloads off (every frame is a real,
    checksummed packet); MTU 9000 by default so a tunnel header on a full
    1500-byte packet does not make the kernel drop it. Deleting `peer`
    removes the pair.
    """
    _run(switch_netns, ["ip", "link", "add", switch_ifname, "type", "veth", "peer", "name", peer_ifname,
                        "netns", peer.name])
    for netns, ifname in ((switch_netns, switch_ifname), (peer, peer_ifname)):
        prepare_port(netns, ifname, mtu)


def prepare_port(netns: Namespace | None, ifname: str, mtu: int = 9000) -> None:
    """Make an existing interface fit to be a switch port or face one: IPv6 off, MTU, offloads off, up."""
    _run(netns, ["sysctl", "-q", "-w", f"net.ipv6.conf.{ifname}.disable_ipv6=1"])
    _run(netns, ["ip", "link", "set", "dev", ifname, "mtu", str(mtu)])
    _run(netns, ["ethtool", "-K", ifname, "rx", "off", "tx", "off", "sg", "off", "tso", "off",
                 "gso", "off", "gro", "off"])
    _run(netns, ["ip", "link", "set", "dev", ifname, "up"])


class ThriftCli:
    """`simple_switch_CLI --thrift-port N`: one process per call, commands on stdin."""

    def __init__(self, thrift_port: int, netns: Namespace | None = None, timeout: float = 30.0) -> None:
        self.thrift_port = thrift_port
        self.netns = netns
        self.timeout = timeout

    def run(self, commands: Sequence[str]) -> list[str]:
        """Run the commands in one CLI session; returns each command's output. Bmv2Error on any refusal."""
        script = shutil.which(SIMPLE_SWITCH_CLI)
        if script is None:
            raise Bmv2Error(f"'{SIMPLE_SWITCH_CLI}' is not on PATH (BMv2 is not installed)")
        # The script's `#!/usr/bin/env python3` may find an interpreter without the `thrift` module
        # (e.g. a pyenv shim); ours sees the system site-packages where thrift and BMv2's modules are.
        args = _in_netns(self.netns, [sys.executable, script, "--thrift-port", str(self.thrift_port)])
        try:
            done = subprocess.run(args, input="\n".join(commands) + "\n", capture_output=True, text=True,
                                  timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise Bmv2Error(f"{SIMPLE_SWITCH_CLI} on Thrift port {self.thrift_port}: "
                            f"no answer within {self.timeout} s") from None
        # The CLI prints "RuntimeCmd: " before reading each command; the text between prompts is its output.
        outputs = [part.strip() for part in done.stdout.split("RuntimeCmd:")[1:]][:len(commands)]
        if done.returncode != 0 or len(outputs) < len(commands):
            raise Bmv2Error(f"{SIMPLE_SWITCH_CLI} on Thrift port {self.thrift_port} failed "
                            f"(exit {done.returncode}): {(done.stderr or done.stdout).strip()[-2000:]}")
        for command, output in zip(commands, outputs):
            if re.search(r"^(Error|Invalid|Unknown|\*\*\*)", output, re.M) or "exception" in output.lower():
                raise Bmv2Error(f"{SIMPLE_SWITCH_CLI} refused {command!r}: {output}")
        return outputs

    def set_queue_rate(self, pps: int, port: int | None = None, priority: int | None = None) -> None:
        """Egress queue rate in packets/s (0 = unlimited) of every queue, one port, or one priority of a port.

        Each priority queue of a port is paced on its own at this rate; it is
        not a shared link rate.
        """
        self.run([_queue_command("set_queue_rate", pps, port, priority)])

    def set_queue_depth(self, packets: int, port: int | None = None, priority: int | None = None) -> None:
        """Egress queue depth in packets of every queue, one port, or one priority of a port."""
        self.run([_queue_command("set_queue_depth", packets, port, priority)])

    @overload
    def register_read(self, name: str) -> list[int]: ...

    @overload
    def register_read(self, name: str, index: int) -> int: ...

    @overload
    def register_read(self, name: str, index: int | None) -> int | list[int]: ...

    def register_read(self, name: str, index: int | None = None) -> int | list[int]:
        """One cell of register `name`, or all its cells as a list."""
        output = self.run([f"register_read {name}" + ("" if index is None else f" {index}")])[0]
        _, _, values = output.rpartition("=")
        try:
            cells = [int(v) for v in values.replace(",", " ").split()]
        except ValueError:
            raise Bmv2Error(f"register_read {name}: unexpected output {output!r}") from None
        if index is not None:
            if len(cells) != 1:
                raise Bmv2Error(f"register_read {name} {index}: unexpected output {output!r}")
            return cells[0]
        return cells

    def register_write(self, name: str, index: int, value: int) -> None:
        self.run([f"register_write {name} {index} {value}"])

    def register_reset(self, name: str) -> None:
        """Set every cell of register `name` to zero."""
        self.run([f"register_reset {name}"])


def _queue_command(command: str, value: int, port: int | None, priority: int | None) -> str:
    if priority is not None and port is None:
        raise ValueError(f"{command}: a priority needs a port")
    return " ".join(str(v) for v in (command, value, port, priority) if v is not None)


class Bmv2Switch:
    """One simple_switch_grpc process: started with `start()` (or `with`), stopped by its PID."""

    def __init__(self, ports: Mapping[int, str], *, device_id: int = 0, grpc_port: int | None = None,
                 thrift_port: int | None = None, cpu_port: int | None = None, priority_queues: int = 1,
                 netns: Namespace | None = None, log_path: str | Path | None = None,
                 log_level: str | None = None, pcap_dir: str | Path | None = None,
                 grpc_socket: str | Path | None = None, start_timeout: float = 30.0,
                 tls: SwitchTls | None = None) -> None:
        for port, ifname in ports.items():
            if not (isinstance(port, int) and 0 <= port < 511) or not ifname:
                raise ValueError(f"bad port mapping {port!r} -> {ifname!r}: ports are 0..510, names non-empty")
        if cpu_port is not None and (cpu_port in ports or not 0 < cpu_port < 512):
            raise ValueError(f"cpu_port {cpu_port} must be 1..511 and not a data port")
        if not 1 <= priority_queues <= 32:
            raise ValueError(f"priority_queues must be 1..32 (BMv2's limit), got {priority_queues}")
        self.ports = dict(ports)
        self.device_id = device_id
        self.netns = netns
        self.grpc_socket = Path(grpc_socket) if grpc_socket is not None else None
        self.grpc_port = grpc_port if grpc_port is not None or grpc_socket is not None else free_port(netns)
        self.thrift_port = thrift_port if thrift_port is not None else free_port(netns)
        self.cpu_port = cpu_port
        self.priority_queues = priority_queues
        self.log_path = Path(log_path) if log_path else Path(tempfile.gettempdir()) / (
            f"p4h-{os.getpid()}-bmv2-{next(_ids)}.log")
        self.log_level = log_level
        self.pcap_dir = pcap_dir
        self.start_timeout = start_timeout
        self.tls = tls
        self.cli = ThriftCli(self.thrift_port, netns)
        self.proc: subprocess.Popen | None = None

    @property
    def grpc_addr(self) -> str:
        """Where P4Runtime answers: a Unix socket (from any namespace) or 127.0.0.1 inside `netns`."""
        if self.grpc_socket is not None:
            return f"unix:{self.grpc_socket}"
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        """The simple_switch_grpc command line this switch runs."""
        args = [SIMPLE_SWITCH_GRPC, "--no-p4", "--device-id", str(self.device_id),
                "--thrift-port", str(self.thrift_port)]
        for port, ifname in sorted(self.ports.items()):
            args += ["-i", f"{port}@{ifname}"]
        if self.log_level:
            args += ["--log-console", "-L", self.log_level]
        if self.pcap_dir:
            args += ["--pcap", str(self.pcap_dir)]
        args += ["--", "--grpc-server-addr", self.grpc_addr,
                 "--priority-queues", str(self.priority_queues)]
        if self.cpu_port is not None:
            args += ["--cpu-port", str(self.cpu_port)]
        if self.tls is not None:
            args += self.tls.args()
        return args

    def start(self) -> "Bmv2Switch":
        """Start the switch and wait until its gRPC server answers; Bmv2Error (with the log) if it does not."""
        if self.alive:
            return self
        available, reason = bmv2_available()
        if not available:
            raise Bmv2Error(reason)
        for port, ifname in self.ports.items():  # BMv2 would start anyway, silently without the port
            try:
                _run(self.netns, ["ip", "link", "show", "dev", ifname])
            except Bmv2Error:
                where = f"namespace {self.netns.name}" if self.netns else "the root namespace"
                raise Bmv2Error(f"port {port}: interface {ifname!r} does not exist in {where}") from None
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            if self.netns is not None:
                self.proc = proc = self.netns.start(self.command(), stdout=log, stderr=subprocess.STDOUT)
            else:
                self.proc = proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                                    start_new_session=True)
        try:
            self._wait_for_grpc(proc)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_for_grpc(self, proc: subprocess.Popen) -> None:
        """Until the switch's gRPC server answers; Bmv2Error if `proc` (the switch) exits or it never does."""
        tls = self.tls.probe_args() if self.tls is not None else []
        probe = subprocess.Popen(_in_netns(self.netns, [sys.executable, "-c", _GRPC_PROBE, self.grpc_addr,
                                                        str(self.start_timeout), *tls]),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + self.start_timeout + 5.0
        try:
            while probe.poll() is None and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            if probe.poll() is None:
                probe.kill()
                probe.wait()
        if proc.poll() is not None:
            raise Bmv2Error(f"{SIMPLE_SWITCH_GRPC} exited with status {proc.returncode} during start-up; "
                            f"log {self.log_path}:\n{self.log_tail()}")
        if probe.returncode != 0:
            raise Bmv2Error(f"{SIMPLE_SWITCH_GRPC} (pid {proc.pid}): gRPC at {self.grpc_addr} did not answer "
                            f"within {self.start_timeout} s; log {self.log_path}:\n{self.log_tail()}")

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 5.0) -> int | None:
        """Stop the switch by its PID (TERM, then KILL); returns its exit status."""
        if self.proc is None:
            return None
        return stop_process(self.proc, timeout)

    def __enter__(self) -> "Bmv2Switch":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
