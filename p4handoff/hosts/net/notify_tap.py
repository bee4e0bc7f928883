"""Handoff notifications for every process on a host, not only the first to bind the port.

A notification is one unicast UDP datagram to the mobile host's (or the
correspondent's) address; the kernel gives a unicast datagram to one socket
only, so with a bound socket each only one of several endpoints on a host
(UCC's two receivers, an IPF correspondent with five flows) would hear it.
`NotificationTap` reads them as `PacketReceiver` reads TCP: from an
AF_PACKET socket whose BPF filter passes UDP to the port, so every process
gets its own copy. It also binds an ordinary UDP socket to the port with
SO_REUSEPORT, shared by all our endpoints, so the kernel has a socket for
the datagram (no ICMP port-unreachable back to the switch) and a foreign
program already holding the port is a clear error; that socket's copies are
discarded.
"""
from __future__ import annotations

import socket
import struct

from p4handoff.hosts.net.rawio import ETH_P_IP, PACKET_IGNORE_OUTGOING, SOL_PACKET, attach_filter, port_filter

_MAX_DATAGRAM = 2048


class NotificationTap:
    """UDP payloads to `port` on any interface of this namespace, for this process (non-blocking)."""

    def __init__(self, port: int) -> None:
        if not 0 < port < 65536:
            raise ValueError(f"notification port must be 1..65535, got {port}")
        self.reservation = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_IP))
        try:
            self.reservation.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            try:
                self.reservation.bind(("0.0.0.0", port))
            except OSError as exc:
                raise OSError(exc.errno, f"cannot listen for handoff notifications on UDP port {port}: "
                                         f"{exc.strerror} (a program other than ours holds it; give a different "
                                         "port, or 0)") from None
            self.reservation.setblocking(False)
            attach_filter(self.sock, port_filter(port, protocol=socket.IPPROTO_UDP))
            self.sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            self.sock.setblocking(False)
            self._drain(self.sock)       # whatever arrived before the filter was attached
        except BaseException:
            self.close()
            raise

    def fileno(self) -> int:
        return self.sock.fileno()

    def receive(self) -> list[bytes]:
        """The UDP payloads queued so far (the reservation socket's copies are thrown away)."""
        self._drain(self.reservation)
        out: list[bytes] = []
        while True:
            try:
                packet = self.sock.recv(_MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return out
            payload = udp_payload(packet)
            if payload is not None:
                out.append(payload)

    @staticmethod
    def _drain(sock: socket.socket) -> None:
        while True:
            try:
                sock.recv(_MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return

    def close(self) -> None:
        self.sock.close()
        self.reservation.close()


def udp_payload(packet: bytes) -> bytes | None:
    """The payload of an IPv4/UDP packet, or None if the headers are cut short or inconsistent."""
    if len(packet) < 20:
        return None
    ihl = (packet[0] & 0x0F) * 4
    if ihl < 20 or len(packet) < ihl + 8:
        return None
    (length,) = struct.unpack_from("!H", packet, ihl + 4)
    if length < 8 or ihl + length > len(packet):
        return None
    return packet[ihl + 8:ihl + length]
