"""Fuzzed frames for the BS pipeline (issue 12, `make fuzz`): valid templates, structure-aware mutations,
truncations, random bytes — seeded, so a run is reproduced by its seed.

Templates are the frames the pipeline is built for (docs/wire-contract.md):
data to a delivered / buffering / tunnelled MH, to a fixed host, to nowhere
known, to the controller's address; IPv4-in-IPv4 from a peer, marked and not;
registrations on UDP 434; ARP for the anycast gateway and others; TCP with
options and every flag, DSBP dummies (reserved bit + DSCP LE), IPv4 options,
fragments, TTL 0/1, forged priority marks. Mutations write one header field
(every field of Ethernet, both IPv4 levels, TCP, UDP, ARP, by offset and
width) with a boundary or random value, and half the time repair the IPv4
header checksums so the mutation gets past checksum verification into the
tables. Truncations cut a template at a random offset (every offset of every
template is reachable); random frames are bytes with a plausible EtherType.
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass

from p4handoff.controller.packets import checksum, ethernet, ipv4_header
from p4handoff.wire import (DSCP_IPF_PRIORITY_DEFAULT, DSCP_LE, IP_PROTO_IPIP, IP_PROTO_TCP, IP_PROTO_UDP,
                            TCP_BYTE12_DUMMY_MASK, UDP_PORT_MIP_REGISTRATION)

KINDS = ("template", "mutation", "truncation", "random")


@dataclass(frozen=True)
class Addressing:
    """Who is who on the switch under test (a BS)."""

    switch_mac: str
    switch_addr: str
    peer_addr: str              # a trusted BS-to-BS peer (ipf_peer on the peer port)
    gateway_addr: str           # the anycast access gateway (ARP answered)
    controller_addr: str
    delivered: str              # an MH delivered on the access port
    buffering: str              # an MH whose packets are punted
    tunnelled: str              # an MH tunnelled, priority-marked, to the peer
    fixed: str                  # a fixed host on the core port
    stranger: str = "198.51.100.7"   # no route of its own: the default route


@dataclass(frozen=True)
class Fuzzed:
    frame: bytes
    kind: str                   # one of KINDS
    origin: str                 # template name (and mutated field)


def _udp(src: str, dst: str, sport: int, dport: int, payload: bytes, dscp: int = 0, ttl: int = 64) -> bytes:
    head = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
    return ipv4_header(src, dst, IP_PROTO_UDP, len(head) + len(payload), dscp, ttl) + head + payload


def _tcp(src: str, dst: str, flags: int, options: bytes = b"", dscp: int = 0, dummy: bool = False,
         payload: bytes = b"x" * 32) -> bytes:
    off = (20 + len(options)) // 4
    byte12 = (off << 4) | (TCP_BYTE12_DUMMY_MASK if dummy else 0)
    head = struct.pack("!HHIIBBHHH", 40000, 5001, 1000, 0, byte12, flags, 65535, 0, 0) + options
    return ipv4_header(src, dst, IP_PROTO_TCP, len(head) + len(payload), dscp) + head + payload


def _with_options(packet: bytes, options: bytes) -> bytes:
    """Insert IPv4 options (multiple of 4 bytes) and fix IHL, total length and checksum."""
    ihl = 5 + len(options) // 4
    head = bytearray(packet[:20])
    head[0] = 0x40 | ihl
    struct.pack_into("!H", head, 2, len(packet) + len(options))
    struct.pack_into("!H", head, 10, 0)
    full = bytes(head) + options
    full = full[:10] + struct.pack("!H", checksum(full)) + full[12:]
    return full + packet[20:]


def _arp(op: int, sender_mac: str, sender_ip: str, target_ip: str) -> bytes:
    mac = bytes.fromhex(sender_mac.replace(":", ""))
    body = struct.pack("!HHBBH", 1, 0x0800, 6, 4, op) + mac + _ip(sender_ip) + bytes(6) + _ip(target_ip)
    return b"\xff" * 6 + mac + b"\x08\x06" + body


def _ip(addr: str) -> bytes:
    return bytes(int(x) for x in addr.split("."))


def templates(a: Addressing, host_mac: str = "02:00:00:00:77:01") -> dict[str, bytes]:
    """Valid frames, by name, as a host on any port would send them to the switch."""
    def eth(pkt: bytes) -> bytes:
        return ethernet(a.switch_mac, host_mac, pkt)
    data = b"\x00\x00\x00\x01" + b"p" * 60
    tcp_opts = bytes([2, 4, 5, 0xB4, 1, 3, 3, 7, 4, 2, 8, 10]) + bytes(10)       # MSS, NOP, WS, SACK-ok, TS
    inner = _udp("10.0.0.1", a.delivered, 5001, 5001, data)
    out = {
        "udp-delivered": eth(_udp("10.0.0.1", a.delivered, 5001, 5001, data)),
        "udp-buffering": eth(_udp("10.0.0.1", a.buffering, 5001, 5001, data)),
        "udp-tunnelled": eth(_udp("10.0.0.1", a.tunnelled, 5001, 5001, data)),
        "udp-fixed": eth(_udp(a.delivered, a.fixed, 5001, 5001, data)),
        "udp-stranger": eth(_udp(a.delivered, a.stranger, 5001, 5001, data)),
        "udp-controller": eth(_udp("10.0.0.1", a.controller_addr, 9, 9, b"P4HM" + bytes(8))),
        "forged-mark": eth(_udp("10.0.0.1", a.delivered, 5001, 5001, data, dscp=DSCP_IPF_PRIORITY_DEFAULT)),
        "ttl-1": eth(_udp("10.0.0.1", a.delivered, 5001, 5001, data, ttl=1)),
        "ttl-0": eth(_udp("10.0.0.1", a.delivered, 5001, 5001, data, ttl=0)),
        "registration": eth(_udp(a.delivered, "255.255.255.255", UDP_PORT_MIP_REGISTRATION,
                                 UDP_PORT_MIP_REGISTRATION, bytes([1, 0, 0xFF, 0xFF]) + _ip(a.delivered) * 3 + bytes(8))),
        "tcp-syn-options": eth(_tcp("10.0.0.1", a.delivered, 0x02, tcp_opts)),
        "tcp-all-flags": eth(_tcp("10.0.0.1", a.delivered, 0xFF)),
        "tcp-dummy": eth(_tcp("10.0.0.1", a.delivered, 0x10, dscp=DSCP_LE, dummy=True)),
        "tcp-dummy-bit-only": eth(_tcp("10.0.0.1", a.delivered, 0x10, dummy=True)),
        "ip-options": eth(_with_options(_udp("10.0.0.1", a.delivered, 5001, 5001, data), bytes([7, 7, 4]) + bytes(5))),
        "fragment": eth(_udp("10.0.0.1", a.delivered, 5001, 5001, data)[:6] + b"\x00\x10"
                        + _udp("10.0.0.1", a.delivered, 5001, 5001, data)[8:]),
        "ipip-marked": eth(ipv4_header(a.peer_addr, a.switch_addr, IP_PROTO_IPIP, len(inner),
                                       DSCP_IPF_PRIORITY_DEFAULT) + inner),
        "ipip-plain": eth(ipv4_header(a.peer_addr, a.switch_addr, IP_PROTO_IPIP, len(inner)) + inner),
        "ipip-spoofed-peer": eth(ipv4_header("10.66.0.1", a.switch_addr, IP_PROTO_IPIP, len(inner),
                                             DSCP_IPF_PRIORITY_DEFAULT) + inner),
        "ipip-transit": eth(ipv4_header(a.peer_addr, a.stranger, IP_PROTO_IPIP, len(inner)) + inner),
        "arp-gateway": _arp(1, host_mac, a.delivered, a.gateway_addr),
        "arp-other": _arp(1, host_mac, a.delivered, "10.0.1.77"),
        "arp-reply": _arp(2, host_mac, a.delivered, a.gateway_addr),
    }
    out["fragment"] = _fix_ipv4_checksum(out["fragment"], 14)
    return out


def _fix_ipv4_checksum(frame: bytes, at: int) -> bytes:
    if len(frame) < at + 20 or frame[at] >> 4 != 4:
        return frame
    ihl = (frame[at] & 0xF) * 4
    if ihl < 20 or len(frame) < at + ihl:
        return frame
    head = bytearray(frame[at:at + ihl])
    struct.pack_into("!H", head, 10, 0)
    struct.pack_into("!H", head, 10, checksum(bytes(head)))
    return frame[:at] + bytes(head) + frame[at + ihl:]


# (name, offset from the header start, width in bytes) of every field, per header
_ETH = [("eth.dst", 0, 6), ("eth.src", 6, 6), ("eth.type", 12, 2)]
_IPV4 = [("vihl", 0, 1), ("tos", 1, 1), ("total_len", 2, 2), ("ident", 4, 2), ("frag", 6, 2), ("ttl", 8, 1),
         ("proto", 9, 1), ("csum", 10, 2), ("src", 12, 4), ("dst", 16, 4)]
_TCP = [("sport", 0, 2), ("dport", 2, 2), ("seq", 4, 4), ("ack", 8, 4), ("off_res", 12, 1), ("flags", 13, 1),
        ("win", 14, 2), ("csum", 16, 2), ("urg", 18, 2), ("opts", 20, 4)]
_UDP = [("sport", 0, 2), ("dport", 2, 2), ("len", 4, 2), ("csum", 6, 2)]
_ARP = [("htype", 0, 2), ("ptype", 2, 2), ("hlen", 4, 1), ("plen", 5, 1), ("op", 6, 2), ("sha", 8, 6),
        ("spa", 14, 4), ("tha", 18, 6), ("tpa", 24, 4)]


def fields(frame: bytes) -> list[tuple[str, int, int]]:
    """(name, absolute offset, width) of every header field the frame has, walking the layers."""
    out = list(_ETH)
    if len(frame) < 14:
        return out
    etype = struct.unpack_from("!H", frame, 12)[0]
    if etype == 0x0806:
        return out + [(f"arp.{n}", 14 + o, w) for n, o, w in _ARP]
    if etype != 0x0800:
        return out
    at, level = 14, "ip"
    for _ in range(2):
        if len(frame) < at + 20:
            return out
        out += [(f"{level}.{n}", at + o, w) for n, o, w in _IPV4]
        ihl = (frame[at] & 0xF) * 4
        if ihl > 20:
            out.append((f"{level}.options", at + 20, ihl - 20))
        proto = frame[at + 9]
        at += max(ihl, 20)
        if proto == IP_PROTO_IPIP and level == "ip":
            level = "inner"
            continue
        if proto == IP_PROTO_TCP:
            out += [(f"tcp.{n}", at + o, w) for n, o, w in _TCP]
        elif proto == IP_PROTO_UDP:
            out += [(f"udp.{n}", at + o, w) for n, o, w in _UDP]
        break
    return [(n, o, w) for n, o, w in out if o + w <= len(frame)]


def _value(rng: random.Random, width: int) -> bytes:
    bits = 8 * width
    choice = rng.randrange(6)
    v = [0, (1 << bits) - 1, 1 << (bits - 1), rng.getrandbits(bits), 1, rng.getrandbits(bits) ^ 1][choice]
    return v.to_bytes(width, "big")


def mutate(rng: random.Random, frame: bytes) -> tuple[bytes, str]:
    """One header field rewritten (boundary or random value); IPv4 checksums repaired half the time."""
    name, off, width = rng.choice(fields(frame))
    if name.endswith(".vihl") and rng.random() < 0.5:           # version and IHL separately, by nibble
        nib = rng.randrange(16)
        new = bytes([(frame[off] & 0x0F) | nib << 4]) if rng.random() < 0.5 else bytes([(frame[off] & 0xF0) | nib])
    elif name.endswith(".tos") and rng.random() < 0.5:          # DSCP marks the pipeline cares about
        new = bytes([rng.choice([DSCP_IPF_PRIORITY_DEFAULT, DSCP_LE, 0, 63]) << 2 | (frame[off] & 3)])
    elif name == "tcp.off_res" and rng.random() < 0.5:          # the dummy bit, and data offsets
        new = bytes([frame[off] ^ TCP_BYTE12_DUMMY_MASK]) if rng.random() < 0.5 else bytes([rng.randrange(16) << 4])
    else:
        new = _value(rng, width)
    out = frame[:off] + new + frame[off + width:]
    if rng.random() < 0.5 and not name.endswith(".csum"):
        out = _fix_ipv4_checksum(out, 14)
        if len(out) > 34 and out[23] == IP_PROTO_IPIP:
            out = _fix_ipv4_checksum(out, 14 + (out[14] & 0xF) * 4)
    return out, name


def generate(seed: int, count: int, a: Addressing) -> list[Fuzzed]:
    """`count` frames for one port: ~20 % templates, 45 % mutations, 20 % truncations, 15 % random bytes."""
    rng = random.Random(seed)
    tpl = templates(a)
    names = sorted(tpl)
    out: list[Fuzzed] = []
    for _ in range(count):
        r = rng.random()
        name = rng.choice(names)
        base = tpl[name]
        if r < 0.20:
            out.append(Fuzzed(base, "template", name))
        elif r < 0.65:
            frame, field = mutate(rng, base)
            if rng.random() < 0.3:
                frame, field2 = mutate(rng, frame)
                field += "+" + field2
            out.append(Fuzzed(frame, "mutation", f"{name}:{field}"))
        elif r < 0.85:
            cut = rng.randrange(len(base))
            out.append(Fuzzed(base[:cut], "truncation", f"{name}@{cut}"))
        else:
            etype = rng.choice([b"\x08\x00", b"\x08\x06", b"\x86\xdd", rng.randbytes(2)])
            body = rng.randbytes(rng.randrange(0, 120))
            out.append(Fuzzed(rng.randbytes(12) + etype + body, "random", "bytes"))
    return out
