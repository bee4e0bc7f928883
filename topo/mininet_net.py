"""The lab's network as Mininet builds it: hosts, BMv2 switches and the links between them.

Every node — each host and each BMv2 switch — is a Mininet node in a
network namespace of its own (`Mininet(controller=None)`, no Open vSwitch).
Its namespace is also given an `ip netns` name (`p4h-<pid>-lab<node>`,
see `p4handoff.netns.Sandbox.attach`), so the rest of the lab runs tools,
raw sockets and processes in it the same way whether a node came from
Mininet or not, and a user can `ip netns exec` into a running lab.

`P4Switch` is `simple_switch_grpc` as a Mininet switch. It serves
P4Runtime on a Unix socket: the controller runs in the root namespace
(as Mininet's controllers do) and reaches every switch through the file
system, with no management network. Thrift (queue rates) stays inside the
switch's namespace and is driven there.
"""
from __future__ import annotations

import importlib.util
import itertools
import os
import shutil
import signal
from pathlib import Path
from typing import Any, Mapping

from p4handoff.bmv2 import Bmv2Switch, SwitchTls, prepare_port
from p4handoff.netns import Sandbox, Namespace


def mininet_available() -> tuple[bool, str]:
    """(True, "") when Mininet can build a network here, else (False, what is missing)."""
    if importlib.util.find_spec("mininet") is None:   # Debian's `mininet` package
        return False, "Mininet's Python package is not installed (apt install mininet)"
    if shutil.which("mnexec") is None:
        return False, "'mnexec' is not on PATH (apt install mininet)"
    return True, ""


def _switch_class() -> type:
    """P4Switch, defined on first use so importing this module does not need Mininet."""
    from mininet.node import Switch

    class P4Switch(Switch):
        """simple_switch_grpc in its own namespace; P4Runtime on a Unix socket, priority queues on."""

        def __init__(self, name: str, *, bmv2_ports: Mapping[int, str], grpc_socket: Path, log_path: Path,
                     cpu_port: int, priority_queues: int = 2, tls: SwitchTls | None = None, **params: Any) -> None:
            params["inNamespace"] = True    # Mininet passes its network-wide default (root namespace)
            super().__init__(name, **params)
            self.bmv2_ports = dict(bmv2_ports)
            self.grpc_socket = grpc_socket
            self.log_path = log_path
            self.cpu_port = cpu_port
            self.priority_queues = priority_queues
            self.tls = tls
            self.netns: Namespace | None = None     # set by LabNet once the namespace has its name
            self.bmv2: Bmv2Switch | None = None

        def start(self, controllers: list) -> None:
            """Start BMv2 on the ports, wait until P4Runtime answers (Bmv2Error with its log if not)."""
            assert self.netns is not None, "LabNet names the namespace before starting"
            self.bmv2 = Bmv2Switch(self.bmv2_ports, netns=self.netns, cpu_port=self.cpu_port,
                                   priority_queues=self.priority_queues, grpc_socket=self.grpc_socket,
                                   log_path=self.log_path, tls=self.tls).start()

        def connected(self) -> bool:
            return self.bmv2 is not None and self.bmv2.alive

        def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 (Mininet's signature)
            if self.bmv2 is not None:
                self.bmv2.stop()
            super().stop(deleteIntfs)

    return P4Switch


class LabNet:
    """A Mininet network whose nodes also have `ip netns` names; `stop()` undoes everything.

    Build with `host()`, `switch()`, `link()` and `bridge()`, then
    `start()` (BMv2 starts in every switch). `stop()` stops the switches by
    their PIDs, deletes the links and ends every node's shell (Mininet's
    own teardown, which signals only the processes it started).
    """

    def __init__(self, sandbox: Sandbox, mtu: int = 9000) -> None:
        ok, reason = mininet_available()
        if not ok:
            raise RuntimeError(reason)
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        setLogLevel("warning")
        self.sandbox = sandbox
        self.mtu = mtu
        self.net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False, autoStaticArp=False,
                           waitConnected=False, cleanup=False)
        self.namespaces: dict[str, Namespace] = {}
        self._switch_cls = _switch_class()

    def host(self, name: str) -> Namespace:
        """A Mininet host (no addresses: the lab sets them) and its namespace."""
        node = self.net.addHost(name, ip=None)
        return self._name(node)

    def switch(self, name: str, ports: Mapping[int, str], *, grpc_socket: Path, log_path: Path,
               cpu_port: int, tls: SwitchTls | None = None) -> Namespace:
        """A P4Switch serving `ports` (BMv2 port number -> interface in its namespace) once started."""
        dpid = f"{len(self.net.switches) + 1:x}"
        node = self.net.addSwitch(name, cls=self._switch_cls, dpid=dpid, bmv2_ports=ports, grpc_socket=grpc_socket,
                                  log_path=log_path, cpu_port=cpu_port, tls=tls)
        return self._name(node)

    def _name(self, node: Any) -> Namespace:
        ns = self.sandbox.attach(node.name, node.pid)
        ns.run(["ip", "link", "set", "dev", "lo", "up"])     # Mininet does this for hosts only; Thrift needs it
        node.netns = ns
        self.namespaces[node.name] = ns
        return ns

    def link(self, a: str, a_if: str, b: str, b_if: str) -> None:
        """A veth pair between node `a` (interface `a_if`) and node `b` (`b_if`), which may be the same node.

        Both ends: IPv6 off, offloads off, the lab's MTU, up (`p4handoff.bmv2.prepare_port`).
        """
        from mininet.link import Link
        na, nb = self.net.get(a), self.net.get(b)
        pa = na.newPort()
        pb = pa + 1 if nb is na else nb.newPort()   # Mininet would number both ends of a loop alike
        self.net.addLink(na, nb, port1=pa, port2=pb, intfName1=a_if, intfName2=b_if, cls=Link)
        prepare_port(self.namespaces[a], a_if, self.mtu)
        prepare_port(self.namespaces[b], b_if, self.mtu)

    def bridge(self, node: str, name: str) -> None:
        """A Linux bridge in `node` (a cell's shared medium), up; `enslave` gives it ports."""
        ns = self.namespaces[node]
        ns.run(["ip", "link", "add", name, "type", "bridge"])
        ns.run(["ip", "link", "set", name, "up"])

    def enslave(self, node: str, port: str, bridge: str) -> None:
        self.namespaces[node].run(["ip", "link", "set", port, "master", bridge])

    def bmv2(self, name: str) -> Bmv2Switch:
        """The running BMv2 of switch `name` (its gRPC address and Thrift CLI)."""
        sw = self.net.get(name).bmv2
        if sw is None:
            raise RuntimeError(f"switch {name} is not started")
        return sw

    def start(self) -> None:
        """Configure the hosts (loopback up) and start every switch."""
        self.net.start()

    def kill(self, name: str, timeout: float = 10.0) -> None:
        """SIGKILL switch `name`'s BMv2 by its PID — a crash, no chance to clean up — and reap it.

        Its log is kept beside the next one's (`<log>.killed-<n>`).
        """
        sw = self.bmv2(name)
        if sw.proc is None or not sw.alive:
            raise RuntimeError(f"switch {name}'s BMv2 is not running")
        os.kill(sw.proc.pid, signal.SIGKILL)
        sw.proc.wait(timeout)
        for n in itertools.count(1):
            kept = sw.log_path.with_name(f"{sw.log_path.name}.killed-{n}")
            if not kept.exists():
                if sw.log_path.exists():
                    sw.log_path.rename(kept)
                break

    def restart(self, name: str) -> Bmv2Switch:
        """Start switch `name`'s BMv2 again the way `start()` did (same ports, P4Runtime socket, log path)."""
        self.net.get(name).start([])
        return self.bmv2(name)

    def cli(self, script: Path | None = None) -> None:
        """Mininet's CLI on this network (`mh ip route`, `bs1 ip link`, ...): interactive, or `script`'s commands."""
        from mininet.cli import CLI
        from mininet.log import setLogLevel
        setLogLevel("output")         # the CLI prints through Mininet's log; "warning" would hide its answers
        try:
            if script is None:
                CLI(self.net)
            else:
                with open(os.devnull) as nothing:   # Mininet polls stdin even when reading a script
                    CLI(self.net, stdin=nothing, script=str(script))
        finally:
            setLogLevel("warning")

    def stop(self) -> None:
        """Stop every BMv2 first (by PID, so no error in Mininet's teardown can leave one running), then Mininet."""
        for node in self.net.switches:
            if node.bmv2 is not None:
                node.bmv2.stop()
        self.net.stop()
