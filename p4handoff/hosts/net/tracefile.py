"""Write a connection's trace records to a file: CSV if the name ends in .csv, else JSON lines.

Times are seconds since the run started (the records carry the driver's
monotonic clock, which means nothing outside the process).
"""
from __future__ import annotations

import csv
import json
from dataclasses import fields
from pathlib import Path
from typing import TextIO

from p4handoff.hosts.tcp.trace import TraceRecord

COLUMNS = [f.name for f in fields(TraceRecord)]


class TraceWriter:
    """A `TraceSink` that appends one row per record."""

    def __init__(self, path: Path, t0: float) -> None:
        self.t0 = t0
        self.rows = 0
        self._file: TextIO = open(path, "w", newline="")
        self._csv = csv.writer(self._file) if path.suffix.lower() == ".csv" else None
        if self._csv is not None:
            self._csv.writerow(COLUMNS)

    def __call__(self, rec: TraceRecord) -> None:
        row = rec.as_dict()
        row["time"] = round(rec.time - self.t0, 6)
        if rec.srtt is not None:
            row["srtt"] = round(rec.srtt, 6)
        row["rto"] = round(rec.rto, 6)
        if self._csv is not None:
            self._csv.writerow(["" if row[c] is None else row[c] for c in COLUMNS])
        else:
            self._file.write(json.dumps(row, separators=(",", ":")) + "\n")
        self.rows += 1

    def close(self) -> None:
        self._file.close()
