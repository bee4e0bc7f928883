"""The raw I/O layer and the kernel-TCP guard on real namespaces (no TCP core needed)."""
from __future__ import annotations

import select
import time

import pytest

from p4handoff import netns

REASON = netns.unavailable_reason()
pytestmark = [pytest.mark.netns, pytest.mark.skipif(REASON is not None, reason=REASON or "")]

from scapy.layers.inet import IP, TCP, UDP  # noqa: E402  (slow import, after the skip decision)

from p4handoff.hosts.net.guard import KernelTcpGuard  # noqa: E402
from p4handoff.hosts.net.rawio import PacketReceiver, PacketSender  # noqa: E402

A, B = "10.0.9.1", "10.0.9.2"


@pytest.fixture
def pair():
    with netns.Sandbox("raw") as sandbox:
        a, b = sandbox.namespace("a"), sandbox.namespace("b")
        sandbox.veth(a, b, A + "/24", B + "/24")
        yield sandbox, a, b


def collect(rx: PacketReceiver, want: int, timeout: float = 2.0) -> list:
    """Packets until `want` have arrived or `timeout` passes (whichever first)."""
    got: list = []
    deadline = time.monotonic() + timeout
    while len(got) < want and (left := deadline - time.monotonic()) > 0:
        select.select([rx], [], [], left)
        got += rx.receive()
    return got


def syn(sport: int, dport: int, seq: int = 1000) -> bytes:
    return bytes(IP(src=A, dst=B) / TCP(sport=sport, dport=dport, flags="S", seq=seq))


def test_receiver_gets_exactly_the_tcp_segments_for_its_port(pair):
    _lab, a, b = pair
    rx = b.call(lambda: PacketReceiver(7000))
    tx = a.call(PacketSender)
    wanted = bytes(IP(src=A, dst=B) / TCP(sport=40000, dport=7000, flags="PA", seq=5) / (b"z" * 1200))
    for packet in (syn(40000, 7001), bytes(IP(src=A, dst=B) / UDP(sport=40000, dport=7000) / b"u"),
                   bytes(IP(src=A, dst=B, frag=100) / TCP(sport=40000, dport=7000)), wanted):
        assert tx.send(packet, B)
    sent_at = time.time()
    got = collect(rx, 2, timeout=1.0)
    assert [r.packet for r in got] == [wanted]
    assert got[0].checksum_trusted is False  # offloads are off: the kernel vouches for nothing
    assert got[0].arrived is not None and sent_at - 0.5 < got[0].arrived <= time.time()  # the kernel's stamp
    rx.close(), tx.close()


def test_receiver_can_filter_on_the_destination_address(pair):
    sandbox, a, b = pair
    b.run(["ip", "addr", "add", "10.0.9.3/24", "dev", "veth0"])
    rx = b.call(lambda: PacketReceiver(7000, "10.0.9.3"))
    tx = a.call(PacketSender)
    tx.send(syn(40000, 7000), B)
    other = bytes(IP(src=A, dst="10.0.9.3") / TCP(sport=40000, dport=7000, flags="S"))
    tx.send(other, "10.0.9.3")
    assert [r.packet for r in collect(rx, 2, timeout=1.0)] == [other]


def test_without_guard_the_kernel_resets_with_guard_it_is_silent_and_we_still_receive(pair):
    _lab, a, b = pair
    rx_b = b.call(lambda: PacketReceiver(7000))
    rx_a = a.call(lambda: PacketReceiver(40000))
    tx = a.call(PacketSender)

    tx.send(syn(40000, 7000), B)
    assert len(collect(rx_b, 1)) == 1
    answers = collect(rx_a, 1)
    assert len(answers) == 1 and IP(answers[0].packet)[TCP].flags == "RA"  # the problem the guard solves

    guard = b.call(lambda: KernelTcpGuard(7000))
    try:
        for seq in range(5):
            tx.send(syn(40000, 7000, seq=seq), B)
        assert len(collect(rx_b, 5)) == 5
        assert collect(rx_a, 1, timeout=0.5) == []
        assert guard.dropped_packets() == 5
    finally:
        guard.close()
    assert "p4h_guard" not in b.run(["nft", "list", "tables"]).stdout


def test_guard_reserves_its_port(pair):
    _lab, _a, b = pair
    guard = b.call(lambda: KernelTcpGuard(0, B))
    try:
        assert guard.port > 0
        with pytest.raises(OSError, match=f"cannot reserve TCP port {guard.port}"):
            b.call(lambda: KernelTcpGuard(guard.port, B))
        kernel = b.socket()
        with pytest.raises(OSError):
            kernel.bind((B, guard.port))
        kernel.close()
    finally:
        guard.close()


def test_checksum_offloaded_kernel_segments_are_marked_trusted():
    with netns.Sandbox("raw") as sandbox:
        a, b = sandbox.namespace("a"), sandbox.namespace("b")
        sandbox.veth(a, b, A + "/24", B + "/24", offloads=True)
        rx = b.call(lambda: PacketReceiver(7000))
        guard = b.call(lambda: KernelTcpGuard(7000))
        client = a.socket()
        client.setblocking(False)
        try:
            client.connect_ex((B, 7000))
            got = collect(rx, 1)
            assert len(got) == 1 and IP(got[0].packet)[TCP].flags == "S"
            assert got[0].checksum_trusted  # partial checksum: only the kernel's word makes it good
        finally:
            client.close()
            guard.close()


def test_bad_port_is_refused():
    with pytest.raises(ValueError, match="port"):
        PacketReceiver(0)


def test_sending_on_a_path_that_is_down_is_a_counted_loss_not_an_error(pair):
    _lab, a, _b = pair
    tx = a.call(PacketSender)
    assert tx.send(syn(40000, 7000), B)
    a.run(["ip", "link", "set", "dev", "veth0", "down"])  # the connected route goes with the link
    assert tx.send(syn(40000, 7000), B) is False
    assert tx.dropped == 1
    tx.close()
