"""The driver hands a notification to its connection only after the segments that arrived before it.

DSBP counts, at the HANDOFF, the dummy ACKs of the last probe RTT: a HANDOFF
taken before ACKs already waiting in the socket would count too few (a
loaded host's `test_dsbp_probes_the_second_address...` once counted none: one possible cause).
Here more segments than one receive batch wait beside a notification when
the loop starts. The connection is a recorder of what the driver hands it;
real connections run through this loop in every tests/test_net_*.py transfer.
"""
from __future__ import annotations

import socket
import time

from p4handoff.hosts.net.driver import BATCH, NetDriver
from p4handoff.hosts.tcp.connection import State
from p4handoff.notify import Event, Notification
from tests.net_support import NOTIFY, RECEIVER, SENDER, Injector, mac_of, make_path, needs_netns

pytestmark = needs_netns

from scapy.layers.inet import IP, TCP  # noqa: E402  (slow import, after the skip decision)

from p4handoff import netns  # noqa: E402

SPORT, DPORT = 40001, 5001
WAITING = BATCH + 44


class Recorder:
    """What the driver needs of a TcpConnection, recording `handle` and `notify` in the order they come."""

    local_port, remote_port = DPORT, SPORT
    local_addr, remote_addr, peer_home = RECEIVER, SENDER, SENDER
    state, closed, eof = State.ESTABLISHED, False, False

    def __init__(self) -> None:
        self.calls: list[str] = []

    def poll(self, now: float) -> list:
        return []

    def next_wakeup(self) -> float | None:
        return None

    def handle(self, seg: object, now: float) -> None:
        self.calls.append("segment")

    def notify(self, note: Notification, now: float) -> None:
        self.calls.append("notification")


def test_segments_waiting_beside_a_notification_reach_the_connection_before_it() -> None:
    with netns.Sandbox("ord") as sandbox:
        path = make_path(sandbox)
        driver = path.b.call(lambda: NetDriver(DPORT, RECEIVER, notify_port=NOTIFY))
        try:
            injector = Injector(path.a, path.link.dev_a, mac_of(path.b, path.link.dev_b))
            for k in range(WAITING):
                injector.send(bytes(IP(src=SENDER, dst=RECEIVER) / TCP(sport=SPORT, dport=DPORT, flags="A",
                                                                       seq=1000 + k, ack=1)))
            injector.close()
            udp = path.a.socket(socket.AF_INET, socket.SOCK_DGRAM)
            udp.sendto(Notification(Event.HANDOFF, 1, SENDER, SENDER).encode(), (RECEIVER, NOTIFY))
            udp.close()
            time.sleep(0.3)                  # all of it queued in the driver's sockets before its loop starts
            conn = Recorder()
            driver.run(conn, timeout=5.0, until=lambda c: "notification" in c.calls)  # type: ignore[arg-type]
        finally:
            driver.close()
    assert conn.calls == ["segment"] * WAITING + ["notification"]
