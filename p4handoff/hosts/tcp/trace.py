"""Per-connection trace records: what the papers plot (cwnd, ssthresh over time) plus why it changed.

The core builds a record only when a sink is attached; writing CSV or JSON
lines is the driver's job (`as_dict` gives a flat row).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Callable


@dataclass(slots=True, frozen=True)
class TraceRecord:
    """One event of one connection. Window figures in bytes, times in seconds.

    `snd_una` counts bytes acknowledged since the connection's first data byte;
    `srtt` is None before the first RTT sample.
    """

    time: float
    conn: str
    event: str
    state: str
    cwnd: int
    ssthresh: int
    flight: int
    srtt: float | None
    rto: float
    snd_una: int
    mss: int
    detail: str = ""

    def as_dict(self) -> dict[str, object]:
        return dict(zip(TRACE_FIELDS, _row(self)))

    def row(self) -> tuple[object, ...]:
        """The values in TRACE_FIELDS order (a CSV row without building a dict)."""
        return _row(self)


TRACE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(TraceRecord))
_row = attrgetter(*TRACE_FIELDS)


TraceSink = Callable[[TraceRecord], None]
