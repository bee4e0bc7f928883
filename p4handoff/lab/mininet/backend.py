"""The `lab` backend: a scenario on real packets — BMv2 switches, the handoff controller, host endpoints, emulators.

`p4handoff.topo.rig.LabRig` builds the lab the plan describes
(Mininet nodes, BMv2 switches, the controller, hosts registered where they
start, emulators) and takes it down; a `LabRun` plays the scenario on it in
real time (or `lab.time_scale` times slower), on one clock (`p4handoff.lab.mininet.clock`):

1. the flows' receivers, then their senders, started at t0 + flow start
   (`p4handoff.lab.mininet.flows`);
2. the mobility timeline (`p4handoff.lab.mininet.timeline`): attach, handoff
   and detach as emulator links, registrations and `ctl detach`;
3. during the run `ctl status` is sampled for queue occupancy and average
   and at the windows' edges for the per-port counters
   (`p4handoff.lab.mininet.observe`);
4. the senders' traces become the flows' delivery curves, the
   controller's log the run's notifications.

A run may also be given faults (`p4handoff.lab.mininet.faults`, used by `make chaos`):
each kills a switch's BMv2 or the controller with SIGKILL at its instant
and starts it again through the code that started it.

What the lab cannot measure per flow (drops of a given flow: the switches
count per port and class) is reported as unavailable, not guessed.
"""
from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from p4handoff.interrupt import uninterrupted
from p4handoff.paths import pipeline_files
from p4handoff.lab.mininet.clock import RunClock
from p4handoff.lab.mininet.faults import Fault, FaultRecord, check_faults, inject
from p4handoff.lab.mininet.flows import LabFlows
from p4handoff.lab.mininet.observe import LabObserver
from p4handoff.topo.rig import LabRig
from p4handoff.lab.mininet.timeline import LabTimeline
from p4handoff.lab.rundata import RunData
from p4handoff.scenario.loader import Scenario

LEAD = 3.0                 # seconds between "everything started" and t0


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
    from p4handoff.topo.mininet_net import mininet_available
    return mininet_available()


class LabRun:
    """One run of one scenario in the lab; `close()` undoes everything `start()` did."""

    def __init__(self, scn: Scenario, seed: int, out: Path, faults: Sequence[Fault] = ()) -> None:
        self.scn = scn
        self.rig = LabRig(scn, seed, out)
        self.faults = check_faults(faults, [s.name for s in self.rig.plan.switches], scn.duration)
        self.fault_log: list[FaultRecord] = []
        self.clock = RunClock(scn.lab_time_scale)
        self.data = RunData(flows={}, link_rates={c.name: c.rate_bps for c in scn.topology.cells}, backend="lab")
        self.data.notes += self.rig.plan.notes
        self.observer = LabObserver(self.rig, scn, self.data, self.clock)
        self.timeline = LabTimeline(self.rig, scn, self.data, self.clock)
        self.flows = LabFlows(self.rig, scn, self.data, self.clock)

    def start(self) -> None:
        """Build the lab (`LabRig.start`): switches, controller, emulators, hosts attached."""
        self.rig.start()

    # -- running --------------------------------------------------------------------------------------
    def run(self, progress: Callable[[float], None]) -> RunData:
        scn = self.scn
        self.flows.start_receivers()
        self.clock.start_in(LEAD)
        self.flows.start_senders()
        threads = [threading.Thread(target=self.clock.guard, args=(fn,), daemon=True)
                   for fn in (self.timeline.play, self.observer.edges, self.observer.queues, self._faults)]
        for t in threads:
            t.start()
        end = self.clock.instant(scn.duration)
        while time.monotonic() < end:
            progress(max(0.0, self.clock.now()))
            time.sleep(min(0.5, max(0.0, end - time.monotonic())))
            if self.clock.errors:
                break
        for t in threads:
            t.join(timeout=5.0)
        if self.clock.errors:
            raise RuntimeError("lab run failed: " + "; ".join(self.clock.errors))
        self.flows.finish()
        return self.data

    def _faults(self) -> None:
        """The fault schedule: each element killed -9 at its instant and started again (p4handoff.lab.mininet.faults)."""
        for f in sorted(self.faults, key=lambda f: f.at):
            if not self.clock.sleep_until(f.at):
                return
            self.fault_log.append(inject(self.rig, f))

    # -- teardown -------------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the flows, take the lab down (`LabRig.close`), keep what the emulators and the controller logged;
        a SIGTERM or Ctrl-C meanwhile waits until it is done (`uninterrupted`)."""
        with uninterrupted():
            self.flows.stop()
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
