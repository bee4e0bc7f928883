"""DSBP dummy segments on an access port: lowest priority (they leave after backlogged data), dropped
first above the threshold, never in the average, classified only with both marks."""

from scapy.all import IP, TCP, Ether

from bs_pipeline import ACCESS, C, MH_ADDR, PEER, BsTest, seq_of, tcp_to, tunnel, udp_to
from p4handoff.controller.aqm_tables import PortAqm, RedParams
from p4handoff.wire import AQM_MODE_DROPTAIL, AQM_MODE_RED

NP, DUMMY = C["AQM_CLASS_NP"], C["AQM_CLASS_DUMMY"]


def is_dummy(frame: bytes) -> bool:
    pkt = Ether(frame)
    return TCP in pkt and pkt[TCP].reserved == C["TCP_BYTE12_DUMMY_MASK"] >> 1 and pkt[IP].tos >> 2 == C["DSCP_LE"]


class DummiesLeaveAfterBackloggedData(BsTest):
    """With 30 data segments backlogged (100 pkt/s), 10 dummies sent right after them leave only after
    the last data segment, none is lost, and the data keeps its order. (simple_switch paces each
    priority queue on its own; the pipeline holds a dummy back while data waits on its port.)"""

    def runTest(self):
        self.configure_aqm(PortAqm(ACCESS, AQM_MODE_DROPTAIL, limit=60, dummy_threshold=50))
        self.set_queue_rate(100, ACCESS)
        self.send_all(1, (tcp_to(MH_ADDR, seq=i) for i in range(30)))
        self.send_all(1, (tcp_to(MH_ADDR, seq=100 + i, dummy=True) for i in range(10)))
        received = self.collect(ACCESS, idle_timeout=0.6)
        kinds = [is_dummy(f) for f in received]
        self.assertEqual((kinds.count(False), kinds.count(True)), (30, 10))
        self.assertEqual(kinds, [False] * 30 + [True] * 10, "a dummy overtook a data segment")
        # held dummies go round the dummy queue, so their order among themselves may rotate
        # (they carry no new data; DSBP only counts their ACKs)
        self.assertEqual(sorted(seq_of(f) for f in received if is_dummy(f)), list(range(100, 110)))
        self.assertEqual([seq_of(f) for f in received if not is_dummy(f)], list(range(30)))
        self.assertEqual(self.wait_drained(ACCESS), [0, 0, 0])


class DummiesDroppedFirst(BsTest):
    """Above dummy_th (10) every arriving dummy is dropped (aqm_dummy_dropped) while data is still
    admitted; data is only lost once its own limit (qlimit 20) is reached."""

    def runTest(self):
        self.configure_aqm(PortAqm(ACCESS, AQM_MODE_DROPTAIL, limit=20, dummy_threshold=10))
        self.set_queue_rate(20, ACCESS)
        self.send_all(1, (tcp_to(MH_ADDR, seq=i) for i in range(15)))
        self.send_all(1, (tcp_to(MH_ADDR, seq=100 + i, dummy=True) for i in range(5)))
        self.assertEqual(self.count_reaching("aqm_dummy_dropped", ACCESS, DUMMY, 5), 5)
        self.assertEqual(self.aqm_count("aqm_overflow_dropped", ACCESS, NP).packets, 0)
        self.assertEqual(self.aqm_count("aqm_enqueued", ACCESS, DUMMY).packets, 0)
        self.send_all(1, (tcp_to(MH_ADDR, seq=200 + i) for i in range(10)))
        self.assertGreater(self.count_reaching("aqm_overflow_dropped", ACCESS, NP, 1), 0)
        self.assertEqual(self.wait_drained(ACCESS, timeout=20), [0, 0, 0])


class DummiesNotInAverage(BsTest):
    """A stream of dummies into a RED queue leaves the average and the RED count untouched."""

    RED = RedParams(min_th=2, max_th=6, max_p=0.5, wq_shift=1, levels=4)

    def runTest(self):
        self.configure_aqm(PortAqm(ACCESS, AQM_MODE_RED, limit=60, dummy_threshold=40, red=self.RED))
        self.set_queue_rate(100, ACCESS)
        self.send_all(1, (tcp_to(MH_ADDR, seq=i, dummy=True) for i in range(30)))
        self.count_reaching("aqm_enqueued", ACCESS, DUMMY, 30)  # all arrived (the queue drains at 100 pps)
        self.assertGreater(self.occupancy(ACCESS)[2], 5, "the dummies should be queued")
        self.assertEqual(self.avg(ACCESS), 0)
        self.assertEqual(self.register("red_count", ACCESS), 0)
        self.assertEqual(len(self.collect(ACCESS, idle_timeout=0.6)), 30)
        self.assertEqual(self.aqm_count("aqm_enqueued", ACCESS, DUMMY).packets, 30)
        self.assertEqual(self.aqm_count("aqm_red_dropped", ACCESS, DUMMY).packets, 0)


class DummyNeedsBothMarks(BsTest):
    """Dummy = TCP dummy flag AND DSCP LE (on the innermost header); either alone is ordinary data."""

    def runTest(self):
        self.configure_aqm(PortAqm(ACCESS, AQM_MODE_DROPTAIL, limit=60, dummy_threshold=60))
        flag_only = tcp_to(MH_ADDR, seq=1, dummy=True, dscp=0)
        le_only = tcp_to(MH_ADDR, seq=2, dscp=C["DSCP_LE"])
        both = tcp_to(MH_ADDR, seq=3, dummy=True)
        tunnelled = tunnel(tcp_to(MH_ADDR, seq=4, dummy=True))
        self.send_all(1, (flag_only, le_only, both))
        self.send_all(PEER, (tunnelled,))
        self.assertEqual(len(self.collect(ACCESS, idle_timeout=0.4)), 4)
        self.assertEqual(self.aqm_count("aqm_enqueued", ACCESS, NP).packets, 2)
        self.assertEqual(self.aqm_count("aqm_enqueued", ACCESS, DUMMY).packets, 2)
        udp_le = udp_to(MH_ADDR, dscp=C["DSCP_LE"])  # not TCP: never a dummy
        self.send_all(1, (udp_le,))
        self.collect(ACCESS, idle_timeout=0.3)
        self.assertEqual(self.aqm_count("aqm_enqueued", ACCESS, NP).packets, 3)
