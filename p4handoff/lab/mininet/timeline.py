"""The scenario's mobility timeline played in the lab, in real time.

attach = the radio's emulator up (+ a registration with the S flag for a
DSBP probe), handoff = a registration from the new radio and the MH's
default route moved to it, detach = the emulator down, after `ctl detach`
if the scenario notifies it (`warn` seconds ahead; without warning only if
the radio carried the home address and its BS buffers, IPF). Each op is
marked on the run's timeline as it happens.

Each MH's ops play on a thread of their own, in order: a group of MHs that
moves at one instant (a bus, `ipf-group-burst.yaml`) moves together, as in
the simulator, instead of each MH's outage growing by the time the MHs
before it took (docs/lab.md, "The lab's outage").
"""
from __future__ import annotations

import threading
import time
from itertools import groupby
from typing import Callable

from p4handoff.lab.mininet.clock import RunPart
from p4handoff.scenario.model import MobilityOp

JOIN_MARGIN = 10.0      # s past the run's end: an MH's ops left unfinished then are a failure, not a wait


class LabTimeline(RunPart):
    """Plays `scn.mobility` on the running lab (`rig`) by the run's clock."""

    def play(self) -> None:
        """Each MH's mobility ops at their instants, the MHs in parallel; the timeline in time order."""
        ops = sorted(self.scn.mobility, key=lambda op: (op.mh, self._instant(op)))
        threads = [threading.Thread(target=self.clock.guard, args=(self._play_mh(list(mh_ops)),),
                                    name=f"timeline-{mh}", daemon=True)
                   for mh, mh_ops in groupby(ops, key=lambda op: op.mh)]
        for t in threads:
            t.start()
        deadline = max(time.monotonic(), self.clock.instant(self.scn.duration)) + JOIN_MARGIN
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                raise TimeoutError(f"{t.name}: its ops did not finish by {JOIN_MARGIN} s after the run's end")
        self.data.timeline.sort(key=lambda entry: entry[0])

    @staticmethod
    def _instant(op: MobilityOp) -> float:
        """When an op starts: a warned detach's `ctl detach` goes `warn` seconds early."""
        return op.at - (op.warn if op.op == "detach" else 0.0)

    def _play_mh(self, ops: list[MobilityOp]) -> Callable[[], None]:
        """The body of one MH's thread, named for the run's error report."""
        def play() -> None:
            self._play(ops)
        play.__name__ = f"timeline of {ops[0].mh}"
        return play

    def _play(self, ops: list[MobilityOp]) -> None:
        """One MH's ops, in order, each at its instant."""
        for op in ops:
            h = self.rig.plan.hosts[op.mh]
            if op.op == "detach" and op.notify and op.warn:
                if not self.clock.sleep_until(op.at - op.warn):
                    return
                self.rig.request({"cmd": "detach", "mh": op.mh})
            if not self.clock.sleep_until(op.at):
                return
            if op.op == "attach":
                key = f"{op.mh}/{op.iface}/{op.cell}"
                self.rig.emu(key, "up")
                if op.probe:
                    self.rig.register(op.mh, self.rig.plan.device(op.mh, op.iface, op.cell)[0],  # type: ignore[arg-type]
                                      probe_coa=h.coas[op.iface])
            elif op.op == "handoff":
                cell = self._cell_of(op.mh, op.iface, op.at)
                dev = self.rig.plan.device(op.mh, op.iface, cell)[0]
                self.rig.route_via(op.mh, dev)
                self.rig.register(op.mh, dev)
            else:
                cell = self._cell_of(op.mh, op.iface, op.at)
                dev = self.rig.plan.device(op.mh, op.iface, cell)[0]
                if op.notify and not op.warn and self.rig.active_dev.get(op.mh) == dev and self._buffers(cell):
                    self.rig.request({"cmd": "detach", "mh": op.mh})
                if self.rig.registered.get(op.mh) == dev:
                    del self.rig.registered[op.mh]
                self.rig.emu(f"{op.mh}/{op.iface}/{cell}", "down")
            self.data.timeline.append((self.clock.now(), f"{op.op} {op.mh}.{op.iface}"
                                       + (f" {op.cell}" if op.cell else "")))

    def _buffers(self, cell: str) -> bool:
        """Does the cell's BS keep a departed MH's packets (IPF)? Only then is the controller told of a
        detach without warning: it would buffer them, where the scenario says they are lost in the air."""
        bs = self.scn.topology.cell(cell).bs
        return any(b.name == bs and b.ipf for b in self.scn.topology.base_stations)

    def _cell_of(self, mh: str, iface: str, t: float) -> str:
        """The cell `iface` of `mh` is attached to at scenario time `t` (from the resolved timeline)."""
        cell = None
        start = self.rig.start_place(mh)
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
