"""Raw packet I/O for a user-space TCP: capture with AF_PACKET, transmit with a raw IP socket.

Receiving: an AF_PACKET datagram socket (link header stripped, so every
packet starts at its IPv4 header) with a classic-BPF filter that passes only
TCP segments to our port, so the Python loop never sees anyone else's
traffic; outgoing copies are suppressed (PACKET_IGNORE_OUTGOING). AF_PACKET
taps packets before netfilter and the kernel's TCP, which is what lets
`guard.KernelTcpGuard` drop them for the kernel while we still receive them.

PACKET_AUXDATA tells us, per packet, whether the kernel already knows the
checksum is good (verified by the NIC) or not yet filled in (a packet built
locally with checksum offload, e.g. by a kernel TCP over a veth with
offloads on): `Received.checksum_trusted` lets the caller skip a Python
checksum that would be wrong or redundant.

SO_TIMESTAMPNS has the kernel stamp each packet as it arrives
(`Received.arrived`): a burst read in one go still carries each packet's
own time, which is what a packet-pair estimate measures.

Sending: a raw IPv4 socket with IP_HDRINCL (IPPROTO_RAW); the kernel routes,
resolves neighbours and fragments nothing (DF is ours to set). A send the
kernel cannot queue (socket buffer full) or route (link down) is dropped and
counted, as a full or broken link would drop it: TCP recovers, the loop
never blocks.
"""
from __future__ import annotations

import ctypes
import errno
import socket
import struct
from dataclasses import dataclass

ETH_P_IP = 0x0800
SOL_PACKET = 263
PACKET_AUXDATA = 8
PACKET_IGNORE_OUTGOING = 23
SO_ATTACH_FILTER = 26
SO_TIMESTAMPNS = 35          # Linux (asm-generic/socket.h); Python's socket module does not name it
_TIMESPEC = struct.Struct("@qq")   # struct timespec: seconds, nanoseconds
TIMESPEC_SIZE = _TIMESPEC.size
TP_STATUS_CSUMNOTREADY = 1 << 3
TP_STATUS_CSUM_VALID = 1 << 7
_AUXDATA = struct.Struct("IIIHHHH")
MAX_PACKET = 65535
SOCKET_BUFFER = 8 * 1024 * 1024
_PATH_DOWN = frozenset({errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN, errno.EHOSTDOWN, errno.ENOBUFS})

# classic BPF opcodes (linux/bpf_common.h)
_LDB_ABS, _LDH_ABS, _LDW_ABS = 0x30, 0x28, 0x20
_LDX_MSH, _LDH_IND = 0xB1, 0x48
_JEQ, _JSET, _RET = 0x15, 0x45, 0x06


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


def port_filter(port: int, addr: str | None = None, protocol: int = socket.IPPROTO_TCP
                ) -> list[tuple[int, int, int, int]]:
    """Classic BPF (on a packet starting at the IPv4 header): accept unfragmented TCP (or `protocol`,
    e.g. UDP) to `port` (and to `addr` if given), drop everything else."""
    body: list[tuple[int, str | None, int]] = [
        (_LDB_ABS, None, 9), (_JEQ, "drop", protocol),     # protocol
        (_LDH_ABS, None, 6), (_JSET, "drop-if", 0x1FFF),   # not a non-first fragment
        (_LDX_MSH, None, 0), (_LDH_IND, None, 2),          # X = IP header length; A = dst port
        (_JEQ, "drop", port),
    ]
    if addr is not None:
        body += [(_LDW_ABS, None, 16), (_JEQ, "drop", int.from_bytes(socket.inet_aton(addr), "big"))]
    drop_at = len(body) + 1
    prog = []
    for i, (code, jump, k) in enumerate(body):
        out = drop_at - i - 1
        if jump == "drop":
            prog.append((code, 0, out, k))
        elif jump == "drop-if":
            prog.append((code, out, 0, k))
        else:
            prog.append((code, 0, 0, k))
    prog += [(_RET, 0, 0, MAX_PACKET + 1), (_RET, 0, 0, 0)]
    return prog


def attach_filter(sock: socket.socket, prog: list[tuple[int, int, int, int]]) -> None:
    array = (SockFilter * len(prog))(*(SockFilter(*ins) for ins in prog))
    fprog = struct.pack("HL", len(prog), ctypes.addressof(array))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)


def kernel_receive_time(ancillary: list[tuple[int, int, bytes]]) -> float | None:
    """The kernel's receive time (CLOCK_REALTIME, seconds) from a packet's SO_TIMESTAMPNS ancillary data;
    None if it carries none."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            return _timespec_seconds(data)
    return None


def _timespec_seconds(data: bytes) -> float:
    sec, nsec = _TIMESPEC.unpack_from(data)
    return sec + nsec * 1e-9


@dataclass(slots=True)
class Received:
    packet: bytes           # starts at the IPv4 header
    checksum_trusted: bool  # the kernel vouches for (or filled in) the checksums
    arrived: float | None   # when the kernel received it (CLOCK_REALTIME, s); None without a stamp


class PacketReceiver:
    """Incoming TCP segments for one local port, as IPv4 packets."""

    def __init__(self, port: int, addr: str | None = None, *, ifname: str = "") -> None:
        """Capture on every interface of the current namespace, or only `ifname`."""
        if not 0 < port < 65536:
            raise ValueError(f"port must be 1..65535, got {port}")
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_IP))
        try:
            attach_filter(self.sock, port_filter(port, addr))
            self.sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            self.sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
            self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
            if ifname:
                self.sock.bind((ifname, ETH_P_IP))
            self.sock.setblocking(False)
            self._discard_unfiltered()
        except BaseException:
            self.sock.close()
            raise
        self._ancsize = socket.CMSG_SPACE(_AUXDATA.size) + socket.CMSG_SPACE(_TIMESPEC.size)

    def _discard_unfiltered(self) -> None:
        """Drop what arrived between socket() and the filter: any IP packet at all."""
        while True:
            try:
                self.sock.recv(1)
            except (BlockingIOError, InterruptedError):
                return

    def fileno(self) -> int:
        return self.sock.fileno()

    def receive(self, limit: int = 64) -> list[Received]:
        """Up to `limit` queued packets, without blocking."""
        out: list[Received] = []
        recvmsg = self.sock.recvmsg
        anc = self._ancsize
        for _ in range(limit):
            try:
                data, ancdata, _flags, _addr = recvmsg(MAX_PACKET, anc)
            except (BlockingIOError, InterruptedError):
                break
            trusted, arrived = False, None
            for level, kind, value in ancdata:
                if level == SOL_PACKET and kind == PACKET_AUXDATA:
                    status = _AUXDATA.unpack_from(value)[0]
                    trusted = bool(status & (TP_STATUS_CSUMNOTREADY | TP_STATUS_CSUM_VALID))
                elif level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:   # both in one pass: the hot path
                    arrived = _timespec_seconds(value)
            out.append(Received(data, trusted, arrived))
        return out

    def close(self) -> None:
        self.sock.close()


class PacketSender:
    """Transmit complete IPv4 packets (header included) through the kernel's routing."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
        self.sock.setblocking(False)
        self.dropped = 0

    def send(self, packet: bytes, dst: str) -> bool:
        """Queue one packet for `dst`; False (and counted) if the kernel had no room or no route for it.

        A link that is down (its routes withdrawn) loses packets like any
        lossy path: TCP's retransmission deals with it.
        """
        try:
            self.sock.sendto(packet, (dst, 0))
        except (BlockingIOError, InterruptedError):
            self.dropped += 1
            return False
        except OSError as exc:
            if exc.errno not in _PATH_DOWN:
                raise
            self.dropped += 1
            return False
        return True

    def close(self) -> None:
        self.sock.close()
