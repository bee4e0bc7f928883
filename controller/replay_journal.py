"""The bounds a restart must not reset, journaled beside the buffer spool: registration replay, notification seq.

RFC 5944 §5.7: a home agent accepts a registration only if its
identification is above the last one it accepted from that MH. Kept in
memory only, that bound starts over when the controller restarts, and a
request captured before the restart (still inside the clock-skew window,
or from an MH whose clock is off) would be accepted again. So every
accepted identification is appended here (one `write(2)` on an O_APPEND
descriptor, as the spool does: a `kill -9` right after loses nothing;
`spool_fsync` adds an fsync; a batch of registrations handled together is
one write and one fsync, `deferred`) before the reply leaves, and read back at start.

The same file holds the notification sequence (`NotificationSequence`):
receivers drop a (MH, seq) they have seen (docs/wire-contract.md), so a
controller that started over at 1 would have its first notifications after
a restart dropped as replays. Sequence numbers are reserved `SEQ_BLOCK` at a
time, the block's end journaled before its first number is used; a restart
continues above the last reservation, so no number is ever sent twice
(until the 32-bit field wraps, after 2^32 notifications).

Records: CRC32, name length, name (an MH's, or `NOTIFICATION_SEQ`), bound (64 bits). A torn tail is
cut off at open; the file is compacted (one record per MH, temp file,
fsync, rename) at every open. One controller per file: an exclusive `flock`.
"""
from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from p4handoff.controller.spool import open_locked, replace_locked

_HEAD = struct.Struct("!IB")        # CRC32 of (name length, name, identification), name length
_IDENT = struct.Struct("!Q")
NOTIFICATION_SEQ = "#notification-seq"     # never an MH's name (p4handoff.docmodel.NAME_PATTERN)
SEQ_BLOCK = 1024


def _record(name: str, ident: int) -> bytes:
    raw = name.encode()[:255]
    body = bytes([len(raw)]) + raw + _IDENT.pack(ident)
    return struct.pack("!I", zlib.crc32(body)) + body


def _decode(data: bytes) -> dict[str, int]:
    bounds: dict[str, int] = {}
    i = 0
    while i + _HEAD.size <= len(data):
        crc, n = _HEAD.unpack_from(data, i)
        end = i + _HEAD.size + n + _IDENT.size
        if end > len(data) or zlib.crc32(data[i + 4:end]) != crc:
            break
        name = data[i + _HEAD.size:i + _HEAD.size + n].decode(errors="replace")
        bounds[name] = max(bounds.get(name, 0), _IDENT.unpack_from(data, end - _IDENT.size)[0])
        i = end
    return bounds


class ReplayJournal:
    """Highest accepted identification per MH name; `open()` locks the file and reads it."""

    def __init__(self, path: str | Path | None, fsync: bool = False) -> None:
        self.path = None if path is None else Path(path)     # None: in memory only (unit tests, no spool)
        self.fsync = fsync
        self._fd: int | None = None
        self.bounds: dict[str, int] = {}
        self._deferred: bytearray | None = None     # records of a `deferred()` block, not yet written

    def open(self) -> dict[str, int]:
        if self.path is None:
            return dict(self.bounds)
        fd, data = open_locked(self.path, "replay journal")
        self.bounds = _decode(data)
        self._fd = fd
        self._compact()
        return dict(self.bounds)

    def mh_bounds(self) -> dict[str, int]:
        """The registration bounds alone (without the notification sequence's)."""
        return {k: v for k, v in self.bounds.items() if k != NOTIFICATION_SEQ}

    def bound(self, mh: str) -> int:
        return self.bounds.get(mh, 0)

    def advance(self, mh: str, ident: int) -> None:
        """Record an accepted identification (a lower one than the bound is ignored)."""
        if ident <= self.bounds.get(mh, 0):
            return
        self.bounds[mh] = ident
        if self._fd is None:
            return
        if self._deferred is not None:
            self._deferred += _record(mh, ident)
            return
        self._write(_record(mh, ident))

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """Records made inside the block are written at its end in one write, with one fsync under
        `spool_fsync` (a batch of registrations: one, not one per registration). The caller sends no reply
        or notification that a record inside stands for until the block has ended (the daemon sends its
        batch's effects after it), so "journaled before the reply leaves" still holds."""
        self._deferred = bytearray()
        try:
            yield
        finally:
            data, self._deferred = bytes(self._deferred), None
            if data:
                self._write(data)

    def _write(self, data: bytes) -> None:
        assert self._fd is not None
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        if self.fsync:
            os.fsync(self._fd)

    def _compact(self) -> None:
        assert self._fd is not None and self.path is not None
        fd = replace_locked(self.path, b"".join(_record(n, i) for n, i in sorted(self.bounds.items())))
        os.close(self._fd)
        self._fd = fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class NotificationSequence:
    """The next notification sequence number (1, 2, ...), never one a previous controller on this journal used."""

    def __init__(self, journal: ReplayJournal) -> None:
        self.journal = journal
        self._next = self._limit = journal.bound(NOTIFICATION_SEQ) + 1    # nothing of this process reserved yet

    def __call__(self) -> int:
        if self._next >= self._limit:
            self._limit = self._next + SEQ_BLOCK
            self.journal.advance(NOTIFICATION_SEQ, self._limit - 1)
        n, self._next = self._next, self._next + 1
        return n & 0xFFFFFFFF
