"""A gateway and two base stations on BMv2, in throwaway namespaces, with raw-frame hosts.

For the controller's integration tests, its benchmark (bench/controller.py) and
`p4handoff ctl testbed` (a standalone one to try the controller by hand):

    fab  namespace: gw, bs1, bs2 (simple_switch_grpc, --cpu-port 255, 2 priority
         queues), the switch-to-switch veth pairs, and the controller daemon
         (`p4handoff ctl run`, a subprocess: the real command line)
    ch   namespace: the correspondent, `eth0` on gw port 1
    mh   namespace: the mobile hosts' radios, `cell1` on bs1 port 1, `cell2` on bs2 port 1

Hosts have no IP configuration: tests send and receive whole frames on
AF_PACKET sockets (`HostPort`), so the kernel never answers for them. Every
name is `p4h-<pid>-...` (p4handoff.netns.Sandbox); `close()` stops every process
by its PID and deletes every namespace.
"""
from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from p4handoff.controller.control import request
from p4handoff.topo.launch import launch_controller
from p4handoff.controller.registration import RegistrationReply, RegistrationRequest
from p4handoff.controller.registration_auth import sign, verify_reply
from p4handoff.keyfile import Keys, write_keys
from p4handoff.controller.packets import PacketError, ethernet, parse_ipv4, parse_udp, split_ethernet, udp_packet
from p4handoff.hosts.net.rawio import SOL_PACKET
from p4handoff.bmv2 import Bmv2Switch, SwitchTls, veth_port
from p4handoff.lab_ca import TlsFiles, lab_certs
from p4handoff.netns import Sandbox, Namespace
from p4handoff.wire import UDP_PORT_MIP_REGISTRATION, load_constants
from p4handoff.ntptime import ntp_time

CPU_PORT = load_constants()["CPU_PORT"]
QUEUE_DEPTH = 4096   # BMv2's default of 64 would drop a burst of punts (CPU port) behind everyone's back
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
PACKET_STATISTICS = 6
HOST_SOCKET_BUFFER = 8 << 20    # a 200-frame flush must not overflow the test's own socket (default ~200 KB)
CH_MAC, CH_IP = "02:00:00:00:10:01", "10.0.0.1"
GATEWAY_MAC, GATEWAY_IP = "02:00:00:00:01:fe", "10.0.1.254"
SWITCH_MAC = {"gw": "02:00:00:00:00:01", "bs1": "02:00:00:00:00:02", "bs2": "02:00:00:00:00:03"}
SWITCH_IP = {"gw": "192.168.100.1", "bs1": "192.168.100.2", "bs2": "192.168.100.3"}
CELL_IFACE = {"bs1": "cell1", "bs2": "cell2"}
BUFSVC_IP, BUFSVC_MAC, BUFSVC_CONTROL = "192.168.100.9", "02:00:00:00:00:09", "127.0.0.1:50999"
BUFSVC_IFACE = {"gw": "sg", "bs1": "s1", "bs2": "s2"}     # the service's end of each switch's port 4


def mh_name(i: int) -> str:
    return f"mh{i + 1}"


def mh_mac(i: int) -> str:
    return f"02:aa:00:00:{(i + 1) >> 8:02x}:{(i + 1) & 0xFF:02x}"


def mh_ip(i: int) -> str:
    n = i + 1
    return f"10.0.{1 + n // 250}.{n % 250 + 1}"      # never .254 (the anycast gateway)


def cell_ip(i: int, bs: str) -> str:
    return f"10.{10 + int(bs[-1])}.{(i + 1) >> 8}.{(i + 1) & 0xFF}"


class HostPort:
    """An AF_PACKET socket on one interface of a host namespace: send frames, collect received ones."""

    def __init__(self, ns: Namespace, iface: str) -> None:
        self.iface = iface
        self.sock = ns.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, HOST_SOCKET_BUFFER)
        self.sock.bind((iface, 0))
        self.sock.settimeout(0.05)
        self._drops = 0

    def drops(self) -> int:
        """Frames the kernel dropped at this socket since it opened (its buffer was full): lost by the test's
        own reader, not by the network, so a test can tell the two apart."""
        _, dropped = struct.unpack("II", self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
        self._drops += dropped        # reading the statistics resets them
        return self._drops

    def send(self, frame: bytes) -> None:
        self.sock.send(frame)

    def receive(self, duration: float, until: Callable[[list[bytes]], bool] | None = None) -> list[bytes]:
        """Frames received (not sent) during `duration` seconds, or until `until(frames)` holds."""
        frames: list[bytes] = []
        deadline = time.monotonic() + duration
        while time.monotonic() < deadline:
            try:
                data, addr = self.sock.recvfrom(65535)
            except socket.timeout:
                continue
            if addr[2] != PACKET_OUTGOING:
                frames.append(data)
                if until is not None and until(frames):
                    break
        return frames

    def drain(self) -> None:
        self.receive(0.05)

    def close(self) -> None:
        self.sock.close()


class Collector:
    """Every frame a host port receives, with its arrival time, on a thread, until `stop()`."""

    def __init__(self, port: HostPort) -> None:
        self.port = port
        self.timed: list[tuple[float, bytes]] = []     # (time.monotonic() at arrival, frame)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                got = self.port.receive(0.05)
            except OSError:              # the testbed closed the socket (a failing test's teardown)
                return
            now = time.monotonic()
            self.timed += [(now, f) for f in got]

    def wait(self, done: Callable[[list[bytes]], bool], timeout: float) -> bool:
        """Poll until `done(frames so far)` holds (True) or `timeout` s pass (False): a loaded machine flushes late."""
        deadline = time.monotonic() + timeout
        while not done([f for _, f in self.timed]):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def stop(self) -> list[bytes]:
        """Stop collecting; the frames in arrival order (their times stay in `timed`)."""
        self._stop.set()
        self._t.join(5)
        return [f for _, f in self.timed]


@dataclass
class Udp:
    src: str
    dst: str
    dscp: int
    sport: int
    dport: int
    payload: bytes


def parse_udp_frame(frame: bytes) -> Udp | None:
    try:
        _, _, pkt = split_ethernet(frame)
        ip = parse_ipv4(pkt)
        sport, dport, payload = parse_udp(ip)
    except PacketError:
        return None
    return Udp(ip.src, ip.dst, ip.dscp, sport, dport, payload)


class LogTail:
    """A JSON-lines log read as it grows: each call parses only the lines added since the last one (a benchmark
    polling a 1,000-MH controller's log every 20 ms re-parsed all of it each time: most of a core, taken from
    the daemon and the switches it measures). A file replaced or truncated is read again from its start."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._inode: int | None = None
        self._offset = 0
        self._rows: list[dict[str, Any]] = []

    def rows(self) -> list[dict[str, Any]]:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._inode, self._offset, self._rows = None, 0, []
            return []
        if st.st_ino != self._inode or st.st_size < self._offset:
            self._inode, self._offset, self._rows = st.st_ino, 0, []
        if st.st_size > self._offset:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
            # the daemon may be writing a line as we read: only lines it has finished (newline) count
            done = data[:data.rfind(b"\n") + 1]
            self._offset += len(done)
            self._rows += [json.loads(line) for line in done.splitlines() if line.strip()]
        return self._rows

    def events(self, event: str | None = None) -> list[dict[str, Any]]:
        """The rows so far whose `event` is `event` (None: all)."""
        return [r for r in self.rows() if event is None or r["event"] == event]


class Testbed:
    """Build with `Testbed(workdir, n_mobiles)`, then `start()`; always `close()`."""

    __test__ = False    # not a pytest test class despite the name

    def __init__(self, workdir: Path, n_mobiles: int = 2, *, hold_time_ms: int = 300,
                 per_mh_packets: int = 64, aqm: dict[str, Any] | None = None, grpc_sockets: bool = False,
                 authenticate: bool = True, tls: bool = True, punt_budget: dict[str, int] | None = None,
                 buffer_service: bool = False, packet_out_window: int | None = None,
                 service_window: int | None = None) -> None:
        """`grpc_sockets`: the switches serve P4Runtime on Unix sockets in `workdir` (reachable from any
        namespace, so a controller started by hand in the root namespace reaches them), else on
        127.0.0.1 ports inside the fabric namespace. `authenticate`: a key file (`keys.yaml` in `workdir`)
        for every host, named by the description, and the MHs sign their registrations (False: the
        description says `auth: none`). `tls`: a lab CA in
        `workdir/pki` (p4handoff.lab_ca), P4Runtime over TLS with mutual authentication. `buffer_service`: the
        buffer path is the buffer service (`p4handoff ctl bufsvc`, in the fabric namespace) on port 4 of every
        switch, started before the controller; else the controller buffers (packet-in / packet-out).
        `packet_out_window`: the description's `controller.packet_out_window` (None: its default, 32; half the
        testbed's egress depth, 2,048, lost 10-12 % of 64-MH groups' buffered packets against 0.9 % at 32, and
        was not faster: docs/controller.md, "The third round"). `service_window`: the buffer service's
        `window` (None: the description's default, 32)."""
        self.workdir = Path(workdir).resolve()      # the description names files in it: relative to itself otherwise
        self.n_mobiles = n_mobiles
        self.sandbox = Sandbox("ctl")
        self.fab = self.sandbox.namespace("fab")
        self.ch_ns = self.sandbox.namespace("ch")
        self.mh_ns = self.sandbox.namespace("mh")
        self.socket_path = str(self.workdir / "ctl.sock")
        self.log_path = self.workdir / "controller.log"
        self.network_path = self.workdir / "network.yaml"
        self.switches: dict[str, Bmv2Switch] = {}
        self.controller: subprocess.Popen | None = None
        self.hosts: dict[str, HostPort] = {}
        self._aqm = aqm or {"mode": "mred", "limit": 64, "min_th": 16, "max_th": 48, "max_p": 0.1,
                            "w_q": 0.001953125}
        self._hold = hold_time_ms
        self._per_mh = per_mh_packets
        self._grpc_sockets = grpc_sockets
        self._packet_out_window = packet_out_window
        self._service_window = service_window
        self._punt_budget = punt_budget         # the description's punt_budget (None: its default)
        self.buffer_service = buffer_service
        self.bufsvc: subprocess.Popen | None = None
        self.bufsvc_log = self.workdir / "bufsvc.log"
        self.keys_path = self.workdir / "keys.yaml"
        self.keys: Keys | None = None
        if authenticate:
            self.workdir.mkdir(parents=True, exist_ok=True)
            self.keys = write_keys(self.keys_path, [mh_name(i) for i in range(n_mobiles)] + ["ch"]
                                   + (["bufsvc"] if buffer_service else []))
        self._idents: dict[tuple[int, int], int] = {}     # (MH, the caller's ident) -> the identification sent
        self._last_ident: dict[int, int] = {}              # MH -> the highest identification it sent
        self._tails: dict[Path, LogTail] = {}               # log path -> its reader (log_events_of)
        self.pki = self.workdir / "pki"
        self.tls: dict[str, SwitchTls] = {}
        self.controller_tls: TlsFiles | None = None
        if tls:
            self.controller_tls, servers = lab_certs(self.pki, SWITCH_IP)
            self.tls = {name: SwitchTls(f.ca, f.cert, f.key, name, self.controller_tls.cert, self.controller_tls.key)
                        for name, f in servers.items()}

    # ---------------------------------------------------------------- topology

    def start(self) -> "Testbed":
        self.workdir.mkdir(parents=True, exist_ok=True)
        veth_port("g1", self.ch_ns, "eth0", switch_netns=self.fab)
        veth_port("a1", self.mh_ns, "cell1", switch_netns=self.fab)
        veth_port("b1", self.mh_ns, "cell2", switch_netns=self.fab)
        veth_port("g2", self.fab, "a2", switch_netns=self.fab)
        veth_port("g3", self.fab, "b2", switch_netns=self.fab)
        veth_port("a3", self.fab, "b3", switch_netns=self.fab)
        ports = {"gw": {1: "g1", 2: "g2", 3: "g3"}, "bs1": {1: "a1", 2: "a2", 3: "a3"},
                 "bs2": {1: "b1", 2: "b2", 3: "b3"}}
        if self.buffer_service:
            for name, (port4, peer) in {"gw": ("g4", "sg"), "bs1": ("a4", "s1"), "bs2": ("b4", "s2")}.items():
                veth_port(port4, self.fab, peer, switch_netns=self.fab)
                ports[name][4] = port4
        for name, mapping in ports.items():
            sock = {"grpc_socket": self.workdir / f"{name}.grpc"} if self._grpc_sockets else {}
            self.switches[name] = self._switch(name, mapping, self.workdir / f"{name}.log", **sock)
        self.network_path.write_text(yaml.safe_dump(self.description()))
        self.hosts = {"ch": HostPort(self.ch_ns, "eth0"), "cell1": HostPort(self.mh_ns, "cell1"),
                      "cell2": HostPort(self.mh_ns, "cell2")}
        return self

    def description(self) -> dict[str, Any]:
        def sw(name: str, role: str, ports: list[dict]) -> dict:
            d = {"name": name, "role": role, "grpc": self.switches[name].grpc_addr, "device_id": 0,
                 "address": SWITCH_IP[name], "mac": SWITCH_MAC[name], "ports": ports}
            if role == "bs":
                d["cell_id"] = int(name[-1])
            return d
        access = {"number": 1, "role": "access", "aqm": self._aqm}
        buf = [{"number": 4, "role": "buffer"}] if self.buffer_service else []
        svc = {"buffer_service": {**({"window": self._service_window} if self._service_window else {}),
                                  "address": BUFSVC_IP, "mac": BUFSVC_MAC, "control": BUFSVC_CONTROL,
                                  "spool": str(self.workdir / "bufsvc.spool"), "interfaces": BUFSVC_IFACE}}
        return {**(svc if self.buffer_service else {}),
            "controller": {"election_id": 10, "socket": self.socket_path, "hold_time_ms": self._hold,
                           **({"packet_out_window": self._packet_out_window} if self._packet_out_window else {}),
                           **({"keys": str(self.keys_path)} if self.keys is not None else {"auth": "none"}),
                           **({"tls": {"ca": str(self.controller_tls.ca), "cert": str(self.controller_tls.cert),
                                       "key": str(self.controller_tls.key)}} if self.controller_tls else {})},
            "buffer": {"per_mh_packets": self._per_mh, "total_packets": max(4096, self._per_mh * self.n_mobiles)},
            **({"punt_budget": self._punt_budget} if self._punt_budget else {}),
            "access_gateway": {"address": GATEWAY_IP, "mac": GATEWAY_MAC},
            "switches": [
                sw("gw", "gateway", [{"number": 1, "role": "core"}, {"number": 2, "role": "peer", "peer": "bs1"},
                                     {"number": 3, "role": "peer", "peer": "bs2"}, *buf]),
                sw("bs1", "bs", [access, {"number": 2, "role": "peer", "peer": "gw"},
                                 {"number": 3, "role": "peer", "peer": "bs2"}, *buf]),
                sw("bs2", "bs", [access, {"number": 2, "role": "peer", "peer": "gw"},
                                 {"number": 3, "role": "peer", "peer": "bs1"}, *buf]),
            ],
            "fixed_hosts": [{"name": "ch", "address": CH_IP, "mac": CH_MAC, "switch": "gw", "port": 1}],
            "mobile_hosts": [{"name": mh_name(i), "address": mh_ip(i), "mac": mh_mac(i), "correspondents": ["ch"],
                              "cell_addresses": {"bs1": cell_ip(i, "bs1"), "bs2": cell_ip(i, "bs2")}}
                             for i in range(self.n_mobiles)],
        }

    def restart_switch(self, name: str) -> None:
        """Kill one switch by its PID and start a fresh one on the same ports and gRPC port."""
        old = self.switches[name]
        old.stop()
        self.switches[name] = self._switch(name, old.ports, self.workdir / f"{name}-restart.log",
                                           grpc_port=old.grpc_port, thrift_port=old.thrift_port,
                                           grpc_socket=old.grpc_socket)

    def _switch(self, name: str, ports: dict[int, str], log: Path, **kwargs: Any) -> Bmv2Switch:
        sw = Bmv2Switch(ports, netns=self.fab, cpu_port=CPU_PORT, priority_queues=2, log_path=log,
                        tls=self.tls.get(name), **kwargs).start()
        sw.cli.set_queue_depth(QUEUE_DEPTH)        # every port and priority, the CPU port included
        return sw

    # ---------------------------------------------------------------- controller

    def start_bufsvc(self, timeout: float = 20.0) -> subprocess.Popen:
        """`p4handoff ctl bufsvc` in the fabric namespace; returns once it listens (its log says so)."""
        mark = len(self.log_events_of(self.bufsvc_log, "bufsvc_start"))
        args = [sys.executable, "-m", "p4handoff", "ctl", "bufsvc", "--network", str(self.network_path),
                "--log", str(self.bufsvc_log)]
        with open(self.workdir / "bufsvc.stderr", "ab") as out:
            self.bufsvc = self.sandbox.start(self.fab, args, stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        while len(self.log_events_of(self.bufsvc_log, "bufsvc_start")) <= mark:
            if self.bufsvc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"buffer service not listening: {(self.workdir / 'bufsvc.stderr').read_text()}")
            time.sleep(0.1)
        return self.bufsvc

    def stop_bufsvc(self, kill: bool = False) -> None:
        proc, self.bufsvc = self.bufsvc, None
        if proc is None:
            return
        if kill:
            proc.kill()
            proc.wait(10)
            self.sandbox.processes.remove(proc)
        else:
            self.sandbox.stop(proc, timeout=10)

    def start_controller(self, network: Path | None = None, timeout: float = 60.0,
                         profile: Path | None = None) -> subprocess.Popen:
        """`p4handoff ctl run` in the fabric namespace; returns once it serves with every switch up
        (the buffer service first, if the testbed has one and it is not running); `profile`: its cProfile
        stats are written there when it stops."""
        if self.buffer_service and self.bufsvc is None:
            self.start_bufsvc()
        self.controller = launch_controller(network or self.network_path, socket_path=self.socket_path,
                                            log=self.log_path, stderr=self.workdir / "controller.stderr",
                                            sandbox=self.sandbox, netns=self.fab, timeout=timeout,
                                            profile=profile)
        return self.controller

    def stop_controller(self, kill: bool = False) -> int | None:
        proc, self.controller = self.controller, None
        if proc is None:
            return None
        if kill:
            proc.kill()
            code = proc.wait(10)
            self.sandbox.processes.remove(proc)
            return code
        return self.sandbox.stop(proc, timeout=10)

    def ctl(self, body: dict[str, Any]) -> dict[str, Any]:
        return request(self.socket_path, body)

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0) -> dict[str, Any]:
        """Poll `status` until `predicate(status)` holds."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.ctl({"cmd": "status", "counters": False})    # no switch reads: cheap to poll
            if predicate(status):
                return status
            if time.monotonic() > deadline:
                raise TimeoutError(f"status condition not reached within {timeout} s: "
                                   f"{json.dumps(status)[:2000]}")
            time.sleep(0.05)

    def mh_status(self, i: int) -> dict[str, Any]:
        return next(m for m in self.ctl({"cmd": "status", "counters": False})["mobile_hosts"]
                    if m["mh"] == mh_name(i))

    def log_events(self, event: str | None = None) -> list[dict[str, Any]]:
        return self.log_events_of(self.log_path, event)

    def log_events_of(self, path: Path, event: str | None = None) -> list[dict[str, Any]]:
        """Events of one of this testbed's logs, read as it grows (one LogTail per log, gone with the testbed)."""
        return self._tails.setdefault(Path(path), LogTail(Path(path))).events(event)

    # ---------------------------------------------------------------- hosts

    def register(self, i: int, bs: str, ident: int, *, lifetime: int = 0xFFFF, care_of: str | None = None,
                 flags: int = 0, wait_reply: float = 3.0) -> RegistrationReply | None:
        """MH `i` sends a registration out of its radio in `bs`'s cell; returns the reply (None: none came).

        `ident` orders the caller's registrations: with authentication on, each new `ident` of an MH is sent
        as an NTP timestamp of now (above the MH's previous one), and an `ident` given again is sent as the
        same identification (a replay), signed with the MH's key.
        """
        port = self.hosts[CELL_IFACE[bs]]
        host_key = self.keys.get(mh_name(i)) if self.keys is not None else None
        if host_key is not None:
            ident = self._idents.setdefault((i, ident), max(ntp_time(time.time()), self._last_ident.get(i, 0) + 1))
            self._last_ident[i] = max(self._last_ident.get(i, 0), ident)
        req = RegistrationRequest(mh_ip(i), care_of or mh_ip(i), SWITCH_IP["gw"], lifetime, ident, flags)
        src = care_of or mh_ip(i)
        payload = sign(req.encode(), host_key) if host_key is not None else req.encode()
        frame = ethernet("ff:ff:ff:ff:ff:ff", mh_mac(i),
                         udp_packet(src, "255.255.255.255", UDP_PORT_MIP_REGISTRATION, UDP_PORT_MIP_REGISTRATION,
                                    payload))
        port.send(frame)
        if wait_reply <= 0:
            return None

        def is_reply(frames: list[bytes]) -> bool:
            u = parse_udp_frame(frames[-1])
            return u is not None and u.sport == UDP_PORT_MIP_REGISTRATION and u.dst == src
        got = [parse_udp_frame(f) for f in port.receive(wait_reply, is_reply)]
        replies = [u for u in got if u is not None and u.sport == UDP_PORT_MIP_REGISTRATION and u.dst == src]
        if not replies:
            return None
        if host_key is not None and (why := verify_reply(replies[-1].payload, host_key)):
            raise RuntimeError(f"registration reply to {mh_name(i)} not authenticated: {why}")
        return RegistrationReply.decode(replies[-1].payload)

    def data_frame(self, i: int, seq: int, dscp: int = 0, dst: str | None = None) -> bytes:
        """A UDP datagram from the correspondent to MH `i` carrying `seq` (first 4 payload bytes)."""
        pkt = udp_packet(CH_IP, dst or mh_ip(i), 5001, 5001, seq.to_bytes(4, "big") + bytes(60), dscp)
        return ethernet(SWITCH_MAC["gw"], CH_MAC, pkt)

    def close(self) -> None:
        for h in self.hosts.values():
            h.close()
        self.hosts.clear()
        if self.controller is not None:
            self.stop_controller()
        for sw in self.switches.values():
            sw.stop()
        self.sandbox.close()


def received_seqs(frames: list[bytes], dst: str) -> list[tuple[int, int]]:
    """(seq, dscp) of the correspondent's datagrams to `dst`, in arrival order."""
    out = []
    for f in frames:
        u = parse_udp_frame(f)
        if u is not None and u.dst == dst and u.dport == 5001 and len(u.payload) >= 4:
            out.append((int.from_bytes(u.payload[:4], "big"), u.dscp))
    return out
