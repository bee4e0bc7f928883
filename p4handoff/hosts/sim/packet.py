"""What travels through the simulated network: a segment plus network marks.

The simulator never encodes bytes; it carries the endpoint's `Segment`
object and the few facts the network acts on, fixed once when the packet
is made: its size on the wire, its addresses, and its class. The class
follows the wire contract: a DSBP dummy needs both the TCP dummy bit and
DSCP LE; the IPF priority mark is set only by a base station that forwards
a handed-off MH's buffered packets (never by a sender).
"""
from __future__ import annotations

from typing import Any

from p4handoff.hosts.segment import Segment
from p4handoff.wire import DSCP_LE

IP_HEADER_LEN = 20
TCP_HEADER_LEN = 20
MAX_TCP_OPTIONS = 40

DATA = 0       # ordinary traffic (data segments and ACKs)
PRIORITY = 1   # IPF: forwarded by the old base station
DUMMY = 2      # DSBP: dummy segment or dummy ACK (lowest priority)


class Packet:
    """One IP packet in flight: `size` bytes on the wire from `src` to `dst`."""

    __slots__ = ("seg", "size", "src", "dst", "klass", "sent_at")

    def __init__(self, seg: Any, size: int, src: str, dst: str, klass: int = DATA) -> None:
        if size <= 0:
            raise ValueError(f"packet size must be positive, got {size}")
        self.seg = seg
        self.size = size
        self.src = src
        self.dst = dst
        self.klass = klass
        self.sent_at = 0.0   # when its current link started transmitting it

    def __repr__(self) -> str:
        return f"Packet({self.src}->{self.dst}, {self.size} B, class {self.klass})"


def wire_size(seg: Segment) -> int:
    """Bytes of the IPv4 packet `p4handoff.hosts.codec.encode` would make, without encoding it.

    Option lengths follow the codec's layout (each option group padded to
    4 bytes: MSS 4, SACK-permitted+timestamps 12, timestamps 12, window
    scale 4, SACK 4 + 8 per block within the 40-byte limit).
    """
    opts = 0
    if seg.mss is not None:
        opts += 4
    if seg.ts is not None:
        opts += 12
    elif seg.sack_permitted:
        opts += 4
    if seg.wscale is not None:
        opts += 4
    if seg.sack:
        blocks = min(len(seg.sack), (MAX_TCP_OPTIONS - opts - 4) // 8)
        if blocks > 0:
            opts += 4 + 8 * blocks
    return IP_HEADER_LEN + TCP_HEADER_LEN + opts + len(seg.payload)


def packet_of(seg: Segment) -> Packet:
    """The packet a host puts on its link for `seg` (a dummy needs the bit and DSCP LE)."""
    klass = DUMMY if seg.dummy and seg.dscp == DSCP_LE else DATA
    return Packet(seg, wire_size(seg), seg.src, seg.dst, klass)
