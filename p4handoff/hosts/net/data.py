"""Byte streams for the command line's transfers: what a sender sends, what a receiver keeps.

A transfer is checked end to end by content: both sides hash what crossed
(SHA-256), so `host send` and `host recv` print digests that must match.
The generated stream is pseudo-random (not a repeated short pattern), so a
segment delivered at the wrong offset changes the digest.
"""
from __future__ import annotations

import hashlib
import random
from abc import ABC, abstractmethod
from pathlib import Path
from typing import BinaryIO, Callable

BLOCK = 1 << 20


class _Source(ABC):
    """What every source does around producing bytes: honour `stop()`, count and hash what it gives."""

    def __init__(self, stop: Callable[[], bool] | None) -> None:
        self.offset = 0
        self.stop = stop
        self.hash = hashlib.sha256()

    def __call__(self, n: int) -> bytes:
        if self.stop is not None and self.stop():
            return b""
        chunk = self._next(n)
        self.offset += len(chunk)
        self.hash.update(chunk)
        return chunk

    @abstractmethod
    def _next(self, n: int) -> bytes:
        """Up to n more bytes, b"" at the end."""


class PatternSource(_Source):
    """`total` bytes (None: endless) of a seeded pseudo-random stream, ending early when `stop()` is true.

    Called by the TCP core as its data source (`source(n)` -> up to n bytes,
    b"" at the end). Slices come from one precomputed block, so generating
    data costs a slice and a hash update per call.
    """

    def __init__(self, total: int | None, seed: int = 0, stop: Callable[[], bool] | None = None) -> None:
        if total is not None and total < 0:
            raise ValueError(f"byte count must be >= 0, got {total}")
        super().__init__(stop)
        block = random.Random(seed).randbytes(BLOCK)
        self._data = block + block  # any slice of up to BLOCK bytes is contiguous
        self.total = total

    def _next(self, n: int) -> bytes:
        if self.total is not None:
            n = min(n, self.total - self.offset)
        n = min(n, BLOCK)
        if n <= 0:
            return b""
        start = self.offset % BLOCK
        return self._data[start:start + n]


class FileSource(_Source):
    """The bytes of a file, read as the core asks for them."""

    def __init__(self, path: Path, stop: Callable[[], bool] | None = None) -> None:
        super().__init__(stop)
        self._file: BinaryIO = open(path, "rb")

    def _next(self, n: int) -> bytes:
        return self._file.read(n)

    def close(self) -> None:
        self._file.close()


class Sink:
    """Received bytes: counted, hashed, and written to `path` if given."""

    def __init__(self, path: Path | None = None) -> None:
        self._file: BinaryIO | None = open(path, "wb") if path is not None else None
        self.count = 0
        self.hash = hashlib.sha256()

    def __call__(self, data: bytes) -> None:
        self.count += len(data)
        self.hash.update(data)
        if self._file is not None:
            self._file.write(data)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
