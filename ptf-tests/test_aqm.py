"""AQM on access ports: RED vs M-RED under a priority burst, the early-drop law at fixed averages, the
idle-time correction, the queue limit kept below BMv2's, and occupancy accounting back to zero."""
import math
import time

from ptf import testutils

from bs_pipeline import (ACCESS, ACCESS2, C, MH2_ADDR, MH_ADDR, MH_MAC, PEER, BsTest, delivered, tcp_to, tunnel,
                         udp_to)
from p4handoff.controller.aqm_tables import (PortAqm, RedParams, aqm_port_entry, drop_fraction_fixed, drop_fraction_float,
                                   fixed_avg)
from p4handoff.wire import AQM_MODE_DROPTAIL, AQM_MODE_MRED, AQM_MODE_RED, DECAY_ONE
from p4handoff.controller.p4runtime import UpdateType

NP, PRIO, DUMMY = C["AQM_CLASS_NP"], C["AQM_CLASS_PRIO"], C["AQM_CLASS_DUMMY"]
PRIO_DSCP = C["DSCP_IPF_PRIORITY_DEFAULT"]


class RedVsMredPriorityBurst(BsTest):
    """The IPF experiment in miniature: a congested queue (non-priority backlog, 20 pkt/s) receives a
    burst of 30 priority packets. M-RED (port 2): no priority packet is dropped and the average does not
    move. RED (port 4, same parameters, same traffic): the average jumps past max_th and priority packets
    are dropped."""

    RED = RedParams(min_th=8, max_th=20, max_p=0.1, wq_shift=2, levels=8)
    BACKLOG, BURST, RATE = 10, 30, 20

    def runTest(self):
        self.configure_aqm(PortAqm(ACCESS, AQM_MODE_MRED, limit=60, dummy_threshold=60, red=self.RED))
        self.client.insert(aqm_port_entry(PortAqm(ACCESS2, AQM_MODE_RED, limit=60, dummy_threshold=60, red=self.RED)))
        self.set_queue_rate(self.RATE, ACCESS)
        self.set_queue_rate(self.RATE, ACCESS2)
        results = {}
        for port, mh in ((ACCESS, MH_ADDR), (ACCESS2, MH2_ADDR)):
            self.send_all(1, (udp_to(mh, seq=i) for i in range(self.BACKLOG)))
            time.sleep(0.05)
            avg_before = self.avg(port)
            self.send_all(PEER, (tunnel(udp_to(mh, seq=100 + i), dscp=PRIO_DSCP) for i in range(self.BURST)))
            time.sleep(0.05)
            avg_after = self.avg(port)
            self.assertEqual(self.wait_drained(port), [0, 0, 0])
            results[port] = (avg_before, avg_after,
                             self.aqm_count("aqm_red_dropped", port, PRIO).packets,
                             self.aqm_count("aqm_overflow_dropped", port, PRIO).packets,
                             self.aqm_count("aqm_enqueued", port, PRIO).packets)
        mred_before, mred_after, mred_red, mred_over, mred_enq = results[ACCESS]
        red_before, red_after, red_red, red_over, red_enq = results[ACCESS2]
        # M-RED: the burst is invisible to the average and loses nothing
        self.assertEqual(mred_after, mred_before)
        self.assertEqual((mred_red, mred_over, mred_enq), (0, 0, self.BURST))
        self.assertLess(mred_before, self.RED.min_fp)
        # RED: the same burst drives the average past max_th and priority packets are dropped
        self.assertLess(red_before, self.RED.min_fp)
        self.assertGreaterEqual(red_after, self.RED.max_fp)
        self.assertGreater(red_red, 0)
        self.assertEqual(red_red + red_over + red_enq, self.BURST)


class EarlyDropMatchesAnalyticLaw(BsTest):
    """At a fixed average (pinned: w_q = 2^-31, no idle decay), the fraction of arrivals RED drops
    early matches Floyd & Jacobson's count-based law (their pseudocode): 1 / E[gap] with gaps uniform
    on 1 .. 1/p_b - 1, about 2 p_b.

    The averages are midpoints of p_b levels, where the tables' p_b equals the floating-point p_b
    (elsewhere they differ by at most max_p / (2 levels), docs/aqm.md). Tolerance: 4 binomial standard
    deviations of the measured fraction (the count-based process is less variable than binomial, so a
    false failure is rarer than 1 in 15000) plus the remaining fixed-point deviation of the model
    (threshold rounding to 2^-24, negligible)."""

    RED = RedParams(min_th=10, max_th=50, max_p=0.5, wq_shift=31, levels=64)
    PACKETS = 2000

    def runTest(self):
        self.configure_aqm(PortAqm(ACCESS, AQM_MODE_RED, limit=60, dummy_threshold=60, profile=1, red=self.RED))
        frame = bytes(udp_to(MH_ADDR))
        for avg in (16.5625, 31.5625):  # midpoints of levels 10 and 34
            pinned = fixed_avg(avg)
            self.thrift.register_write("avg_occupancy", ACCESS, pinned)
            before = self._counts()
            for _ in range(self.PACKETS // 100):  # paced, so the switch's input queue does not overflow
                self.send_all(1, (frame for _ in range(100)))
                time.sleep(0.01)
            red, enq, over = (b - a for a, b in zip(before, self._settled_counts()))
            arrivals = red + enq + over
            self.assertGreater(arrivals, self.PACKETS // 2, "the switch saw too few packets")
            measured = red / arrivals
            analytic = drop_fraction_float(self.RED, avg)
            model = drop_fraction_fixed(self.RED, avg)
            sigma = math.sqrt(analytic * (1 - analytic) / arrivals)
            print(f"avg {avg}: measured {measured:.4f} over {arrivals}, analytic {analytic:.4f}, "
                  f"fixed-point model {model:.4f}, sigma {sigma:.4f}")
            self.assertLess(abs(measured - analytic), 4 * sigma + abs(model - analytic))
            self.assertEqual(self.avg(ACCESS), pinned)

    def _counts(self):
        return tuple(self.aqm_count(name, ACCESS, NP).packets
                     for name in ("aqm_red_dropped", "aqm_enqueued", "aqm_overflow_dropped"))

    def _settled_counts(self, quiet: float = 0.3, timeout: float = 20.0):
        """The counts once they stopped changing for `quiet` s (the switch worked off its input)."""
        deadline = time.monotonic() + timeout
        counts = self._counts()
        while time.monotonic() < deadline:
            time.sleep(quiet)
            latest = self._counts()
            if latest == counts:
                break
            counts = latest
        return counts


class IdleCorrection(BsTest):
    """An arrival to an empty queue decays the average by (1 - w_q)^(idle / s), from the aqm_idle table.

    The idle time is bracketed by wall-clock times around the packets (the queue emptied after the
    first send and before that packet was received); s = 20 ms keeps the expected factor well inside
    (0, 1)."""

    RED = RedParams(min_th=30, max_th=60, max_p=0.1, wq_shift=4, mean_pkt_time_us=20000.0)

    def runTest(self):
        self.configure_aqm(PortAqm(ACCESS, AQM_MODE_RED, limit=60, dummy_threshold=60, red=self.RED))
        frame = udp_to(MH_ADDR)
        t_start = time.monotonic()
        testutils.send_packet(self, 1, frame)
        testutils.verify_packet(self, delivered(frame, MH_MAC), ACCESS)
        t_drained = time.monotonic()
        self.assertEqual(self.wait_drained(ACCESS), [0, 0, 0])
        start_avg = fixed_avg(20)
        self.thrift.register_write("avg_occupancy", ACCESS, start_avg)
        testutils.send_packet(self, 1, frame)
        t_end = time.monotonic()
        self.wait_drained(ACCESS)
        ratio = self.avg(ACCESS) / start_avg
        keep = 1 - self.RED.w_q
        s = self.RED.mean_pkt_time_us / 1e6
        slack = 0.5 / self.RED.decay_steps + 13 / DECAY_ONE  # table step + shift-and-add truncation
        print(f"decay ratio {ratio:.4f}, idle within [{t_end - t_drained:.3f}, {t_end - t_start:.3f}] s")
        self.assertGreaterEqual(ratio, keep ** ((t_end - t_start + 0.01) / s) - slack)
        self.assertLessEqual(ratio, keep ** ((t_end - t_drained) / s) + slack)
        self.assertLess(ratio, 1.0)


class QueueEmptiedAfterTheArrivalIsNoIdleTime(BsTest):
    """On a busy switch a packet waits in BMv2's input buffer after it arrived (its ingress timestamp) while
    the egress thread empties the queue (empty_since, later than that timestamp): the average keeps its
    value. Unguarded, the difference wrapped to ~2^48 us, the longest idle time, and the average was reset
    to 0 (in the Mininet lab after every idle moment of a loaded cell; docs/aqm.md)."""

    RED = IdleCorrection.RED

    def runTest(self):
        self.configure_aqm(PortAqm(ACCESS, AQM_MODE_RED, limit=60, dummy_threshold=60, red=self.RED))
        start_avg = fixed_avg(20)
        self.thrift.register_write("avg_occupancy", ACCESS, start_avg)
        later = 1 << 46                       # us: after any ingress timestamp of this switch's lifetime
        for cls in (NP, PRIO):
            self.thrift.register_write("empty_since", ACCESS * C["AQM_CLASS_STRIDE"] + cls, later)
        frame = udp_to(MH_ADDR)
        testutils.send_packet(self, 1, frame)
        testutils.verify_packet(self, delivered(frame, MH_MAC), ACCESS)
        self.wait_drained(ACCESS)
        self.assertEqual(self.avg(ACCESS), start_avg)


class QueueLimitKeepsBmv2FromDropping(BsTest):
    """With the switch's own limit (qlimit 10) below BMv2's depth (64), every packet the pipeline admits
    leaves the switch: delivered == enqueued, the rest counted as overflow."""

    def runTest(self):
        self.configure_aqm(PortAqm(ACCESS, AQM_MODE_DROPTAIL, limit=10, dummy_threshold=5))
        self.set_queue_rate(100, ACCESS)
        sent = self.send_all(1, (udp_to(MH_ADDR, seq=i) for i in range(40)))
        received = self.collect(ACCESS, idle_timeout=0.5)
        enq = self.aqm_count("aqm_enqueued", ACCESS, NP).packets
        over = self.aqm_count("aqm_overflow_dropped", ACCESS, NP).packets
        self.assertEqual(enq + over, sent)
        self.assertGreater(over, 0)
        self.assertEqual(len(received), enq)
        self.assertEqual(self.wait_drained(ACCESS), [0, 0, 0])


class OccupancyBackToZero(BsTest):
    """After mixed traffic (non-priority, priority, dummies; early, overflow and dummy drops) every
    occupancy register of the port is zero, and so is enqueued - dequeued per class over P4Runtime."""

    RED = RedParams(min_th=3, max_th=12, max_p=0.3, wq_shift=1, levels=8)

    def runTest(self):
        self.configure_aqm(PortAqm(ACCESS, AQM_MODE_MRED, limit=20, dummy_threshold=10, red=self.RED))
        self.set_queue_rate(200, ACCESS)
        for _burst in range(3):
            frames = []
            for i in range(15):
                frames += [udp_to(MH_ADDR, seq=i), tcp_to(MH_ADDR, seq=i, dummy=True),
                           tunnel(udp_to(MH_ADDR, seq=i), dscp=PRIO_DSCP)]
            self.send_all(1, frames[0::3])
            self.send_all(1, frames[1::3])
            self.send_all(PEER, frames[2::3])
            time.sleep(0.1)
        self.assertEqual(self.wait_drained(ACCESS), [0, 0, 0])
        self.assertEqual(self.counted_occupancy(ACCESS), [0, 0, 0])
        drops = sum(self.aqm_count(name, ACCESS, cls).packets
                    for name in ("aqm_red_dropped", "aqm_overflow_dropped", "aqm_dummy_dropped")
                    for cls in (NP, PRIO, DUMMY))
        self.assertGreater(drops, 0, "the traffic should have exercised the drop paths")


class ModeChangeAtRuntime(BsTest):
    """The AQM mode is one aqm_port entry: modifying it switches drop-tail -> RED without a recompile."""

    RED = RedParams(min_th=1, max_th=2, max_p=1.0, wq_shift=0, levels=1, mean_pkt_time_us=1000.0)

    def runTest(self):
        self.configure_aqm(PortAqm(ACCESS, AQM_MODE_DROPTAIL, limit=60, dummy_threshold=60, red=self.RED))
        self.set_queue_rate(20, ACCESS)
        self.send_all(1, (udp_to(MH_ADDR, seq=i) for i in range(6)))
        self.assertEqual(self.aqm_count("aqm_red_dropped", ACCESS, NP).packets, 0)
        self.wait_drained(ACCESS)
        self.client.write([(UpdateType.MODIFY, aqm_port_entry(
            PortAqm(ACCESS, AQM_MODE_RED, limit=60, dummy_threshold=60, red=self.RED)))])
        self.send_all(1, (udp_to(MH_ADDR, seq=i) for i in range(6)))
        # w_q = 1: avg = q. The queue drains one packet per 50 ms, the six arrive within a few ms:
        # once two are queued avg >= max_th and the rest are dropped
        self.assertGreaterEqual(self.count_reaching("aqm_red_dropped", ACCESS, NP, 3), 3)
        self.assertEqual(self.wait_drained(ACCESS), [0, 0, 0])
