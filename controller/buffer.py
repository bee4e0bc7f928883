"""The IPF buffer: bounded per-MH packet buffers with one global bound.

The controller is where a departed MH's packets wait (the old BS punts them):
one FIFO per MH, bounded per MH (default one window, 64 packets) and in
total. Overflow always drops the **oldest** packet (the paper's buffer holds
the most recent window; TCP recovers an old hole faster than a burst of
fresh losses) and counts it. The global bound evicts from the **longest**
buffer, so one MH's flood cannot starve the others' windows.

Each MH's FIFO has three segments, in release order:

    returned  packets that came back from a BS the MH left mid-flush
              (older than everything still queued; held until a drain marker)
    main      packets ready to release, in arrival order
    pending   packets punted by the gateway while packets it sent earlier
              towards the old BS may still be on their way (held until the
              gateway's drain marker comes back through the old BS)

Every operation can be journaled to a spool (controller/spool.py) so the
buffers outlive the controller process: pushes, evictions and promotions at
once, releases when the daemon has handed their packet-outs to the switch
(`commit`), and `restore` replays a journal into an empty pool. Entries are
(id, packet); ids are unique per spool, across restarts.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from p4handoff.controller.spool import COMPACT_BYTES, PROMOTE, PUSH, REMOVE, Record, Spool

Entry = tuple[int, bytes]      # (id, IPv4 packet)


@dataclass
class BufferStats:
    buffered: int = 0          # packets accepted
    released: int = 0          # packets handed on towards the MH
    dropped_overflow: int = 0  # oldest dropped: this MH's bound
    dropped_global: int = 0    # oldest dropped: the global bound


@dataclass
class MhBuffer:
    limit: int
    returned: deque[Entry] = field(default_factory=deque)
    main: deque[Entry] = field(default_factory=deque)
    pending: deque[Entry] = field(default_factory=deque)
    stats: BufferStats = field(default_factory=BufferStats)

    def __len__(self) -> int:
        return len(self.returned) + len(self.main) + len(self.pending)

    def drop_oldest(self) -> int:
        """Evict the oldest packet; its id."""
        for seg in (self.returned, self.main, self.pending):
            if seg:
                return seg.popleft()[0]
        raise IndexError("drop from an empty buffer")

    def packets(self) -> list[bytes]:
        """Every packet, in release order (returned, main, pending)."""
        return [p for seg in (self.returned, self.main, self.pending) for _, p in seg]


class BufferPool:
    """All MHs' buffers; `total` never exceeds `total_limit`."""

    def __init__(self, total_limit: int, spool: Spool | None = None) -> None:
        self.total_limit = total_limit
        self.total = 0
        self.spool = spool
        self._buffers: dict[str, MhBuffer] = {}
        self._next_id = 1
        self._uncommitted: list[Record] = []       # releases not yet given to a fence
        self._deferred: list[Record] | None = None  # records of a `deferred_journal` block, written at its end

    def add_mh(self, mh: str, limit: int) -> None:
        self._buffers[mh] = MhBuffer(limit)

    def __getitem__(self, mh: str) -> MhBuffer:
        return self._buffers[mh]

    def push(self, mh: str, packet: bytes, segment: str = "main") -> None:
        """Queue `packet` at the tail of `segment` ("returned", "main" or "pending"), evicting if full."""
        buf = self._buffers[mh]
        records: list[Record] = []
        if len(buf) >= buf.limit:
            records.append(Record(REMOVE, mh, buf.drop_oldest()))
            buf.stats.dropped_overflow += 1
            self.total -= 1
        elif self.total >= self.total_limit:
            victim_name, victim = max(self._buffers.items(), key=lambda kv: len(kv[1]))
            records.append(Record(REMOVE, victim_name, victim.drop_oldest()))
            victim.stats.dropped_global += 1
            self.total -= 1
        pid, self._next_id = self._next_id, self._next_id + 1
        getattr(buf, segment).append((pid, packet))
        buf.stats.buffered += 1
        self.total += 1
        if self.spool is not None:
            self._write(records + [Record(PUSH, mh, pid, segment, packet)])

    def pop_main(self, mh: str) -> bytes | None:
        """The next packet to release, or None if only held segments (or nothing) remain.

        Journaled as removed only once its switch has read the packet-out (`journal_releases`)."""
        buf = self._buffers[mh]
        if not buf.main:
            return None
        self.total -= 1
        buf.stats.released += 1
        pid, packet = buf.main.popleft()
        if self.spool is not None:
            self._uncommitted.append(Record(REMOVE, mh, pid))
        return packet

    def promote_returned(self, mh: str) -> None:
        """Returned packets go before everything still queued (they were released earlier).

        A promotion that moves nothing is not journaled: a marker back after the flush would
        otherwise leave a record in a spool just emptied."""
        buf = self._buffers[mh]
        if not buf.returned:
            return
        buf.returned.extend(buf.main)
        buf.main, buf.returned = buf.returned, deque()
        self._journal(Record(PROMOTE, mh, segment="returned"))

    def promote_pending(self, mh: str) -> None:
        """The gateway's held packets follow everything the old BS punted (nothing held: nothing journaled)."""
        buf = self._buffers[mh]
        if not buf.pending:
            return
        buf.main.extend(buf.pending)
        buf.pending.clear()
        self._journal(Record(PROMOTE, mh, segment="pending"))

    def discard(self, mh: str) -> int:
        """Drop every packet of `mh` (nowhere to deliver them); how many."""
        buf = self._buffers[mh]
        ids = [pid for seg in (buf.returned, buf.main, buf.pending) for pid, _ in seg]
        for seg in (buf.returned, buf.main, buf.pending):
            seg.clear()
        self.total -= len(ids)
        if self.spool is not None:
            self._write([Record(REMOVE, mh, pid) for pid in ids])
        return len(ids)

    def commit(self) -> None:
        """The releases so far are with their switches: journal them (callers without a fence)."""
        self.journal_releases(self.take_releases(), settled=True)

    def take_releases(self) -> list[Record]:
        """The releases not yet journaled, handed to a fence (controller/release_fence.py)."""
        records, self._uncommitted = self._uncommitted, []
        return records

    def journal_releases(self, records: list[Record], settled: bool) -> None:
        """Journal `records` (their switches have the packets); with every release `settled`, empty
        the spool once nothing is buffered or compact it. Not before: a snapshot or an empty spool
        would drop the packets of releases still unconfirmed."""
        if self.spool is None:
            return
        self._write_deferred()
        self.spool.append(records)
        if not settled:
            return
        if self.total == 0:
            self.spool.clear()
        elif self.spool.size > COMPACT_BYTES:
            self.spool.rewrite(self.snapshot())

    def snapshot(self) -> list[Record]:
        """Records that rebuild the pool as it is now."""
        return [Record(PUSH, name, pid, seg, packet) for name, buf in self._buffers.items()
                for seg in ("returned", "main", "pending") for pid, packet in getattr(buf, seg)]

    def restore(self, records: list[Record]) -> dict[str, int]:
        """Replay a journal into this (empty) pool; records of MHs it does not know are counted, not kept."""
        unknown: dict[str, int] = {}
        for r in records:
            buf = self._buffers.get(r.mh)
            self._next_id = max(self._next_id, r.pid + 1)
            if buf is None:
                unknown[r.mh] = unknown.get(r.mh, 0) + (r.op == PUSH) - (r.op == REMOVE)
                continue
            if r.op == PUSH:
                getattr(buf, r.segment).append((r.pid, r.packet))
            elif r.op == REMOVE:
                for seg in (buf.returned, buf.main, buf.pending):
                    kept = [e for e in seg if e[0] != r.pid]
                    if len(kept) != len(seg):
                        seg.clear()
                        seg.extend(kept)
                        break
            elif r.segment == "returned":
                buf.returned.extend(buf.main)
                buf.main, buf.returned = buf.returned, deque()
            else:
                buf.main.extend(buf.pending)
                buf.pending.clear()
        self.total = sum(len(b) for b in self._buffers.values())
        if self.spool is not None:
            self.spool.rewrite(self.snapshot())     # the journal restarts from what was kept
        return {k: v for k, v in unknown.items() if v > 0}

    def _journal(self, record: Record) -> None:
        if self.spool is not None:
            self._write([record])

    @contextmanager
    def deferred_journal(self) -> Iterator[None]:
        """Records made inside the block are written at its end in one write (a burst of arrivals: one
        system call, not one per packet); anything journaling releases writes them first, so the order
        in the file is the order they were made."""
        self._deferred = []
        try:
            yield
        finally:
            self._write_deferred()
            self._deferred = None

    def _write(self, records: list[Record]) -> None:
        assert self.spool is not None
        if self._deferred is not None:
            self._deferred += records
        else:
            self.spool.append(records)

    def _write_deferred(self) -> None:
        if self._deferred and self.spool is not None:
            self.spool.append(self._deferred)
        if self._deferred is not None:
            self._deferred = []
