"""What one chaos run measured (`FaultRun`, a `FlowLoss` per flow), and a place runs happen (`Mode`).

Shared by the judge (`p4handoff.reliability.chaos`) and the two places it runs
faults (`p4handoff.reliability.chaos_lab`, `p4handoff.reliability.chaos_testbed`), so neither
side imports the other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass
class FlowLoss:
    """What one flow lost in one run.

    `kind` "udp": sequence-numbered datagrams, `lost_bytes` = payload sent and never received (exact).
    `kind` "tcp": `lost_bytes` = payload bytes retransmitted (the network dropped at most that much; in a
    scenario whose buffers hold every window, a run without a fault retransmits nothing), `stall_s` = the
    longest time the receiver got nothing new, `delivered_bytes` = bytes acknowledged by the end.
    `path`: the elements the flow's packets cross (a moving host's: every place it is ever in).
    """

    flow: str
    kind: str
    moving: bool
    path: list[str]
    lost_bytes: int
    stall_s: float | None = None
    delivered_bytes: int | None = None


@dataclass
class FaultRun:
    """One run: the fault (None for the reference), its recovery, each flow's loss, stale switches."""

    target: str | None
    instant: str | None
    recovery_ms: float | None = None
    flows: list[FlowLoss] = field(default_factory=list)
    stale_switches: list[str] = field(default_factory=list)
    handoff_complete: bool = False
    details: dict[str, Any] = field(default_factory=dict)   # mode-specific figures (timings, notes)

    def counted(self) -> list[FlowLoss]:
        """The flows `bytes_lost_non_moving` counts: hosts that never move, paths that avoid the killed element."""
        return [f for f in self.flows if not f.moving and self.target not in f.path]


class Mode(Protocol):
    """A place chaos runs happen (`p4handoff.reliability.chaos_lab`, `p4handoff.reliability.chaos_testbed`)."""

    def targets(self) -> list[str]:
        """The elements killed by default."""
        ...

    def elements(self) -> list[str]:
        """Every element that can be killed."""
        ...

    def instants(self) -> list[str]: ...

    def one_run(self, workdir: Path, target: str | None, instant: str | None) -> tuple[FaultRun, dict[str, Any]]:
        """One run (no fault if `target` is None): the result and every switch's entries at the end."""
        ...
