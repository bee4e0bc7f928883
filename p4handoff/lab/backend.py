"""What runs one scenario run: the simulator (`sim_backend`) or the Mininet lab (`mininet.backend`).

Its own module so the runner, which plans the runs, and `execute`, which
performs each one wherever it runs, both name it without importing each other.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol

from p4handoff.lab.rundata import RunData
from p4handoff.scenario.loader import Scenario


class Backend(Protocol):
    """One run of `scn` with `seed`, its files in `out_dir`; `progress` gets the scenario time reached."""

    name: str

    def run(self, scn: Scenario, seed: int, out_dir: Path, progress: Callable[[float], None]) -> RunData: ...
