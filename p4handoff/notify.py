"""Handoff notifications: the cross-layer signal from the controller to hosts.

The controller sends one UDP datagram per event to the correspondent's (and,
for Freeze-TCP, the mobile host's) notification port; the host TCP senders
turn it into a handoff event for their congestion-control scheme. The layout
is fixed in docs/wire-contract.md ("Handoff notification"); this module is
its only encoder and decoder.

Revision 2 (issue 20) tells the sender that the network holds and forwards
the MH's in-flight packets: flag bits in the formerly reserved `flags` field
and an extension block after the 32 bytes of revision 1. The version byte
stays 1 (it names the layout of those 32 bytes, which every revision keeps),
so a revision-1 receiver reads a revision-2 notification as before.
"""
from __future__ import annotations

import enum
import functools
import ipaddress
import struct
from dataclasses import dataclass

from p4handoff.wire import UDP_PORT_HANDOFF_NOTIFY

MAGIC = b"P4HO"
VERSION = 1          # layout of the first SIZE bytes; never changes while they keep it
REVISION = 2         # the extension block's revision (1: no block)
_FORMAT = struct.Struct("!4sBBHI4s4sHHII")
SIZE = _FORMAT.size  # 32 bytes: the revision-1 body, and the head of every later one
PORT = UDP_PORT_HANDOFF_NOTIFY

FLAG_FORWARDING = 0x0001  # HANDOFF: the network holds the MH's in-flight packets and forwards them
FLAG_EXTENSION = 0x0002   # an extension block follows the 32 bytes
_EXT_HEAD = struct.Struct("!BB")       # ext_revision, ext_length (bytes, these two included)
_EXT_V2 = struct.Struct("!BBHI")       # + buffered packets, flush_end_us
EXT_SIZE = _EXT_V2.size                # 8 bytes


@functools.lru_cache(maxsize=65_536)
def _packed(addr: str) -> bytes:
    """An address as 4 bytes, parsed strictly once per address (the controller sends a notification per handoff)."""
    return ipaddress.IPv4Address(addr).packed


class Event(enum.IntEnum):
    """What happened to the mobile host's path."""

    DETACH = 1       # MH left its cell: no path until HANDOFF (Freeze-TCP's warning)
    HANDOFF = 2      # new path active (binding update): restart now
    PROBE_UP = 3     # DSBP: a second address in the new cell is reachable
    PROBE_DOWN = 4   # DSBP: that address is gone (MH left the overlap area)


class NotificationError(ValueError):
    """A datagram that is not a valid handoff notification."""


@dataclass(frozen=True)
class Forwarding:
    """The network forwards the MH's in-flight packets to the new path (IPF's buffer and flush).

    `buffered`: packets of this MH it held when the notification left (0: none
    held any more, e.g. already flushed; later arrivals are forwarded too).
    `flush_end_us`: microseconds from the notification's sending until the last
    of them has been sent toward the new path (0: already sent). Senders use it
    to keep their retransmission timer off the forwarded flight.
    """

    buffered: int = 0
    flush_end_us: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.buffered <= 0xFFFF:
            raise NotificationError(f"buffered must be 0..65535 packets, got {self.buffered}")
        if not 0 <= self.flush_end_us <= 0xFFFFFFFF:
            raise NotificationError(f"flush_end_us must be 0..{0xFFFFFFFF}, got {self.flush_end_us}")


@dataclass(frozen=True)
class Notification:
    """One handoff event for the connections to/from `mh_addr`.

    `path_addr` is the address to send to from now on (HANDOFF: the MH's
    address in the new cell, equal to `mh_addr` under network-based
    mobility; PROBE_UP: the MH's address in the cell being probed). The link
    figures are hints (0 = unknown). `forwarding` (HANDOFF only) says that
    the flight is not lost: the network is delivering it.
    """

    event: Event
    seq: int
    mh_addr: str
    path_addr: str
    old_cell: int = 0
    new_cell: int = 0
    new_link_kbps: int = 0
    new_link_delay_us: int = 0
    forwarding: Forwarding | None = None

    def __post_init__(self) -> None:
        if self.forwarding is not None and self.event is not Event.HANDOFF:
            raise NotificationError(f"forwarding is a HANDOFF's, not a {self.event.name}'s")

    def encode(self) -> bytes:
        fwd = self.forwarding
        flags = 0 if fwd is None else FLAG_FORWARDING | FLAG_EXTENSION
        head = _FORMAT.pack(
            MAGIC, VERSION, int(self.event), flags, self.seq,
            _packed(self.mh_addr), _packed(self.path_addr),
            self.old_cell, self.new_cell, self.new_link_kbps, self.new_link_delay_us,
        )
        if fwd is None:
            return head
        return head + _EXT_V2.pack(REVISION, EXT_SIZE, fwd.buffered, fwd.flush_end_us)

    @classmethod
    def decode(cls, data: bytes) -> "Notification":
        """The notification at the start of `data`; bytes after its body (body_length) are not read."""
        if len(data) < SIZE:
            raise NotificationError(f"notification too short: {len(data)} bytes, need {SIZE}")
        magic, version, event, flags, seq, mh, path, old, new, kbps, delay = _FORMAT.unpack_from(data)
        if magic != MAGIC:
            raise NotificationError(f"bad magic {magic!r}, expected {MAGIC!r}")
        if version != VERSION:
            raise NotificationError(f"unsupported notification version {version}")
        try:
            ev = Event(event)
        except ValueError:
            raise NotificationError(f"unknown event type {event}") from None
        body = body_length(data)
        fwd = None
        if flags & FLAG_FORWARDING:
            if not flags & FLAG_EXTENSION:
                raise NotificationError("forwarding flag without its extension block")
            if ev is not Event.HANDOFF:
                raise NotificationError(f"forwarding flag on a {ev.name} notification")
            if body - SIZE < EXT_SIZE:
                raise NotificationError(f"extension of {body - SIZE} bytes cannot hold the forwarding fields")
            _rev, _len, buffered, flush_end = _EXT_V2.unpack_from(data, SIZE)
            fwd = Forwarding(buffered, flush_end)
        return cls(ev, seq, str(ipaddress.IPv4Address(mh)), str(ipaddress.IPv4Address(path)),
                   old, new, kbps, delay, fwd)


def body_length(data: bytes) -> int:
    """Bytes of the notification body at the start of `data` (32, or 32 + its extension block).

    The body delimits itself, so whatever follows it (e.g. an authentication
    trailer) starts here. Flag bits this revision does not know are ignored
    (they are how a later revision extends it); a block of a later revision
    is skipped by its length.
    """
    if len(data) < SIZE:
        raise NotificationError(f"notification too short: {len(data)} bytes, need {SIZE}")
    (flags,) = struct.unpack_from("!H", data, 6)
    if not flags & FLAG_EXTENSION:
        return SIZE
    if len(data) < SIZE + _EXT_HEAD.size:
        raise NotificationError("extension flag set but no extension block follows")
    rev, length = _EXT_HEAD.unpack_from(data, SIZE)
    if rev < REVISION:
        raise NotificationError(f"extension revision {rev}: the first with a block is {REVISION}")
    if length < EXT_SIZE:
        raise NotificationError(f"extension length {length} below the {EXT_SIZE} bytes of revision {REVISION}")
    if len(data) < SIZE + length:
        raise NotificationError(f"extension of {length} bytes, only {len(data) - SIZE} present")
    return SIZE + length
