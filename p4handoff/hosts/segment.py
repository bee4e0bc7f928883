"""One TCP segment with its IPv4 addressing, as the sans-IO core sees it.

The core, the congestion-control schemes and the simulator pass these
objects around; only the real-network driver turns them into bytes (see
`p4handoff.hosts.codec`). Sequence and acknowledgment numbers are the raw 32-bit wire
values and `window` is the raw 16-bit field (unscaled): a Segment is exactly
what is, or would be, on the wire.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

FIN = 0x01
SYN = 0x02
RST = 0x04
PSH = 0x08
ACK = 0x10
URG = 0x20
ECE = 0x40
CWR = 0x80

_FLAG_NAMES = ((SYN, "S"), (FIN, "F"), (RST, "R"), (PSH, "P"), (ACK, "A"), (URG, "U"), (ECE, "E"), (CWR, "C"))

SackBlock = tuple[int, int]


@dataclass(slots=True)
class Segment:
    """An IPv4+TCP segment. Treat instances as immutable (use `with_`).

    Options are absent when None/False/empty. `sack` holds (left, right)
    32-bit edges. `dummy` is the DSBP dummy mark (TCP byte 12, see
    docs/wire-contract.md); `dscp` the 6-bit IPv4 DSCP.
    """

    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    window: int
    payload: bytes = b""
    mss: int | None = None
    wscale: int | None = None
    sack_permitted: bool = False
    sack: tuple[SackBlock, ...] = field(default_factory=tuple)
    ts: tuple[int, int] | None = None
    dscp: int = 0
    dummy: bool = False

    @property
    def seg_len(self) -> int:
        """Sequence space the segment occupies (payload + SYN + FIN)."""
        return len(self.payload) + (1 if self.flags & SYN else 0) + (1 if self.flags & FIN else 0)

    def with_(self, **changes: Any) -> "Segment":
        """A copy with some fields changed (dataclasses.replace)."""
        return replace(self, **changes)

    def __repr__(self) -> str:
        flags = "".join(name for bit, name in _FLAG_NAMES if self.flags & bit) or "."
        extra = []
        if self.ts is not None:
            extra.append(f"ts={self.ts[0]}/{self.ts[1]}")
        if self.sack:
            extra.append(f"sack={list(self.sack)}")
        if self.dummy:
            extra.append("dummy")
        return (f"Segment({self.src}:{self.sport}>{self.dst}:{self.dport} [{flags}] seq={self.seq} "
                f"ack={self.ack} win={self.window} len={len(self.payload)}{' ' if extra else ''}{' '.join(extra)})")
