"""A lab run's scenario clock, shared by the threads that play the run, and the errors that stop it.

`RunPart` is what each of those parts (flows, timeline, observer) holds:
the built lab, the scenario, the run's record and this clock.

Scenario time 0 is `t0` on the monotonic clock (`t0_wall` on the wall
clock, for times the controller and the switches log); with a time scale S
(`lab.time_scale`, time dilation) a scenario second lasts S seconds of the
machine's, and every instant read or waited for goes through this clock.
A thread that fails records why; from then on every wait returns False, so
the others stop too and the run reports every error at once.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from p4handoff.topo.rig import LabRig
from p4handoff.lab.rundata import RunData
from p4handoff.scenario.loader import Scenario


class RunClock:
    """Scenario time for the threads of one lab run, and what went wrong in them."""

    def __init__(self, scale: float = 1.0) -> None:
        self.t0 = 0.0
        self.t0_wall = 0.0
        self.scale = scale
        self.errors: list[str] = []
        self._lock = threading.Lock()

    def start_in(self, lead: float) -> None:
        """Scenario time 0 is `lead` seconds (the machine's) from now."""
        self.t0 = time.monotonic() + lead
        self.t0_wall = time.time() + lead

    def now(self) -> float:
        """The scenario time now (negative before t0)."""
        return self.at_monotonic(time.monotonic())

    def instant(self, t: float) -> float:
        """The monotonic-clock instant of scenario time `t`."""
        return self.t0 + t * self.scale

    def at_monotonic(self, instant: float) -> float:
        """The scenario time of a monotonic-clock instant."""
        return (instant - self.t0) / self.scale

    def at_wall(self, stamp: float) -> float:
        """The scenario time of a wall-clock stamp (the controller's and the switches' logs)."""
        return (stamp - self.t0_wall) / self.scale

    def sleep_until(self, t: float) -> bool:
        """Wait for scenario time `t`; False if the run is failing or over."""
        while True:
            left = self.instant(t) - time.monotonic()
            if self.errors:
                return False
            if left <= 0:
                return True
            time.sleep(min(left, 0.05))

    def guard(self, fn: Callable[[], None]) -> None:
        """Run `fn` (a thread's body); an exception it raises is recorded, not lost with the thread."""
        try:
            fn()
        except Exception as exc:  # reported by the run, which stops the experiment
            with self._lock:
                self.errors.append(f"{fn.__name__}: {exc}")


class RunPart:
    """A part of a playing lab run: it acts on `rig`, reads `scn`, records into `data`, keeps time by `clock`."""

    def __init__(self, rig: LabRig, scn: Scenario, data: RunData, clock: RunClock) -> None:
        self.rig = rig
        self.scn = scn
        self.data = data
        self.clock = clock
