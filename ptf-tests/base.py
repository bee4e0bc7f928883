"""Base class of the PTF suite: a switch session with fresh state per test, plus a few named helpers.

`tests/test_ptf.py` starts simple_switch_grpc and runs `ptf` with these test
params (see docs/testing.md): grpc_addr, device_id, p4info, bmv2_json,
thrift_port, cpu_port. Ports: PTF port N is switch port N.

    class Forward(P4RuntimeTest):
        def runTest(self):
            self.insert("ipv4_fwd", {"dst_addr": "10.0.2.0/24"}, "deliver", port=2, ...)   # P4Info names
            testutils.send_packet(self, 1, pkt)
            testutils.verify_packet(self, expected, 2)
"""
from __future__ import annotations

import time
from typing import Any

import ptf
from ptf import testutils
from ptf.base_tests import BaseTest

from p4handoff.controller.p4runtime import CounterValue, P4RuntimeClient, PacketIn, TableEntry
from p4handoff.bmv2 import DEFAULT_QUEUE_DEPTH, ThriftCli

REQUIRED_PARAMS = ("grpc_addr", "device_id", "p4info", "bmv2_json", "thrift_port", "cpu_port")


class P4RuntimeTest(BaseTest):
    """setUp pushes the pipeline (BMv2 then starts from empty tables, counters and registers);
    tearDown puts queue rates/depths back if the test changed them, and disconnects."""

    def setUp(self) -> None:
        super().setUp()
        params = testutils.test_params_get()
        missing = [name for name in REQUIRED_PARAMS if name not in params]
        if missing:
            raise RuntimeError(f"PTF test params missing {', '.join(missing)}; run the suite through "
                               "tests/test_ptf.py (make ptf), see docs/testing.md")
        self.dataplane = ptf.dataplane_instance
        self.cpu_port: int = params["cpu_port"]
        self.ports: list[int] = sorted(port for _, port in ptf.config["port_map"])
        self.thrift = ThriftCli(params["thrift_port"])
        self._queues_changed = False
        self.client = P4RuntimeClient(params["grpc_addr"], params["device_id"])
        self.addCleanup(self.client.close)
        self.client.set_pipeline(params["p4info"], params["bmv2_json"])
        self.dataplane.flush()   # after the push: nothing an earlier test left in flight counts here

    def tearDown(self) -> None:
        if self._queues_changed:
            self.thrift.set_queue_rate(0)
            self.thrift.set_queue_depth(DEFAULT_QUEUE_DEPTH)
            self._drain()
        super().tearDown()

    def _drain(self, quiet: float = 0.3, timeout: float = 10.0) -> None:
        """Wait (bounded) until no port has sent anything for `quiet` s: a rate-limited backlog the test
        left in BMv2's queues must not reach the next test."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not isinstance(self.dataplane.poll(timeout=quiet), self.dataplane.PollSuccess):
                return
        raise AssertionError(f"the switch was still sending {timeout} s after the test restored its queues")

    # -- table entries ------------------------------------------------------------------------

    def insert(self, table: str, match: dict[str, Any] | None = None, action: str | None = None,
               priority: int = 0, **params: Any) -> TableEntry:
        """Insert one entry by names (match values as in p4handoff.controller.p4runtime.entities); returns it."""
        entry = TableEntry(table, match or {}, action, params, priority)
        self.client.insert(entry)
        return entry

    def set_default(self, table: str, action: str, **params: Any) -> None:
        self.client.set_default(table, action, **params)

    # -- packet I/O ---------------------------------------------------------------------------

    def packet_out(self, pkt: Any, **metadata: Any) -> None:
        """Send a scapy packet (or bytes) from the controller, `packet_out` fields by name."""
        self.client.packet_out(bytes(pkt), **metadata)

    def get_packet_in(self, timeout: float = 2.0) -> PacketIn:
        """The next packet-in; the test fails if none arrives within `timeout` seconds."""
        pin = self.client.packet_in(timeout)
        if pin is None:
            raise self.failureException(f"no packet-in within {timeout} s")
        return pin

    def verify_no_packet_in(self, timeout: float = 0.5) -> None:
        pin = self.client.packet_in(timeout)
        if pin is not None:
            self.fail(f"unexpected packet-in {pin.metadata} ({len(pin.payload)} bytes)")

    def collect(self, port: int, idle_timeout: float = 0.5, timeout: float = 30.0) -> list[bytes]:
        """Every packet arriving on dataplane `port`, in order, until none came for `idle_timeout`
        seconds (or `timeout` seconds passed in all)."""
        packets: list[bytes] = []
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            result = testutils.dp_poll(self, port_number=port, timeout=min(idle_timeout, left))
            if not isinstance(result, self.dataplane.PollSuccess):
                break
            packets.append(bytes(result.packet))
        return packets

    # -- state --------------------------------------------------------------------------------

    def counter(self, name: str, index: int) -> CounterValue:
        """An indirect counter cell, over P4Runtime."""
        return self.client.read_counter(name, index)

    def register(self, name: str, index: int | None = None) -> int | list[int]:
        """A register cell (or all cells) by P4Info name or alias, over Thrift: BMv2's P4Runtime
        server cannot read registers (its JSON uses the P4Info full names)."""
        return self.thrift.register_read(self.client.need_p4info().register(name).preamble.name, index)

    def set_queue_rate(self, pps: int, port: int | None = None, priority: int | None = None) -> None:
        """Egress queue rate (packets/s per priority queue, 0 = unlimited); undone after the test."""
        self._queues_changed = True
        self.thrift.set_queue_rate(pps, port, priority)

    def set_queue_depth(self, packets: int, port: int | None = None, priority: int | None = None) -> None:
        """Egress queue depth in packets; undone after the test."""
        self._queues_changed = True
        self.thrift.set_queue_depth(packets, port, priority)
