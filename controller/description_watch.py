"""Notice when the network description a running controller was started from is edited.

The controller reads its description once, at start: a half-written file, a
typo or a removed MH must never change a running controller's model (its
switches hold the routes of that model). What an operator who edits the file
needs is to be told so, once per change, with whether the new file would be
accepted at the next start and, if not, every problem (`network_file_changed`).
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from p4handoff.controller.eventlog import LogFn
from p4handoff.controller.network import Network, NetworkError, load_network

CHECK_INTERVAL = 1.0      # seconds between looks at the file (a stat; read only when it changed)


class DescriptionWatch:
    def __init__(self, path: str | Path, running: Network, log: LogFn, interval: float = CHECK_INTERVAL) -> None:
        self.path = Path(path)
        self.running = running
        self.log = log
        self.interval = interval
        self._next = time.monotonic() + interval
        self._stat = self._signature()
        self._digest = self._read_digest()

    def _signature(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def _read_digest(self) -> str | None:
        try:
            return hashlib.sha256(self.path.read_bytes()).hexdigest()
        except OSError:
            return None

    def poll(self, now: float | None = None) -> bool:
        """Look at the file if the interval has passed; log and return True if its content changed."""
        now = time.monotonic() if now is None else now
        if now < self._next:
            return False
        self._next = now + self.interval
        sig = self._signature()
        if sig == self._stat:
            return False
        self._stat = sig
        digest = self._read_digest()
        if digest == self._digest:
            return False          # touched, not changed
        self._digest = digest
        fields: dict[str, Any] = {"path": str(self.path),
                                  "reason": "the description is read at start only; the running model is kept"}
        if digest is None:
            fields.update(valid=False, errors=["(file): cannot be read (removed or unreadable)"])
        else:
            try:
                new = load_network(self.path)
            except NetworkError as exc:
                fields.update(valid=False, errors=[f"{p}: {m}" for p, m in exc.errors][:50])
            else:
                fields.update(valid=True, same_as_running=new == self.running)
        self.log("network_file_changed", fields)
        return True
