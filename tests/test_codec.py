"""IPv4/TCP codec: round trips, interop with scapy's encoder, and every kind of bad input."""
from __future__ import annotations

import struct

import pytest
from scapy.all import IP, TCP, raw

from p4handoff.hosts.codec import MalformedSegment, decode, encode, internet_checksum
from p4handoff.hosts.segment import ACK, FIN, PSH, SYN, Segment
from p4handoff.wire import DSCP_LE, TCP_BYTE12_DUMMY_MASK


def _seg(**kw: object) -> Segment:
    base = dict(src="10.0.0.1", dst="10.0.1.2", sport=40000, dport=5001, seq=0xFFFFFFF0,
                ack=12345, flags=ACK, window=1000, payload=b"")
    base.update(kw)
    return Segment(**base)  # type: ignore[arg-type]


ROUND_TRIP = [
    _seg(),
    _seg(flags=SYN, mss=1460, wscale=7, sack_permitted=True, ts=(1, 0)),
    _seg(flags=SYN | ACK, mss=536, sack_permitted=True),
    _seg(flags=SYN, wscale=14),
    _seg(flags=ACK | PSH, payload=bytes(range(256)) * 5 + b"x", ts=(0xFFFFFFFF, 7)),
    _seg(flags=ACK, sack=((1, 2), (3, 4), (5, 6)), ts=(9, 10)),
    _seg(flags=ACK, sack=((1, 2), (3, 4), (5, 6), (7, 8))),
    _seg(flags=ACK | FIN, payload=b"abc", dscp=DSCP_LE, dummy=True),
]


@pytest.mark.parametrize("seg", ROUND_TRIP, ids=range(len(ROUND_TRIP)))
def test_round_trip(seg: Segment) -> None:
    assert decode(encode(seg)) == seg


@pytest.mark.parametrize("seg", ROUND_TRIP, ids=range(len(ROUND_TRIP)))
def test_checksums_agree_with_scapy(seg: Segment) -> None:
    packet = encode(seg)
    parsed = IP(packet)
    del parsed.chksum
    del parsed[TCP].chksum
    assert raw(parsed) == packet


def test_decodes_scapy_built_packet_with_options() -> None:
    pkt = raw(IP(src="192.168.1.1", dst="192.168.1.2", tos=4) / TCP(
        sport=1, dport=2, seq=10, ack=20, flags="SA", window=512,
        options=[("MSS", 1400), ("SAckOK", b""), ("Timestamp", (5, 6)), ("NOP", None), ("WScale", 3),
                 (99, b"\x01\x02")]) / b"data")
    seg = decode(pkt)
    assert (seg.mss, seg.sack_permitted, seg.ts, seg.wscale) == (1400, True, (5, 6), 3)
    assert seg.flags == SYN | ACK and seg.payload == b"data" and seg.dscp == 1 and not seg.dummy


def test_dummy_mark_is_byte12_bit() -> None:
    packet = encode(_seg(dummy=True, dscp=DSCP_LE))
    assert packet[20 + 12] & TCP_BYTE12_DUMMY_MASK
    assert packet[1] >> 2 == DSCP_LE


def test_trailing_link_padding_ignored() -> None:
    seg = _seg(payload=b"ab")
    assert decode(encode(seg) + b"\x00" * 6) == seg


def test_internet_checksum_rfc1071_example() -> None:
    # RFC 1071 section 3 example words sum to 0xddf2 (ones' complement)
    data = bytes([0x00, 0x01, 0xF2, 0x03, 0xF4, 0xF5, 0xF6, 0xF7])
    assert internet_checksum(data) == ~0xDDF2 & 0xFFFF
    assert internet_checksum(b"\x01") == ~0x0100 & 0xFFFF


def _fix_tcp_checksum(packet: bytearray) -> bytearray:
    """Recompute the TCP checksum so that only the intended defect remains."""
    ihl = (packet[0] & 0x0F) * 4
    total = struct.unpack_from("!H", packet, 2)[0]
    tcp = packet[ihl:total]
    tcp[16:18] = b"\x00\x00"
    pseudo = bytes(packet[12:20]) + struct.pack("!BBH", 0, 6, len(tcp))
    struct.pack_into("!H", packet, ihl + 16, internet_checksum(pseudo + bytes(tcp)))
    return packet


def _fix_ip_checksum(packet: bytearray) -> bytearray:
    ihl = (packet[0] & 0x0F) * 4
    packet[10:12] = b"\x00\x00"
    struct.pack_into("!H", packet, 10, internet_checksum(bytes(packet[:ihl])))
    return packet


def _with_options(opts: bytes) -> bytearray:
    """A valid packet whose TCP options area is exactly `opts` (length multiple of 4)."""
    packet = bytearray(encode(_seg(payload=b"xy")))
    tcp = packet[20:]
    tcp[12] = ((20 + len(opts)) // 4) << 4
    new = packet[:20] + tcp[:20] + opts + tcp[20:]
    struct.pack_into("!H", new, 2, len(new))
    return _fix_tcp_checksum(_fix_ip_checksum(new))


def test_with_options_helper_builds_valid_packet() -> None:
    seg = decode(bytes(_with_options(b"\x01\x01\x04\x02")))
    assert seg.sack_permitted and seg.payload == b"xy"


BAD: list[tuple[str, bytes, str]] = []


def _bad(name: str, packet: bytes | bytearray, reason: str) -> None:
    BAD.append((name, bytes(packet), reason))


_good = encode(_seg(payload=b"hello", ts=(1, 2)))
_bad("empty", b"", "truncated IPv4")
_bad("short ip", _good[:19], "truncated IPv4")
_bad("ipv6 version", _fix_ip_checksum(bytearray(b"\x65" + _good[1:])), "version")
_bad("ihl 4", _fix_ip_checksum(bytearray(b"\x44" + _good[1:])), "header length")
_bad("total too long", _fix_ip_checksum(bytearray(_good[:2] + struct.pack("!H", len(_good) + 1) + _good[4:])),
     "truncated packet")
_bad("total < ihl", _fix_ip_checksum(bytearray(_good[:2] + struct.pack("!H", 10) + _good[4:])), "total length")
_bad("ip checksum", _good[:10] + bytes([_good[10] ^ 0xFF]) + _good[11:], "IPv4 header checksum")
_bad("udp", _fix_ip_checksum(bytearray(_good[:9] + b"\x11" + _good[10:])), "not TCP")
_bad("fragment", _fix_ip_checksum(bytearray(_good[:6] + b"\x20\x00" + _good[8:])), "fragment")
_bad("truncated tcp", _fix_ip_checksum(bytearray(_good[:2] + struct.pack("!H", 30) + _good[4:30])), "truncated TCP")
_bad("tcp checksum", _good[:-1] + bytes([_good[-1] ^ 1]), "TCP checksum")
_bad("doff 4", _fix_tcp_checksum(bytearray(_good[:32] + bytes([0x40]) + _good[33:])), "data offset")
_bad("doff beyond", _fix_tcp_checksum(bytearray(_good[:32] + bytes([0xF0]) + _good[33:])), "beyond")
_bad("option len 0", _with_options(b"\x02\x00\x00\x00"), "bad length")
_bad("option past end", _with_options(b"\x01\x08\x0a\x00"), "bad length")
_bad("option kind only", _with_options(b"\x01\x01\x01\x13"), "truncated")
_bad("mss len 3", _with_options(b"\x02\x03\x05\x00"), "MSS")
_bad("wscale len 4", _with_options(b"\x03\x04\x07\x00"), "window-scale")
_bad("sackok len 3", _with_options(b"\x04\x03\x00\x00"), "SACK-permitted")
_bad("sack len 6", _with_options(b"\x05\x06\x00\x00\x00\x00\x00\x00"), "SACK option")
_bad("ts len 8", _with_options(b"\x08\x08" + b"\x00" * 6), "timestamps")


@pytest.mark.parametrize("name,packet,reason", BAD, ids=[b[0] for b in BAD])
def test_malformed_raises_with_reason(name: str, packet: bytes, reason: str) -> None:
    with pytest.raises(MalformedSegment) as info:
        decode(packet)
    assert reason in info.value.reason
    assert isinstance(info.value, ValueError)


def _options_claim(opts: bytes, reason: str) -> bool:
    """Is the option fault `reason` names present in the options area `opts`?"""
    words = reason.split()
    if reason.startswith("option kind") and "truncated" in reason:       # "option kind K truncated at offset I"
        kind, at = int(words[2]), int(words[-1])
        return at == len(opts) - 1 and opts[at] == kind
    if reason.startswith("option kind"):                     # "option kind K has bad length L at offset I"
        kind, length, at = int(words[2]), int(words[6]), int(words[-1])
        return opts[at] == kind and opts[at + 1] == length and (length < 2 or at + length > len(opts))
    kind = {"MSS": 2, "window-scale": 3, "SACK-permitted": 4, "SACK": 5, "timestamps": 8}[words[0]]
    length = int(words[3].rstrip(","))
    return any(opts[i] == kind and opts[i + 1] == length for i in range(len(opts) - 1))


def _claim_is_true(packet: bytes, reason: str) -> bool:
    """Does `packet` have the fault `reason` names? Checked on the bytes, independently of decode's code."""
    n = len(packet)
    if reason.startswith("truncated IPv4 header"):
        return n < 20
    version, ihl = packet[0] >> 4, (packet[0] & 0x0F) * 4
    total = struct.unpack_from("!H", packet, 2)[0]
    simple = {"IP version": version != 4, "IPv4 header length": ihl < 20, "IPv4 total length": total < ihl,
              "truncated packet": total > n, "bad IPv4 header checksum": internet_checksum(packet[:ihl]) != 0,
              "IP protocol": packet[9] != 6,
              "IPv4 fragment": bool(struct.unpack_from("!H", packet, 6)[0] & 0x3FFF)}
    for prefix, fault in simple.items():
        if reason.startswith(prefix):
            return fault
    tcp = packet[ihl:total]
    doff = (tcp[12] >> 4) * 4 if len(tcp) > 12 else 0
    pseudo = packet[12:20] + struct.pack("!BBH", 0, 6, len(tcp))
    tcp_faults = {"truncated TCP header": len(tcp) < 20, "TCP data offset": doff < 20 or doff > len(tcp),
                  "bad TCP checksum": internet_checksum(pseudo + tcp) != 0}
    for prefix, fault in tcp_faults.items():
        if reason.startswith(prefix):
            return fault
    return _options_claim(tcp[20:doff], reason)


def _as_bytes_say(packet: bytes, seg: Segment) -> bool:
    """Does `seg` hold what `packet`'s headers say (read with scapy, not with our decoder)?"""
    ip = IP(packet)
    if TCP not in ip:          # scapy leaves a fragment's payload raw
        return False
    tcp = ip[TCP]
    return ((seg.src, seg.dst, seg.sport, seg.dport, seg.seq, seg.ack, seg.flags, seg.window, seg.dscp)
            == (ip.src, ip.dst, tcp.sport, tcp.dport, tcp.seq, tcp.ack, int(tcp.flags) & 0xFF, tcp.window, ip.tos >> 2)
            and seg.payload == packet[ip.ihl * 4 + tcp.dataofs * 4:ip.len])


STAGES = ("truncated IPv4 header", "IP version", "IPv4 header length", "IPv4 total length", "truncated packet",
          "bad IPv4 header checksum", "IP protocol", "IPv4 fragment", "truncated TCP header", "TCP data offset",
          "bad TCP checksum")


def test_random_corruption_is_decoded_faithfully_or_rejected_for_a_true_reason() -> None:
    """Each corrupted packet: either decode returns a segment that is what the bytes say and round-trips,
    or it raises MalformedSegment naming a fault the packet really has. Corruptions are sometimes
    followed by fixing the checksums, so the length and option checks behind them are reached too."""
    import random
    rng = random.Random(7)
    base = encode(_seg(flags=SYN, mss=1460, wscale=7, sack_permitted=True, ts=(1, 0), payload=b"q" * 40))
    outcomes: dict[str, int] = {}
    for _ in range(3000):
        pkt = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            pkt[rng.randrange(len(pkt))] = rng.randrange(256)
        if rng.random() < 0.5 and pkt[0] == 0x45 and len(pkt) >= struct.unpack_from("!H", pkt, 2)[0] >= 40:
            pkt = _fix_ip_checksum(pkt)
            if pkt[9] == 6 and 20 <= (pkt[32] >> 4) * 4 <= struct.unpack_from("!H", pkt, 2)[0] - 20:
                pkt = _fix_tcp_checksum(pkt)
        if rng.random() < 0.3:
            pkt = pkt[:rng.randrange(len(pkt))]
        packet = bytes(pkt)
        try:
            seg = decode(packet)
        except MalformedSegment as exc:
            assert _claim_is_true(packet, exc.reason), (exc.reason, packet.hex())
            kind = next((k for k in STAGES if exc.reason.startswith(k)), "option")
        else:
            assert _as_bytes_say(packet, seg), packet.hex()
            assert not [s for s in STAGES if _claim_is_true(packet, s)], packet.hex()   # nothing wrong with it
            assert decode(encode(seg)) == seg
            kind = "decoded"
        outcomes[kind] = outcomes.get(kind, 0) + 1
    # the loop reaches every stage of the decoder, and decodes the packets that survive
    assert outcomes.get("decoded", 0) >= 100, outcomes
    reached = [s for s in (*STAGES, "option") if outcomes.get(s, 0) >= 5]   # the rest: the BAD cases above
    assert len(reached) >= 10 and min(outcomes[s] for s in ("truncated packet", "bad TCP checksum")) >= 100, outcomes


def test_encode_rejects_bad_address() -> None:
    with pytest.raises(MalformedSegment):
        encode(_seg(dst="not-an-address"))


def test_unverified_tcp_checksum_is_skipped_and_nothing_else() -> None:
    seg = _seg(payload=b"offloaded", ts=(3, 4))
    packet = bytearray(encode(seg))
    packet[20 + 16:20 + 18] = b"\x00\x00"  # left to a NIC that never saw it
    with pytest.raises(MalformedSegment, match="TCP checksum"):
        decode(bytes(packet))
    assert decode(bytes(packet), verify_tcp_checksum=False) == seg
    bad_ip = packet[:10] + bytes([packet[10] ^ 0xFF]) + packet[11:]
    with pytest.raises(MalformedSegment, match="IPv4 header checksum"):
        decode(bytes(bad_ip), verify_tcp_checksum=False)
    with pytest.raises(MalformedSegment, match="beyond"):
        decode(bytes(packet[:32] + bytes([0xF0]) + packet[33:]), verify_tcp_checksum=False)
