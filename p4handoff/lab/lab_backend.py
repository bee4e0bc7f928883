"""The `lab` backend: a scenario on real packets — BMv2 switches, the handoff controller, host endpoints, emulators.

`p4handoff.lab.lab_plan.plan` decides what to build; this module has Mininet build
it (`p4handoff.lab.mininet_lab.LabNet`), runs it in real time and takes it down,
stopping every process it started by its PID:

1. Mininet: a host per scenario host, a `P4Switch` per switch (each node in
   its own namespace, also named `p4h-<pid>-lab<node>`), the links as
   planned (offloads off, MTU 9000), the cells' bridges in their BS
   switches;
2. `simple_switch_grpc` in every switch (CPU port, 2 priority queues,
   P4Runtime on a Unix socket), the controller (`p4handoff ctl run`, root
   namespace) on the generated description, then the planned egress queue
   rates (packets/s) and depths over Thrift;
3. hosts: addresses, the anycast gateway, routes; mobile and background
   hosts register (Mobile IP registration frames from their radio) where
   they start;
4. emulators (`python -m p4handoff.lab.emulator`, SCHED_FIFO) on every planned wire,
   in the namespace of the switch they front;
5. receivers (`p4handoff host recv`), then senders (`p4handoff host send`)
   started at t0 + flow start; the timeline plays: attach = emulator up
   (+ a registration with the S flag for a DSBP probe), handoff = a
   registration from the new radio and the MH's default route moved to it,
   detach = `ctl detach` (if it carried the home address) and emulator down;
6. during the run `ctl status` is sampled for queue occupancy and average
   (telemetry over P4Runtime packet I/O) and at the windows' edges for the
   per-port counters;
7. the senders' traces become the flows' delivery curves.

A run may also be given faults (`p4handoff.lab.lab_faults`, used by `make chaos`):
each kills a switch's BMv2 or the controller with SIGKILL at its instant
and starts it again through the code above.

What the lab cannot measure per flow (drops of a given flow: the switches
count per port and class) is reported as unavailable, not guessed.
"""
from __future__ import annotations

import csv
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
from typing import TYPE_CHECKING, Any, Callable, Sequence

import yaml

from p4handoff.netns import Lab, Namespace, stop_process
from p4handoff.paths import pipeline_files
from p4handoff.lab.lab_faults import Fault, FaultRecord, check_faults, inject
from p4handoff.lab.lab_plan import ACCESS_GATEWAY, HOST_GATEWAY, UNBOUNDED, LabPlan, Wire, plan, wire_bytes
from p4handoff.lab.rundata import FlowData, RunData
from p4handoff.lab.scenario import Scenario

if TYPE_CHECKING:
    from p4handoff.bmv2 import Bmv2Switch
    from p4handoff.lab.mininet_lab import LabNet

LEAD = 3.0                 # seconds between "everything started" and t0
EDGE_READ_TRIES = 3         # a window edge's counters are read again if a switch did not answer in time
CONTROLLER_RESTART_WAIT = 90.0   # seconds a control request waits for a controller a fault is restarting
STATUS_INTERVAL = 0.1      # at most this often: a status round reads counters and probes every access port
EMU_PRIORITY = 10
ETH_P_ALL = 0x0003
_SENDER = ("import sys, time\n"
           "from p4handoff.cli.main import main\n"
           "at = float(sys.argv[1])\n"
           "time.sleep(max(0.0, at - time.monotonic()))\n"
           "print('t_start:', repr(time.monotonic()), flush=True)\n"
           "sys.exit(main(sys.argv[2:]))\n")


def available() -> tuple[bool, str]:
    """(True, "") when a lab run can start here, else (False, the first thing missing)."""
    if os.geteuid() != 0:
        return False, "the lab needs root (namespaces, raw sockets)"
    for tool in ("simple_switch_grpc", "simple_switch_CLI"):
        if shutil.which(tool) is None:
            return False, f"'{tool}' is not on PATH (BMv2 is not installed)"
    p4info, p4json = pipeline_files()
    if not p4json.exists() or not p4info.exists():
        return False, f"the P4 program is not compiled ({p4json} missing: p4c, then `make build`)"
    from p4handoff.lab.mininet_lab import mininet_available
    return mininet_available()


class LabRun:
    """One run of one scenario in the lab; `close()` undoes everything `start()` did."""

    def __init__(self, scn: Scenario, seed: int, out: Path, faults: Sequence[Fault] = ()) -> None:
        self.scn = scn
        self.seed = seed
        self.out = out
        self.plan: LabPlan = plan(scn)
        self.lab = Lab("lab")
        self.net: LabNet | None = None
        self.sockets = Path(tempfile.mkdtemp(prefix="p4h-lab-"))   # short paths: a Unix socket's is ≤ 107 bytes
        self.socket_path = str(self.sockets / "ctl.sock")              # the controller's control socket
        self.ns: dict[str, Namespace] = {}
        self.switches: dict[str, Bmv2Switch] = {}
        self.emulators: dict[str, subprocess.Popen] = {}
        self.emu_by_key: dict[str, subprocess.Popen] = {}
        self.controller: subprocess.Popen | None = None
        self.receivers: dict[str, subprocess.Popen] = {}
        self.senders: dict[str, subprocess.Popen] = {}

        self.active_dev: dict[str, str] = {}
        self.registered: dict[str, str] = {}   # host -> the device its last registration left from (until it leaves)
        self.faults = check_faults(faults, [s.name for s in self.plan.switches], scn.duration)
        self.fault_log: list[FaultRecord] = []
        self.controller_ready = threading.Event()   # clear while a fault has the controller restarting
        self.t0 = 0.0
        self.t0_wall = 0.0
        self.data = RunData(flows={}, link_rates={c.name: c.rate_bps for c in scn.topology.cells}, backend="lab")
        self.data.notes += self.plan.notes
        self._lock = threading.Lock()
        self._errors: list[str] = []

    # -- building -------------------------------------------------------------------------------------
    def start(self) -> None:
        from p4handoff.wire import load_constants
        from p4handoff.lab.mininet_lab import LabNet
        self.net = LabNet(self.lab)
        for name in self.plan.hosts:
            self.ns[name] = self.net.host(name)
        cpu_port = load_constants()["CPU_PORT"]
        for sw in self.plan.switches:
            self.ns[sw.name] = self.net.switch(sw.name, sw.ports, grpc_socket=self.sockets / f"{sw.name}.grpc",
                                               log_path=self.out / f"bmv2-{sw.name}.log", cpu_port=cpu_port)
        for cell, br in self.plan.bridges.items():
            self.net.bridge(self.plan.cell_ports[cell][0], br)
        for k, w in enumerate(self.plan.wires):
            self._wire(k, w)
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
        from p4handoff.controller.launch import launch_controller
        desc = dict(self.plan.network)
        p4info, p4json = pipeline_files()
        desc["controller"] = {"election_id": 10, "socket": self.socket_path, "p4info": str(p4info),
                              "device_config": str(p4json)}
        desc["switches"] = [dict(s, grpc=self.switches[s["name"]].grpc_addr) for s in desc["switches"]]
        net_path = self.out / "network.yaml"
        net_path.write_text(yaml.safe_dump(desc, sort_keys=False))
        self.controller = launch_controller(net_path, socket_path=self.socket_path,   # root namespace, as Mininet's
                                            log=self.out / "controller.log", stderr=self.out / "controller.stderr",
                                            lab=self.lab, timeout=timeout)
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
        start = self._start_place(name)
        if start is not None:
            self._route_via(name, h.devices[f"{start[0]}/{start[1]}"][0])

    def _start_place(self, name: str) -> tuple[str, str] | None:
        for m in self.scn.topology.mobile_hosts:
            if m.name == name:
                return m.start
        for b in self.scn.topology.background_hosts:
            if b.name == name:
                return ("radio", b.cell)
        return None

    def _route_via(self, name: str, dev: str) -> None:
        h = self.plan.hosts[name]
        self.ns[name].run(["ip", "route", "replace", "default", "via", ACCESS_GATEWAY[0], "dev", dev, "onlink",
                           "src", h.address])
        self.active_dev[name] = dev

    def _start_emulator(self, k: int, w: Wire) -> None:
        assert w.emu is not None
        down, up = w.emu.down, w.emu.up

        def rate(r: float | None) -> str:
            return "none" if r is None else f"{r}bps"
        args = [sys.executable, "-m", "p4handoff.lab.emulator", "--mh-side", f"e{k}a", "--bs-side", f"e{k}b",
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
        self.lab.processes.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        if not line.startswith('{"ready"'):
            raise RuntimeError(f"emulator {k} did not start: {line!r}")
        self.emulators[f"e{k}"] = proc
        if w.key:
            self.emu_by_key[w.key] = proc

    def _emu(self, key: str, command: str) -> None:
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
        from p4handoff.wire import UDP_PORT_MIP_REGISTRATION
        h = self.plan.hosts[name]
        mac = next(m for d, m in h.devices.values() if d == dev)
        src = probe_coa or h.address
        gw_addr = self.plan.switches[0].address
        req = RegistrationRequest(h.address, src, gw_addr, 0xFFFF, int(time.monotonic() * 1000) & 0xFFFFFFFF,
                                  FLAG_S if probe_coa else 0)
        frame = ethernet("ff:ff:ff:ff:ff:ff", mac, udp_packet(src, "255.255.255.255", UDP_PORT_MIP_REGISTRATION,
                                                               UDP_PORT_MIP_REGISTRATION, req.encode()))
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

    # -- running --------------------------------------------------------------------------------------
    def run(self, progress: Callable[[float], None]) -> RunData:
        scn = self.scn
        for k, f in enumerate(scn.flows):
            self._start_receiver(k, f)
        self.t0 = time.monotonic() + LEAD
        self.t0_wall = time.time() + LEAD
        for k, f in enumerate(scn.flows):
            self._start_sender(k, f)
        threads = [threading.Thread(target=self._guard, args=(fn,), daemon=True)
                   for fn in (self._timeline, self._edges, self._queues, self._faults)]
        for t in threads:
            t.start()
        end = self.t0 + scn.duration
        while time.monotonic() < end:
            progress(max(0.0, time.monotonic() - self.t0))
            time.sleep(min(0.5, max(0.0, end - time.monotonic())))
            if self._errors:
                break
        for t in threads:
            t.join(timeout=5.0)
        if self._errors:
            raise RuntimeError("lab run failed: " + "; ".join(self._errors))
        self._finish_flows()
        return self.data

    def _guard(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as exc:  # reported by run(), which stops the experiment
            with self._lock:
                self._errors.append(f"{fn.__name__}: {exc}")

    def _sleep_until(self, t: float) -> bool:
        """Wait for scenario time `t`; False if the run is failing or over."""
        while True:
            left = self.t0 + t - time.monotonic()
            if self._errors:
                return False
            if left <= 0:
                return True
            time.sleep(min(left, 0.05))

    def _faults(self) -> None:
        """The fault schedule: each element killed -9 at its instant and started again (p4handoff.lab.lab_faults)."""
        for f in sorted(self.faults, key=lambda f: f.at):
            if not self._sleep_until(f.at):
                return
            self.fault_log.append(inject(self, f))

    def _timeline(self) -> None:
        ops = sorted(self.scn.mobility, key=lambda op: op.at - (op.warn if op.op == "detach" else 0.0))
        for op in ops:
            h = self.plan.hosts[op.mh]
            if op.op == "detach" and op.notify and op.warn:
                if not self._sleep_until(op.at - op.warn):
                    return
                self.request({"cmd": "detach", "mh": op.mh})
            if not self._sleep_until(op.at):
                return
            if op.op == "attach":
                key = f"{op.mh}/{op.iface}/{op.cell}"
                self._emu(key, "up")
                if op.probe:
                    self.register(op.mh, self.plan.device(op.mh, op.iface, op.cell)[0],  # type: ignore[arg-type]
                                   probe_coa=h.coas[op.iface])
            elif op.op == "handoff":
                cell = self._cell_of(op.mh, op.iface, op.at)
                dev = self.plan.device(op.mh, op.iface, cell)[0]
                self._route_via(op.mh, dev)
                self.register(op.mh, dev)
            else:
                cell = self._cell_of(op.mh, op.iface, op.at)
                dev = self.plan.device(op.mh, op.iface, cell)[0]
                if op.notify and not op.warn and self.active_dev.get(op.mh) == dev and self._buffers(cell):
                    self.request({"cmd": "detach", "mh": op.mh})
                if self.registered.get(op.mh) == dev:
                    del self.registered[op.mh]
                self._emu(f"{op.mh}/{op.iface}/{cell}", "down")
            self.data.timeline.append((time.monotonic() - self.t0, f"{op.op} {op.mh}.{op.iface}"
                                       + (f" {op.cell}" if op.cell else "")))

    def _buffers(self, cell: str) -> bool:
        """Does the cell's BS keep a departed MH's packets (IPF)? Only then is the controller told of a
        detach without warning: it would buffer them, where the scenario says they are lost in the air."""
        bs = self.scn.topology.cell(cell).bs
        return any(b.name == bs and b.ipf for b in self.scn.topology.base_stations)

    def _cell_of(self, mh: str, iface: str, t: float) -> str:
        """The cell `iface` of `mh` is attached to at scenario time `t` (from the resolved timeline)."""
        cell = None
        start = self._start_place(mh)
        if start and start[0] == iface:
            cell = start[1]
        for op in self.scn.mobility:
            if op.at > t:
                break
            if op.mh == mh and op.iface == iface and op.op == "attach":
                cell = op.cell
        if cell is None:
            raise RuntimeError(f"{mh}.{iface} is in no cell at t={t}")
        return cell

    def _status_rows(self) -> tuple[float, dict[str, dict[str, Any]], list[tuple]]:
        """One `ctl status`: (scenario time, per-cell counters, queue rows of the sampled cells)."""
        status = self.request({"cmd": "status"})
        now = time.monotonic() - self.t0
        port_cell = {v: k for k, v in self.plan.cell_ports.items()}
        want = set(self.scn.measure.queue_links)
        snap: dict[str, dict[str, Any]] = {}
        rows = []
        for entry in status.get("ports", []):
            cell = port_cell.get((entry["switch"], entry["port"]))
            if cell is None:
                continue
            c = entry.get("counters") or {}
            aqm = entry.get("aqm")
            if cell in want and aqm:
                occ = aqm["occupancy"]
                rows.append((now, cell, occ["np"] + occ["prio"] + occ["dummy"], occ["np"] + occ["prio"],
                             occ["dummy"], aqm["avg_packets"]))
            if not c:
                continue                 # the switch did not answer in time: no reading rather than zeros
            dequeued = sum(c.get("aqm_dequeued", {}).values())
            drops = {k: sum(c.get(k, {}).values()) for k in ("aqm_red_dropped", "aqm_overflow_dropped",
                                                               "aqm_dummy_dropped")}
            admitted = {k: v for k, v in (c.get("aqm_enqueued") or {}).items()}
            read_at = entry.get("counters_read_at")     # when the switch held these counts (wall clock)
            at = now if read_at is None else read_at - self.t0_wall
            snap[cell] = {"bytes_sent": dequeued * wire_bytes(self.scn), "drops": drops, "dequeued": dequeued,
                          "admitted": admitted, "read_at": round(at, 4)}
        return now, snap, rows

    def _edges(self) -> None:
        """Per-port counters at every window edge (utilisation and drops in the windows)."""
        scn = self.scn
        for edge in sorted({w.t0 for w in scn.measure.windows} | {w.t1 for w in scn.measure.windows}):
            if not self._sleep_until(edge):
                return
            for _ in range(EDGE_READ_TRIES):
                _, snap, _ = self._status_rows()
                if set(snap) >= set(self.plan.cell_ports):
                    break
            self.data.link_snapshots[edge] = snap

    def _queues(self) -> None:
        """Queue occupancy and average of the sampled cells, as often as status rounds allow."""
        scn = self.scn
        skipped = [c for c in scn.measure.queue_links if c not in self.plan.cell_ports]
        if skipped:
            self.data.notes.append(f"queue samples of wired links ({', '.join(skipped)}) are not read in the lab")
        if not set(scn.measure.queue_links) & set(self.plan.cell_ports):
            return
        interval = max(STATUS_INTERVAL, scn.measure.queue_interval)
        t = 0.0
        while t <= scn.duration and self._sleep_until(t):
            now, _, rows = self._status_rows()
            self.data.queue_rows += rows
            t = max(t + interval, now)   # a slow status round delays the next sample instead of queueing them

    # -- hosts ----------------------------------------------------------------------------------------
    def _tcp_args(self, f: Any) -> list[str]:
        t = f.tcp
        args = ["--scheme", f.scheme, "--window-segments", str(t.window), "--min-rto", str(t.min_rto),
                "--iw", str(t.iw), "--timeout", str(self.scn.duration + 60)]
        if not t.sack:
            args.append("--no-sack")
        if not t.timestamps:
            args.append("--no-timestamps")
        if t.delayed_ack:
            args.append("--delayed-ack")
        return args

    def _start_receiver(self, k: int, f: Any) -> None:
        port = 5001 + k
        args = [sys.executable, "-m", "p4handoff", "host", "recv", "--port", str(port),
                "--trace", str(self.out / f"recv-{f.name}.csv"), *self._tcp_args(f)]
        err = open(self.out / f"recv-{f.name}.stderr", "wb")
        proc = subprocess.Popen(["ip", "netns", "exec", self.ns[f.dst].name, *args], stdout=subprocess.PIPE,
                                stderr=err, start_new_session=True)
        err.close()
        self.lab.processes.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        if not line.startswith("listening:"):
            raise RuntimeError(f"receiver of {f.name} did not start: {line!r} "
                               f"{(self.out / f'recv-{f.name}.stderr').read_text()[-1000:]}")
        self.receivers[f.name] = proc

    def _start_sender(self, k: int, f: Any) -> None:
        dst = self.scn.topology.address_of(f.dst)
        seconds = (f.stop if f.stop is not None else self.scn.duration) - f.start
        args = ["host", "send", "--to", f"{dst}:{5001 + k}", "--seconds", str(seconds), "--mss",
                str(f.tcp.packet_size), "--trace", str(self.out / f"trace-{f.name}.csv"), *self._tcp_args(f)]
        err = open(self.out / f"send-{f.name}.stderr", "wb")
        proc = subprocess.Popen(["ip", "netns", "exec", self.ns[f.src].name, sys.executable, "-c", _SENDER,
                                 repr(self.t0 + f.start), *args], stdout=subprocess.PIPE, stderr=err,
                                start_new_session=True)
        err.close()
        self.lab.processes.append(proc)
        self.senders[f.name] = proc
        self.data.flows[f.name] = FlowData(f.name, trace=self.out / f"trace-{f.name}.csv", losses_known=False)

    def _finish_flows(self) -> None:
        for name, proc in self.senders.items():
            try:
                out, _ = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired as exc:
                stop_process(proc)
                out = (exc.output or b"") + (proc.stdout.read() if proc.stdout else b"")
                self.data.notes.append(f"flow {name}: the sender had not finished 30 s after the run; stopped")
            text = out.decode(errors="replace") if isinstance(out, bytes) else (out or "")
            start = next((float(line.split()[1]) for line in text.splitlines() if line.startswith("t_start:")), None)
            fd = self.data.flows[name]
            if start is None or fd.trace is None or not fd.trace.exists():
                self.data.notes.append(f"flow {name}: the sender left no trace "
                                       f"({(self.out / f'send-{name}.stderr').read_text()[-300:]!r})")
                continue
            offset = start - self.t0
            self._read_trace(fd, offset)
            rtx = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                        if line.startswith("retransmits:")), None)
            if rtx is not None:
                fd.retransmits = int(rtx)

    @staticmethod
    def _read_trace(fd: FlowData, offset: float) -> None:
        with fd.trace.open() as fh:  # type: ignore[union-attr]
            for row in csv.DictReader(fh):
                t = float(row["time"]) + offset
                acked = int(row["snd_una"])
                if not fd.ack_bytes or acked > fd.ack_bytes[-1]:
                    fd.ack_times.append(t)
                    fd.ack_bytes.append(acked)
        shifted = fd.trace.with_suffix(".aligned.csv")  # type: ignore[union-attr]
        with fd.trace.open() as src, shifted.open("w", newline="") as dst:  # type: ignore[union-attr]
            reader = csv.DictReader(src)
            writer = csv.DictWriter(dst, fieldnames=reader.fieldnames or [], lineterminator="\n")
            writer.writeheader()
            for row in reader:
                row["time"] = f"{float(row['time']) + offset:.6f}"
                writer.writerow(row)
        fd.trace = shifted

    # -- teardown -------------------------------------------------------------------------------------
    def close(self) -> None:
        errors = []
        for proc in list(self.senders.values()) + list(self.receivers.values()):
            if proc.poll() is None:
                stop_process(proc)
        for key, proc in self.emulators.items():
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                stop_process(proc)
                out = proc.stdout.read().decode() if proc.stdout else ""
                stats = [json.loads(line) for line in out.splitlines() if line.startswith("{") and "down" in line]
                if stats:
                    self.data.counters.append({"emulator": key, **stats[-1]})
            except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
                errors.append(f"emulator {key}: {exc}")
        if self.controller is not None and self.controller.poll() is None:
            stop_process(self.controller, timeout=10)
        self._controller_log()
        try:
            if self.net is not None:
                self.net.stop()                # BMv2 by PID, links, the nodes' shells
        finally:
            self.lab.close()
            shutil.rmtree(self.sockets, ignore_errors=True)
        if errors:
            self.data.notes += errors

    def _controller_log(self) -> None:
        log = self.out / "controller.log"
        if not log.exists() or not self.t0_wall:
            return
        for line in log.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if row.get("event") == "handoff_active":
                self.data.notes.append(f"controller: handoff of {row.get('mh')} active {row.get('duration_ms')} ms "
                                       "after its registration (registration → new path, buffer flushed, notified)")
            if row.get("event") in ("notified", "handoff_complete", "handoff_active", "detached", "probe_up"):
                self.data.notifications.append((row["ts"] - self.t0_wall, f"{row['event']} "
                                                 + json.dumps({k: v for k, v in row.items() if k not in ("ts", "event")})))


class LabBackend:
    """The runner's view: one `LabRun` per run, torn down whatever happens.

    `mininet_cli`: open Mininet's CLI once each run's network is up and its
    hosts attached, before any traffic (True: interactive, `exit` starts the
    run; a path: run that file's CLI commands).
    """

    name = "lab"

    def __init__(self, mininet_cli: bool | Path = False) -> None:
        self.mininet_cli = mininet_cli

    def run(self, scn: Scenario, seed: int, out_dir: Path, progress: Callable[[float], None]) -> RunData:
        run = LabRun(scn, seed, out_dir)
        try:
            run.start()
            if self.mininet_cli and run.net is not None:
                run.net.cli(self.mininet_cli if isinstance(self.mininet_cli, Path) else None)
            data = run.run(progress)
        finally:
            run.close()
        data.notes.append("per-flow data losses are not observable in the lab (switch counters are per port "
                          "and class); the sender's retransmissions are reported instead")
        return data
