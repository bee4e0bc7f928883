"""The lab a run plays on, built and taken down: Mininet nodes, BMv2 switches, the controller, emulators, hosts.

`p4handoff.topo.plan.plan` decides what to build; `LabRig.start` has
Mininet build it (`p4handoff.topo.mininet_net.LabNet`) and `close` takes it
down, stopping every process it started by its PID:

1. Mininet: a host per scenario host, a `P4Switch` per switch (each node in
   its own namespace, also named `p4h-<pid>-lab<node>`), the links as
   planned (offloads off, MTU 9000), the cells' bridges in their BS
   switches;
2. `simple_switch_grpc` in every switch (CPU port, 2 priority queues,
   P4Runtime on a Unix socket), the controller (`p4handoff ctl run`, root
   namespace) on the generated description (with `topology.buffer_service`,
   the buffer service first, `p4handoff.topo.lab_service`), then the planned
   egress queue rates (packets/s) and depths over Thrift;
3. hosts: addresses, the anycast gateway, routes; mobile and background
   hosts register (Mobile IP registration frames from their radio) where
   they start;
4. emulators (`python -m p4handoff.topo.emulator`, SCHED_FIFO) on every planned wire,
   in the namespace of the switch they front.

While the run plays, the rig is what the timeline and the faults act on:
control requests (`request`, waiting for a controller a fault restarts),
registrations, default routes, emulator links up and down.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from p4handoff.bmv2 import SwitchTls
from p4handoff.keyfile import Keys, write_keys
from p4handoff.lab_ca import lab_certs
from p4handoff.netlink_route import replace_default_route
from p4handoff.netns import Sandbox, Namespace, stop_process
from p4handoff.paths import pipeline_files
from p4handoff.topo.lab_service import KEY_NAME, LabBufferService
from p4handoff.topo.plan import ACCESS_GATEWAY, HOST_GATEWAY, UNBOUNDED, LabPlan, Wire, plan, run_description
from p4handoff.scenario.loader import Scenario

if TYPE_CHECKING:
    from p4handoff.bmv2 import Bmv2Switch
    from p4handoff.topo.mininet_net import LabNet

CONTROLLER_RESTART_WAIT = 90.0   # seconds a control request waits for a controller a fault is restarting
EMU_PRIORITY = 10
ETH_P_ALL = 0x0003


class LabRig:
    """The built lab of one scenario run; `close()` undoes everything `start()` did."""

    def __init__(self, scn: Scenario, seed: int, out: Path) -> None:
        self.scn = scn
        self.seed = seed
        self.out = out
        self.plan: LabPlan = plan(scn)
        self.sandbox = Sandbox("lab")
        self.net: LabNet | None = None
        self.sockets = Path(tempfile.mkdtemp(prefix="p4h-lab-"))   # short paths: a Unix socket's is ≤ 107 bytes
        self.socket_path = str(self.sockets / "ctl.sock")              # the controller's control socket
        self.ns: dict[str, Namespace] = {}
        self.switches: dict[str, Bmv2Switch] = {}
        self.emulators: dict[str, subprocess.Popen] = {}
        self.emu_by_key: dict[str, subprocess.Popen] = {}
        self.controller: subprocess.Popen | None = None
        self.active_dev: dict[str, str] = {}
        self.registered: dict[str, str] = {}   # host -> the device its last registration left from (until it leaves)
        self.controller_ready = threading.Event()   # clear while a fault has the controller restarting
        self.service = LabBufferService(self.sandbox, out, f"sv{os.getpid()}") if self.plan.service_ports else None
        self.keys_path = self.sockets / "keys.yaml"       # every host's key (0600, in the 0700 temp directory)
        self.keys: Keys = write_keys(self.keys_path, [*self.plan.hosts, *([KEY_NAME] if self.service else [])])
        # P4Runtime over TLS with mutual authentication, from a CA made for this run (p4handoff.lab_ca)
        self.controller_tls, servers = lab_certs(self.sockets / "pki", [s.name for s in self.plan.switches])
        self.tls = {name: SwitchTls(f.ca, f.cert, f.key, name, self.controller_tls.cert, self.controller_tls.key)
                    for name, f in servers.items()}
        self._ident: dict[str, int] = {}                  # host -> last registration identification sent

    def key_args(self, host: str) -> list[str]:
        """`p4handoff host` options that make `host`'s endpoints accept only authenticated notifications."""
        return ["--keys", str(self.keys_path), "--key-name", host]

    def start(self) -> None:
        from p4handoff.wire import load_constants
        from p4handoff.topo.mininet_net import LabNet
        self.net = LabNet(self.sandbox)
        for name in self.plan.hosts:
            self.ns[name] = self.net.host(name)
        cpu_port = load_constants()["CPU_PORT"]
        for sw in self.plan.switches:
            self.ns[sw.name] = self.net.switch(sw.name, sw.ports, grpc_socket=self.sockets / f"{sw.name}.grpc",
                                               log_path=self.out / f"bmv2-{sw.name}.log", cpu_port=cpu_port,
                                               tls=self.tls[sw.name])
        for cell, br in self.plan.bridges.items():
            self.net.bridge(self.plan.cell_ports[cell][0], br)
        for k, w in enumerate(self.plan.wires):
            self._wire(k, w)
        if self.service is not None:
            ports = {s.name: s.ports for s in self.plan.switches}
            self.service.wire({sw: (self.ns[sw], ports[sw][port]) for sw, port in self.plan.service_ports.items()})
        self.net.start()
        self.switches = {sw.name: self.net.bmv2(sw.name) for sw in self.plan.switches}
        self.start_controller()
        self.set_queues()
        for name in self.plan.hosts:
            self._configure_host(name)
        for k, w in enumerate(self.plan.wires):
            if w.emu is not None:
                self._start_emulator(k, w)
        for name, h in self.plan.hosts.items():
            if h.kind != "fixed" and name in self.active_dev:
                self.register(name, self.active_dev[name])
        self._wait_attached([n for n, h in self.plan.hosts.items() if h.kind != "fixed" and n in self.active_dev])

    def _wire(self, k: int, w: Wire) -> None:
        """The veth pairs of one planned wire; an emulated wire gets two, joined later by its emulator."""
        net = self.net
        assert net is not None
        (a, a_if), (b, b_if) = w.a, w.b
        link = net.link
        if w.kind == "switch-bridge":
            link(a, a_if, b, f"{b_if}s{k}")
            net.enslave(b, f"{b_if}s{k}", b_if)
        elif w.kind == "host-bridge":          # host device — e<k>a [emulator] e<k>b — e<k>c (bridge port)
            link(a, a_if, b, f"e{k}a")
            link(b, f"e{k}b", b, f"e{k}c")
            net.enslave(b, f"e{k}c", b_if)
        elif w.emu is None:                    # switch-switch, host-switch
            link(a, a_if, b, b_if)
        else:                                  # a's end — e<k>a [emulator in emu_node] e<k>b — b's end
            link(a, a_if, w.emu_node, f"e{k}a")
            link(b, b_if, w.emu_node, f"e{k}b")

    def start_controller(self, timeout: float = 60.0) -> None:
        """`p4handoff ctl run` on the plan's description; returns once it serves with every switch up."""
        from p4handoff.topo.launch import launch_controller
        p4info, p4json = pipeline_files()
        controller = {"election_id": 10, "socket": self.socket_path, "p4info": str(p4info),
                      "device_config": str(p4json), "keys": str(self.keys_path),
                      "tls": {"ca": str(self.controller_tls.ca), "cert": str(self.controller_tls.cert),
                              "key": str(self.controller_tls.key)}}
        desc = run_description(self.plan, {name: sw.grpc_addr for name, sw in self.switches.items()}, controller,
                               None if self.service is None else self.service.description())
        net_path = self.out / "network.yaml"
        net_path.write_text(yaml.safe_dump(desc, sort_keys=False))
        if self.service is not None and self.service.proc is None:
            self.service.start(net_path)        # before the controller, which connects to it
        self.controller = launch_controller(net_path, socket_path=self.socket_path,   # root namespace, as Mininet's
                                            log=self.out / "controller.log", stderr=self.out / "controller.stderr",
                                            sandbox=self.sandbox, timeout=timeout)
        self.controller_ready.set()

    def set_queues(self, switch: str | None = None) -> None:
        """The planned egress queue depths and rates (Thrift) of every switch, or of one (a restarted one)."""
        for q in self.plan.queues:
            if switch is None or q.switch == switch:
                cli = self.switches[q.switch].cli
                cli.set_queue_depth(q.depth, port=q.port)
                cli.set_queue_rate(q.pps, port=q.port)

    def request(self, body: dict[str, Any]) -> dict[str, Any]:
        """A control request; one refused while a fault has the controller restarting waits for the new one."""
        from p4handoff.controller.control import ControlError, request
        try:
            return request(self.socket_path, body)
        except ControlError:
            if self.controller_ready.is_set():
                raise
        if not self.controller_ready.wait(CONTROLLER_RESTART_WAIT):
            raise TimeoutError(f"the controller was not back within {CONTROLLER_RESTART_WAIT} s")
        return request(self.socket_path, body)

    def _configure_host(self, name: str) -> None:
        h = self.plan.hosts[name]
        ns = self.ns[name]
        ns.run(["sysctl", "-q", "-w", "net.ipv4.conf.all.rp_filter=0"])
        ns.run(["sysctl", "-q", "-w", "net.ipv4.conf.default.rp_filter=0"])
        if h.kind == "fixed":
            dev, mac = h.devices["eth0"]
            ns.run(["ip", "link", "set", "dev", dev, "address", mac])
            ns.run(["ip", "addr", "add", f"{h.address}/32", "dev", dev])
            ns.run(["ip", "route", "add", "default", "via", HOST_GATEWAY, "dev", dev, "onlink"])
            return
        ns.run(["ip", "addr", "add", f"{h.address}/32", "dev", "lo"])
        table = 100
        for key, (dev, mac) in h.devices.items():
            ns.run(["ip", "link", "set", "dev", dev, "address", mac])
            ns.run(["ip", "neigh", "replace", ACCESS_GATEWAY[0], "lladdr", ACCESS_GATEWAY[1], "dev", dev,
                    "nud", "permanent"])
            iface = key.split("/")[0]
            coa = h.coas.get(iface)
            if coa and coa != h.address:
                # DSBP's dummy ACKs leave through the probed cell: source routing by care-of address
                ns.run(["ip", "addr", "add", f"{coa}/32", "dev", "lo"], check=False)
                table += 1
                ns.run(["ip", "route", "replace", "default", "via", ACCESS_GATEWAY[0], "dev", dev, "onlink",
                        "table", str(table)])
                ns.run(["ip", "rule", "add", "from", coa, "lookup", str(table)])
        start = self.start_place(name)
        if start is not None:
            self.route_via(name, h.devices[f"{start[0]}/{start[1]}"][0])

    def start_place(self, name: str) -> tuple[str, str] | None:
        for m in self.scn.topology.mobile_hosts:
            if m.name == name:
                return m.start
        for b in self.scn.topology.background_hosts:
            if b.name == name:
                return ("radio", b.cell)
        return None

    def route_via(self, name: str, dev: str) -> None:
        """The MH's default route through `dev` (netlink, no `ip` process: part of a handoff's outage)."""
        h = self.plan.hosts[name]
        self.ns[name].call(lambda: replace_default_route(dev, ACCESS_GATEWAY[0], h.address))
        self.active_dev[name] = dev

    def _start_emulator(self, k: int, w: Wire) -> None:
        assert w.emu is not None
        down, up = w.emu.down, w.emu.up

        def rate(r: float | None) -> str:
            return "none" if r is None else f"{r}bps"
        args = [sys.executable, "-m", "p4handoff.topo.emulator", "--mh-side", f"e{k}a", "--bs-side", f"e{k}b",
                "--rate", rate(down.rate_bps), "--delay", f"{down.delay}s", "--loss", str(down.loss),
                "--limit", str(min(down.limit, UNBOUNDED)), "--up-rate", rate(up.rate_bps), "--up-loss", str(up.loss),
                "--up-limit", str(min(up.limit, UNBOUNDED)), "--seed", str(self.seed * 1000 + k),
                "--realtime", str(EMU_PRIORITY)]
        if not w.up_at_start:
            args.append("--down-at-start")
        err = open(self.out / f"emulator-{k}.stderr", "wb")
        proc = subprocess.Popen(["ip", "netns", "exec", self.ns[w.emu_node].name, *args], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        err.close()
        self.sandbox.processes.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        if not line.startswith('{"ready"'):
            raise RuntimeError(f"emulator {k} did not start: {line!r}")
        self.emulators[f"e{k}"] = proc
        if w.key:
            self.emu_by_key[w.key] = proc

    def emu(self, key: str, command: str) -> None:
        proc = self.emu_by_key[key]
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((command + "\n").encode())
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline().decode() or "{}")
        if not answer.get("ok"):
            raise RuntimeError(f"emulator {key}: {command!r} refused: {answer}")

    def register(self, name: str, dev: str, probe_coa: str | None = None) -> None:
        """A Mobile IP Registration Request from `name`'s device `dev` (with the S flag for a DSBP probe)."""
        from p4handoff.controller.packets import ethernet, udp_packet
        from p4handoff.controller.registration import FLAG_S, RegistrationRequest
        from p4handoff.controller.registration_auth import sign
        from p4handoff.ntptime import ntp_time
        from p4handoff.wire import UDP_PORT_MIP_REGISTRATION
        h = self.plan.hosts[name]
        mac = next(m for d, m in h.devices.values() if d == dev)
        src = probe_coa or h.address
        gw_addr = self.plan.switches[0].address
        ident = self._ident[name] = max(ntp_time(time.time()), self._ident.get(name, 0) + 1)   # RFC 5944 §5.7.1
        req = RegistrationRequest(h.address, src, gw_addr, 0xFFFF, ident, FLAG_S if probe_coa else 0)
        key = self.keys.get(name)
        assert key is not None
        frame = ethernet("ff:ff:ff:ff:ff:ff", mac, udp_packet(src, "255.255.255.255", UDP_PORT_MIP_REGISTRATION,
                                                               UDP_PORT_MIP_REGISTRATION, sign(req.encode(), key)))
        sock = self.ns[name].socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        try:
            sock.bind((dev, 0))
            sock.send(frame)
        finally:
            sock.close()
        if probe_coa is None:
            self.registered[name] = dev

    def _wait_attached(self, names: list[str], timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while names:
            status = self.request({"cmd": "status", "counters": False})
            attached = {m["mh"] for m in status["mobile_hosts"] if str(m.get("phase", "")).startswith("attached")}
            missing = [n for n in names if n not in attached]
            if not missing:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"not attached after {timeout} s: {', '.join(missing)}")
            time.sleep(0.2)

    def close(self) -> tuple[list[dict[str, Any]], list[str]]:
        """Stop the emulators, the controller, the switches and the nodes; (each emulator's last counters,
        what could not be read from them)."""
        counters: list[dict[str, Any]] = []
        errors = []
        for key, proc in self.emulators.items():
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                stop_process(proc)
                out = proc.stdout.read().decode() if proc.stdout else ""
                stats = [json.loads(line) for line in out.splitlines() if line.startswith("{") and "down" in line]
                if stats:
                    counters.append({"emulator": key, **stats[-1]})
            except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
                errors.append(f"emulator {key}: {exc}")
        if self.controller is not None and self.controller.poll() is None:
            stop_process(self.controller, timeout=10)
        try:
            if self.net is not None:
                self.net.stop()                # BMv2 by PID, links, the nodes' shells
        finally:
            self.sandbox.close()                # the controller and the buffer service by PID, the namespaces
            if self.service is not None:
                self.service.close()
            shutil.rmtree(self.sockets, ignore_errors=True)
        return counters, errors
