"""The testbed's raw host port tells a frame its own reader lost from one the network lost."""
from __future__ import annotations

import socket
import time

import pytest

from p4handoff import netns

REASON = netns.unavailable_reason()
pytestmark = [pytest.mark.netns, pytest.mark.skipif(REASON is not None, reason=REASON or "")]

from p4handoff.topo.testbed import HostPort  # noqa: E402


def test_drops_counts_what_a_full_socket_lost_and_keeps_the_count() -> None:
    with netns.Sandbox("hp") as sandbox:
        a, b = sandbox.namespace("a"), sandbox.namespace("b")
        sandbox.veth(a, b, "10.0.8.1/24", "10.0.8.2/24")
        rx, tx = HostPort(b, "veth0"), HostPort(a, "veth0")
        try:
            assert rx.drops() == 0
            rx.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)    # room for a few frames only
            frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x88\xb5" + b"x" * 500
            for _ in range(200):
                tx.send(frame)
            time.sleep(0.2)
            dropped = rx.drops()
            frames = rx.receive(0.5)
            ours = frames.count(frame)
            # every frame sent was received or counted (the count may also hold the kernel's own, e.g. IPv6 ND)
            assert 0 < dropped and ours + dropped >= 200, (ours, dropped, len(frames))
            assert rx.drops() == dropped           # the kernel resets its count on each read; ours does not
        finally:
            rx.sock.close(), tx.sock.close()
