"""The P4Runtime client: name resolution and encoding without a switch, then everything against BMv2.

The BMv2 half compiles tests/p4/mini.p4 at test time, runs simple_switch_grpc
in the root namespace (as the controller's switches run) with two ports whose
far ends sit in a throwaway namespace, and exchanges real frames through them.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from p4handoff.controller.p4runtime import (CounterValue, EncodingError, P4Info, P4InfoError, P4RuntimeClient,
                                  P4RuntimeError, TableEntry, UpdateType, default_election_id, encode_value)
from p4handoff.controller.p4runtime._protos import p4runtime_pb2
from p4handoff.controller.p4runtime.client import EncodedEntries, packet_out_message, write_request
from p4handoff.controller.p4runtime.entities import (counter_entry, decode_packet_in, encode_packet_out,
                                           encode_table_entry, normalize, register_entry)
from tests.p4info_support import build_p4info

HERE = Path(__file__).resolve().parent


# ---------------------------------------------------------------- a P4Info built by hand (tests/p4info_support.py)

@pytest.fixture(scope="module")
def info() -> P4Info:
    return build_p4info()


def test_names_resolve_by_full_name_and_alias(info):
    assert info.table("ipv4_lpm") is info.table("Ingress.fwd.ipv4_lpm")
    assert info.action("set_nexthop").preamble.id == 0x01000001
    assert info.register("occupancy").size == 8
    assert info.counter("Ingress.rx").size == 4
    assert info.match_field(info.table("acl"), "hdr.ipv4.dscp").bitwidth == 6
    assert info.param(info.action("set_nexthop"), "dmac").bitwidth == 48


@pytest.mark.parametrize("lookup, message", [
    (lambda i: i.table("nope"), "unknown table 'nope'; the P4Info has: Ingress.acl, Ingress.fwd.ipv4_lpm"),
    (lambda i: i.action("fwd"), "unknown action 'fwd'"),
    (lambda i: i.register("occ"), "unknown register 'occ'; the P4Info has: Ingress.occupancy"),
    (lambda i: i.counter("tx"), "unknown counter 'tx'"),
    (lambda i: i.match_field(i.table("acl"), "dscp"), "no match field 'dscp'; its fields: hdr.ethernet.dst_addr"),
    (lambda i: i.param(i.action("set_nexthop"), "mac"), "has no parameter 'mac'; its parameters: port, dmac"),
])
def test_unknown_names_say_what_exists(info, lookup, message):
    with pytest.raises(P4InfoError) as err:
        lookup(info)
    assert message in str(err.value)


@pytest.mark.parametrize("value, width, expected", [
    (0, 9, b"\x00"),
    (1, 9, b"\x01"),
    (511, 9, b"\x01\xff"),
    (True, 1, b"\x01"),
    ("0x2a", 8, b"\x2a"),
    ("42", 8, b"\x2a"),
    (b"\x00\x00\x05", 24, b"\x05"),
    ("aa:bb:cc:00:00:01", 48, b"\xaa\xbb\xcc\x00\x00\x01"),
    ("0:1:2:3:4:5", 48, b"\x01\x02\x03\x04\x05"),
    ("10.0.1.2", 32, b"\x0a\x00\x01\x02"),
    ("::1", 128, b"\x01"),
])
def test_values_encode_canonically(value, width, expected):
    assert encode_value(value, width) == expected


@pytest.mark.parametrize("value, width, message", [
    (512, 9, "does not fit in bit<9> (max 511)"),
    (-1, 8, "negative"),
    (b"\x01\x00", 8, "2 bytes given for a bit<8> field"),
    ("10.0.0.1", 48, "32-bit address but the field is bit<48>"),
    ("aa:bb:cc:dd:ee:ff", 32, "48-bit address but the field is bit<32>"),
    ("10.0.0.300", 32, "Octet 300 (> 255) not permitted"),
    ("ten", 8, "not a number, MAC, IPv4 or IPv6 address"),
    (1.5, 8, "cannot encode a float"),
])
def test_bad_values_are_refused_with_the_reason(value, width, message):
    with pytest.raises(EncodingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        encode_value(value, width, "f")


def test_lpm_entry_encodes_prefix_and_round_trips(info):
    entry = TableEntry("ipv4_lpm", {"hdr.ipv4.dst_addr": "10.0.1.0/24"}, "set_nexthop",
                       {"port": 3, "dmac": "00:00:00:00:01:02"})
    proto = encode_table_entry(info, entry)
    assert proto.table_id == 0x02000001 and proto.priority == 0
    assert (proto.match[0].lpm.value, proto.match[0].lpm.prefix_len) == (b"\x0a\x00\x01\x00", 24)
    assert [(p.param_id, p.value) for p in proto.action.action.params] == [(1, b"\x03"), (2, b"\x01\x02")]
    assert normalize(info, entry) == TableEntry("Ingress.fwd.ipv4_lpm", {"hdr.ipv4.dst_addr": (0x0A000100, 24)},
                                                "Ingress.set_nexthop", {"port": 3, "dmac": 0x0102})


def test_lpm_rejects_host_bits_and_drops_zero_prefix(info):
    with pytest.raises(EncodingError, match="bits set beyond the /24 prefix"):
        encode_table_entry(info, TableEntry("ipv4_lpm", {"hdr.ipv4.dst_addr": "10.0.1.5/24"}, "drop"))
    with pytest.raises(EncodingError, match="prefix length 33 outside 0..32"):
        encode_table_entry(info, TableEntry("ipv4_lpm", {"hdr.ipv4.dst_addr": ("10.0.1.0", 33)}, "drop"))
    default_route = encode_table_entry(info, TableEntry("ipv4_lpm", {"hdr.ipv4.dst_addr": "0.0.0.0/0"}, "drop"))
    assert len(default_route.match) == 0  # P4Runtime: a don't-care field is omitted


def test_ternary_range_optional_need_priority_and_consistent_values(info):
    entry = TableEntry("acl", {"hdr.ethernet.dst_addr": ("01:00:00:00:00:00", "01:00:00:00:00:00"),
                               "hdr.ipv4.dscp": 46, "hdr.tcp.dst_port": (1000, 2000), "meta.role": 2},
                       "drop", priority=10)
    proto = encode_table_entry(info, entry)
    assert proto.priority == 10 and len(proto.match) == 4
    assert normalize(info, entry).match == {"hdr.ethernet.dst_addr": (1 << 40, 1 << 40), "hdr.ipv4.dscp": 46,
                                            "hdr.tcp.dst_port": (1000, 2000), "meta.role": 2}
    for bad, message in [
        ({**entry.match}, "priority must be > 0"),
        ({"hdr.ipv4.dscp": 46, "hdr.ethernet.dst_addr": (3, 1)}, "bits set outside mask"),
        ({"hdr.ipv4.dscp": 46, "hdr.tcp.dst_port": (9, 3)}, "empty range"),
        ({"hdr.ipv4.dscp": 46, "hdr.tcp.dst_port": 9}, r"expected \(low, high\)"),
        ({"hdr.ethernet.dst_addr": (0, 0)}, "exact match field\\(s\\) hdr.ipv4.dscp must be given"),
    ]:
        with pytest.raises(EncodingError, match=message):
            encode_table_entry(info, TableEntry("acl", bad, "drop", priority=0 if "priority" in message else 1))
    with pytest.raises(EncodingError, match="priority must be 0"):
        encode_table_entry(info, TableEntry("ipv4_lpm", {}, "drop", priority=1))


def test_actions_are_checked_against_the_table(info):
    with pytest.raises(P4InfoError, match="not an action of table Ingress.acl; allowed: Ingress.drop"):
        encode_table_entry(info, TableEntry("acl", {"hdr.ipv4.dscp": 1}, "set_nexthop", priority=1))
    with pytest.raises(P4InfoError, match="needs parameter\\(s\\) dmac"):
        encode_table_entry(info, TableEntry("ipv4_lpm", {}, "set_nexthop", {"port": 1}))
    with pytest.raises(P4InfoError, match="no parameter 'vlan'"):
        encode_table_entry(info, TableEntry("ipv4_lpm", {}, "set_nexthop", {"port": 1, "dmac": 2, "vlan": 3}))
    with pytest.raises(P4InfoError, match="cannot be an entry's action"):
        encode_table_entry(info, TableEntry("ipv4_lpm", {}, "miss"))
    with pytest.raises(P4InfoError, match="cannot be the default action"):
        encode_table_entry(info, TableEntry("acl", action="drop", is_default=True))
    default = encode_table_entry(info, TableEntry("ipv4_lpm", action="miss", is_default=True))
    assert default.is_default_action and not default.match
    with pytest.raises(EncodingError, match="a default entry has no match"):
        encode_table_entry(info, TableEntry("ipv4_lpm", {"hdr.ipv4.dst_addr": "10.0.0.0/8"}, "miss",
                                            is_default=True))


def test_register_and_counter_entries_check_index_and_width(info):
    assert register_entry(info, "occupancy", 3, 1000).data.bitstring == b"\x03\xe8"
    assert not register_entry(info, "occupancy", None).HasField("index")  # wildcard read
    with pytest.raises(EncodingError, match="index 8 outside 0..7"):
        register_entry(info, "occupancy", 8)
    with pytest.raises(EncodingError, match=r"does not fit in bit<20>"):
        register_entry(info, "occupancy", 0, 1 << 20)
    reset = counter_entry(info, "rx", 2, CounterValue(0, 0))
    assert reset.index.index == 2 and reset.HasField("data")


def test_packet_out_and_in_metadata_by_name(info):
    out = encode_packet_out(info, b"frame", {"egress_port": 2, "priority": 1})  # padding defaults to 0
    assert [(m.metadata_id, m.value) for m in out.metadata] == [(1, b"\x02"), (2, b"\x01"), (3, b"\x00")]
    with pytest.raises(EncodingError, match="packet_out._pad"):
        encode_packet_out(info, b"x", {"egress_port": 2, "priority": 0, "_pad": 64})
    with pytest.raises(P4InfoError, match="packet_out field\\(s\\) priority must be given"):
        encode_packet_out(info, b"x", {"egress_port": 2})
    with pytest.raises(P4InfoError, match="packet_out has no field\\(s\\) vlan"):
        encode_packet_out(info, b"x", {"egress_port": 2, "priority": 0, "vlan": 1})
    with pytest.raises(EncodingError, match="packet_out.egress_port"):
        encode_packet_out(info, b"x", {"egress_port": 600, "priority": 0})
    pin = p4runtime_pb2.PacketIn(payload=b"abc")
    pin.metadata.add(metadata_id=1, value=b"\x00\x03")
    pin.metadata.add(metadata_id=2, value=b"\x05")
    pin.metadata.add(metadata_id=3, value=b"\x00")
    decoded = decode_packet_in(info, pin)
    assert (decoded.payload, decoded.metadata) == (b"abc", {"ingress_port": 3, "reason": 5})


@pytest.mark.parametrize("size", [0, 1, 127, 128, 1500, 16384, 70000])
def test_the_fast_packet_out_message_equals_the_encoded_one(info, size):
    """client.packet_out frames the payload around a cached header (varint lengths across 1, 2, 3 bytes)."""
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    headers: dict = {}
    for meta in ({"egress_port": 2, "priority": 1}, {"egress_port": 300, "priority": 0, "_pad": 5},
                 {"egress_port": 2, "priority": 1}):
        expected = p4runtime_pb2.StreamMessageRequest(packet=encode_packet_out(info, payload, meta))
        got = packet_out_message(info, payload, meta, headers)
        assert got == expected and got.SerializeToString() == expected.SerializeToString()
    assert len(headers) == 2
    with pytest.raises(EncodingError, match="packet_out.egress_port"):
        packet_out_message(info, b"x", {"egress_port": 600, "priority": 0}, headers)


def test_p4info_loads_text_and_binary_files_and_reports_bad_ones(info, tmp_path):
    from google.protobuf import text_format
    (tmp_path / "a.txtpb").write_text(text_format.MessageToString(info.proto))
    (tmp_path / "a.binpb").write_bytes(info.proto.SerializeToString())
    for name in ("a.txtpb", "a.binpb"):
        assert P4Info.load(tmp_path / name).table("acl").preamble.id == 0x02000002
    (tmp_path / "bad.txtpb").write_text("tables { nonsense: 1 }")
    with pytest.raises(P4InfoError, match="bad.txtpb is not a valid P4Info"):
        P4Info.load(tmp_path / "bad.txtpb")
    with pytest.raises(P4InfoError, match="cannot read P4Info"):
        P4Info.load(tmp_path / "missing.txtpb")


def test_default_election_ids_are_unique_and_increasing():
    ids = [default_election_id() for _ in range(1000)]
    assert len(set(ids)) == len(ids) and ids == sorted(ids)


def test_bad_election_ids_are_refused_before_connecting():
    for bad in [(0, 0), (-1, 1), (1, 2**64), (1,)]:
        with pytest.raises(ValueError, match="election_id"):
            P4RuntimeClient("127.0.0.1:1", election_id=bad)


def test_connect_times_out_with_one_error_type():
    with socket.socket() as s:  # a port that is certainly closed: bound, never listening
        s.bind(("127.0.0.1", 0))
        start = time.monotonic()
        with pytest.raises(P4RuntimeError) as err:
            P4RuntimeClient(f"127.0.0.1:{s.getsockname()[1]}", timeout=0.5)
    assert err.value.code.name == "UNAVAILABLE" and "within 0.5 s" in str(err.value)
    assert time.monotonic() - start < 10


def test_the_client_runs_on_the_fast_protobuf_backend_without_the_p4runtime_wheels_modules():
    probe = ("import sys, p4handoff.controller.p4runtime as p; from google.protobuf.internal import api_implementation as a; "
             "print(a.Type(), p.P4Info.__name__, any(m == 'p4' or m.startswith('p4.') for m in sys.modules))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROTOCOL_BUFFERS")}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["upb", "P4Info", "False"]


# ---------------------------------------------------------------- against BMv2

CPU_PORT = 255  # tests/p4/mini.p4


def _bmv2_skip_reason() -> str | None:
    from p4handoff.netns import unavailable_reason
    from p4handoff.bmv2 import P4C, bmv2_available
    available, reason = bmv2_available()
    if not available:
        return reason
    if shutil.which(P4C) is None:
        return f"'{P4C}' (p4c for BMv2) is not on PATH"
    return unavailable_reason()


@pytest.fixture(scope="module")
def mini(tmp_path_factory) -> tuple[Path, Path]:
    from p4handoff.bmv2 import compile_p4
    reason = _bmv2_skip_reason()
    if reason:
        pytest.skip(reason)
    return compile_p4(HERE / "p4" / "mini.p4", tmp_path_factory.mktemp("mini"))


@pytest.fixture(scope="module")
def rig(mini, tmp_path_factory):
    """simple_switch_grpc in the root namespace; ports 1 and 2 lead to h1/h2 in a throwaway namespace."""
    from p4handoff.netns import Sandbox
    from p4handoff.bmv2 import Bmv2Switch, veth_port
    with Sandbox("p4rt") as sandbox:
        hosts = sandbox.namespace("h")
        ifnames = {port: f"p4h{os.getpid()}s{port}" for port in (1, 2)}
        for port, ifname in ifnames.items():
            veth_port(ifname, hosts, f"h{port}")
        log = tmp_path_factory.mktemp("bmv2") / "switch.log"
        with Bmv2Switch(ifnames, cpu_port=CPU_PORT, priority_queues=2, log_path=log) as sw:
            yield sw, hosts


@pytest.fixture
def client(rig, mini):
    sw, _ = rig
    with P4RuntimeClient(sw.grpc_addr, sw.device_id) as c:
        c.set_pipeline(*mini)  # a fresh program: every table, counter and register empty
        yield c


def frame(tag: int, size: int = 60) -> bytes:
    """An Ethernet frame of a local experimental EtherType carrying `tag`."""
    head = bytes.fromhex("020000000002" "020000000001" "88b5") + tag.to_bytes(4, "big")
    return head + bytes(size - len(head))


class Host:
    """A raw packet socket on one host-side interface, inside the test namespace."""

    def __init__(self, ns, ifname: str) -> None:
        self.sock = ns.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        self.sock.bind((ifname, 0))

    def send(self, data: bytes) -> None:
        self.sock.send(data)

    def receive(self, timeout: float = 2.0) -> bytes | None:
        """The next frame of our EtherType (anything else is skipped), or None after `timeout`."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65535)
            except TimeoutError:
                return None
            if data[12:14] == b"\x88\xb5":
                return data
        return None

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def hosts(rig):
    _, ns = rig
    h1, h2 = Host(ns, "h1"), Host(ns, "h2")
    yield h1, h2
    h1.close()
    h2.close()


@pytest.mark.bmv2
@pytest.mark.netns
def test_arbitration_primary_backup_and_takeover(rig, mini):
    sw, _ = rig
    with P4RuntimeClient(sw.grpc_addr, election_id=(0, 10)) as first:
        assert first.is_primary
        with P4RuntimeClient(sw.grpc_addr, election_id=(0, 5)) as backup:
            assert not backup.is_primary and first.is_primary
            with pytest.raises(P4RuntimeError) as err:
                backup.set_pipeline(*mini)
            assert err.value.code.name == "PERMISSION_DENIED"
        with P4RuntimeClient(sw.grpc_addr) as later:  # default id: drawn later, so higher
            assert later.is_primary
            deadline = time.monotonic() + 5
            while first.is_primary and time.monotonic() < deadline:
                time.sleep(0.01)
            assert not first.is_primary


@pytest.mark.bmv2
@pytest.mark.netns
def test_pipeline_cookie_is_read_back_by_another_client(client, rig, mini):
    sw, _ = rig
    with P4RuntimeClient(sw.grpc_addr, election_id=(0, 1)) as reader:
        cookie = reader.fetch_pipeline()
        assert cookie and reader.p4info.table("port_fwd").preamble.name == "MiniIngress.port_fwd"
    assert cookie == client.set_pipeline(*mini)


@pytest.mark.bmv2
@pytest.mark.netns
def test_a_bad_pipeline_is_refused_and_the_switch_keeps_running(client, mini, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"truncated": ')
    with pytest.raises(ValueError, match="bad.json is not valid JSON"):
        client.set_pipeline(mini[0], bad)
    with pytest.raises(P4InfoError, match="is not a valid P4Info"):
        client.set_pipeline(bad, mini[1])
    client.insert(TableEntry("port_fwd", {"ingress_port": 1}, "drop"))
    assert len(client.read_table("port_fwd")) == 1


@pytest.mark.bmv2
@pytest.mark.netns
def test_entries_insert_read_modify_delete(client):
    entries = [TableEntry("port_fwd", {"ingress_port": p}, "forward", {"port": 3 - p})
               for p in (1, 2)]
    entries.append(TableEntry("dmac_acl", {"dst_addr": ("01:00:00:00:00:00", "01:00:00:00:00:00"),
                                           "ether_type": (0x0800, 0x08ff)}, "drop", priority=7))
    entries.append(TableEntry("smac_lpm", {"src_addr": ("02:00:00:00:00:00", 8)}, "forward",
                              {"port": 2}))
    client.insert(entries)
    expected = sorted((normalize(client.p4info, e) for e in entries), key=repr)
    assert sorted(client.read_table(), key=repr) == expected
    client.modify(TableEntry("port_fwd", {"ingress_port": 1}, "punt", {"reason": 9}))
    [entry] = [e for e in client.read_table("port_fwd") if e.match == {"ingress_port": 1}]
    assert (entry.action, entry.params) == ("MiniIngress.punt", {"reason": 9})
    assert client.clear_table() == 4
    assert client.read_table() == []


@pytest.mark.bmv2
@pytest.mark.netns
def test_a_failed_batch_reports_each_failing_update(client):
    key = {"ingress_port": 2}
    client.insert(TableEntry("port_fwd", key, "drop"))
    with pytest.raises(P4RuntimeError) as err:
        client.write([
            (UpdateType.INSERT, TableEntry("port_fwd", {"ingress_port": 1}, "drop")),
            (UpdateType.INSERT, TableEntry("port_fwd", key, "drop")),
            (UpdateType.DELETE, TableEntry("port_fwd", {"ingress_port": 7}, "drop")),
            (UpdateType.INSERT, TableEntry("port_fwd", {"ingress_port": 3}, "drop")),
        ])
    assert [(u.index, u.code) for u in err.value.updates] == [(1, "ALREADY_EXISTS"), (2, "NOT_FOUND")]
    assert "update 1: ALREADY_EXISTS" in str(err.value)
    ports = sorted(e.match["ingress_port"] for e in client.read_table("port_fwd"))
    assert ports == [1, 2, 3]  # the good updates of the batch were applied


@pytest.mark.bmv2
@pytest.mark.netns
def test_forwarding_counters_and_default_action(client, hosts):
    h1, h2 = hosts
    client.insert(TableEntry("port_fwd", {"ingress_port": 1}, "forward", {"port": 2}))
    for tag in range(3):
        h1.send(frame(tag, 100))
        assert h2.receive() == frame(tag, 100)
    assert client.read_counter("rx_pkts", 1) == CounterValue(3, 300)
    assert client.read_counter("rx_pkts")[1] == CounterValue(3, 300)
    client.write_counter("rx_pkts", 1)
    assert client.read_counter("rx_pkts", 1) == CounterValue(0, 0)
    h2.send(frame(7))  # port 2 has no entry: the default action (drop) applies
    assert h1.receive(timeout=0.5) is None
    assert client.read_default("port_fwd") == TableEntry("MiniIngress.port_fwd", action="MiniIngress.drop",
                                                         is_default=True)
    client.set_default("port_fwd", "forward", port=1)
    assert client.read_default("port_fwd").params == {"port": 1}
    h2.send(frame(8))
    assert h1.receive() == frame(8)


@pytest.mark.bmv2
@pytest.mark.netns
def test_packet_in_and_packet_out(client, hosts):
    h1, h2 = hosts
    client.insert(TableEntry("port_fwd", {"ingress_port": 1}, "punt", {"reason": 5}))
    h1.send(frame(11))
    pin = client.packet_in(timeout=2)
    assert pin is not None and pin.payload == frame(11)
    assert pin.metadata == {"ingress_port": 1, "reason": 5}
    assert client.packet_in(timeout=0.2) is None
    client.packet_out(frame(12), egress_port=2, flags=0)
    assert h2.receive() == frame(12)


@pytest.mark.bmv2
@pytest.mark.netns
def test_registers_go_over_thrift_on_bmv2(client, rig, hosts):
    sw, _ = rig
    h1, _ = hosts
    with pytest.raises(P4RuntimeError) as err:  # BMv2's P4Runtime server has no register support
        client.read_register("rx_seen", 1)
    assert err.value.code.name == "UNIMPLEMENTED"
    with pytest.raises(P4RuntimeError) as err:
        client.write_register("rx_seen", 1, 5)
    assert [u.code for u in err.value.updates] == ["UNIMPLEMENTED"]
    h1.send(frame(1))
    h1.send(frame(2))
    deadline = time.monotonic() + 5
    while sw.cli.register_read("MiniIngress.rx_seen", 1) != 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sw.cli.register_read("MiniIngress.rx_seen")[:3] == [0, 2, 0]
    sw.cli.register_write("MiniIngress.rx_seen", 2, 40)
    assert sw.cli.register_read("MiniIngress.rx_seen", 2) == 40
    sw.cli.register_reset("MiniIngress.rx_seen")
    assert sum(sw.cli.register_read("MiniIngress.rx_seen")) == 0


@pytest.mark.bmv2
@pytest.mark.netns
def test_queue_settings_over_thrift(client, rig):
    from p4handoff.bmv2 import DEFAULT_QUEUE_DEPTH, Bmv2Error
    sw, _ = rig
    sw.cli.set_queue_rate(500, port=2)
    sw.cli.set_queue_rate(100, port=2, priority=1)
    sw.cli.set_queue_depth(16, port=2, priority=0)
    sw.cli.set_queue_rate(0)
    sw.cli.set_queue_depth(DEFAULT_QUEUE_DEPTH)
    with pytest.raises(Bmv2Error, match="no_such_register"):
        sw.cli.register_read("no_such_register")
    with pytest.raises(ValueError, match="a priority needs a port"):
        sw.cli.set_queue_rate(1, priority=1)


@pytest.mark.bmv2
def test_a_dead_switch_is_noticed_by_the_stream(mini, tmp_path):
    from p4handoff.bmv2 import Bmv2Switch
    sw = Bmv2Switch({}, log_path=tmp_path / "s.log").start()
    try:
        client = P4RuntimeClient(sw.grpc_addr, timeout=5)
        client.set_pipeline(*mini)
        assert client.stream_alive
        sw.stop()
        deadline = time.monotonic() + 10
        while client.stream_alive and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not client.stream_alive and client.stream.failure is not None
        with pytest.raises(P4RuntimeError) as err:
            client.read_table()
        assert err.value.code.name in ("UNAVAILABLE", "DEADLINE_EXCEEDED")
        client.close()
    finally:
        sw.stop()


@pytest.mark.bmv2
def test_a_switch_that_cannot_start_is_reported_with_its_log(tmp_path):
    from p4handoff.bmv2 import Bmv2Error, Bmv2Switch, bmv2_available
    available, reason = bmv2_available()
    if not available:
        pytest.skip(reason)
    with socket.socket() as busy:  # the gRPC port is taken: simple_switch_grpc cannot bind it
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        sw = Bmv2Switch({}, grpc_port=busy.getsockname()[1], log_path=tmp_path / "s.log", start_timeout=2)
        with pytest.raises(Bmv2Error, match="log"):
            sw.start()
    assert not sw.alive
    sw = Bmv2Switch({1: "p4hnosuchif"}, log_path=tmp_path / "s2.log")
    with pytest.raises(Bmv2Error, match="port 1: interface 'p4hnosuchif' does not exist in the root namespace"):
        sw.start()
    assert sw.pid is None


def test_a_write_encodes_each_entry_object_once_and_the_same_as_by_names(info):
    """EncodedEntries: the memo a client's Writes encode through; a request built through it is byte for byte
    the one built by names, an entry object met again is not encoded again, another P4Info starts over."""
    a = TableEntry("ipv4_lpm", {"hdr.ipv4.dst_addr": "10.0.1.0/24"}, "set_nexthop", {"port": 3, "dmac": 2})
    b = TableEntry("ipv4_lpm", {"hdr.ipv4.dst_addr": "10.0.2.0/24"}, "set_nexthop", {"port": 4, "dmac": 5})
    memo = EncodedEntries()
    updates = [(UpdateType.INSERT, a), (UpdateType.MODIFY, b), (UpdateType.DELETE, a)]
    by_names = write_request(lambda: info, 1, (0, 1), updates).SerializeToString()
    assert write_request(lambda: info, 1, (0, 1), updates, lambda e: memo.encode(info, e)).SerializeToString() \
        == by_names
    assert memo.encode(info, a) is memo.encode(info, a)
    other = build_p4info()
    assert memo.encode(other, a) is not memo.encode(info, a)
    assert memo.encode(info, a) == encode_table_entry(info, a).SerializeToString()      # its wire bytes
