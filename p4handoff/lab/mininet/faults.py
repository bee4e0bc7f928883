"""Faults in a running lab: a switch's BMv2 or the controller killed -9 and started again at once.

A `Fault` names the element (a switch of the plan, or `controller`) and the
scenario time; `LabRun` plays its faults on a thread beside the timeline
(`p4handoff.lab.mininet.backend`), on the lab it runs on
(`p4handoff.topo.rig.LabRig`). Each kill is SIGKILL to the PID, so
the element gets no chance to clean up, and the restart goes through the
code that started it the first time:

- a switch: `LabNet.restart` (same ports, P4Runtime socket), then — once
  the controller has reconnected, pushed the pipeline and reconciled the
  entries (its status shows the switch up with a new connection) — the
  planned queue depths and rates over Thrift, which P4Runtime cannot set;
- the controller: `LabRig.start_controller` (same description, log, control
  socket, hence the same spool of buffered packets), which returns once it
  serves with every switch up. A registration the dead controller never
  saw is sent again, as a Mobile IP MH does when its request gets no reply
  (RFC 5944, 3.6.3): every host whose controller does not have it attached
  where it last registered registers again.

The `FaultRecord` keeps the instants (monotonic clock) the measurements need.
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from p4handoff.topo.rig import LabRig

CONTROLLER = "controller"
PROGRAM_TIMEOUT = 60.0     # seconds for the controller to bring a restarted switch back
KILL_TIMEOUT = 10.0


@dataclass(frozen=True)
class Fault:
    """kill -9 `target` (a switch's name or "controller") at scenario time `at`; it is restarted at once."""

    target: str
    at: float


@dataclass
class FaultRecord:
    """What happened, on the monotonic clock: killed, new process started, back in service.

    `serving`: for a switch, the controller has it up again (pipeline, entries) and its queues are set;
    for the controller, it serves with every switch up. `registered_again`: hosts that had to repeat a
    registration the dead controller missed.
    """

    target: str
    at: float
    killed: float
    restarted: float
    serving: float
    registered_again: list[str] = field(default_factory=list)


def check_faults(faults: Sequence[Fault], switches: Sequence[str], duration: float) -> list[Fault]:
    """The faults, checked against the lab (ValueError naming every bad one)."""
    problems = [f"fault {f.target!r} at {f.at:g} s: no such element (switches: {', '.join(switches)}, "
                f"or {CONTROLLER})" for f in faults if f.target != CONTROLLER and f.target not in switches]
    problems += [f"fault {f.target!r} at {f.at:g} s: outside the run (0..{duration:g} s)"
                 for f in faults if not 0 <= f.at < duration]
    if problems:
        raise ValueError("; ".join(problems))
    return list(faults)


def inject(rig: LabRig, fault: Fault) -> FaultRecord:
    """Kill `fault.target` by its PID, start it again, wait until it is back in service."""
    if fault.target == CONTROLLER:
        return _controller(rig, fault)
    return _switch(rig, fault)


def _switch(rig: LabRig, fault: Fault) -> FaultRecord:
    assert rig.net is not None
    name = fault.target
    connects = _session(rig, name)["connects"]
    killed = time.monotonic()
    rig.net.kill(name, KILL_TIMEOUT)
    restarted = time.monotonic()
    rig.switches[name] = rig.net.restart(name)
    deadline = time.monotonic() + PROGRAM_TIMEOUT
    while True:
        s = _session(rig, name)
        if s["state"] == "up" and s["connects"] > connects and s["entries"] is not None:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"switch {name} not reprogrammed by the controller within {PROGRAM_TIMEOUT} s "
                               f"after its restart (last error: {s['last_error']!r})")
        time.sleep(0.02)
    rig.set_queues(name)
    return FaultRecord(name, fault.at, killed, restarted, time.monotonic())


def _session(rig: LabRig, name: str) -> dict:
    status = rig.request({"cmd": "status", "counters": False})
    return next(s for s in status["switches"] if s["name"] == name)


def _controller(rig: LabRig, fault: Fault) -> FaultRecord:
    proc = rig.controller
    if proc is None or proc.poll() is not None:
        raise RuntimeError("the controller is not running")
    rig.controller_ready.clear()
    killed = time.monotonic()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(KILL_TIMEOUT)
    restarted = time.monotonic()
    rig.start_controller()
    serving = time.monotonic()
    return FaultRecord(CONTROLLER, fault.at, killed, restarted, serving, register_again(rig))


def register_again(rig: LabRig) -> list[str]:
    """Hosts not attached where they last registered send their registration again; returns their names."""
    status = rig.request({"cmd": "status", "counters": False})
    where = {m["mh"]: m for m in status["mobile_hosts"]}
    again = []
    for name, dev in sorted(rig.registered.items()):
        m = where.get(name)
        if m is None or m["bs"] != rig.plan.bs_of_device(name, dev) or m["phase"] in ("unknown", "detached-buffering"):
            rig.register(name, dev)
            again.append(name)
    return again
