"""The daemon's timers against its event queue (controller/daemon.py), in-process, switches not connected.

A marker timeout must mean the marker did not come back in time, not that the
daemon was busy when its deadline passed: a packet-in that reached the
controller before the deadline is handled before the timers due then. And
timers due together are each MH's own input (handoff_timers.py), batched.
"""
from __future__ import annotations

import copy
import time
from pathlib import Path

import yaml

from p4handoff.controller.daemon import Daemon
from p4handoff.controller.intents import SendToward
from p4handoff.controller.network import parse_network
from p4handoff.controller.p4runtime.entities import PacketIn
from p4handoff.controller.packets import ethernet
from p4handoff.controller.punts import REASON_BUFFER
from p4handoff.controller.session import BadPacketIn, PacketInEvent

EXAMPLE = Path(__file__).resolve().parent.parent / "topo" / "three-switch.yaml"
MARKER_MS = 40


def daemon(tmp_path: Path) -> tuple[Daemon, list[tuple[str, dict]]]:
    raw = copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
    raw["controller"].update(socket=str(tmp_path / "ctl.sock"), spool=None, auth="none", keys=None,
                             marker_timeout_ms=MARKER_MS)
    raw["mobile_hosts"][0]["mac"] = "02:aa:00:00:00:01"           # known: `move` needs it before a registration
    logs: list[tuple[str, dict]] = []
    return Daemon(parse_network(raw), log=lambda e, f: logs.append((e, f))), logs


def handing_off(d: Daemon) -> tuple[bytes, float]:
    """mh1 attached at bs1, then moved to bs2 (the effects go nowhere: no switch is connected): the gateway's
    marker as bs1 punts it back, and the deadline of its timeout."""
    now = time.monotonic()
    d._apply(d.mobility.move("mh1", "bs1", now))
    fx = d.mobility.move("mh1", "bs2", now)
    d._apply(fx)
    marker = next(e for e in fx if isinstance(e, SendToward))
    gw_marker = d.mobility.state("mh1").gw_marker
    assert gw_marker is not None
    return ethernet("02:00:00:00:00:01", "02:00:00:00:00:02", marker.packet), gw_marker[1]


def punted(frame: bytes, at: float) -> PacketInEvent:
    """bs1's packet-in of `frame`, reaching the controller at `at` (no session: the daemon's is None too)."""
    return PacketInEvent("bs1", PacketIn(frame, {"reason": REASON_BUFFER, "ingress_port": 2}), None, at)  # type: ignore[arg-type]


def wait_past(deadline: float) -> None:
    while time.monotonic() <= deadline:
        time.sleep(deadline - time.monotonic() + 0.001)


def test_a_marker_that_reached_the_controller_in_time_is_not_timed_out_by_a_busy_daemon(tmp_path):
    d, logs = daemon(tmp_path)
    frame, deadline = handing_off(d)
    d.events.put(BadPacketIn("bs2", "busy"))                       # the event the daemon was busy with
    d.events.put(punted(frame, deadline - MARKER_MS / 2000))     # back in time, queued behind it
    wait_past(deadline)                                            # the daemon gets to its queue only now
    d._step()
    assert [e for e, _ in logs].count("marker_timeout") == 0       # the queued marker goes first
    d._step()
    events = [e for e, _ in logs]
    assert "marker_returned" in events and "marker_timeout" not in events
    assert d.mobility.state("mh1").gw_marker is None


def test_a_marker_back_after_its_deadline_is_timed_out_first(tmp_path):
    d, logs = daemon(tmp_path)
    frame, deadline = handing_off(d)
    wait_past(deadline)
    d.events.put(BadPacketIn("bs2", "busy"))
    d.events.put(punted(frame, time.monotonic()))                  # came back too late
    d._step()
    d._step()
    events = [e for e, _ in logs]
    assert events.index("marker_timeout") < events.index("marker_stale") and "marker_returned" not in events
