"""How the report writes a value: the papers' units (Mb/s, %, packets), with the digits that tell values apart.

Its own module so that the report, the claims' verdicts and the plots write a value the same way.
"""
from __future__ import annotations

import itertools
import math

from p4handoff.scenario.loader import Quantity
from p4handoff.scenario.model import FRACTION_METRICS, RATE_METRICS


def fmt(metric: str, v: float | None, extra: int = 0) -> str:
    """A value in the unit the papers use: Mb/s, %, packets, counts (`extra` more decimals)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if metric in RATE_METRICS:
        return f"{v / 1e6:.{3 + extra}f}"
    if metric in ("percent_of_ideal", "max_avg_queue"):
        return f"{v:.{1 + extra}f}"
    if metric == "ratio":
        return f"{v:.{2 + extra}f}"
    if metric in FRACTION_METRICS:
        return f"{100 * v:.{2 + extra}f}"
    if extra == 0 and float(v).is_integer():
        return f"{v:.0f}"
    return f"{v:.{1 + extra}f}"


def fmt_apart(metric: str, values: list[float]) -> list[str]:
    """`values` formatted with as many decimals as it takes for different values to read
    differently (a claim is never decided on digits the reader cannot see)."""
    for extra in range(7):
        texts = [fmt(metric, v, extra) for v in values]
        if all(a != b for (a, x), (b, y) in itertools.combinations(zip(texts, values), 2) if x != y):
            return texts
    return texts


def unit(metric: str) -> str:
    return {"throughput": "Mb/s", "total_throughput": "Mb/s", "ideal": "Mb/s", "percent_of_ideal": "% of ideal",
            "loss_rate": "%", "utilization": "%", "max_avg_queue": "packets", "max_queue": "packets",
            "min_queue": "packets", "priority_admitted": "packets",
            "data_losses": "packets", "drops": "packets", "delivered_bytes": "bytes",
            "dummies_sent": "segments", "forwarded_resent": "segments"}.get(metric, "")


def describe(q: Quantity) -> str:
    return f"{q.metric.replace('_', ' ')}{q.subject} ({unit(q.metric)}, window {q.window})"
