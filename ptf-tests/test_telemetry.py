"""The telemetry probe: a packet-out with telemetry=1 is answered by a packet-in (reason TELEMETRY)
carrying the AQM state of the port it names, readable without Thrift."""
import time

from bs_pipeline import ACCESS, ACCESS2, C, MH_ADDR, PROBE, TELEMETRY, BsTest, udp_to
from p4handoff.controller.aqm_tables import PortAqm, RedParams, fixed_avg
from p4handoff.wire import AQM_MODE_MRED


class TelemetryProbe(BsTest):
    """Occupancy, average and count of a queue mid-backlog, as the registers hold them."""

    def runTest(self):
        red = RedParams(min_th=30, max_th=60, max_p=0.1, wq_shift=3)
        self.configure_aqm(PortAqm(ACCESS, AQM_MODE_MRED, limit=60, dummy_threshold=60, red=red))
        self.set_queue_rate(10, ACCESS)
        self.send_all(1, (udp_to(MH_ADDR, seq=i) for i in range(8)))
        # send_all returns before the switch has queued them (under load the probe overtook them)
        deadline = time.monotonic() + 2.0
        while self.aqm_count("aqm_enqueued", ACCESS, C["AQM_CLASS_NP"]).packets < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.packet_out(PROBE, egress_port=ACCESS, telemetry=1)
        pin = self.get_packet_in()
        self.assertEqual(pin.metadata["reason"], C["PUNT_REASON_TELEMETRY"])
        port, mode, _, occ_np, occ_prio, occ_dummy, avg, count = TELEMETRY.unpack(pin.payload[:TELEMETRY.size])
        self.assertEqual(pin.payload[TELEMETRY.size:], bytes(PROBE))
        self.assertEqual((port, mode, occ_prio, occ_dummy, count), (ACCESS, AQM_MODE_MRED, 0, 0, 0))
        self.assertTrue(6 <= occ_np <= 8, occ_np)
        self.assertEqual(avg, self.register("avg_occupancy", ACCESS))  # the same register over Thrift
        self.assertGreater(avg, 0)
        self.assertLess(avg, fixed_avg(8))


class TelemetryPortWithoutAqm(BsTest):
    """A port without an aqm_port entry reports mode TELEMETRY_AQM_MODE_NONE and zero state."""

    def runTest(self):
        self.packet_out(PROBE, egress_port=ACCESS2, telemetry=1)
        pin = self.get_packet_in()
        self.assertEqual(TELEMETRY.unpack(pin.payload[:TELEMETRY.size]), (ACCESS2, C["TELEMETRY_AQM_MODE_NONE"], 0, 0, 0, 0, 0, 0))
