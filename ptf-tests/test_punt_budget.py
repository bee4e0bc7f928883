"""The punt budget (issue 23): a packets meter per ingress port on unsolicited punts; the excess is dropped
in the switch and counted (fwd_dropped[port, FWD_DROP_PUNT_BUDGET]); other ports and buffer punts keep going."""
import time

from ptf import testutils
from scapy.all import IP, UDP, Ether, Raw

from p4handoff.controller.p4runtime import TableEntry
from bs_pipeline import ACCESS, ACCESS2, C, CORE, MH2_ADDR, MH2_MAC, MH_ADDR, MH_MAC, BsTest, udp_to

FLOOD = 200
RATE, BURST = 20, 10      # packets/s, packets


def registration(src_mac: str, src: str, k: int) -> Ether:
    return (Ether(dst="ff:ff:ff:ff:ff:ff", src=src_mac) / IP(src=src, dst="255.255.255.255")
            / UDP(sport=434, dport=C["UDP_PORT_MIP_REGISTRATION"]) / Raw(b"\x01" + bytes(15) + k.to_bytes(8, "big")))


class PuntBudget(BsTest):
    def packet_ins(self, idle: float = 0.5) -> list:
        out = []
        while (pin := self.client.packet_in(idle)) is not None:
            out.append(pin)
        return out


class ExcessPuntsDroppedAndCounted(PuntBudget):
    """A back-to-back flood of registrations on one access port: about the burst reaches the controller,
    the rest is dropped and counted; every frame is one or the other."""

    def runTest(self):
        self.client.write_meters("punt_budget", [(ACCESS, RATE, BURST)])
        t0 = time.monotonic()
        self.send_all(ACCESS, (registration(MH_MAC, MH_ADDR, k) for k in range(FLOOD)))
        pins = self.packet_ins()
        elapsed = time.monotonic() - t0
        punted = self.reason_count("punted", ACCESS, C["PUNT_REASON_REGISTRATION"])
        dropped = self.reason_count("fwd_dropped", ACCESS, C["FWD_DROP_PUNT_BUDGET"])
        self.assertEqual(len(pins), punted)
        self.assertEqual(punted + dropped, FLOOD)
        self.assertGreaterEqual(punted, BURST // 2)
        self.assertLessEqual(punted, BURST + RATE * elapsed + 2)
        self.assertGreater(dropped, FLOOD // 2)


class OtherPortsKeepTheirBudget(PuntBudget):
    """Port ACCESS's budget spent; a registration from ACCESS2 still reaches the controller at once."""

    def runTest(self):
        self.client.write_meters("punt_budget", [(ACCESS, RATE, BURST), (ACCESS2, RATE, BURST)])
        self.send_all(ACCESS, (registration(MH_MAC, MH_ADDR, k) for k in range(FLOOD)))
        testutils.send_packet(self, ACCESS2, registration(MH2_MAC, MH2_ADDR, 1))
        pins = self.packet_ins()
        from_other = [p for p in pins if p.metadata["ingress_port"] == ACCESS2]
        self.assertEqual(len(from_other), 1)
        self.assertEqual(self.reason_count("fwd_dropped", ACCESS2, C["FWD_DROP_PUNT_BUDGET"]), 0)


class BufferPuntsAreNotMetered(PuntBudget):
    """Packets the controller diverted to its buffer (reason BUFFER) do not spend the budget."""

    def runTest(self):
        self.client.write_meters("punt_budget", [(CORE, 1, 1)])
        self.client.modify(TableEntry("ipv4_fwd", {"dst_addr": MH_ADDR + "/32"}, "fwd_punt",
                                      {"reason": C["PUNT_REASON_BUFFER"]}))
        n = self.send_all(CORE, (udp_to(MH_ADDR, seq=k) for k in range(50)))
        pins = self.packet_ins()
        self.assertEqual(len(pins), n)
        self.assertEqual(self.reason_count("fwd_dropped", CORE, C["FWD_DROP_PUNT_BUDGET"]), 0)


class UnconfiguredPortIsUnlimited(PuntBudget):
    """A port whose meter cell was never configured punts everything (the controller configures every port)."""

    def runTest(self):
        n = self.send_all(ACCESS, (registration(MH_MAC, MH_ADDR, k) for k in range(50)))
        self.assertEqual(len(self.packet_ins()), n)
