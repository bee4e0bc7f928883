"""Bounded per-MH packet buffers with one global bound.

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
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class BufferStats:
    buffered: int = 0          # packets accepted
    released: int = 0          # packets handed on towards the MH
    dropped_overflow: int = 0  # oldest dropped: this MH's bound
    dropped_global: int = 0    # oldest dropped: the global bound


@dataclass
class MhBuffer:
    limit: int
    returned: deque[bytes] = field(default_factory=deque)
    main: deque[bytes] = field(default_factory=deque)
    pending: deque[bytes] = field(default_factory=deque)
    stats: BufferStats = field(default_factory=BufferStats)

    def __len__(self) -> int:
        return len(self.returned) + len(self.main) + len(self.pending)

    def drop_oldest(self) -> None:
        for seg in (self.returned, self.main, self.pending):
            if seg:
                seg.popleft()
                return


class BufferPool:
    """All MHs' buffers; `total` never exceeds `total_limit`."""

    def __init__(self, total_limit: int) -> None:
        self.total_limit = total_limit
        self.total = 0
        self._buffers: dict[str, MhBuffer] = {}

    def add_mh(self, mh: str, limit: int) -> None:
        self._buffers[mh] = MhBuffer(limit)

    def __getitem__(self, mh: str) -> MhBuffer:
        return self._buffers[mh]

    def push(self, mh: str, packet: bytes, segment: str = "main") -> None:
        """Queue `packet` at the tail of `segment` ("returned", "main" or "pending"), evicting if full."""
        buf = self._buffers[mh]
        if len(buf) >= buf.limit:
            buf.drop_oldest()
            buf.stats.dropped_overflow += 1
            self.total -= 1
        elif self.total >= self.total_limit:
            victim = max(self._buffers.values(), key=len)
            victim.drop_oldest()
            victim.stats.dropped_global += 1
            self.total -= 1
        getattr(buf, segment).append(packet)
        buf.stats.buffered += 1
        self.total += 1

    def pop_main(self, mh: str) -> bytes | None:
        """The next packet to release, or None if only held segments (or nothing) remain."""
        buf = self._buffers[mh]
        if not buf.main:
            return None
        self.total -= 1
        buf.stats.released += 1
        return buf.main.popleft()

    def promote_returned(self, mh: str) -> None:
        """Returned packets go before everything still queued (they were released earlier)."""
        buf = self._buffers[mh]
        buf.returned.extend(buf.main)
        buf.main, buf.returned = buf.returned, deque()

    def promote_pending(self, mh: str) -> None:
        """The gateway's held packets follow everything the old BS punted."""
        buf = self._buffers[mh]
        buf.main.extend(buf.pending)
        buf.pending.clear()
