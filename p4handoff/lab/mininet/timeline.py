"""The scenario's mobility timeline played in the lab, in real time.

attach = the radio's emulator up (+ a registration with the S flag for a
DSBP probe), handoff = a registration from the new radio and the MH's
default route moved to it, detach = the emulator down, after `ctl detach`
if the scenario notifies it (`warn` seconds ahead; without warning only if
the radio carried the home address and its BS buffers, IPF). Each op is
marked on the run's timeline as it happens.
"""
from __future__ import annotations

from p4handoff.lab.mininet.clock import RunPart


class LabTimeline(RunPart):
    """Plays `scn.mobility` on the running lab (`rig`) by the run's clock."""

    def play(self) -> None:
        """Each mobility op at its instant (a warned detach's `ctl detach` `warn` seconds before)."""
        ops = sorted(self.scn.mobility, key=lambda op: op.at - (op.warn if op.op == "detach" else 0.0))
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
