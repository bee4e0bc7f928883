"""Measurements: per-flow delivery and losses, queue samples, throughput in a
window, the papers' ideal throughput, and trace files.

Delivered bytes are read where the receiver says so: every cumulative ACK
the receiving endpoint sends advances the flow's in-order delivered byte
count (relative to the first ACK it sent, i.e. its SYN-ACK). So throughput
counts unique bytes in order, never retransmissions or dummies — the
papers' "bytes received" and UCC's "cumulatively acknowledged bytes".
"""
from __future__ import annotations

import csv
import json
import math
from bisect import bisect_left, bisect_right
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterable, Sequence

from p4handoff.hosts.segment import ACK, RST
from p4handoff.hosts.tcp.trace import TRACE_FIELDS
from p4handoff.hosts.sim.packet import PRIORITY

if TYPE_CHECKING:
    from p4handoff.hosts.segment import Segment
    from p4handoff.hosts.sim.engine import Simulator
    from p4handoff.hosts.sim.link import Link
    from p4handoff.hosts.sim.packet import Packet
    from p4handoff.hosts.tcp.trace import TraceRecord

_SEQ_MOD = 1 << 32


class FlowStats:
    """Delivery over time, data sent and data lost (by cause) for one flow."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.ack_times: list[float] = []
        self.ack_bytes: list[int] = []
        self._base: int | None = None
        self.data_segments_sent = 0
        self.data_bytes_sent = 0
        self.data_send_times: list[float] = []      # each data segment (retransmissions too), as it leaves
        self.dummies_sent = 0
        self.dummy_acks_received = 0
        self.data_drops: dict[str, int] = {}
        self.dummy_drops: dict[str, int] = {}
        self.data_drop_times: list[float] = []
        self._sent_seqs: set[int] = set()
        self._resent: list[tuple[float, int]] = []   # (time, seq) of data segments sent again
        self._forwarded: set[int] = set()           # seqs the network forwarded (IPF)...
        self._forward_lost: set[int] = set()        # ...and those of them it then dropped

    # taps (installed by Network.flow)
    def on_sender_send(self, seg: "Segment", now: float) -> None:
        if seg.dummy:
            self.dummies_sent += 1
        elif seg.payload:
            self.data_segments_sent += 1
            self.data_bytes_sent += len(seg.payload)
            self.data_send_times.append(now)
            if seg.seq in self._sent_seqs:
                self._resent.append((now, seg.seq))
            else:
                self._sent_seqs.add(seg.seq)

    def on_forwarded(self, seg: "Segment") -> None:
        """The network (an IPF base station) forwarded this data segment toward the MH."""
        self._forwarded.add(seg.seq)

    def on_sender_receive(self, seg: "Segment", now: float) -> None:
        if seg.dummy:
            self.dummy_acks_received += 1

    def on_receiver_send(self, seg: "Segment", now: float) -> None:
        if not seg.flags & ACK or seg.flags & RST or seg.dummy:
            return
        if self._base is None:
            self._base = seg.ack
        delivered = (seg.ack - self._base) % _SEQ_MOD
        if not self.ack_bytes or delivered > self.ack_bytes[-1]:
            self.ack_times.append(now)
            self.ack_bytes.append(delivered)

    def on_drop(self, pkt: "Packet", cause: str, now: float) -> None:
        if pkt.seg.dummy:
            self.dummy_drops[cause] = self.dummy_drops.get(cause, 0) + 1
        elif pkt.seg.payload:
            self.data_drops[cause] = self.data_drops.get(cause, 0) + 1
            self.data_drop_times.append(now)
            if pkt.klass == PRIORITY and pkt.seg.seq in self._forwarded:
                self._forward_lost.add(pkt.seg.seq)

    # results
    @property
    def data_losses(self) -> int:
        """Data segments the network dropped (dummies and pure ACKs excluded)."""
        return sum(self.data_drops.values())

    def data_losses_between(self, t0: float, t1: float) -> int:
        """Data segments dropped in [t0, t1]."""
        return bisect_right(self.data_drop_times, t1) - bisect_left(self.data_drop_times, t0)

    def forwarded_resent_times(self) -> list[float]:
        """When the sender sent again a segment the network forwarded and did not lose afterwards:
        a copy of a segment that was on its way (issue 20's duplicates)."""
        return [t for t, seq in self._resent if seq in self._forwarded and seq not in self._forward_lost]

    def loss_rate(self) -> float:
        """Dropped data segments / data segments sent (DSBP's metric)."""
        return self.data_losses / self.data_segments_sent if self.data_segments_sent else 0.0

    def delivered(self, t: float) -> int:
        """Bytes delivered in order to the receiving application by time `t`."""
        i = bisect_right(self.ack_times, t)
        return self.ack_bytes[i - 1] if i else 0

    def throughput_bps(self, t0: float, t1: float) -> float:
        """Goodput in bits per second over [t0, t1]."""
        if t1 <= t0:
            raise ValueError(f"throughput window must have t1 > t0, got {t0}..{t1}")
        return (self.delivered(t1) - self.delivered(t0)) * 8 / (t1 - t0)

    def throughput_series(self, interval: float, t0: float, t1: float) -> list[tuple[float, float]]:
        """(window end, b/s) for consecutive windows of `interval` seconds in [t0, t1]."""
        if interval <= 0:
            raise ValueError(f"interval must be positive, got {interval}")
        out = []
        n = int(math.floor((t1 - t0) / interval + 1e-9))
        for k in range(n):
            a = t0 + k * interval
            out.append((a + interval, self.throughput_bps(a, a + interval)))
        return out

    def summary(self) -> dict[str, Any]:
        return {"flow": self.name, "delivered_bytes": self.ack_bytes[-1] if self.ack_bytes else 0,
                "data_segments_sent": self.data_segments_sent, "data_bytes_sent": self.data_bytes_sent,
                "data_losses": self.data_losses, "data_drops": dict(sorted(self.data_drops.items())),
                "dummies_sent": self.dummies_sent, "dummy_acks_received": self.dummy_acks_received,
                "dummy_drops": dict(sorted(self.dummy_drops.items()))}


class QueueSampler:
    """Every `interval` seconds, the length and average of some links' queues."""

    FIELDS = ("t", "link", "queue", "data", "dummy", "avg")

    def __init__(self, sim: "Simulator", links: Sequence["Link"], interval: float) -> None:
        if interval <= 0:
            raise ValueError(f"sampling interval must be positive, got {interval}")
        self.sim = sim
        self.links = list(links)
        self.interval = interval
        self.rows: list[tuple[float, str, int, int, int, float]] = []
        self._start = sim.now
        self._k = 0
        sim.at(sim.now, self._sample)

    def _sample(self) -> None:
        now = self.sim.now
        for link in self.links:
            q = link.queue
            self.rows.append((now, link.name, len(q), q.data_len, q.dummy_len, q.avg))
        self._k += 1
        self.sim.at(self._start + self._k * self.interval, self._sample)  # no drift from repeated sums

    def max_avg(self, link: "Link", t0: float = 0.0, t1: float = math.inf) -> float:
        """The highest average seen on `link` in [t0, t1] (IPF: does avg_q_np reach max_th?)."""
        return max((r[5] for r in self.rows if r[1] == link.name and t0 <= r[0] <= t1), default=0.0)

    def write_csv(self, path: str | Path) -> None:
        with Path(path).open("w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(self.FIELDS)
            w.writerows(self.rows)


def ideal_bps(intervals: Iterable[tuple[float, float, float]], t0: float, t1: float) -> float:
    """The papers' ideal: Σ(bottleneck rate × time the path is available) / window.

    `intervals` are (start, end, bottleneck b/s) for the periods in which the
    path exists; only their overlap with [t0, t1] counts.
    """
    if t1 <= t0:
        raise ValueError(f"window must have t1 > t0, got {t0}..{t1}")
    total = 0.0
    for start, end, rate in intervals:
        overlap = min(end, t1) - max(start, t0)
        if overlap > 0:
            total += rate * overlap
    return total / (t1 - t0)


class TraceWriter:
    """Per-connection trace rows to CSV or JSON lines, byte-for-byte reproducible.

    The format follows the file name (`.csv`, else JSON lines); CSV takes its
    columns from the first row, later rows must have the same keys.
    """

    def __init__(self, path: str | Path, fmt: str | None = None) -> None:
        self.path = Path(path)
        self.fmt = fmt or ("csv" if self.path.suffix == ".csv" else "jsonl")
        if self.fmt not in ("csv", "jsonl"):
            raise ValueError(f"trace format must be 'csv' or 'jsonl', got {self.fmt!r}")
        self._fh: IO[str] = self.path.open("w", newline="")
        self._csv: Any = None                       # csv.writer, made with the header at the first row
        self._columns: tuple[str, ...] = ()

    def write(self, row: dict[str, Any]) -> None:
        if self.fmt == "jsonl":
            self._fh.write(json.dumps(row, separators=(",", ":")) + "\n")
            return
        if self._csv is None:
            self._start_csv(tuple(row))
        elif tuple(row) != self._columns:
            if row.keys() != set(self._columns):
                raise ValueError(f"trace row has keys {sorted(row)}, the file's columns are {list(self._columns)}")
            row = {c: row[c] for c in self._columns}
        self._csv.writerow(row.values())

    def write_record(self, rec: "TraceRecord") -> None:
        """A TCP sender's trace record (the per-ACK path: no dict for CSV)."""
        if self.fmt == "jsonl":
            self.write(rec.as_dict())
            return
        if self._csv is None:
            self._start_csv(TRACE_FIELDS)
        elif self._columns is not TRACE_FIELDS:
            raise ValueError(f"a trace record in a file whose columns are {list(self._columns)}")
        self._csv.writerow(rec.row())

    def _start_csv(self, columns: tuple[str, ...]) -> None:
        self._csv = csv.writer(self._fh, lineterminator="\n")
        self._csv.writerow(columns)
        self._columns = columns

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
