"""IPv4+TCP wire codec for `Segment`: the real-network driver's only parser.

Every packet from the network is untrusted, so `decode` checks everything it
relies on (lengths, both checksums, option layout) and raises one exception
type, `MalformedSegment`, carrying the reason; a driver logs it and drops the
packet. Speed matters (the driver aims at >= 100 Mb/s in pure Python), so the
Internet checksum is computed as a big-integer remainder: the ones'-complement
sum of 16-bit words is congruent to the number the bytes spell modulo 0xFFFF
(because 2**16 == 1 mod 0xFFFF), which CPython computes in C.
"""
from __future__ import annotations

import socket
import struct

from p4handoff.hosts.segment import Segment
from p4handoff.wire import IP_PROTO_TCP, TCP_BYTE12_DUMMY_MASK

_IP = struct.Struct("!BBHHHBBH4s4s")
_TCP = struct.Struct("!HHIIBBHHH")
_PSEUDO = struct.Struct("!4s4sBBH")
_MSS_OPT = struct.Struct("!BBH")
_TS_OPT = struct.Struct("!BBBBII")  # NOP NOP kind len tsval tsecr
_SACKOK_TS_OPT = struct.Struct("!BBBBII")  # SACK-permitted, then timestamps (Linux SYN layout)
_U32 = struct.Struct("!I")
_U16 = struct.Struct("!H")

IP_HEADER_LEN = 20
TCP_HEADER_LEN = 20
MAX_TCP_OPTIONS = 40
_IP_FLAG_DF = 0x4000
_IP_FLAG_MF = 0x2000
_IP_FRAG_OFFSET = 0x1FFF

OPT_EOL, OPT_NOP, OPT_MSS, OPT_WSCALE, OPT_SACK_PERMITTED, OPT_SACK, OPT_TIMESTAMPS = 0, 1, 2, 3, 4, 5, 8


class MalformedSegment(ValueError):
    """A packet that is not a well-formed IPv4/TCP segment; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_aton_cache: dict[str, bytes] = {}
_ntoa_cache: dict[bytes, str] = {}


def _aton(addr: str) -> bytes:
    packed = _aton_cache.get(addr)
    if packed is None:
        try:
            packed = socket.inet_aton(addr)
        except OSError:
            raise MalformedSegment(f"not an IPv4 address: {addr!r}") from None
        if len(_aton_cache) < 4096:
            _aton_cache[addr] = packed
    return packed


def _ntoa(packed: bytes) -> str:
    addr = _ntoa_cache.get(packed)
    if addr is None:
        addr = socket.inet_ntoa(packed)
        if len(_ntoa_cache) < 4096:
            _ntoa_cache[packed] = addr
    return addr


def _sum16(data: bytes) -> int:
    """Ones'-complement-congruent sum of `data` as 16-bit words, modulo 0xFFFF."""
    value = int.from_bytes(data, "big")
    if len(data) & 1:
        value <<= 8  # pad the odd byte into the high half of a last word
    return value % 0xFFFF


def internet_checksum(data: bytes) -> int:
    """RFC 1071 checksum of `data` (the value to put in a checksum field)."""
    s = _sum16(data)
    if s == 0 and any(data):
        s = 0xFFFF
    return ~s & 0xFFFF


def _encode_options(seg: Segment) -> bytes:
    parts: list[bytes] = []
    if seg.mss is not None:
        parts.append(_MSS_OPT.pack(OPT_MSS, 4, seg.mss))
    if seg.sack_permitted and seg.ts is not None:
        parts.append(_SACKOK_TS_OPT.pack(OPT_SACK_PERMITTED, 2, OPT_TIMESTAMPS, 10, seg.ts[0], seg.ts[1]))
    else:
        if seg.sack_permitted:
            parts.append(bytes((OPT_NOP, OPT_NOP, OPT_SACK_PERMITTED, 2)))
        if seg.ts is not None:
            parts.append(_TS_OPT.pack(OPT_NOP, OPT_NOP, OPT_TIMESTAMPS, 10, seg.ts[0], seg.ts[1]))
    if seg.wscale is not None:
        parts.append(bytes((OPT_NOP, OPT_WSCALE, 3, seg.wscale)))
    if seg.sack:
        room = (MAX_TCP_OPTIONS - sum(len(p) for p in parts) - 4) // 8
        blocks = seg.sack[:max(0, room)]
        if blocks:
            parts.append(bytes((OPT_NOP, OPT_NOP, OPT_SACK, 2 + 8 * len(blocks))))
            parts.extend(struct.pack("!II", left, right) for left, right in blocks)
    opts = b"".join(parts)
    if len(opts) & 3:
        opts += b"\x00" * (4 - (len(opts) & 3))
    if len(opts) > MAX_TCP_OPTIONS:
        raise MalformedSegment(f"options need {len(opts)} bytes, TCP allows {MAX_TCP_OPTIONS}")
    return opts


def encode(seg: Segment, ip_id: int = 0, ttl: int = 64) -> bytes:
    """The IPv4 packet (header + TCP header + options + payload) for `seg`.

    DF is set (we never fragment); both checksums are filled in.
    """
    src, dst = _aton(seg.src), _aton(seg.dst)
    opts = _encode_options(seg) if (seg.mss is not None or seg.ts is not None or seg.sack_permitted
                                   or seg.wscale is not None or seg.sack) else b""
    byte12 = ((TCP_HEADER_LEN + len(opts)) << 2) | (TCP_BYTE12_DUMMY_MASK if seg.dummy else 0)
    header = _TCP.pack(seg.sport, seg.dport, seg.seq & 0xFFFFFFFF, seg.ack & 0xFFFFFFFF,
                       byte12, seg.flags & 0xFF, seg.window, 0, 0) + opts
    tcp_len = len(header) + len(seg.payload)
    s = (_sum16(_PSEUDO.pack(src, dst, 0, IP_PROTO_TCP, tcp_len)) + _sum16(header)
         + _sum16(seg.payload)) % 0xFFFF
    csum = ~(s or 0xFFFF) & 0xFFFF
    total = IP_HEADER_LEN + tcp_len
    ip = _IP.pack(0x45, (seg.dscp & 0x3F) << 2, total, ip_id & 0xFFFF, _IP_FLAG_DF, ttl, IP_PROTO_TCP, 0, src, dst)
    ip_csum = internet_checksum(ip)
    return b"".join((ip[:10], _U16.pack(ip_csum), ip[12:], header[:16], _U16.pack(csum), header[18:], seg.payload))


def _parse_options(opts: bytes, seg: Segment) -> None:
    i, end = 0, len(opts)
    while i < end:
        kind = opts[i]
        if kind == OPT_EOL:
            return
        if kind == OPT_NOP:
            i += 1
            continue
        if i + 1 >= end:
            raise MalformedSegment(f"option kind {kind} truncated at offset {i}")
        length = opts[i + 1]
        if length < 2 or i + length > end:
            raise MalformedSegment(f"option kind {kind} has bad length {length} at offset {i}")
        if kind == OPT_MSS:
            if length != 4:
                raise MalformedSegment(f"MSS option length {length}, expected 4")
            seg.mss = _U16.unpack_from(opts, i + 2)[0]
        elif kind == OPT_WSCALE:
            if length != 3:
                raise MalformedSegment(f"window-scale option length {length}, expected 3")
            seg.wscale = opts[i + 2]
        elif kind == OPT_SACK_PERMITTED:
            if length != 2:
                raise MalformedSegment(f"SACK-permitted option length {length}, expected 2")
            seg.sack_permitted = True
        elif kind == OPT_SACK:
            if (length - 2) % 8 or length == 2:
                raise MalformedSegment(f"SACK option length {length} is not 2 + 8n (n >= 1)")
            seg.sack = tuple(struct.unpack_from("!II", opts, j) for j in range(i + 2, i + length, 8))
        elif kind == OPT_TIMESTAMPS:
            if length != 10:
                raise MalformedSegment(f"timestamps option length {length}, expected 10")
            seg.ts = (_U32.unpack_from(opts, i + 2)[0], _U32.unpack_from(opts, i + 6)[0])
        i += length


def decode(packet: bytes, verify_tcp_checksum: bool = True) -> Segment:
    """Parse and verify one IPv4 packet carrying TCP; raise MalformedSegment if it is not valid.

    Bytes after the IPv4 total length (link-layer padding) are ignored.
    `verify_tcp_checksum=False` skips only the TCP checksum, for a packet the
    kernel already vouched for (AF_PACKET `TP_STATUS_CSUM_VALID`, or
    `TP_STATUS_CSUMNOTREADY`: built locally, checksum left to offload and never
    filled in); the IPv4 header checksum and every length are still checked.
    """
    n = len(packet)
    if n < IP_HEADER_LEN:
        raise MalformedSegment(f"truncated IPv4 header: {n} bytes")
    vihl, tos, total, _ipid, frag, _ttl, proto, _ipsum, src, dst = _IP.unpack_from(packet)
    if vihl >> 4 != 4:
        raise MalformedSegment(f"IP version {vihl >> 4}, expected 4")
    ihl = (vihl & 0x0F) * 4
    if ihl < IP_HEADER_LEN:
        raise MalformedSegment(f"IPv4 header length {ihl} < 20")
    if total < ihl:
        raise MalformedSegment(f"IPv4 total length {total} < header length {ihl}")
    if total > n:
        raise MalformedSegment(f"truncated packet: IPv4 total length {total}, have {n} bytes")
    if _sum16(packet[:ihl]) != 0:
        raise MalformedSegment("bad IPv4 header checksum")
    if proto != IP_PROTO_TCP:
        raise MalformedSegment(f"IP protocol {proto} is not TCP")
    if frag & (_IP_FLAG_MF | _IP_FRAG_OFFSET):
        raise MalformedSegment("IPv4 fragment (not reassembled)")
    tcp = packet[ihl:total]
    tcp_len = total - ihl
    if tcp_len < TCP_HEADER_LEN:
        raise MalformedSegment(f"truncated TCP header: {tcp_len} bytes")
    sport, dport, seq, ack, byte12, flags, window, _csum, _urg = _TCP.unpack_from(tcp)
    doff = (byte12 >> 4) * 4
    if doff < TCP_HEADER_LEN:
        raise MalformedSegment(f"TCP data offset {doff} < 20")
    if doff > tcp_len:
        raise MalformedSegment(f"TCP data offset {doff} beyond segment length {tcp_len}")
    if verify_tcp_checksum and (_sum16(_PSEUDO.pack(src, dst, 0, IP_PROTO_TCP, tcp_len)) + _sum16(tcp)) % 0xFFFF:
        raise MalformedSegment("bad TCP checksum")
    seg = Segment(_ntoa(src), _ntoa(dst), sport, dport, seq, ack, flags, window, tcp[doff:],
                  dscp=tos >> 2, dummy=bool(byte12 & TCP_BYTE12_DUMMY_MASK))
    if doff > TCP_HEADER_LEN:
        _parse_options(tcp[TCP_HEADER_LEN:doff], seg)
    return seg
