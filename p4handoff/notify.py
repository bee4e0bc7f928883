"""Handoff notifications: the cross-layer signal from the controller to hosts.

The controller sends one UDP datagram per event to the correspondent's (and,
for Freeze-TCP, the mobile host's) notification port; the host TCP senders
turn it into a handoff event for their congestion-control scheme. The layout
is fixed in docs/wire-contract.md ("Handoff notification"); this module is
its only encoder and decoder.
"""
from __future__ import annotations

import enum
import ipaddress
import struct
from dataclasses import dataclass

from p4handoff.wire import UDP_PORT_HANDOFF_NOTIFY

MAGIC = b"P4HO"
VERSION = 1
_FORMAT = struct.Struct("!4sBBHI4s4sHHII")
SIZE = _FORMAT.size  # 32 bytes
PORT = UDP_PORT_HANDOFF_NOTIFY


class Event(enum.IntEnum):
    """What happened to the mobile host's path."""

    DETACH = 1       # MH left its cell: no path until HANDOFF (Freeze-TCP's warning)
    HANDOFF = 2      # new path active (binding update): restart now
    PROBE_UP = 3     # DSBP: a second address in the new cell is reachable
    PROBE_DOWN = 4   # DSBP: that address is gone (MH left the overlap area)


class NotificationError(ValueError):
    """A datagram that is not a valid handoff notification."""


@dataclass(frozen=True)
class Notification:
    """One handoff event for the connections to/from `mh_addr`.

    `path_addr` is the address to send to from now on (HANDOFF: the MH's
    address in the new cell, equal to `mh_addr` under network-based
    mobility; PROBE_UP: the MH's address in the cell being probed). The link
    figures are hints (0 = unknown).
    """

    event: Event
    seq: int
    mh_addr: str
    path_addr: str
    old_cell: int = 0
    new_cell: int = 0
    new_link_kbps: int = 0
    new_link_delay_us: int = 0

    def encode(self) -> bytes:
        return _FORMAT.pack(
            MAGIC, VERSION, int(self.event), 0, self.seq,
            ipaddress.IPv4Address(self.mh_addr).packed,
            ipaddress.IPv4Address(self.path_addr).packed,
            self.old_cell, self.new_cell, self.new_link_kbps, self.new_link_delay_us,
        )

    @classmethod
    def decode(cls, data: bytes) -> "Notification":
        if len(data) < SIZE:
            raise NotificationError(f"notification too short: {len(data)} bytes, need {SIZE}")
        magic, version, event, _flags, seq, mh, path, old, new, kbps, delay = _FORMAT.unpack_from(data)
        if magic != MAGIC:
            raise NotificationError(f"bad magic {magic!r}, expected {MAGIC!r}")
        if version != VERSION:
            raise NotificationError(f"unsupported notification version {version}")
        try:
            ev = Event(event)
        except ValueError:
            raise NotificationError(f"unknown event type {event}") from None
        return cls(ev, seq, str(ipaddress.IPv4Address(mh)), str(ipaddress.IPv4Address(path)),
                   old, new, kbps, delay)
