"""A lab run's flows: host endpoints started in the hosts' namespaces, their traces read back.

Receivers (`p4handoff host recv`) start first and say when they listen;
senders (`p4handoff host send --start-at`) start at once, set up, and
connect at t0 + the flow's start; after the run, each sender's trace
(its time shifted onto the scenario clock) becomes its flow's delivery
curve, and its retransmissions are what the lab reports of its losses.
With a time scale (`lab.time_scale`) every endpoint runs on a clock as much
slower as the run's (`--time-scale`), so its trace is in scenario seconds.
"""
from __future__ import annotations

import csv
import subprocess
import sys
from typing import Any

from p4handoff.netns import stop_process
from p4handoff.lab.mininet.clock import RunClock, RunPart
from p4handoff.topo.rig import LabRig
from p4handoff.lab.rundata import FlowData, RunData
from p4handoff.scenario.loader import Scenario

FINISH_WAIT = 30.0     # scenario seconds a sender has after the run to close (FIN, TIME-WAIT) and report


class LabFlows(RunPart):
    """The scenario's flows on the running lab (`rig`): each a receiver and a sender process."""

    def __init__(self, rig: LabRig, scn: Scenario, data: RunData, clock: RunClock) -> None:
        super().__init__(rig, scn, data, clock)
        self.receivers: dict[str, subprocess.Popen] = {}
        self.senders: dict[str, subprocess.Popen] = {}

    def start_receivers(self) -> None:
        """Every flow's receiver, listening before this returns."""
        for k, f in enumerate(self.scn.flows):
            self._start_receiver(k, f)

    def start_senders(self) -> None:
        """Every flow's sender, each to begin at its start on the run's clock."""
        for k, f in enumerate(self.scn.flows):
            self._start_sender(k, f)

    def stop(self) -> None:
        """Stop every endpoint still running."""
        for proc in list(self.senders.values()) + list(self.receivers.values()):
            if proc.poll() is None:
                stop_process(proc)

    def _tcp_args(self, f: Any) -> list[str]:
        """The TCP options of flow `f`, for `p4handoff host send` and `recv` alike."""
        t = f.tcp
        args = ["--scheme", f.scheme, "--window-segments", str(t.window), "--min-rto", str(t.min_rto),
                "--iw", str(t.iw), "--timeout", str(self.scn.duration + 60),
                "--time-scale", repr(self.scn.lab_time_scale)]
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
                "--trace", str(self.rig.out / f"recv-{f.name}.csv"), *self._tcp_args(f), *self.rig.key_args(f.dst)]
        err = open(self.rig.out / f"recv-{f.name}.stderr", "wb")
        proc = subprocess.Popen(["ip", "netns", "exec", self.rig.ns[f.dst].name, *args], stdout=subprocess.PIPE,
                                stderr=err, start_new_session=True)
        err.close()
        self.rig.sandbox.processes.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        if not line.startswith("listening:"):
            raise RuntimeError(f"receiver of {f.name} did not start: {line!r} "
                               f"{(self.rig.out / f'recv-{f.name}.stderr').read_text()[-1000:]}")
        self.receivers[f.name] = proc

    def _start_sender(self, k: int, f: Any) -> None:
        dst = self.scn.topology.address_of(f.dst)
        start = f.start_at(self.rig.seed)
        seconds = (f.stop if f.stop is not None else self.scn.duration) - start
        args = [sys.executable, "-m", "p4handoff", "host", "send", "--to", f"{dst}:{5001 + k}", "--seconds",
                str(seconds), "--mss", str(f.tcp.packet_size), "--start-at", repr(self.clock.instant(start)),
                "--trace", str(self.rig.out / f"trace-{f.name}.csv"), *self._tcp_args(f), *self.rig.key_args(f.src)]
        err = open(self.rig.out / f"send-{f.name}.stderr", "wb")
        proc = subprocess.Popen(["ip", "netns", "exec", self.rig.ns[f.src].name, *args], stdout=subprocess.PIPE,
                                stderr=err, start_new_session=True)
        err.close()
        self.rig.sandbox.processes.append(proc)
        self.senders[f.name] = proc
        self.data.flows[f.name] = FlowData(f.name, trace=self.rig.out / f"trace-{f.name}.csv", losses_known=False)

    def finish(self) -> None:
        """Each sender's trace, aligned on the scenario clock, becomes its flow's delivery curve."""
        for name, proc in self.senders.items():
            try:
                out, _ = proc.communicate(timeout=FINISH_WAIT * self.clock.scale)
            except subprocess.TimeoutExpired as exc:
                stop_process(proc)
                out = (exc.output or b"") + (proc.stdout.read() if proc.stdout else b"")
                self.data.notes.append(f"flow {name}: the sender had not finished {FINISH_WAIT:g} s (of the "
                                       "scenario's) after the run; stopped")
            text = out.decode(errors="replace") if isinstance(out, bytes) else (out or "")
            # the sender's own clock origin: its trace counts from there, the instant it connected (its --start-at,
            # or later if its start-up outlasted the lead)
            start = next((float(line.split()[1]) for line in text.splitlines() if line.startswith("trace_origin:")),
                         None)
            fd = self.data.flows[name]
            if start is None or fd.trace is None or not fd.trace.exists():
                self.data.notes.append(f"flow {name}: the sender left no trace "
                                       f"({(self.rig.out / f'send-{name}.stderr').read_text()[-300:]!r})")
                continue
            offset = self.clock.at_monotonic(start)
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
