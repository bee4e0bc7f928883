"""Local link events as handoff events, for an endpoint running on the mobile host itself.

When the MH's own interface loses its carrier (or is set down) the MH has
left its cell: DETACH; when it is running again, the MH is attached to a
cell again: HANDOFF. The kernel announces both on an rtnetlink socket
(RTMGRP_LINK); we turn transitions of IFF_RUNNING on the interface that
holds our address into the same `Notification`s the controller would send,
with mh_addr = path_addr = our address (the connection then knows it is the
MH). Only transitions count: repeated announcements of an unchanged state
are ignored.
"""
from __future__ import annotations

import fcntl
import socket
import struct

from p4handoff.notify import Event, Notification

NETLINK_ROUTE = 0
RTMGRP_LINK = 1
RTM_NEWLINK = 16
IFF_RUNNING = 0x40
SIOCGIFFLAGS = 0x8913
SIOCGIFADDR = 0x8915
_NLMSGHDR = struct.Struct("=IHHII")
_IFINFOMSG = struct.Struct("=BxHiII")


def interface_of(addr: str) -> tuple[int, str]:
    """(index, name) of the interface whose IPv4 address is `addr`."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for index, name in socket.if_nameindex():
            try:
                raw = fcntl.ioctl(probe, SIOCGIFADDR, struct.pack("256s", name.encode()))
            except OSError:
                continue  # no IPv4 address
            if socket.inet_ntoa(raw[20:24]) == addr:
                return index, name
    finally:
        probe.close()
    raise OSError(f"no interface has the address {addr}")


def is_running(name: str) -> bool:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        raw = fcntl.ioctl(probe, SIOCGIFFLAGS, struct.pack("256s", name.encode()))
    finally:
        probe.close()
    return bool(struct.unpack_from("H", raw, 16)[0] & IFF_RUNNING)


class LinkWatch:
    """Turns carrier changes of the interface holding `addr` into DETACH / HANDOFF notifications."""

    def __init__(self, addr: str) -> None:
        self.addr = addr
        self.index, self.name = interface_of(addr)
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
        try:
            self.sock.bind((0, RTMGRP_LINK))
            self.sock.setblocking(False)
            self.running = is_running(self.name)
        except BaseException:
            self.sock.close()
            raise
        self.seq = 0

    def fileno(self) -> int:
        return self.sock.fileno()

    def events(self) -> list[Notification]:
        """The notifications the queued link messages amount to (without blocking)."""
        out: list[Notification] = []
        while True:
            try:
                data = self.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return out
            offset = 0
            while offset + _NLMSGHDR.size <= len(data):
                length, kind, _flags, _seq, _pid = _NLMSGHDR.unpack_from(data, offset)
                if length < _NLMSGHDR.size:
                    break  # malformed: stop reading this datagram
                if kind == RTM_NEWLINK and length >= _NLMSGHDR.size + _IFINFOMSG.size:
                    _family, _type, index, flags, _change = _IFINFOMSG.unpack_from(data, offset + _NLMSGHDR.size)
                    if index == self.index:
                        running = bool(flags & IFF_RUNNING)
                        if running != self.running:
                            self.running = running
                            self.seq += 1
                            out.append(Notification(Event.HANDOFF if running else Event.DETACH, self.seq,
                                                    self.addr, self.addr))
                offset += (length + 3) & ~3

    def close(self) -> None:
        self.sock.close()
