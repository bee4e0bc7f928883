"""Registration codec (RFC 5944 layout), frame parsing/building and the buffer pool."""
from __future__ import annotations

import struct

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4handoff.controller.buffer import BufferPool
from p4handoff.controller.packets import (PacketError, encapsulate, ethernet, forged_marker, marker_nonce,
                                          marker_packet, parse_ipv4, parse_udp, split_ethernet, udp_packet)
from p4handoff.controller.registration import (FLAG_D, FLAG_S, REQUEST_SIZE, RegistrationError, RegistrationReply,
                                     RegistrationRequest, ReplyCode)
from p4handoff.wire import IP_PROTO_IPIP, UDP_PORT_MIP_REGISTRATION


def lab_request(**kw) -> RegistrationRequest:
    fields = dict(home_address="10.0.1.1", care_of="10.0.1.1", home_agent="192.168.100.1",
                  lifetime=0xFFFF, identification=0x1234_5678_9ABC_DEF0, flags=0)
    fields.update(kw)
    return RegistrationRequest(**fields)


def test_request_layout_matches_rfc5944():
    req = lab_request(flags=FLAG_S | FLAG_D, care_of="10.0.12.1", lifetime=300)
    data = req.encode()
    assert len(data) == REQUEST_SIZE == 24
    assert data[0] == 1 and data[1] == 0xA0 and data[2:4] == struct.pack("!H", 300)
    assert data[4:8] == bytes([10, 0, 1, 1]) and data[8:12] == bytes([192, 168, 100, 1])
    assert data[12:16] == bytes([10, 0, 12, 1]) and data[16:24] == bytes.fromhex("123456789abcdef0")
    back = RegistrationRequest.decode(data)
    assert back == req and back.simultaneous and not back.deregistration


def test_extensions_are_skipped_when_well_formed():
    # a one-byte pad, then an authentication-like extension (type 32, 4 bytes of data)
    data = lab_request().encode() + b"\x00" + bytes([32, 4]) + b"abcd"
    assert RegistrationRequest.decode(data) == lab_request()


@pytest.mark.parametrize("data, message", [
    (lab_request().encode()[:23], "too short: 23 bytes"),
    (b"\x03" + lab_request().encode()[1:], "not a registration request: type 3"),
    (lab_request().encode() + bytes([32]), "truncated extension header at byte 24"),
    (lab_request().encode() + bytes([32, 9, 1]), "claims 9 bytes, 1 present"),
    (lab_request(home_address="0.0.0.0").encode(), "home address is 0.0.0.0"),
    (lab_request(care_of="0.0.0.0").encode(), "care-of address is 0.0.0.0"),
])
def test_malformed_requests_are_rejected_with_the_reason(data, message):
    with pytest.raises(RegistrationError, match=message):
        RegistrationRequest.decode(data)


def test_reply_round_trip_and_rejections():
    rep = RegistrationReply(ReplyCode.ADMIN_PROHIBITED, "10.0.1.1", "192.168.100.1", 0, 77)
    data = rep.encode()
    assert len(data) == 20 and data[:2] == bytes([3, 129])
    assert RegistrationReply.decode(data) == rep
    with pytest.raises(RegistrationError, match="unknown reply code 7"):
        RegistrationReply.decode(data[:1] + b"\x07" + data[2:])
    with pytest.raises(RegistrationError, match="too short"):
        RegistrationReply.decode(data[:10])


def test_a_scapy_built_registration_frame_parses():
    frame = bytes(Ether(src="02:aa:00:00:00:01", dst="ff:ff:ff:ff:ff:ff") / IP(src="10.0.1.1", dst="255.255.255.255")
                  / UDP(sport=434, dport=UDP_PORT_MIP_REGISTRATION) / lab_request().encode())
    dst_mac, src_mac, packet = split_ethernet(frame)
    ip = parse_ipv4(packet)
    sport, dport, payload = parse_udp(ip)
    assert (src_mac, ip.src, sport, dport) == ("02:aa:00:00:00:01", "10.0.1.1", 434, 434)
    assert RegistrationRequest.decode(payload) == lab_request()


def test_built_packets_have_valid_checksums_and_tunnels_carry_the_mark():
    inner = udp_packet("10.0.0.1", "10.0.1.1", 5001, 5001, b"data")
    rebuilt = IP(inner)
    del rebuilt.chksum
    del rebuilt[UDP].chksum
    assert bytes(IP(bytes(rebuilt))) == inner                       # scapy recomputes the same checksums
    outer = encapsulate(inner, "192.168.100.2", "192.168.100.3", dscp=43)
    o = IP(outer)
    assert o.proto == IP_PROTO_IPIP and o.tos >> 2 == 43 and o.src == "192.168.100.2"
    assert bytes(o.payload) == inner
    check = IP(outer)
    del check.chksum
    assert IP(bytes(check)).chksum == o.chksum
    frame = ethernet("02:00:00:00:00:03", "02:00:00:00:00:02", outer)
    assert Ether(frame).dst == "02:00:00:00:00:03"


def test_markers_are_recognised_only_with_magic_port_and_length():
    pkt = marker_packet("192.168.100.1", "10.0.1.1", 0xDEADBEEF)
    assert marker_nonce(parse_ipv4(pkt)) == 0xDEADBEEF
    assert marker_nonce(parse_ipv4(udp_packet("10.0.0.1", "10.0.1.1", 9, 9, b"P4HX" + bytes(8)))) is None
    assert marker_nonce(parse_ipv4(udp_packet("10.0.0.1", "10.0.1.1", 5001, 5001, b"x"))) is None


def test_a_marker_with_a_guessed_tag_is_not_a_marker():
    pkt = bytearray(marker_packet("192.168.100.1", "10.0.1.1", 0xDEADBEEF))
    assert len(pkt) == 20 + 8 + 28
    for i in range(len(pkt) - 16, len(pkt)):      # every byte of the 128-bit tag counts
        forged = bytearray(pkt)
        forged[i] ^= 0x80
        assert marker_nonce(parse_ipv4(bytes(forged))) is None
        assert forged_marker(parse_ipv4(bytes(forged)))
    assert not forged_marker(parse_ipv4(bytes(pkt)))


@pytest.mark.parametrize("packet, message", [
    (b"\x45" + bytes(10), "too short"),
    (b"\x65" + bytes(19), "version 6"),
    (b"\x44" + bytes(19), "header length 16"),
    (bytes(IP(dst="10.0.1.1") / UDP())[:-2], "inconsistent"),
])
def test_malformed_ipv4_is_rejected(packet, message):
    with pytest.raises(PacketError, match=message):
        parse_ipv4(packet)


def test_non_ipv4_frame_and_truncated_udp_are_rejected():
    with pytest.raises(PacketError, match="EtherType 0x0806"):
        split_ethernet(bytes(6) + bytes(6) + b"\x08\x06" + bytes(28))
    ip = parse_ipv4(bytes(IP(src="10.0.1.1", dst="10.0.1.254", proto=17) / b"\x01\xb2"))
    with pytest.raises(PacketError, match="UDP header truncated"):
        parse_udp(ip)


def test_pool_per_mh_bound_drops_oldest_and_segments_release_in_order():
    pool = BufferPool(total_limit=100)
    pool.add_mh("a", 3)
    for p in (b"1", b"2", b"3", b"4"):
        pool.push("a", p)
    assert pool["a"].packets() == [b"2", b"3", b"4"] and pool["a"].stats.dropped_overflow == 1
    pool.push("a", b"g", "pending")                  # full: drops the oldest (b"2")
    pool.push("a", b"r", "returned")                 # full: drops b"3"
    assert pool.pop_main("a") == b"4" and pool.pop_main("a") is None     # held segments wait
    pool.promote_returned("a")
    pool.promote_pending("a")
    assert [pool.pop_main("a"), pool.pop_main("a")] == [b"r", b"g"]
    assert pool.total == 0 and pool["a"].stats.released == 3


def test_pool_global_bound_evicts_from_the_longest_buffer():
    pool = BufferPool(total_limit=5)
    pool.add_mh("big", 10)
    pool.add_mh("small", 10)
    for i in range(5):
        pool.push("big", bytes([i]))
    pool.push("small", b"s")
    assert len(pool["big"]) == 4 and pool["big"].stats.dropped_global == 1
    assert pool["big"].packets()[0] == bytes([1]) and len(pool["small"]) == 1 and pool.total == 5
