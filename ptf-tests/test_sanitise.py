"""The IPF priority mark is honoured only on the outer header of a tunnel packet from a configured peer
on a peer port; anywhere else it is re-marked to 0 and counted (docs/papers.md#ipf-mred)."""
from ptf import testutils
from scapy.all import IP, Ether

from bs_pipeline import (ACCESS, C, CH_ADDR, CORE, CORE_NH_MAC, MH_ADDR, MH_MAC, PEER, BsTest,
                         delivered, tos, tunnel, udp_to)
from p4handoff.controller.aqm_tables import PortAqm
from p4handoff.wire import AQM_MODE_DROPTAIL

PRIO = C["DSCP_IPF_PRIORITY_DEFAULT"]
TRANSIT = "10.0.0.9"  # a tunnel endpoint behind the core port


def remarked(pkt: Ether, dscp: int = 0) -> Ether:
    """`pkt` with its outermost DSCP set (checksum recomputed)."""
    out = pkt.copy()
    out[IP].tos = tos(dscp)
    del out[IP].chksum
    return Ether(bytes(out))


class SanitiseTest(BsTest):
    def setUp(self):
        super().setUp()
        self.route(TRANSIT + "/32", CORE, CORE_NH_MAC)
        self.configure_aqm(PortAqm(ACCESS, AQM_MODE_DROPTAIL, limit=50, dummy_threshold=40))

    def assert_class_counts(self, np: int, prio: int) -> None:
        self.assertEqual(self.aqm_count("aqm_enqueued", ACCESS, C["AQM_CLASS_NP"]).packets, np)
        self.assertEqual(self.aqm_count("aqm_enqueued", ACCESS, C["AQM_CLASS_PRIO"]).packets, prio)
        self.assertEqual(self.counter("priority_admitted", ACCESS).packets, prio)


class PriorityHonouredFromPeer(SanitiseTest):
    """Marked tunnel from the configured peer on the peer port: decapsulated, admitted as priority."""

    def runTest(self):
        inner = udp_to(MH_ADDR, seq=1)
        testutils.send_packet(self, PEER, tunnel(inner, dscp=PRIO))
        testutils.verify_packet(self, delivered(Ether(src="00:00:00:00:00:00") / inner[IP], MH_MAC), ACCESS)
        self.assert_class_counts(np=0, prio=1)
        self.assertEqual(self.counter("sanitised", PEER).packets, 0)


class PriorityFromCoreRemarked(SanitiseTest):
    """The same tunnel packet on a core port is not priority; a transit one leaves re-marked to 0."""

    def runTest(self):
        inner = udp_to(MH_ADDR, seq=2)
        testutils.send_packet(self, CORE, tunnel(inner, dscp=PRIO, src_mac=CORE_NH_MAC))
        testutils.verify_packet(self, delivered(Ether(src="00:00:00:00:00:00") / inner[IP], MH_MAC), ACCESS)
        self.assert_class_counts(np=1, prio=0)
        transit = tunnel(udp_to(MH_ADDR), outer_dst=TRANSIT, dscp=PRIO, src_mac=CORE_NH_MAC)
        testutils.send_packet(self, CORE, transit)
        testutils.verify_packet(self, delivered(remarked(transit), CORE_NH_MAC), CORE)
        self.assertEqual(self.counter("sanitised", CORE).packets, 2)


class PriorityFromUnknownPeerRemarked(SanitiseTest):
    """On the peer port but from an address that is not a configured peer: re-marked and counted."""

    def runTest(self):
        transit = tunnel(udp_to(MH_ADDR), outer_src="10.0.0.77", outer_dst=TRANSIT, dscp=PRIO)
        testutils.send_packet(self, PEER, transit)
        testutils.verify_packet(self, delivered(remarked(transit), CORE_NH_MAC), CORE)
        self.assertEqual(self.counter("sanitised", PEER).packets, 1)


class TrustedTransitKeepsMark(SanitiseTest):
    """A trusted priority tunnel packet passing through keeps its mark."""

    def runTest(self):
        transit = tunnel(udp_to(MH_ADDR), outer_dst=TRANSIT, dscp=PRIO)
        testutils.send_packet(self, PEER, transit)
        testutils.verify_packet(self, delivered(transit, CORE_NH_MAC), CORE)
        self.assertEqual(self.counter("sanitised", PEER).packets, 0)


class PlainPacketRemarked(SanitiseTest):
    """A host cannot mark its own packets: DSCP 43 on a plain packet becomes 0."""

    def runTest(self):
        pkt = udp_to(CH_ADDR, src=MH_ADDR, dscp=PRIO, src_mac=MH_MAC)
        testutils.send_packet(self, ACCESS, pkt)
        testutils.verify_packet(self, delivered(remarked(pkt), CORE_NH_MAC), CORE)
        self.assertEqual(self.counter("sanitised", ACCESS).packets, 1)


class InnerMarkRemarked(SanitiseTest):
    """Inside a trusted priority tunnel the inner header may not carry the mark; the packet stays priority."""

    def runTest(self):
        inner = udp_to(MH_ADDR, seq=3, dscp=PRIO)
        testutils.send_packet(self, PEER, tunnel(inner, dscp=PRIO))
        testutils.verify_packet(self, delivered(Ether(src="00:00:00:00:00:00") / remarked(inner)[IP], MH_MAC),
                                ACCESS)
        self.assertEqual(self.counter("sanitised", PEER).packets, 1)
        self.assert_class_counts(np=0, prio=1)


class CodepointIsRuntimeState(SanitiseTest):
    """The codepoint in force is the ipf_config default action: after changing it to 46, 43 is an ordinary
    codepoint and 46 is the one honoured or re-marked."""

    def runTest(self):
        self.set_default("ipf_config", "set_ipf_dscp", dscp=46)
        old = udp_to(CH_ADDR, src=MH_ADDR, dscp=PRIO, src_mac=MH_MAC)
        testutils.send_packet(self, ACCESS, old)
        testutils.verify_packet(self, delivered(old, CORE_NH_MAC), CORE)
        new = udp_to(CH_ADDR, src=MH_ADDR, dscp=46, src_mac=MH_MAC)
        testutils.send_packet(self, ACCESS, new)
        testutils.verify_packet(self, delivered(remarked(new), CORE_NH_MAC), CORE)
        self.assertEqual(self.counter("sanitised", ACCESS).packets, 1)
        inner = udp_to(MH_ADDR, seq=4)
        testutils.send_packet(self, PEER, tunnel(inner, dscp=46))
        testutils.verify_packet(self, delivered(Ether(src="00:00:00:00:00:00") / inner[IP], MH_MAC), ACCESS)
        self.assert_class_counts(np=0, prio=1)
