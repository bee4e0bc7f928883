"""The lab's mobility timeline (p4handoff/lab/mininet/timeline.py) moves a group of MHs together.

A recording rig stands in for the lab here, each action taking 80 ms as `ip`
and the controller did on the loaded machine; the real timeline on Mininet
and BMv2 runs in tests/test_lab_bmv2.py. Played one MH after another, the
fourth MH of `ipf-group-burst.yaml` handed off 0.5 s after the instant; the
scenario says all four at 12.05 s.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from p4handoff.lab.mininet.clock import RunClock
from p4handoff.lab.mininet.timeline import LabTimeline
from p4handoff.lab.rundata import RunData
from p4handoff.scenario.loader import load

TRACES = Path(__file__).resolve().parent.parent / "traces"
ACTION_S = 0.08
K = 4


class RecordingRig:
    """The calls the timeline makes, each taking ACTION_S; `fail_on` raises for that MH's handoff."""

    def __init__(self, scn: Any, fail_on: str | None = None) -> None:
        self.plan = SimpleNamespace(hosts={m.name: SimpleNamespace(coas={}) for m in scn.topology.mobile_hosts},
                                    device=lambda mh, iface, cell: (f"{mh}-{iface}-{cell}", ""))
        self.active_dev = {m.name: self.plan.device(m.name, *m.start)[0] for m in scn.topology.mobile_hosts}
        self.registered: dict[str, str] = {}
        self.calls: list[tuple[float, str, str]] = []
        self.fail_on = fail_on
        self._lock = threading.Lock()

    def _act(self, what: str, mh: str) -> None:
        time.sleep(ACTION_S)
        with self._lock:
            self.calls.append((time.monotonic(), what, mh))

    def request(self, body: dict[str, Any]) -> dict[str, Any]:
        self._act("ctl " + body["cmd"], body["mh"])
        return {"ok": True}

    def emu(self, key: str, command: str) -> None:
        self._act("emu " + command, key.split("/")[0])

    def route_via(self, mh: str, dev: str) -> None:
        self._act("route", mh)
        self.active_dev[mh] = dev

    def register(self, mh: str, dev: str, probe_coa: str | None = None) -> None:
        if mh == self.fail_on:
            raise RuntimeError(f"{mh}: registration could not be sent")
        self._act("register", mh)
        self.registered[mh] = dev

    def start_place(self, mh: str) -> tuple[str, str]:
        return ("radio", "old")


def play(fail_on: str | None = None, scale: float = 1.0) -> tuple[RecordingRig, RunClock, RunData, Any]:
    sf = load(TRACES / "ipf-group-burst.yaml")
    scn = next(s for v, point, s in sf.runs() if v.label == "IPF" and point[0][1] == K)
    rig = RecordingRig(scn, fail_on)
    clock, data = RunClock(scale), RunData(flows={}, link_rates={})
    clock.start_in(-11.9 * scale)           # scenario time 11.9 s now: the group moves at 12 s
    LabTimeline(rig, scn, data, clock).play()     # type: ignore[arg-type]
    return rig, clock, data, scn


def test_a_group_moving_at_one_instant_moves_together():
    rig, clock, data, scn = play()
    moved_at = {op.mh: op.at for op in scn.mobility if op.op == "handoff"}
    assert len(moved_at) == K and len(set(moved_at.values())) == 1
    registered = {mh: t - clock.t0 for t, what, mh in rig.calls if what == "register"}
    assert sorted(registered) == sorted(moved_at)
    # each MH waits for its own five actions (detach: ctl, emu down; handoff: emu up, route, register),
    # not for the others': one after another the last would register 20 actions after the detach
    left_at = min(op.at for op in scn.mobility if op.op == "detach")
    assert all(t - left_at < 10 * ACTION_S for t in registered.values()), registered
    assert max(registered.values()) - min(registered.values()) < 2 * ACTION_S, registered
    for mh in moved_at:
        mine = [what for _, what, who in rig.calls if who == mh]
        assert mine == ["ctl detach", "emu down", "emu up", "route", "register"]
    assert [t for t, _ in data.timeline] == sorted(t for t, _ in data.timeline)
    assert rig.registered == {mh: rig.active_dev[mh] for mh in moved_at}


def test_a_failing_mh_is_reported_by_name_and_the_others_still_move():
    rig, clock, _, _ = play(fail_on="mh2")
    assert any(e.startswith("timeline of mh2:") and "could not be sent" in e for e in clock.errors), clock.errors
    assert {mh for _, what, mh in rig.calls if what == "register"} == {"mh1", "mh3", "mh4"}


def test_a_dilated_run_plays_the_timeline_on_its_stretched_clock():
    """`lab.time_scale: 3`: the group leaves at 12 s of the scenario, 36 s of the machine's after t0, and the
    run's timeline says 12 s."""
    rig, clock, data, scn = play(scale=3.0)
    left_at = min(op.at for op in scn.mobility if op.op == "detach")
    first = min(t for t, what, _ in rig.calls if what == "ctl detach") - ACTION_S - clock.t0
    assert 3 * left_at - 0.01 < first < 3 * left_at + 0.05, first
    detached = [t for t, what in data.timeline if what.startswith("detach")]
    assert len(detached) == K and all(left_at < t < left_at + 0.1 for t in detached), detached
