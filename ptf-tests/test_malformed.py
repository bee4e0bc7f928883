"""Malformed and truncated packets are dropped deliberately and counted by kind (counter `malformed`,
index port * REASON_STRIDE + MALFORMED_*); nothing leaves the switch, and it keeps forwarding."""
from ptf import testutils
from scapy.all import IP, TCP, UDP, Ether, Raw

from bs_pipeline import (ACCESS, C, CH_ADDR, CORE, CORE_NH_MAC, GW_MAC, MH_ADDR, MH_MAC, BsTest, delivered,
                         tunnel, udp_to)

ETH = Ether(dst=GW_MAC, src=CORE_NH_MAC, type=0x0800)


def ip(**fields) -> IP:
    return IP(src=CH_ADDR, dst=MH_ADDR, **fields)


CASES = {
    "MALFORMED_TRUNCATED": [
        ETH / Raw(bytes(ip())[:10]),                                   # ends inside the IPv4 header
        ETH / ip(ihl=15) / Raw(b"x" * 10),                             # ends inside the IPv4 options
        ETH / ip(len=200) / UDP() / Raw(b"x" * 10),                    # total length beyond the frame
        ETH / ip(proto=6, len=30) / Raw(bytes(10)),                    # ends inside the TCP header
        ETH / ip(proto=4) / Raw(bytes(8)),                             # ends inside the inner IPv4 header
        tunnel(udp_to(MH_ADDR) / Raw(b"y" * 8), src_mac=CORE_NH_MAC, outer_dst="10.9.9.9"),  # inner > outer
    ],
    "MALFORMED_IPV4_VERSION": [ETH / ip(version=6) / UDP()],
    "MALFORMED_IPV4_IHL": [ETH / ip(ihl=3) / UDP()],
    "MALFORMED_IPV4_LENGTH": [ETH / ip(len=12) / UDP()],
    "MALFORMED_CHECKSUM": [ETH / ip(chksum=0x1234) / UDP()],
    "MALFORMED_TCP_OFFSET": [ETH / ip() / TCP(dataofs=3), ETH / ip() / TCP(dataofs=15) / Raw(b"z" * 8)],
    "MALFORMED_UDP_LENGTH": [ETH / ip() / UDP(len=4) / Raw(b"u" * 8), ETH / ip() / UDP(len=500) / Raw(b"u" * 8)],
}


def inner_too_long(frame: Ether) -> Ether:
    """Make the inner header of a tunnel frame claim more bytes than the outer one carries."""
    frame = Ether(bytes(frame))
    frame[IP].payload.len += 8
    del frame[IP].payload.chksum
    return frame


CASES["MALFORMED_TRUNCATED"][-1] = inner_too_long(CASES["MALFORMED_TRUNCATED"][-1])


class MalformedDroppedAndCounted(BsTest):
    """Every case is dropped and counted under its kind; a good packet afterwards is still forwarded."""

    def runTest(self):
        self.route("10.9.9.9/32", CORE, CORE_NH_MAC)
        for kind, frames in CASES.items():
            for frame in frames:
                testutils.send_packet(self, CORE, frame)
            testutils.verify_no_other_packets(self, timeout=0.3)
            self.assertEqual(self.reason_count("malformed", CORE, C[kind]), len(frames), kind)
        self.verify_no_packet_in()
        good = udp_to(MH_ADDR)
        testutils.send_packet(self, CORE, good)
        testutils.verify_packet(self, delivered(good, MH_MAC), ACCESS)


class NonFirstFragmentForwarded(BsTest):
    """A non-first fragment has no transport header: it is forwarded on its IPv4 header, not parsed."""

    def runTest(self):
        frag = ETH / ip(proto=6, frag=100) / Raw(b"\x00" * 3)  # 3 bytes could never be a TCP header
        testutils.send_packet(self, CORE, frag)
        testutils.verify_packet(self, delivered(Ether(bytes(frag)), MH_MAC), ACCESS)
        self.assertEqual(self.reason_count("malformed", CORE, C["MALFORMED_TRUNCATED"]), 0)
