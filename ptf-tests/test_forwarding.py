"""Forwarding: local delivery, tunnels (push, decap, transit, re-encap), punts, packet-out, ARP,
registration requests, TTL and unsupported frames."""
from ptf import testutils
from scapy.all import ARP, IP, UDP, Ether, IPOption_RR, Raw

from p4handoff.controller.p4runtime import TableEntry
from bs_pipeline import (ACCESS, BS_ADDR, C, CH_ADDR, CORE, CORE_NH_MAC, FAR_MH_ADDR, GW_ADDR, GW_MAC,
                         MH_ADDR, MH_MAC, PEER, PEER_ADDR, PEER_MAC, BsTest, delivered, tos, tunnel, udp_to)


def encapsulated(pkt: Ether, dscp: int = 0, src: str = BS_ADDR, dst: str = PEER_ADDR,
                 dst_mac: str = PEER_MAC) -> Ether:
    """What `tunnel` makes of `pkt`: inner TTL - 1 under a fresh outer header (id 0, TTL 64)."""
    inner = pkt[IP].copy()
    inner.ttl -= 1
    del inner.chksum
    return Ether(bytes(Ether(src=GW_MAC, dst=dst_mac)
                       / IP(src=src, dst=dst, proto=4, tos=tos(dscp), ttl=64, id=0, flags=0) / inner))


class DeliverLocal(BsTest):
    """CH -> MH: out of the access port with the gateway's source MAC, the MH's MAC and TTL - 1."""

    def runTest(self):
        pkt = udp_to(MH_ADDR, ttl=20)
        testutils.send_packet(self, CORE, pkt)
        testutils.verify_packet(self, delivered(pkt, MH_MAC), ACCESS)
        testutils.verify_no_other_packets(self)


class DeliverWithIpOptions(BsTest):
    """An IPv4 header with options is forwarded whole, its checksum recomputed over the options."""

    def runTest(self):
        pkt = Ether(dst=GW_MAC, src=CORE_NH_MAC) / IP(src=CH_ADDR, dst=MH_ADDR, options=[
            IPOption_RR(routers=["1.2.3.4", "5.6.7.8"])]) / UDP(sport=1, dport=2) / Raw(b"x" * 20)
        pkt = Ether(bytes(pkt))
        self.assertGreater(pkt[IP].ihl, 5)
        testutils.send_packet(self, CORE, pkt)
        testutils.verify_packet(self, delivered(pkt, MH_MAC), ACCESS)


class TunnelToPeer(BsTest):
    """A route to an MH now behind the peer pushes an outer IPv4 header (protocol 4)."""

    def runTest(self):
        self.insert("ipv4_fwd", {"dst_addr": FAR_MH_ADDR + "/32"}, "tunnel", port=PEER, src_mac=GW_MAC,
                    dst_mac=PEER_MAC, src_addr=BS_ADDR, dst_addr=PEER_ADDR, mark=0)
        pkt = udp_to(FAR_MH_ADDR)
        testutils.send_packet(self, CORE, pkt)
        testutils.verify_packet(self, encapsulated(pkt), PEER)
        testutils.verify_no_other_packets(self)


class TunnelMarkedPriority(BsTest):
    """mark=1 puts the priority codepoint in force on the outer header (and only there)."""

    def runTest(self):
        self.insert("ipv4_fwd", {"dst_addr": FAR_MH_ADDR + "/32"}, "tunnel", port=PEER, src_mac=GW_MAC,
                    dst_mac=PEER_MAC, src_addr=BS_ADDR, dst_addr=PEER_ADDR, mark=1)
        pkt = udp_to(FAR_MH_ADDR, dscp=10)
        testutils.send_packet(self, CORE, pkt)
        testutils.verify_packet(self, encapsulated(pkt, dscp=C["DSCP_IPF_PRIORITY_DEFAULT"]), PEER)


class DecapToMobileHost(BsTest):
    """A tunnel packet addressed to this switch is decapsulated and its inner packet delivered."""

    def runTest(self):
        inner = udp_to(MH_ADDR, seq=7)
        testutils.send_packet(self, PEER, tunnel(inner))
        testutils.verify_packet(self, delivered(Ether(src=PEER_MAC, dst=GW_MAC) / inner[IP], MH_MAC), ACCESS)
        testutils.verify_no_other_packets(self)


class TransitTunnel(BsTest):
    """A tunnel packet for another address is forwarded on its outer header; the inner is untouched."""

    def runTest(self):
        self.route("10.0.0.9/32", CORE, CORE_NH_MAC)
        pkt = tunnel(udp_to(MH_ADDR), outer_dst="10.0.0.9")
        testutils.send_packet(self, PEER, pkt)
        testutils.verify_packet(self, delivered(pkt, CORE_NH_MAC), CORE)


class ReEncapsulate(BsTest):
    """The old base station: a packet tunnelled to it for an MH that moved is tunnelled on to the peer."""

    def runTest(self):
        self.insert("ipv4_fwd", {"dst_addr": FAR_MH_ADDR + "/32"}, "tunnel", port=PEER, src_mac=GW_MAC,
                    dst_mac=PEER_MAC, src_addr=BS_ADDR, dst_addr=PEER_ADDR, mark=1)
        inner = udp_to(FAR_MH_ADDR, seq=3)
        testutils.send_packet(self, CORE, tunnel(inner, outer_src="10.0.0.1", src_mac=CORE_NH_MAC))
        testutils.verify_packet(self, encapsulated(inner, dscp=C["DSCP_IPF_PRIORITY_DEFAULT"]), PEER)


class PuntToBuffer(BsTest):
    """fwd_punt sends the packet, unchanged, to the controller with its reason and ingress port."""

    def runTest(self):
        self.client.modify(self._buffer_entry())
        pkt = udp_to(MH_ADDR, seq=11)
        testutils.send_packet(self, CORE, pkt)
        pin = self.get_packet_in()
        self.assertEqual((pin.metadata["reason"], pin.metadata["ingress_port"]), (C["PUNT_REASON_BUFFER"], CORE))
        self.assertEqual(pin.payload, bytes(pkt))
        testutils.verify_no_other_packets(self)
        self.assertEqual(self.reason_count("punted", CORE, C["PUNT_REASON_BUFFER"]), 1)

    def _buffer_entry(self) -> TableEntry:
        return TableEntry("ipv4_fwd", {"dst_addr": MH_ADDR + "/32"}, "fwd_punt", {"reason": C["PUNT_REASON_BUFFER"]})


class PuntAfterDecap(PuntToBuffer):
    """A tunnel packet for a buffered MH reaches the controller decapsulated."""

    def runTest(self):
        self.client.modify(self._buffer_entry())
        inner = udp_to(MH_ADDR, seq=12)
        testutils.send_packet(self, PEER, tunnel(inner))
        pin = self.get_packet_in()
        self.assertEqual((pin.metadata["reason"], pin.metadata["ingress_port"]), (C["PUNT_REASON_BUFFER"], PEER))
        self.assertEqual(pin.payload, bytes(Ether(src=PEER_MAC, dst=GW_MAC) / inner[IP]))


class NoRouteDropped(BsTest):
    """The default action drops and counts (fwd_dropped, reason FWD_DROP_TABLE)."""

    def runTest(self):
        testutils.send_packet(self, CORE, udp_to("192.0.2.1"))
        testutils.verify_no_other_packets(self)
        self.verify_no_packet_in()
        self.assertEqual(self.reason_count("fwd_dropped", CORE, C["FWD_DROP_TABLE"]), 1)


class TtlExpired(BsTest):
    """A routed packet with TTL 1 is dropped and counted."""

    def runTest(self):
        testutils.send_packet(self, CORE, udp_to(MH_ADDR, ttl=1))
        testutils.verify_no_other_packets(self)
        self.assertEqual(self.reason_count("fwd_dropped", CORE, C["FWD_DROP_TTL"]), 1)


class PacketOutDirect(BsTest):
    """A packet-out leaves the port it names, unchanged, without table lookups."""

    def runTest(self):
        pkt = udp_to("192.0.2.1", seq=5)  # no route: proves no lookup happened
        self.packet_out(pkt, egress_port=ACCESS)
        testutils.verify_packet(self, pkt, ACCESS)
        testutils.verify_no_other_packets(self)


class PacketOutMarkPriority(BsTest):
    """mark_priority=1 writes the codepoint into the outermost IPv4 header of the frame (checksum fixed)."""

    def runTest(self):
        frame = tunnel(udp_to(FAR_MH_ADDR), outer_src=BS_ADDR, outer_dst=PEER_ADDR, src_mac=GW_MAC,
                       dst_mac=PEER_MAC)
        self.packet_out(frame, egress_port=PEER, mark_priority=1)
        expected = frame.copy()
        expected[IP].tos = tos(C["DSCP_IPF_PRIORITY_DEFAULT"])
        del expected[IP].chksum
        testutils.verify_packet(self, Ether(bytes(expected)), PEER)


class PacketOutLookup(BsTest):
    """lookup=1 forwards the frame through the IPv4 table like a received packet."""

    def runTest(self):
        pkt = udp_to(MH_ADDR, seq=6)
        self.packet_out(pkt, lookup=1)
        testutils.verify_packet(self, delivered(pkt, MH_MAC), ACCESS)


class PacketOutNeverPuntedBack(PuntToBuffer):
    """A looked-up packet-out whose route punts is dropped and counted, not looped to the controller."""

    def runTest(self):
        self.client.modify(self._buffer_entry())
        self.packet_out(udp_to(MH_ADDR), lookup=1)
        self.verify_no_packet_in()
        testutils.verify_no_other_packets(self)
        self.assertEqual(self.reason_count("fwd_dropped", self.cpu_port, C["FWD_DROP_PACKET_OUT"]), 1)


class ArpReplyForGateway(BsTest):
    """The switch answers ARP requests for its gateway addresses out of the requesting port."""

    def runTest(self):
        request = Ether(dst="ff:ff:ff:ff:ff:ff", src=MH_MAC) / ARP(
            op=1, hwsrc=MH_MAC, psrc=MH_ADDR, hwdst="00:00:00:00:00:00", pdst=GW_ADDR)
        reply = Ether(dst=MH_MAC, src=GW_MAC) / ARP(op=2, hwsrc=GW_MAC, psrc=GW_ADDR, hwdst=MH_MAC, pdst=MH_ADDR)
        testutils.send_packet(self, ACCESS, request)
        testutils.verify_packet(self, reply, ACCESS)
        testutils.verify_no_other_packets(self)
        self.verify_no_packet_in()


class ArpOtherwisePunted(BsTest):
    """ARP for any other address, and ARP replies, go to the controller (reason ARP)."""

    def runTest(self):
        request = Ether(dst="ff:ff:ff:ff:ff:ff", src=MH_MAC) / ARP(op=1, hwsrc=MH_MAC, psrc=MH_ADDR, pdst="10.1.0.99")
        reply = Ether(dst=GW_MAC, src=MH_MAC) / ARP(op=2, hwsrc=MH_MAC, psrc=MH_ADDR, hwdst=GW_MAC, pdst=GW_ADDR)
        for frame in (request, reply):
            testutils.send_packet(self, ACCESS, frame)
            pin = self.get_packet_in()
            self.assertEqual((pin.metadata["reason"], pin.metadata["ingress_port"], pin.payload),
                             (C["PUNT_REASON_ARP"], ACCESS, bytes(frame)))
        testutils.verify_no_other_packets(self)


class RegistrationPunted(BsTest):
    """UDP to port 434 from an access port goes to the controller whatever its destination; from a core
    port it is forwarded like any packet."""

    def runTest(self):
        reg = (Ether(dst=GW_MAC, src=MH_MAC) / IP(src=MH_ADDR, dst="10.1.0.1")
               / UDP(sport=434, dport=C["UDP_PORT_MIP_REGISTRATION"]) / Raw(b"\x01" + bytes(23)))
        testutils.send_packet(self, ACCESS, reg)
        pin = self.get_packet_in()
        self.assertEqual((pin.metadata["reason"], pin.metadata["ingress_port"], pin.payload),
                         (C["PUNT_REASON_REGISTRATION"], ACCESS, bytes(reg)))
        from_core = (Ether(dst=GW_MAC, src=CORE_NH_MAC) / IP(src=CH_ADDR, dst=MH_ADDR)
                     / UDP(sport=434, dport=C["UDP_PORT_MIP_REGISTRATION"]) / Raw(bytes(24)))
        testutils.send_packet(self, CORE, from_core)
        testutils.verify_packet(self, delivered(from_core, MH_MAC), ACCESS)
        self.verify_no_packet_in()


class UnsupportedEtherTypeDropped(BsTest):
    """Frames that are neither IPv4 nor ARP are dropped and counted (fwd_dropped, FWD_DROP_UNSUPPORTED)."""

    def runTest(self):
        testutils.send_packet(self, CORE, Ether(dst=GW_MAC, src=CORE_NH_MAC, type=0x86DD) / Raw(bytes(60)))
        testutils.verify_no_other_packets(self)
        self.assertEqual(self.reason_count("fwd_dropped", CORE, C["FWD_DROP_UNSUPPORTED"]), 1)
