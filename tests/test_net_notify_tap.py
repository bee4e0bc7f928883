"""Handoff notifications reach every endpoint on a host (AF_PACKET tap), and the kernel stays quiet."""
from __future__ import annotations

import select
import socket
import struct
import time

import pytest

from p4handoff.hosts.net.notify_tap import NotificationTap, udp_payload
from p4handoff import netns

REASON = netns.unavailable_reason()
A, B = "10.0.9.1", "10.0.9.2"
PORT = 5434


def _udp(payload: bytes, length: int | None = None, ihl: int = 5) -> bytes:
    ip = bytes([0x40 | ihl]) + bytes(19) + bytes(4 * max(0, ihl - 5))
    return ip + struct.pack("!HHHH", 40000, PORT, 8 + len(payload) if length is None else length, 0) + payload


def test_udp_payload_takes_the_datagram_and_refuses_cut_or_inconsistent_headers():
    assert udp_payload(_udp(b"note")) == b"note"
    assert udp_payload(_udp(b"note", ihl=6)) == b"note"           # IP options
    assert udp_payload(_udp(b"note") + b"pad") == b"note"          # Ethernet padding after the datagram
    assert udp_payload(_udp(b"note", length=40)) is None           # longer than what arrived
    assert udp_payload(_udp(b"note", length=7)) is None            # shorter than its own header
    assert udp_payload(_udp(b"", ihl=4)) is None
    assert udp_payload(b"\x45" + bytes(10)) is None


def _taps_receive(taps: list[NotificationTap], timeout: float = 2.0) -> list[list[bytes]]:
    got: list[list[bytes]] = [[] for _ in taps]
    deadline = time.monotonic() + timeout
    while any(not g for g in got) and (left := deadline - time.monotonic()) > 0:
        select.select(taps, [], [], left)
        for tap, g in zip(taps, got):
            g += tap.receive()
    return got


@pytest.mark.netns
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_every_tap_on_a_host_gets_each_notification_and_no_icmp_goes_back():
    with netns.Sandbox("tap") as sandbox:
        a, b = sandbox.namespace("a"), sandbox.namespace("b")
        sandbox.veth(a, b, A + "/24", B + "/24")
        taps = [b.call(lambda: NotificationTap(PORT)) for _ in range(2)]   # two endpoints, one host
        sender = a.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sender.connect((B, PORT))           # an ICMP port-unreachable would show as ECONNREFUSED below
        try:
            sender.send(b"first")
            assert _taps_receive(taps) == [[b"first"], [b"first"]]
            time.sleep(0.2)
            sender.send(b"second")          # raises ConnectionRefusedError if the kernel answered ICMP
            assert _taps_receive(taps) == [[b"second"], [b"second"]]
            sender.setblocking(False)
            with pytest.raises(BlockingIOError):
                sender.recv(100)            # nothing came back at all
            foreign = b.call(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
            with pytest.raises(OSError, match="a program other than ours holds it"):
                foreign.bind(("0.0.0.0", PORT + 1))
                b.call(lambda: NotificationTap(PORT + 1))
            foreign.close()
        finally:
            sender.close()
            for tap in taps:
                tap.close()
