"""The emulated link, without I/O: rate, one-way delay, random loss, bounded queue, outages.

The same rules as the simulator's links (docs/simulator.md, "Links"), so a
scenario means the same thing on both backends:

- a frame offered at `now` starts transmission when the link is free
  (start = max(now, busy_until)); its serialisation takes size·8/rate; it
  arrives `delay` after the end of transmission;
- the queue holds frames that have not started transmission; an arrival
  that finds `limit` of them is dropped ("overflow");
- random loss is drawn when the frame is admitted: its airtime is spent,
  it never arrives ("random");
- an outage (`set_down`) loses everything queued or on the wire and every
  frame offered until `set_up` ("outage"); nothing is replayed.

Sizes are what the rate applies to: the bridge passes the IP packet size
(frame length minus the 14-byte Ethernet header), as the papers and the
simulator count rates.
"""
from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Generic, TypeVar

F = TypeVar("F")


@dataclass
class LinkParams:
    rate_bps: float | None        # None: no rate limit (delay and loss only)
    delay: float = 0.0            # one-way, seconds
    loss: float = 0.0             # probability per frame
    limit: int = 1000             # frames waiting to start transmission

    def check(self) -> "LinkParams":
        if self.rate_bps is not None and self.rate_bps <= 0:
            raise ValueError(f"rate must be positive, got {self.rate_bps}")
        if self.delay < 0:
            raise ValueError(f"delay must not be negative, got {self.delay}")
        if not 0.0 <= self.loss <= 1.0:
            raise ValueError(f"loss must be within 0..1, got {self.loss}")
        if self.limit < 1:
            raise ValueError(f"queue limit must be at least 1, got {self.limit}")
        return self


@dataclass
class LinkStats:
    offered: int = 0
    delivered: int = 0
    bytes_delivered: int = 0
    drops: dict[str, int] = field(default_factory=dict)

    def drop(self, cause: str, n: int = 1) -> None:
        self.drops[cause] = self.drops.get(cause, 0) + n


class LinkModel(Generic[F]):
    """One direction of a link. `offer` schedules a frame; `due(now)` hands back those that arrived."""

    def __init__(self, params: LinkParams, rng: random.Random | None = None) -> None:
        self.params = params.check()
        self.rng = rng or random.Random(0)
        self.up = True
        self.busy_until = 0.0
        self._starts: deque[float] = deque()              # start times of frames not yet transmitting
        self._pending: deque[tuple[float, F]] = deque()   # (arrival time, frame), in arrival order
        self.stats = LinkStats()

    def set_params(self, params: LinkParams) -> None:
        """New rate/delay/loss/limit from now on (frames already scheduled keep their times)."""
        self.params = params.check()

    def queued(self, now: float) -> int:
        starts = self._starts
        while starts and starts[0] <= now:
            starts.popleft()
        return len(starts)

    def offer(self, frame: F, size: int, now: float) -> bool:
        """Take a frame of `size` bytes at `now`; False if it was dropped at once."""
        p = self.params
        self.stats.offered += 1
        if not self.up:
            self.stats.drop("outage")
            return False
        if self.queued(now) >= p.limit:
            self.stats.drop("overflow")
            return False
        start = self.busy_until if self.busy_until > now else now
        end = start + (size * 8 / p.rate_bps if p.rate_bps else 0.0)
        self.busy_until = end
        if start > now:
            self._starts.append(start)
        if p.loss and self.rng.random() < p.loss:
            self.stats.drop("random")
            return False
        arrive = end + p.delay
        if self._pending and arrive < self._pending[-1][0]:
            arrive = self._pending[-1][0]   # a delay lowered mid-run never reorders frames
        self._pending.append((arrive, frame))
        return True

    def next_due(self) -> float | None:
        return self._pending[0][0] if self._pending else None

    def due(self, now: float) -> list[F]:
        """Frames whose arrival time has come, in order."""
        pending = self._pending
        out = []
        while pending and pending[0][0] <= now:
            out.append(pending.popleft()[1])
        self.stats.delivered += len(out)
        return out

    def set_down(self, now: float) -> None:
        """Outage: lose what is queued and on the wire; refuse arrivals until set_up."""
        if self._pending:
            self.stats.drop("outage", len(self._pending))
        self._pending.clear()
        self._starts.clear()
        self.busy_until = now
        self.up = False

    def set_up(self, now: float) -> None:
        self.up = True
        self.busy_until = max(self.busy_until, now)
