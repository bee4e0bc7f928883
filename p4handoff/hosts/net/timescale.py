"""An endpoint's clock when the lab runs its network slower than real time (time dilation, docs/lab.md).

A lab run with `lab.time_scale: S` stretches every delay and divides every
rate of the network by S, so each second of the experiment takes S seconds
of the machine's. The endpoints' TCP must see the experiment's seconds, or
its timers (RTO, TIME-WAIT), RTT samples and packet-pair rates would be S
times off: the driver reads this clock instead of `time.monotonic()`, and
turns the waits it computes on it back into the machine's seconds.
"""
from __future__ import annotations

import time

MAX_TIME_SCALE = 100.0


class ScaledClock:
    """Monotonic seconds that pass `scale` times slower than the machine's from the clock's creation, when it
    read the machine's monotonic clock (so an instant taken then is the same on either)."""

    def __init__(self, scale: float = 1.0) -> None:
        if not 1.0 <= scale <= MAX_TIME_SCALE:
            raise ValueError(f"time scale must be in [1, {MAX_TIME_SCALE:g}], got {scale}")
        self.scale = scale
        self.origin = time.monotonic()

    def __call__(self) -> float:
        if self.scale == 1.0:
            return time.monotonic()
        return self.origin + (time.monotonic() - self.origin) / self.scale

    def real(self, span: float) -> float:
        """The machine's seconds that `span` of this clock's take."""
        return span * self.scale

    def scaled(self, span: float) -> float:
        """This clock's seconds that `span` of the machine's take."""
        return span / self.scale
