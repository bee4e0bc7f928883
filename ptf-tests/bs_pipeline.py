"""What the PTF tests of the base-station pipeline share: the test topology, packet builders and
a base class that programs the switch through the project's P4Runtime client.

Topology (switch port = PTF port):
    1  core   towards the correspondent host (CH) / gateway
    2  access towards mobile host MH (AQM port)
    3  peer   the other base station (tunnel peer, trusted)
    4  access towards a second MH (no AQM unless a test adds it)
"""
from __future__ import annotations

import time
from typing import Any, Iterable

from scapy.all import IP, TCP, UDP, Ether, Raw

from base import P4RuntimeTest
from p4handoff.controller.aqm_tables import PortAqm, port_entries
from p4handoff.controller.p4runtime import CounterValue, UpdateType
from p4handoff import wire
from p4handoff.wire import load_constants

C = load_constants()

CORE, ACCESS, PEER, ACCESS2 = 1, 2, 3, 4

GW_MAC = "02:00:00:00:00:fe"       # the switch's (anycast gateway) MAC
CORE_NH_MAC = "02:00:00:00:01:01"  # next hop on the core port
MH_MAC = "02:00:00:00:02:10"
MH2_MAC = "02:00:00:00:04:10"
PEER_MAC = "02:00:00:00:03:01"

BS_ADDR = "10.0.0.2"     # this switch's tunnel address
PEER_ADDR = "10.0.0.3"   # the peer base station
GW_ADDR = "10.1.0.1"     # gateway address answered by ARP on access ports
MH_ADDR = "10.1.0.10"
MH2_ADDR = "10.1.0.20"
CH_ADDR = "10.9.0.1"
FAR_MH_ADDR = "10.2.0.10"  # an MH now behind the peer

DUMMY_RESERVED = C["TCP_BYTE12_DUMMY_MASK"] >> 1  # scapy's 3-bit TCP `reserved` field holds bits 0x0E

SETTLE_S = 0.1  # a packet sent by PTF reaches the switch's queues well within this

# the telemetry header (headers.p4, telemetry_t, read by p4handoff/wire.py) and a probe frame to carry it
TELEMETRY = wire.TELEMETRY
PROBE = Ether(dst="02:00:00:00:00:00", src="02:00:00:00:00:00", type=0x88B5)


def tos(dscp: int, ecn: int = 0) -> int:
    return dscp << 2 | ecn


def udp_to(dst: str, seq: int = 0, dscp: int = 0, src: str = CH_ADDR, size: int = 64,
           dst_mac: str = GW_MAC, src_mac: str = CORE_NH_MAC, ttl: int = 64) -> Ether:
    """A UDP packet whose payload starts with a 4-byte sequence number."""
    return (Ether(dst=dst_mac, src=src_mac) / IP(src=src, dst=dst, tos=tos(dscp), ttl=ttl)
            / UDP(sport=5000, dport=6000) / Raw(seq.to_bytes(4, "big") + bytes(max(0, size - 4))))


def tcp_to(dst: str, seq: int = 0, dummy: bool = False, dscp: int | None = None, src: str = CH_ADDR,
           dst_mac: str = GW_MAC, src_mac: str = CORE_NH_MAC, size: int = 64) -> Ether:
    """A TCP segment; dummy=True sets the DSBP flag and (unless dscp is given) DSCP LE."""
    if dscp is None:
        dscp = wire.DSCP_LE if dummy else 0
    return (Ether(dst=dst_mac, src=src_mac) / IP(src=src, dst=dst, tos=tos(dscp))
            / TCP(sport=4000, dport=80, seq=seq, flags="A", reserved=DUMMY_RESERVED if dummy else 0)
            / Raw(seq.to_bytes(4, "big") + bytes(max(0, size - 4))))


def tunnel(inner: Ether, outer_src: str = PEER_ADDR, outer_dst: str = BS_ADDR, dscp: int = 0,
           src_mac: str = PEER_MAC, dst_mac: str = GW_MAC, ttl: int = 64) -> Ether:
    """IPv4-in-IPv4 around the IP part of `inner`."""
    return (Ether(dst=dst_mac, src=src_mac) / IP(src=outer_src, dst=outer_dst, proto=4, tos=tos(dscp), ttl=ttl)
            / inner[IP])


def delivered(pkt: Ether, dst_mac: str, ttl_dec: int = 1) -> Ether:
    """What `deliver` makes of `pkt`: gateway source MAC, next-hop destination MAC, TTL - 1."""
    out = pkt.copy()
    out[Ether].src, out[Ether].dst = GW_MAC, dst_mac
    out[IP].ttl -= ttl_dec
    del out[IP].chksum
    return Ether(bytes(out))


def seq_of(frame: bytes) -> int:
    """The sequence number udp_to/tcp_to put at the start of the payload."""
    pkt = Ether(frame)
    layer = pkt[UDP] if UDP in pkt else pkt[TCP]
    return int.from_bytes(bytes(layer.payload)[:4], "big")


class BsTest(P4RuntimeTest):
    """Port roles, the gateway ARP entry and routes to MH/CH/peer are in place before runTest."""

    def setUp(self) -> None:
        super().setUp()
        for port, role in ((CORE, C["PORT_ROLE_CORE"]), (ACCESS, C["PORT_ROLE_ACCESS"]),
                           (PEER, C["PORT_ROLE_PEER"]), (ACCESS2, C["PORT_ROLE_ACCESS"])):
            self.insert("port_role", {"port": port}, "set_port_role", role=role)
        self.insert("ipf_peer", {"ingress_port": PEER, "src_addr": PEER_ADDR}, "trusted_peer")
        self.insert("tunnel_term", {"dst_addr": BS_ADDR}, "decap")
        self.insert("arp_gateway", {"target_addr": GW_ADDR}, "arp_reply", mac=GW_MAC)
        self.route(MH_ADDR + "/32", ACCESS, MH_MAC)
        self.route(MH2_ADDR + "/32", ACCESS2, MH2_MAC)
        self.route(CH_ADDR + "/32", CORE, CORE_NH_MAC)

    # -- programming ------------------------------------------------------------------------------

    def route(self, prefix: str, port: int, dst_mac: str) -> None:
        self.insert("ipv4_fwd", {"dst_addr": prefix}, "deliver", port=port, src_mac=GW_MAC, dst_mac=dst_mac)

    def configure_aqm(self, cfg: PortAqm) -> None:
        """The port's aqm_port entry and its profile's RED tables, in one write."""
        self.client.write([(UpdateType.INSERT, entry) for entry in port_entries(cfg)])

    def packet_out(self, pkt: Any, egress_port: int = 0, mark_priority: int = 0, lookup: int = 0,
                   telemetry: int = 0, **metadata: Any) -> None:
        """Every field of this program's packet_out header, each 0 unless given."""
        super().packet_out(pkt, egress_port=egress_port, mark_priority=mark_priority, lookup=lookup,
                           telemetry=telemetry, **metadata)

    # -- traffic ----------------------------------------------------------------------------------

    def send_all(self, port: int, frames: Iterable) -> int:
        """Send frames back to back on a port; returns how many."""
        n = 0
        for frame in frames:
            self.dataplane.send(0, port, bytes(frame))
            n += 1
        return n

    # -- state ------------------------------------------------------------------------------------

    def aqm_count(self, name: str, port: int, cls: int) -> CounterValue:
        return self.counter(name, port * C["AQM_CLASS_STRIDE"] + cls)

    def reason_count(self, name: str, port: int, reason: int) -> int:
        return self.counter(name, port * C["REASON_STRIDE"] + reason).packets

    def telemetry(self, port: int) -> Any:
        """The port's AQM state through the telemetry probe (P4Runtime packet I/O: milliseconds, where a
        Thrift register read costs a CLI process)."""
        self.packet_out(PROBE, egress_port=port, telemetry=1)
        pin = self.get_packet_in()
        if pin.metadata.get("reason") != C["PUNT_REASON_TELEMETRY"]:
            self.fail(f"expected a telemetry packet-in, got {pin.metadata}")
        return TELEMETRY.unpack(pin.payload)

    def occupancy(self, port: int) -> list[int]:
        """Current occupancy registers of a port: [non-priority, priority, dummy]."""
        t = self.telemetry(port)
        return [t.occ_np, t.occ_prio, t.occ_dummy]

    def counted_occupancy(self, port: int) -> list[int]:
        """The same from counters over P4Runtime: enqueued - dequeued per class."""
        return [self.aqm_count("aqm_enqueued", port, cls).packets - self.aqm_count("aqm_dequeued", port, cls).packets
                for cls in (C["AQM_CLASS_NP"], C["AQM_CLASS_PRIO"], C["AQM_CLASS_DUMMY"])]

    def wait_drained(self, port: int, timeout: float = 15.0) -> list[int]:
        """Poll until the port's occupancy registers are all zero (or timeout); returns the last value.
        Waits SETTLE_S first so that packets just sent have reached the switch's queues."""
        time.sleep(SETTLE_S)
        deadline = time.monotonic() + timeout
        occ = self.occupancy(port)
        while any(occ) and time.monotonic() < deadline:
            time.sleep(0.05)
            occ = self.occupancy(port)
        return occ

    def count_reaching(self, name: str, port: int, cls: int, at_least: int, timeout: float = 5.0) -> int:
        """Poll an AQM counter until it reaches `at_least` (or timeout); returns the last value.
        The switch handles packets after `send_all` returns, so an immediate read can be early."""
        deadline = time.monotonic() + timeout
        value = self.aqm_count(name, port, cls).packets
        while value < at_least and time.monotonic() < deadline:
            time.sleep(0.05)
            value = self.aqm_count(name, port, cls).packets
        return value

    def avg(self, port: int) -> int:
        """The port's average occupancy register (Q16.16 packets)."""
        return self.telemetry(port).avg
