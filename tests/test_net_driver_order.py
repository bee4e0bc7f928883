"""What the driver hands its connection: a notification only after the segments that arrived before it,
and each segment at the time it arrived.

DSBP counts, at the HANDOFF, the dummy ACKs of the last probe RTT: a HANDOFF
taken before ACKs already waiting in the socket would count too few (a
loaded host's `test_dsbp_probes_the_second_address...` once counted none: one possible cause).
Here more segments than one receive batch wait beside a notification when
the loop starts. The connection is a recorder of what the driver hands it;
real connections run through this loop in every tests/test_net_*.py transfer.
"""
from __future__ import annotations

import socket
import threading
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
        self.times: list[float] = []      # each segment's `now`
        self.polls: list[float] = []

    def poll(self, now: float) -> list:
        self.polls.append(now)
        return []

    def next_wakeup(self) -> float | None:
        return None

    def handle(self, seg: object, now: float) -> None:
        self.calls.append("segment")
        self.times.append(now)

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


def test_segments_read_in_one_batch_reach_the_connection_at_their_own_arrival_times() -> None:
    """ACKs that arrive 40 ms apart while the driver is not reading (a sender waiting for a core) are read in
    one batch; the connection sees them 40 ms apart, as the kernel stamped them, not at one reading of the
    clock (Bandwidth-Aware's packet pair then measured a lag of zero: docs/lab.md), and never before a time
    it was already given."""
    n, gap = 5, 0.04
    with netns.Sandbox("tim") as sandbox:
        path = make_path(sandbox)
        driver = path.b.call(lambda: NetDriver(DPORT, RECEIVER))
        try:
            injector = Injector(path.a, path.link.dev_a, mac_of(path.b, path.link.dev_b))
            sent: list[tuple[float, float]] = []          # (before, after) each send, on the driver's clock
            for k in range(n):
                before = time.monotonic()
                injector.send(bytes(IP(src=SENDER, dst=RECEIVER) / TCP(sport=SPORT, dport=DPORT, flags="A",
                                                                       seq=1000 + k, ack=1)))
                sent.append((before, time.monotonic()))
                time.sleep(gap)
            injector.close()
            conn = Recorder()
            started = time.monotonic()
            driver.run(conn, timeout=5.0, until=lambda c: len(c.times) == n)  # type: ignore[arg-type]
        finally:
            driver.close()
    assert len(conn.times) == n and conn.times[-1] < started       # their arrivals, not when they were read
    for k in range(1, n):
        low, high = sent[k][0] - sent[k - 1][1], sent[k][1] - sent[k - 1][0]
        assert low - 0.005 <= conn.times[k] - conn.times[k - 1] <= high + 0.005, (k, conn.times, sent)
    assert conn.polls and conn.polls[0] >= conn.times[-1]          # the connection's clock never went back


class SlowRecorder(Recorder):
    """A connection whose first segment takes `busy` seconds to handle (a loaded host's Python)."""

    def __init__(self, busy: float, on_first: threading.Event) -> None:
        super().__init__()
        self.busy, self.on_first = busy, on_first

    def handle(self, seg: object, now: float) -> None:
        super().handle(seg, now)
        if len(self.times) == 1:
            self.on_first.set()
            time.sleep(self.busy)


def test_segments_arriving_while_a_batch_is_handled_keep_their_own_times() -> None:
    """Two ACKs arrive 10 ms apart while the driver is still handling the batch before them (30 ms). They
    are stamped after the clock reading the connection's next poll gets, so they reach it 10 ms apart; a
    poll at a reading taken after that batch had moved both to it (the lab's flag-aware Bandwidth-Aware
    measured a lag of zero so)."""
    with netns.Sandbox("tim") as sandbox:
        path = make_path(sandbox)
        driver = path.b.call(lambda: NetDriver(DPORT, RECEIVER))
        injector = Injector(path.a, path.link.dev_a, mac_of(path.b, path.link.dev_b))
        try:
            def ack(k: int) -> bytes:
                return bytes(IP(src=SENDER, dst=RECEIVER) / TCP(sport=SPORT, dport=DPORT, flags="A", seq=1000 + k,
                                                                ack=1))
            first = threading.Event()
            conn = SlowRecorder(0.03, first)

            def late_acks() -> None:
                first.wait(5)
                for k in (1, 2):
                    time.sleep(0.01)
                    injector.send(ack(k))
            sender = threading.Thread(target=late_acks)
            sender.start()
            injector.send(ack(0))
            driver.run(conn, timeout=5.0, until=lambda c: len(c.times) == 3)  # type: ignore[arg-type]
            sender.join(5)
        finally:
            injector.close()
            driver.close()
    assert conn.times[2] - conn.times[1] >= 0.005, conn.times      # not one time for both
    assert conn.times == sorted(conn.times) and conn.polls == sorted(conn.polls)
