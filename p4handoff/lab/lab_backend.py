"""The `lab` backend: a scenario on real packets — BMv2 switches, the handoff controller, host endpoints, emulators.

`p4handoff.lab.lab_startup.LabRig` builds the lab the plan describes
(Mininet nodes, BMv2 switches, the controller, hosts registered where they
start, emulators) and takes it down; a `LabRun` plays the scenario on it in
real time:

1. receivers (`p4handoff host recv`), then senders (`p4handoff host send`)
   started at t0 + flow start; the timeline plays: attach = emulator up
   (+ a registration with the S flag for a DSBP probe), handoff = a
   registration from the new radio and the MH's default route moved to it,
   detach = `ctl detach` (if it carried the home address) and emulator down;
2. during the run `ctl status` is sampled for queue occupancy and average
   (telemetry over P4Runtime packet I/O) and at the windows' edges for the
   per-port counters;
3. the senders' traces become the flows' delivery curves.

A run may also be given faults (`p4handoff.lab.lab_faults`, used by `make chaos`):
each kills a switch's BMv2 or the controller with SIGKILL at its instant
and starts it again through the code that started it.

What the lab cannot measure per flow (drops of a given flow: the switches
count per port and class) is reported as unavailable, not guessed.
"""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from p4handoff.netns import stop_process
from p4handoff.paths import pipeline_files
from p4handoff.lab.lab_clock import RunClock
from p4handoff.lab.lab_faults import Fault, FaultRecord, check_faults, inject
from p4handoff.lab.lab_observe import LabObserver
from p4handoff.lab.lab_startup import LabRig
from p4handoff.lab.lab_timeline import LabTimeline
from p4handoff.lab.rundata import FlowData, RunData
from p4handoff.lab.scenario import Scenario

LEAD = 3.0                 # seconds between "everything started" and t0
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
        self.out = out
        self.rig = LabRig(scn, seed, out)
        self.receivers: dict[str, subprocess.Popen] = {}
        self.senders: dict[str, subprocess.Popen] = {}
        self.faults = check_faults(faults, [s.name for s in self.rig.plan.switches], scn.duration)
        self.fault_log: list[FaultRecord] = []
        self.clock = RunClock()
        self.data = RunData(flows={}, link_rates={c.name: c.rate_bps for c in scn.topology.cells}, backend="lab")
        self.data.notes += self.rig.plan.notes
        self.observer = LabObserver(self.rig, scn, self.data, self.clock)
        self.timeline = LabTimeline(self.rig, scn, self.data, self.clock)

    def start(self) -> None:
        """Build the lab (`LabRig.start`): switches, controller, emulators, hosts attached."""
        self.rig.start()

    # -- running --------------------------------------------------------------------------------------
    def run(self, progress: Callable[[float], None]) -> RunData:
        scn = self.scn
        for k, f in enumerate(scn.flows):
            self._start_receiver(k, f)
        self.clock.start_in(LEAD)
        for k, f in enumerate(scn.flows):
            self._start_sender(k, f)
        threads = [threading.Thread(target=self.clock.guard, args=(fn,), daemon=True)
                   for fn in (self.timeline.play, self.observer.edges, self.observer.queues, self._faults)]
        for t in threads:
            t.start()
        end = self.clock.t0 + scn.duration
        while time.monotonic() < end:
            progress(max(0.0, self.clock.now()))
            time.sleep(min(0.5, max(0.0, end - time.monotonic())))
            if self.clock.errors:
                break
        for t in threads:
            t.join(timeout=5.0)
        if self.clock.errors:
            raise RuntimeError("lab run failed: " + "; ".join(self.clock.errors))
        self._finish_flows()
        return self.data

    def _faults(self) -> None:
        """The fault schedule: each element killed -9 at its instant and started again (p4handoff.lab.lab_faults)."""
        for f in sorted(self.faults, key=lambda f: f.at):
            if not self.clock.sleep_until(f.at):
                return
            self.fault_log.append(inject(self.rig, f))

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
        proc = subprocess.Popen(["ip", "netns", "exec", self.rig.ns[f.dst].name, *args], stdout=subprocess.PIPE,
                                stderr=err, start_new_session=True)
        err.close()
        self.rig.lab.processes.append(proc)
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
        proc = subprocess.Popen(["ip", "netns", "exec", self.rig.ns[f.src].name, sys.executable, "-c", _SENDER,
                                 repr(self.clock.t0 + f.start), *args], stdout=subprocess.PIPE, stderr=err,
                                start_new_session=True)
        err.close()
        self.rig.lab.processes.append(proc)
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
            offset = start - self.clock.t0
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
        for proc in list(self.senders.values()) + list(self.receivers.values()):
            if proc.poll() is None:
                stop_process(proc)
        counters, errors = self.rig.close()
        self.data.counters += counters
        self.observer.controller_log()
        if errors:
            self.data.notes += errors

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
            if self.mininet_cli and run.rig.net is not None:
                run.rig.net.cli(self.mininet_cli if isinstance(self.mininet_cli, Path) else None)
            data = run.run(progress)
        finally:
            run.close()
        data.notes.append("per-flow data losses are not observable in the lab (switch counters are per port "
                          "and class); the sender's retransmissions are reported instead")
        return data
