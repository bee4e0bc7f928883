"""PTF tests of the harness itself against tests/p4/mini.p4, run by tests/test_ptf.py's self-test.

`Skipped` and `Fails` exist to prove that the runner reports those outcomes.
"""
from ptf import testutils
from scapy.all import Ether, Raw

from base import P4RuntimeTest


def frame(tag: int) -> Ether:
    return Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01", type=0x88B5) / Raw(bytes([tag]) * 46)


class Forward(P4RuntimeTest):
    """An entry by name forwards port 1 to 2; counter (P4Runtime) and register (Thrift) see it."""

    def runTest(self):
        self.insert("port_fwd", {"ingress_port": 1}, "forward", port=2)
        testutils.send_packet(self, 1, frame(1))
        testutils.verify_packet(self, frame(1), 2)
        testutils.verify_no_other_packets(self)
        self.assertEqual(self.counter("rx_pkts", 1).packets, 1)
        self.assertEqual(self.register("rx_seen", 1), 1)


class FreshState(P4RuntimeTest):
    """Run after Forward: the pipeline push in setUp left no entry, count or register value behind."""

    def runTest(self):
        self.assertEqual(self.client.read_table(), [])
        self.assertEqual(self.counter("rx_pkts", 1).packets, 0)
        self.assertEqual(self.register("rx_seen", 1), 0)


class PacketIo(P4RuntimeTest):
    """Packet-in with its metadata by name; packet-out to a chosen port."""

    def runTest(self):
        self.insert("port_fwd", {"ingress_port": 2}, "punt", reason=3)
        testutils.send_packet(self, 2, frame(2))
        pin = self.get_packet_in()
        self.assertEqual((pin.metadata, pin.payload), ({"ingress_port": 2, "reason": 3}, bytes(frame(2))))
        self.packet_out(frame(3), egress_port=3, flags=0)
        testutils.verify_packet(self, frame(3), 3)
        self.verify_no_packet_in()


class QueueSettings(P4RuntimeTest):
    """Queue rate/depth commands reach the switch over Thrift (undone in tearDown); collect() gets
    every packet of a paced burst, in order."""

    def runTest(self):
        self.set_queue_rate(1000, port=2)
        self.set_queue_depth(8, port=2, priority=0)
        self.insert("port_fwd", {"ingress_port": 1}, "forward", port=2)
        for tag in range(5):
            testutils.send_packet(self, 1, frame(tag))
        self.assertEqual(self.collect(2, idle_timeout=0.5), [bytes(frame(tag)) for tag in range(5)])


class Skipped(P4RuntimeTest):
    def runTest(self):
        self.skipTest("skipped on purpose")


class Fails(P4RuntimeTest):
    def runTest(self):
        self.fail("failed on purpose")
