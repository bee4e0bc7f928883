"""Frames the controller reads from packet-ins and builds for packet-outs.

Plain `struct` code rather than scapy: it runs for every buffered packet, so
it must cost microseconds, and it only needs Ethernet, IPv4, IPv4-in-IPv4
and UDP. Parsing raises PacketError with the reason; nothing here trusts a
length field it has not checked.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import ipaddress
import secrets
import socket
import struct
from dataclasses import dataclass

from p4handoff.wire import ETHERTYPE_IPV4, IP_PROTO_IPIP, IP_PROTO_UDP

ETH_LEN = 14
IPV4_MIN = 20
UDP_LEN = 8
DEFAULT_TTL = 64
MARKER_MAGIC = b"P4HM"
MARKER_PORT = 9   # discard: a marker that escaped to a host is ignored by it
_MARKER = struct.Struct("!4sQ16s")    # magic, the state machine's marker id, tag
# A drain marker's tag: HMAC-SHA256 under a key drawn from the CSPRNG when the controller starts, over the
# id, cut to 128 bits. The id only names the marker; the tag is what a host cannot guess (docs/wire-contract.md).
MARKER_KEY = secrets.token_bytes(32)


class PacketError(ValueError):
    """A frame the controller cannot use, with the reason."""


@dataclass(frozen=True)
class Ipv4:
    """The parsed IPv4 header of `packet` (which starts at the IPv4 header)."""

    src: str
    dst: str
    proto: int
    dscp: int
    header_len: int
    packet: bytes

    @property
    def payload(self) -> bytes:
        return self.packet[self.header_len:]


@functools.lru_cache(maxsize=4096)
def _mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


@functools.lru_cache(maxsize=4096)
def _packed(addr: str) -> bytes:
    """An IPv4 address as 4 bytes, parsed strictly once per address (every release is framed with two)."""
    return ipaddress.IPv4Address(addr).packed


def mac_str(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def split_ethernet(frame: bytes) -> tuple[str, str, bytes]:
    """(dst MAC, src MAC, IPv4 packet) of an Ethernet II IPv4 frame."""
    if len(frame) < ETH_LEN:
        raise PacketError(f"frame too short for Ethernet: {len(frame)} bytes")
    ethertype = struct.unpack_from("!H", frame, 12)[0]
    if ethertype != ETHERTYPE_IPV4:
        raise PacketError(f"not IPv4: EtherType 0x{ethertype:04x}")
    return mac_str(frame[0:6]), mac_str(frame[6:12]), frame[ETH_LEN:]


def parse_ipv4(packet: bytes) -> Ipv4:
    """Check and parse an IPv4 header; the result's packet is trimmed to total length."""
    if len(packet) < IPV4_MIN:
        raise PacketError(f"IPv4 packet too short: {len(packet)} bytes")
    vihl, tos, total = struct.unpack_from("!BBH", packet)
    if vihl >> 4 != 4:
        raise PacketError(f"IP version {vihl >> 4}, expected 4")
    ihl = (vihl & 0xF) * 4
    if ihl < IPV4_MIN:
        raise PacketError(f"IPv4 header length {ihl} below 20")
    if total < ihl or total > len(packet):
        raise PacketError(f"IPv4 total length {total} inconsistent with header {ihl} and {len(packet)} bytes present")
    # inet_ntoa: the same dotted quad as ipaddress's str, a tenth of the cost (every buffered packet passes here)
    return Ipv4(socket.inet_ntoa(packet[12:16]), socket.inet_ntoa(packet[16:20]), packet[9], tos >> 2, ihl,
                packet[:total])


def ipv4_header(src: str, dst: str, proto: int, payload_len: int, dscp: int = 0, ttl: int = DEFAULT_TTL) -> bytes:
    head = struct.pack("!BBHHHBBH4s4s", 0x45, dscp << 2, IPV4_MIN + payload_len, 0, 0x4000, ttl, proto, 0,
                       _packed(src), _packed(dst))
    return head[:10] + struct.pack("!H", checksum(head)) + head[12:]


def ethernet(dst_mac: str, src_mac: str, packet: bytes) -> bytes:
    return _mac(dst_mac) + _mac(src_mac) + struct.pack("!H", ETHERTYPE_IPV4) + packet


def udp_packet(src: str, dst: str, sport: int, dport: int, payload: bytes, dscp: int = 0) -> bytes:
    """An IPv4/UDP packet with a valid UDP checksum."""
    length = UDP_LEN + len(payload)
    pseudo = _packed(src) + _packed(dst) + struct.pack("!BBH", 0, IP_PROTO_UDP, length)
    head = struct.pack("!HHHH", sport, dport, length, 0)
    csum = checksum(pseudo + head + payload) or 0xFFFF
    return ipv4_header(src, dst, IP_PROTO_UDP, length, dscp) + struct.pack("!HHHH", sport, dport, length, csum) \
        + payload


def parse_udp(ip: Ipv4) -> tuple[int, int, bytes]:
    """(source port, destination port, payload) of a UDP packet."""
    if ip.proto != IP_PROTO_UDP:
        raise PacketError(f"not UDP: IP protocol {ip.proto}")
    data = ip.payload
    if len(data) < UDP_LEN:
        raise PacketError(f"UDP header truncated: {len(data)} bytes")
    sport, dport, length, _ = struct.unpack_from("!HHHH", data)
    if length < UDP_LEN or length > len(data):
        raise PacketError(f"UDP length {length} inconsistent with {len(data)} bytes present")
    return sport, dport, data[UDP_LEN:length]


def encapsulate(inner: bytes, outer_src: str, outer_dst: str, dscp: int) -> bytes:
    """IPv4-in-IPv4 (protocol 4) around an IPv4 packet."""
    return ipv4_header(outer_src, outer_dst, IP_PROTO_IPIP, len(inner), dscp) + inner


def _marker_tag(nonce: int) -> bytes:
    return hmac.new(MARKER_KEY, nonce.to_bytes(8, "big"), hashlib.sha256).digest()[:16]


def marker_packet(src: str, mh_addr: str, nonce: int) -> bytes:
    """A drain marker: a UDP packet to the MH that travels the path it probes and is punted back."""
    return udp_packet(src, mh_addr, MARKER_PORT, MARKER_PORT, _MARKER.pack(MARKER_MAGIC, nonce, _marker_tag(nonce)))


def _marker_payload(ip: Ipv4) -> bytes | None:
    """The UDP payload if `ip` claims to be a drain marker (port 9, magic), whether or not it is ours."""
    if ip.proto != IP_PROTO_UDP:
        return None
    try:
        _, dport, payload = parse_udp(ip)
    except PacketError:
        return None
    return payload if dport == MARKER_PORT and payload.startswith(MARKER_MAGIC) else None


def marker_nonce(ip: Ipv4) -> int | None:
    """The id if `ip` is a drain marker this controller process sent (its tag checks), else None."""
    payload = _marker_payload(ip)
    if payload is None or len(payload) != _MARKER.size:
        return None
    _, nonce, tag = _MARKER.unpack(payload)
    return nonce if hmac.compare_digest(tag, _marker_tag(nonce)) else None


def may_be_marker(packet: bytes) -> bool:
    """False if `packet` (IPv4, header checked or not) cannot be a drain marker: not UDP to the marker port.
    A cheap test before `forged_marker`, for paths where nearly every packet is data."""
    head = (packet[0] & 0xF) * 4 if packet else 0
    return len(packet) >= head + UDP_LEN and packet[9] == IP_PROTO_UDP \
        and packet[head + 2:head + 4] == MARKER_PORT.to_bytes(2, "big")


def forged_marker(ip: Ipv4) -> bool:
    """Shaped like a drain marker but not one of ours: dropped before the state machine sees it."""
    return _marker_payload(ip) is not None and marker_nonce(ip) is None
