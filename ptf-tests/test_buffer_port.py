"""A buffer port (docs/controller.md, "The buffer service on switch ports"): the entries the programmer
makes for one, on port 4 (ACCESS2 in the shared topology, turned into the buffer port here). No pipeline
code is new: these tests pin that the existing tables do what the buffer service relies on.

    divert   an MH's Punt route is a tunnel out of the buffer port to the service, mark 0
    release  a marked tunnel from the service's address on the buffer port is decapsulated and admitted
             as priority at the MH's access port; the same from any other address is re-marked and counted
    echo     a tunnel to this switch whose inner packet is addressed to the service goes straight back out
             of the buffer port (the service's pacing)
"""
from ptf import testutils
from scapy.all import IP, UDP, Ether, Raw

from bs_pipeline import ACCESS, ACCESS2, BS_ADDR, C, CORE, GW_MAC, MH_ADDR, MH_MAC, BsTest, delivered, tos, \
    tunnel, udp_to
from p4handoff.controller.aqm_tables import PortAqm
from p4handoff.controller.p4runtime import TableEntry
from p4handoff.wire import AQM_MODE_DROPTAIL

BUFFER = ACCESS2
SVC_ADDR, SVC_MAC = "10.0.0.99", "02:00:00:00:00:99"
PRIO = C["DSCP_IPF_PRIORITY_DEFAULT"]


class BufferPortTest(BsTest):
    def setUp(self):
        super().setUp()
        self.client.modify(TableEntry("port_role", {"port": BUFFER}, "set_port_role", {"role": C["PORT_ROLE_PEER"]}))
        self.insert("ipf_peer", {"ingress_port": BUFFER, "src_addr": SVC_ADDR}, "trusted_peer")
        self.route(SVC_ADDR + "/32", BUFFER, SVC_MAC)
        self.configure_aqm(PortAqm(ACCESS, AQM_MODE_DROPTAIL, limit=50, dummy_threshold=40))


class DivertedToTheService(BufferPortTest):
    """The MH's route diverts: its packet leaves the buffer port inside a tunnel to the service, unmarked."""

    def runTest(self):
        self.client.modify(TableEntry("ipv4_fwd", {"dst_addr": MH_ADDR + "/32"}, "tunnel", {
            "port": BUFFER, "src_mac": GW_MAC, "dst_mac": SVC_MAC, "src_addr": BS_ADDR, "dst_addr": SVC_ADDR,
            "mark": 0}))
        pkt = udp_to(MH_ADDR, seq=7)
        testutils.send_packet(self, CORE, pkt)
        frames = self.collect(BUFFER)
        self.assertEqual(len(frames), 1)
        out = Ether(frames[0])
        self.assertEqual((out[Ether].dst, out[IP].src, out[IP].dst, out[IP].proto, out[IP].tos >> 2),
                         (SVC_MAC, BS_ADDR, SVC_ADDR, 4, 0))
        self.assertEqual(bytes(out[IP].payload[UDP].payload)[:4], (7).to_bytes(4, "big"))
        testutils.verify_no_other_packets(self)


class ReleaseFromTheServiceIsPriority(BufferPortTest):
    """A marked release from the service: decapsulated, delivered, counted as priority; the same from
    another address on the buffer port is re-marked and counted."""

    def runTest(self):
        inner = udp_to(MH_ADDR, seq=1)
        testutils.send_packet(self, BUFFER, tunnel(inner, outer_src=SVC_ADDR, dscp=PRIO, src_mac=SVC_MAC))
        testutils.verify_packet(self, delivered(Ether(src="00:00:00:00:00:00") / inner[IP], MH_MAC), ACCESS)
        self.assertEqual(self.counter("priority_admitted", ACCESS).packets, 1)
        self.assertEqual(self.counter("sanitised", BUFFER).packets, 0)
        stranger = tunnel(udp_to(MH_ADDR, seq=2), outer_src="10.0.0.77", dscp=PRIO, src_mac=SVC_MAC)
        testutils.send_packet(self, BUFFER, stranger)
        testutils.verify_packet(self, delivered(Ether(src="00:00:00:00:00:00") / udp_to(MH_ADDR, seq=2)[IP], MH_MAC),
                                ACCESS)
        self.assertEqual(self.counter("priority_admitted", ACCESS).packets, 1)
        self.assertEqual(self.counter("sanitised", BUFFER).packets, 1)


class EchoComesBackOutOfTheBufferPort(BufferPortTest):
    """The service's echo: decapsulated here, its inner packet routed back to the service."""

    def runTest(self):
        echo = (Ether(dst=GW_MAC, src=SVC_MAC) / IP(src=SVC_ADDR, dst=BS_ADDR, proto=4, tos=tos(0))
                / IP(src=SVC_ADDR, dst=SVC_ADDR) / UDP(sport=9, dport=9) / Raw(b"P4HBSECH" + bytes(8)))
        testutils.send_packet(self, BUFFER, echo)
        frames = self.collect(BUFFER)
        self.assertEqual(len(frames), 1)
        back = Ether(frames[0])
        self.assertEqual((back[Ether].dst, back[IP].src, back[IP].dst, back[IP].proto), (SVC_MAC, SVC_ADDR,
                                                                                          SVC_ADDR, 17))
        testutils.verify_no_other_packets(self)
