"""The buffer spool: MHs' buffered packets kept outside the controller process, so a restart loses none.

A journal of the buffer pool's operations (controller/buffer.py) in one
append-only file: `push` (MH, segment, id, packet), `remove` (MH, id: released
to a switch or evicted) and `promote` (MH, segment). Replaying it rebuilds the
pool exactly — same packets, same segments, same order — and a restarted
controller flushes what it finds (`Mobility.recover`). Used on both buffer
paths: the packets are in the controller's hands when they are buffered,
whether they came as packet-ins or from the buffer service (controller/
bufsvc.py, which keeps its own spool of what it has not handed over yet).

Durability: each record is one `write(2)` on an O_APPEND descriptor, so it is
in the kernel's page cache before the state machine goes on — a `kill -9` at
any instant loses nothing. Against power loss too, set `controller.spool_fsync`
(an fsync per record: slower). Records carry a length and a CRC32; a torn tail
(crash mid-write) is detected, reported and cut off at open. Releases are
recorded only once the switch has read their packet-out (a fence probe after
them came back: controller/release_fence.py), so a crash between the two
re-sends a packet (a duplicate, never a loss).

The file is truncated whenever every buffer is empty, and rewritten as a
snapshot (temp file, fsync, rename: atomic) when it outgrows `COMPACT_BYTES`.
One controller per spool: an exclusive `flock`, held while it runs.
"""
from __future__ import annotations

import fcntl
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

PUSH, REMOVE, PROMOTE = 1, 2, 3
SEGMENTS = ("returned", "main", "pending")
_HEAD = struct.Struct("!II")        # body length, CRC32 of the body
_BODY = struct.Struct("!BQB")       # op, packet id, segment index; then MH name (length-prefixed), packet
MAX_RECORD = 1 << 20
COMPACT_BYTES = 32 << 20


class SpoolError(OSError):
    """The spool cannot be used (locked by another controller, unreadable, not a regular file)."""


@dataclass(frozen=True)
class Record:
    op: int
    mh: str
    pid: int = 0
    segment: str = "main"
    packet: bytes = b""


def encode(rec: Record) -> bytes:
    name = rec.mh.encode()
    body = _BODY.pack(rec.op, rec.pid, SEGMENTS.index(rec.segment)) + bytes([len(name)]) + name + rec.packet
    return _HEAD.pack(len(body), zlib.crc32(body)) + body


def decode_all(data: bytes) -> tuple[list[Record], int]:
    """Every intact record from the start, and the offset where intact data ends (a torn tail follows)."""
    out: list[Record] = []
    i = 0
    while i + _HEAD.size <= len(data):
        size, crc = _HEAD.unpack_from(data, i)
        start, end = i + _HEAD.size, i + _HEAD.size + size
        if size < _BODY.size + 1 or size > MAX_RECORD or end > len(data):
            break
        body = data[start:end]
        if zlib.crc32(body) != crc:
            break
        op, pid, seg = _BODY.unpack_from(body)
        n = body[_BODY.size]
        name_end = _BODY.size + 1 + n
        if op not in (PUSH, REMOVE, PROMOTE) or seg >= len(SEGMENTS) or name_end > len(body):
            break
        out.append(Record(op, body[_BODY.size + 1:name_end].decode(errors="replace"), pid, SEGMENTS[seg],
                          body[name_end:]))
        i = end
    return out, i


def open_locked(path: Path, what: str) -> tuple[int, bytes]:
    """An append-only journal file opened (0600, created if missing) and locked against a second controller,
    with what an earlier controller left in it. `what` names the file in the SpoolError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise SpoolError(f"{what} {path}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SpoolError(f"{what} {path} is in use by another controller") from None
    if not os.path.isfile(path):
        os.close(fd)
        raise SpoolError(f"{what} {path} is not a regular file")
    data = b""
    while chunk := os.pread(fd, 1 << 20, len(data)):
        data += chunk
    return fd, data


class Spool:
    """The journal file; `open()` locks it and returns what an earlier controller left in it."""

    def __init__(self, path: str | Path, fsync: bool = False) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._fd: int | None = None
        self.size = 0
        self.torn_bytes = 0          # cut off at open: a record the previous process did not finish

    def open(self) -> list[Record]:
        fd, data = open_locked(self.path, "buffer spool")
        records, good = decode_all(data)
        self.torn_bytes = len(data) - good
        if self.torn_bytes:
            os.ftruncate(fd, good)
        self._fd, self.size = fd, good
        return records

    def append(self, records: list[Record]) -> None:
        if self._fd is None or not records:
            return
        data = b"".join(encode(r) for r in records)
        _write_all(self._fd, data)
        if self.fsync:
            os.fsync(self._fd)
        self.size += len(data)

    def clear(self) -> None:
        """Every buffer is empty: nothing to keep."""
        if self._fd is not None and self.size:
            os.ftruncate(self._fd, 0)
            if self.fsync:
                os.fsync(self._fd)
            self.size = 0

    def rewrite(self, snapshot: list[Record]) -> None:
        """Replace the journal by `snapshot` atomically (temp file, fsync, rename), keeping the lock."""
        if self._fd is None:
            return
        data = b"".join(encode(r) for r in snapshot)
        fd = replace_locked(self.path, data)
        os.close(self._fd)
        self._fd, self.size = fd, len(data)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def replace_locked(path: Path, data: bytes) -> int:
    """Replace `path` by `data` atomically (temp file 0600, locked before it takes the name, fsync, rename);
    the new file's descriptor, still locked and open for appending."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        _write_all(fd, data)
        os.fsync(fd)
        os.rename(tmp, path)
    except OSError:
        os.close(fd)
        raise
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
