"""Out-of-order receive queue: byte ranges above RCV.NXT waiting for the hole to fill.

Ranges are kept sorted and merged, so the queue never holds a byte twice and
SACK blocks fall out directly. The receive window bounds how much can be
here, so a plain list is fast enough.
"""
from __future__ import annotations


class Reassembly:
    def __init__(self) -> None:
        self._ranges: list[tuple[int, bytes]] = []  # (absolute start seq, data), sorted, disjoint, non-adjacent
        self._latest: int | None = None  # start of the range that changed last (first SACK block, RFC 2018)

    def __len__(self) -> int:
        return len(self._ranges)

    @property
    def bytes_held(self) -> int:
        return sum(len(d) for _, d in self._ranges)

    def add(self, start: int, data: bytes) -> None:
        """Queue `data` at absolute sequence `start`, merging with overlapping or adjacent ranges."""
        if not data:
            return
        end = start + len(data)
        keep: list[tuple[int, bytes]] = []
        merged_start, merged_end = start, end
        touching: list[tuple[int, bytes]] = []
        for s, d in self._ranges:
            if s <= end and s + len(d) >= start:
                touching.append((s, d))
                merged_start = min(merged_start, s)
                merged_end = max(merged_end, s + len(d))
            else:
                keep.append((s, d))
        if touching:
            buf = bytearray(merged_end - merged_start)
            buf[start - merged_start:end - merged_start] = data
            for s, d in touching:
                buf[s - merged_start:s - merged_start + len(d)] = d
            data = bytes(buf)
        keep.append((merged_start, data))
        keep.sort(key=lambda r: r[0])
        self._ranges = keep
        self._latest = merged_start

    def pop_contiguous(self, rcv_nxt: int) -> bytes:
        """Remove and return the data that starts at or before `rcv_nxt` (trimmed to start there)."""
        out = []
        while self._ranges and self._ranges[0][0] <= rcv_nxt:
            s, d = self._ranges.pop(0)
            if s + len(d) > rcv_nxt:
                piece = d[rcv_nxt - s:]
                out.append(piece)
                rcv_nxt += len(piece)
        return b"".join(out)

    def sack_blocks(self, limit: int) -> list[tuple[int, int]]:
        """Up to `limit` (start, end) ranges, the most recently changed first (RFC 2018)."""
        blocks = [(s, s + len(d)) for s, d in self._ranges]
        blocks.sort(key=lambda b: b[0] != self._latest)
        return blocks[:limit]
