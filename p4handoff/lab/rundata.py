"""What one run of a scenario produced, in a form both backends fill and the metrics read.

The simulator and the lab measure the same things in different ways (taps
on the simulated hosts vs. endpoint traces and switch counters read over
P4Runtime); keeping one neutral record means the metrics, the report and
the plots are the same code whichever backend ran.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class FlowData:
    """One connection: in-order delivery over time, data sent, data lost, DSBP probes."""

    name: str
    ack_times: list[float] = field(default_factory=list)    # when the delivered count grew
    ack_bytes: list[int] = field(default_factory=list)      # bytes delivered in order by then
    send_times: list[float] = field(default_factory=list)   # data segments sent (retransmissions too)
    drop_times: list[float] = field(default_factory=list)   # data segments the network dropped
    drops: dict[str, int] = field(default_factory=dict)     # by cause
    dummies_sent: int = 0
    dummy_acks: int = 0
    trace: Path | None = None                               # the sender's trace (CSV)
    losses_known: bool = True                               # False: the backend cannot see its drops or dummies
    retransmits: int | None = None                          # segments the sender sent again (if reported)
    forwarded_resent_times: list[float] = field(default_factory=list)  # copies of segments the network forwarded

    def delivered(self, t: float) -> int:
        i = bisect_right(self.ack_times, t)
        return self.ack_bytes[i - 1] if i else 0

    def sent_between(self, t0: float, t1: float) -> int:
        return bisect_right(self.send_times, t1) - bisect_left(self.send_times, t0)

    def dropped_between(self, t0: float, t1: float) -> int:
        return bisect_right(self.drop_times, t1) - bisect_left(self.drop_times, t0)

    def forwarded_resent_between(self, t0: float, t1: float) -> int:
        return bisect_right(self.forwarded_resent_times, t1) - bisect_left(self.forwarded_resent_times, t0)


@dataclass
class RunData:
    """Everything measured in one run; `link_snapshots` are counters at the measurement windows' edges."""

    flows: dict[str, FlowData]
    link_rates: dict[str, float | None]                      # scenario link name -> b/s
    link_snapshots: dict[float, dict[str, dict[str, Any]]] = field(default_factory=dict)
    queue_rows: list[tuple[float, str, int, int, int, float]] = field(default_factory=list)
    timeline: list[tuple[float, str]] = field(default_factory=list)
    notifications: list[tuple[float, str]] = field(default_factory=list)
    counters: list[dict[str, Any]] = field(default_factory=list)
    backend: str = ""
    wall_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def snapshot(self, t: float) -> dict[str, dict[str, Any]]:
        """Counters at the snapshot nearest to `t` (backends take them at the window edges)."""
        if not self.link_snapshots:
            raise ValueError("no link counters were recorded")
        key = min(self.link_snapshots, key=lambda s: abs(s - t))
        return self.link_snapshots[key]
