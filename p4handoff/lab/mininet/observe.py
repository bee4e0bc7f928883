"""What a lab run sees of the network while it plays: `ctl status` sampled, and the controller's log after.

During the run `ctl status` is sampled for queue occupancy and average
(telemetry over P4Runtime packet I/O) of the cells the scenario measures,
and at the windows' edges for the per-port counters (utilisation and drops
in the windows); after it, the controller's log gives the handoffs and
notifications as they happened.
"""
from __future__ import annotations

import json
from typing import Any

from p4handoff.lab.mininet.clock import RunPart
from p4handoff.topo.plan import wire_bytes

EDGE_READ_TRIES = 3         # a window edge's counters are read again if a switch did not answer in time
STATUS_INTERVAL = 0.1      # at most this often: a status round reads counters and probes every access port


class LabObserver(RunPart):
    """Reads the running lab (`rig`) into the run's record (`data`) at the scenario's instants."""

    def status_rows(self) -> tuple[float, dict[str, dict[str, Any]], list[tuple]]:
        """One `ctl status`: (scenario time, per-cell counters, queue rows of the sampled cells)."""
        status = self.rig.request({"cmd": "status"})
        now = self.clock.now()
        port_cell = {v: k for k, v in self.rig.plan.cell_ports.items()}
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
            at = now if read_at is None else self.clock.at_wall(read_at)
            snap[cell] = {"bytes_sent": dequeued * wire_bytes(self.scn), "drops": drops, "dequeued": dequeued,
                          "admitted": admitted, "read_at": round(at, 4)}
        return now, snap, rows

    def edges(self) -> None:
        """Per-port counters at every window edge (utilisation and drops in the windows)."""
        scn = self.scn
        for edge in sorted({w.t0 for w in scn.measure.windows} | {w.t1 for w in scn.measure.windows}):
            if not self.clock.sleep_until(edge):
                return
            for _ in range(EDGE_READ_TRIES):
                _, snap, _ = self.status_rows()
                if set(snap) >= set(self.rig.plan.cell_ports):
                    break
            self.data.link_snapshots[edge] = snap

    def queues(self) -> None:
        """Queue occupancy and average of the sampled cells, as often as status rounds allow."""
        scn = self.scn
        skipped = [c for c in scn.measure.queue_links if c not in self.rig.plan.cell_ports]
        if skipped:
            self.data.notes.append(f"queue samples of wired links ({', '.join(skipped)}) are not read in the lab")
        if not set(scn.measure.queue_links) & set(self.rig.plan.cell_ports):
            return
        interval = max(STATUS_INTERVAL, scn.measure.queue_interval)
        t = 0.0
        while t <= scn.duration and self.clock.sleep_until(t):
            now, _, rows = self.status_rows()
            self.data.queue_rows += rows
            t = max(t + interval, now)   # a slow status round delays the next sample instead of queueing them

    def controller_log(self) -> None:
        """The controller's handoffs and notifications, from its log, on the run's timeline."""
        log = self.rig.out / "controller.log"
        if not log.exists() or not self.clock.t0_wall:
            return
        for line in log.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if row.get("event") == "handoff_active":
                took = row.get("duration_ms")
                if self.clock.scale != 1.0 and isinstance(took, (int, float)):
                    took = f"{took / self.clock.scale:.1f} ms of the scenario's ({took} ms of the machine's)"
                else:
                    took = f"{took} ms"
                self.data.notes.append(f"controller: handoff of {row.get('mh')} active {took} "
                                       "after its registration (registration → new path, buffer flushed, notified)")
            if row.get("event") in ("notified", "handoff_complete", "handoff_active", "detached", "probe_up"):
                self.data.notifications.append((self.clock.at_wall(row["ts"]), f"{row['event']} "
                                                 + json.dumps({k: v for k, v in row.items() if k not in ("ts", "event")})))
