"""How network descriptions and scenario files write an AQM's RED parameters: one set of keys, one w_q rule.

The switches' EWMA is shift-only (avg += (q - avg) >> k), so the weight the
data plane runs is 2**-k, k in `WQ_SHIFTS`. A network description must state
such a weight (it is what the switch runs); a scenario file states the
paper's weight (0.002), which the simulator runs as written and the lab runs
as `nearest_wq_shift` of it, with a note in the report (docs/lab.md).
"""
from __future__ import annotations

RED_KEYS = ("min_th", "max_th", "max_p", "w_q")   # required by red and mred, refused on a drop-tail queue
WQ_SHIFTS = range(1, 17)                          # w_q = 2**-k the descriptions take (1/2 .. 1/65536)


def nearest_wq_shift(w_q: float) -> int:
    """The k in `WQ_SHIFTS` whose 2**-k is nearest to `w_q` by value (of two as near, the larger weight)."""
    return min(WQ_SHIFTS, key=lambda k: abs(2.0 ** -k - w_q))
