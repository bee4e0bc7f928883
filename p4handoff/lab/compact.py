"""Compact run results: xz CSV with microsecond floats, queue samples thinned to what a figure can show.

A per-ACK sender trace is ~1.5 MB of CSV per simulated minute, mostly
float noise such as `0.009510399999999999`; rounded to 6 decimals
(microseconds for times) and xz-compressed it is ~15× smaller, and pandas
(`read_csv`), `xzcat` and `lzma.open` read it directly. Both steps are
deterministic, so equal runs still give byte-identical files.
"""
from __future__ import annotations

import io
import lzma
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import IO

SUFFIX = ".xz"
# Measured on 60 s vertical-handoff traces (KB, CPU s): gzip -6 176/0.04, xz preset 1 130/0.10, preset 6 85/0.75.
# A row repeats ~25 characters of its neighbours (",main,ack,ESTABLISHED,...,1000,acked=1000"): LZMA2's
# normal mode with matches up to 28 long finds them at a third of preset 6's cost: 99/0.26.
XZ_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 1, "mode": lzma.MODE_NORMAL, "mf": lzma.MF_HC3,
               "nice_len": 28, "depth": 2}]
# a whole CSV field that is a float with more than 6 decimals, or in scientific notation
_LONG_FLOAT = re.compile(r"(?:^|(?<=,))(-?\d+\.\d{7,}|-?\d+(?:\.\d+)?[eE]-?\d+)(?=,|$)", re.M)
# queue samples: keep at most this many buckets' extremes across the plotted time range (a figure is < 1000 px wide)
QUEUE_BUCKETS = 1000

QueueRow = tuple[float, str, int, int, int, float]


def _round(m: re.Match[str]) -> str:
    return repr(round(float(m.group(1)), 6))


def compact_csv(text: str) -> bytes:
    """CSV text with long floats rounded to 6 decimals, xz-compressed."""
    return lzma.compress(_LONG_FLOAT.sub(_round, text).encode(), filters=XZ_FILTERS)


def open_text(path: Path) -> IO[str]:
    """A results file for reading, compressed (`.xz`) or not."""
    if path.suffix == SUFFIX:
        return io.TextIOWrapper(lzma.open(path, "rb"), newline="")
    return path.open(newline="")


def decimate(rows: Sequence[QueueRow], t_lo: float, t_hi: float) -> list[QueueRow]:
    """Queue samples thinned to each bucket's first, last, lowest and highest rows, per link.

    Buckets are (t_hi - t_lo) / QUEUE_BUCKETS wide: finer than a figure's
    pixel columns over the plotted range, so a line plot of the kept rows
    looks the same; the queue maxima the metrics read stay (they are
    computed before this anyway).
    """
    width = (t_hi - t_lo) / QUEUE_BUCKETS if t_hi > t_lo else 0.0
    if width <= 0:
        return list(rows)
    buckets: dict[tuple[str, int], list[int]] = {}
    for i, row in enumerate(rows):
        buckets.setdefault((row[1], math.floor(row[0] / width)), []).append(i)
    keep: set[int] = set()
    for idx in buckets.values():
        keep.update((idx[0], idx[-1]))
        for col in (2, 3, 5):   # queue, data, average
            keep.add(min(idx, key=lambda i: rows[i][col]))
            keep.add(max(idx, key=lambda i: rows[i][col]))
    return [rows[i] for i in sorted(keep)]
