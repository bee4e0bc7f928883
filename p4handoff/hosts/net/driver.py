"""Run one sans-IO TCP connection on real packets, in the network namespace of this process.

The loop is single-threaded: wait (epoll, with the connection's next timer
as the timeout) for segments or a handoff notification; hand every queued
segment to the connection (decoded and verified by `p4handoff.hosts.codec`); then
poll the connection once and transmit what it returns. Draining a whole
burst of ACKs before polling batches the sends the ACKs release, which is
what keeps Python's per-call cost off the critical path.

Each segment reaches the connection at the time the kernel received it
(its SO_TIMESTAMPNS stamp, moved onto the driver's clock), not at the time
this loop read it: ACKs that queued while the process waited for a core
keep their spacing, which a packet-pair estimate (Bandwidth-Aware) and RTT
samples measure. Times given to the connection never go backwards. They
are read on a `timescale.ScaledClock`: the machine's monotonic clock, or one
S times slower in a time-dilated lab run (docs/lab.md, "Time dilation").

Which segments belong to the connection is decided here (the core trusts
its driver): our port, the peer's port, and a source address that is the
peer's — its home address, its current path, or a path a handoff
notification named (DSBP's second address). Segments for our port that
belong to no connection are answered like a closed port (RFC 9293 3.10.7.1:
RST), exactly as the kernel would have; malformed packets are counted and
dropped. The kernel's own TCP is kept out by `guard.KernelTcpGuard`.

Handoff notifications (UDP, `p4handoff.notify`, tapped by `notify_tap` so every
endpoint on a host hears each one) are decoded, de-duplicated
by (MH address, seq) and given to the connection, which ignores events for
other hosts. With `link_events`, carrier changes of our own interface become
DETACH / HANDOFF too (`linkwatch`: an endpoint on the mobile host).
"""
from __future__ import annotations

import logging
import selectors
import time
from dataclasses import dataclass, field
from typing import Callable

from p4handoff.hosts.codec import MalformedSegment, decode, encode
from p4handoff.hosts.net.guard import KernelTcpGuard
from p4handoff.hosts.net.linkwatch import LinkWatch
from p4handoff.hosts.net.notify_tap import NotificationTap
from p4handoff.hosts.net.rawio import PacketReceiver, PacketSender
from p4handoff.hosts.net.timescale import ScaledClock
from p4handoff.hosts.segment import ACK, RST, SYN, Segment
from p4handoff.hosts.tcp.connection import State, TcpConnection, rst_for
from p4handoff.notify import Notification, NotificationError
from p4handoff.notify_auth import NotificationAuthError, Opener

log = logging.getLogger(__name__)
BATCH = 256  # packets taken from the socket before the connection is polled
NOTE_DRAIN = 16  # batches taken before a notification at most: a flood must not hold it back for ever


@dataclass
class DriverStats:
    """Counters of one run (printed by the command line, checked by tests)."""

    segments_in: int = 0
    segments_out: int = 0
    malformed: int = 0
    foreign: int = 0  # well-formed, for our port, but not our connection's
    resets_sent_for_foreign: int = 0
    send_drops: int = 0
    notifications: int = 0
    bad_notifications: int = 0
    link_events: int = 0
    malformed_reasons: dict[str, int] = field(default_factory=dict)


class NetDriver:
    """Owns the sockets, the kernel guard and the loop for one connection.

    `port` 0 picks a free port (the sender's ephemeral port). `local_addr`
    restricts capture to one of our addresses (a sender knows it; a receiver
    may be reached on several, e.g. a second care-of address). Use as a
    context manager, or call `close()`.
    """

    def __init__(self, port: int = 0, local_addr: str | None = None, *, notify_port: int | None = None,
                 link_events: bool = False, clock: ScaledClock | None = None,
                 notify_key: bytes | None = None) -> None:
        self.clock = clock if clock is not None else ScaledClock()
        self.opener = Opener(notify_key) if notify_key is not None else None   # None: trailer ignored
        self.stats = DriverStats()
        self.conn: TcpConnection | None = None
        self._make_conn: Callable[[Segment], TcpConnection] | None = None
        self._peer_addrs: set[str] = set()
        self._seen_notes: set[tuple[str, int]] = set()
        self._selector = selectors.DefaultSelector()
        self.guard = KernelTcpGuard(port, local_addr)
        self.port = self.guard.port
        self.local_addr = local_addr
        self._given = float("-inf")  # the latest time given to the connection: its clock never goes back
        self.rx: PacketReceiver | None = None
        self.tx: PacketSender | None = None
        self.notify_tap: NotificationTap | None = None
        self.link_events = link_events
        self.linkwatch: LinkWatch | None = None
        try:
            self.rx = PacketReceiver(self.port, local_addr)
            self.tx = PacketSender()
            self._selector.register(self.rx.fileno(), selectors.EVENT_READ)
            if notify_port:
                self.notify_tap = NotificationTap(notify_port)
                self._selector.register(self.notify_tap.fileno(), selectors.EVENT_READ)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "NetDriver":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------
    def run(self, conn: TcpConnection | None, *, timeout: float,
            make_conn: Callable[[Segment], TcpConnection] | None = None,
            until: Callable[[TcpConnection], bool] | None = None,
            close_on_eof: bool = False) -> TcpConnection:
        """Drive `conn` (already `connect()`ed) until it is closed or `until(conn)` holds.

        With `conn` None, the first SYN to our port creates the connection:
        `make_conn(syn)` must return a fresh TcpConnection for the address
        the SYN was sent to, on which `listen()` is then called.
        `close_on_eof` closes our side once the peer has finished (a
        receiver's behaviour). May be called again to continue. Raises
        TimeoutError (after aborting the connection with a RST) if neither
        happens within `timeout` seconds.
        """
        if conn is None and make_conn is None:
            raise ValueError("run() needs a connection or a make_conn to accept one")
        self.conn = conn
        self._make_conn = make_conn
        if conn is not None:
            self._peer_addrs = {conn.remote_addr, conn.peer_home}
            self._watch_links(conn)
        deadline = self.clock() + timeout
        try:
            return self._loop(deadline, timeout, until, close_on_eof)
        except (KeyboardInterrupt, SystemExit):
            self._abort()  # interrupted (SIGINT, or SIGTERM via the CLI): tell the peer with a RST
            raise

    def _loop(self, deadline: float, timeout: float, until: Callable[[TcpConnection], bool] | None,
              close_on_eof: bool) -> TcpConnection:
        select = self._selector.select
        clock = self.clock
        while True:
            # segments first, each at its own arrival; the poll runs at the clock reading taken as their batch
            # was read: one arriving while they are handled is stamped after it, so the connection, which never
            # goes back in time, does not have to move it forward (two ACKs at one time: a lag of zero)
            _, now = self._take_segments()
            now = self._give(now)
            conn = self.conn
            if conn is not None:
                if close_on_eof and conn.eof and conn.state is State.CLOSE_WAIT:
                    conn.close()
                self._transmit(conn.poll(now))
                if conn.closed or (until is not None and until(conn)):
                    return conn
                wake = conn.next_wakeup()
            else:
                wake = None
            if now >= deadline:
                self._give_up(timeout)
            limit = deadline if wake is None else min(wake, deadline)
            events = select(max(0.0, clock.real(limit - clock())))    # `now` is as old as handling the last batch
            notes = False
            for key, _ in events:
                if self.notify_tap is not None and key.fd == self.notify_tap.fileno():
                    notes = True
                elif self.linkwatch is not None and key.fd == self.linkwatch.fileno():
                    self._take_link_events(self._give(clock()))
            if notes:
                # the segments waiting beside a notification arrived before it: DSBP counts, at the HANDOFF,
                # the dummy ACKs of the last probe RTT (tests/test_net_driver_order.py)
                for _ in range(NOTE_DRAIN):
                    taken, now = self._take_segments()
                    if taken < BATCH:
                        break
                self._take_notifications(self._give(now))

    def _abort(self) -> None:
        conn = self.conn
        if conn is not None and not conn.closed:
            conn.abort()
            self._transmit(conn.poll(self.clock()))

    def _give_up(self, timeout: float) -> None:
        conn = self.conn
        if conn is None:
            raise TimeoutError(f"no connection arrived on port {self.port} within {timeout} s")
        state, error = conn.state.value, conn.error
        self._abort()
        raise TimeoutError(f"connection not finished within {timeout} s (state {state}"
                           f"{', ' + error if error else ''})")

    # ------------------------------------------------------------------
    def _take_segments(self) -> tuple[int, float]:
        """Up to BATCH segments from the socket to the connection: how many the socket gave, and the clock
        as it gave them (every one of them arrived before it)."""
        assert self.rx is not None
        stats = self.stats
        conn = self.conn
        batch = self.rx.receive(BATCH)
        now, wall = self.clock(), time.time()     # read together, after the batch: a stamp's age is wall - it
        for received in batch:
            at = self._arrival(received.arrived, now, wall)
            try:  # a checksum the kernel vouches for may be unfilled (offload): don't recompute it
                seg = decode(received.packet, verify_tcp_checksum=not received.checksum_trusted)
            except MalformedSegment as exc:
                self._malformed(exc.reason)
                continue
            stats.segments_in += 1
            if conn is None or conn.state is State.LISTEN:
                conn = self._accept(seg, at)
                continue
            if (seg.dport == conn.local_port and seg.sport == conn.remote_port
                    and seg.src in self._peer_addrs):
                conn.handle(seg, at)
            else:
                self._foreign(seg)
        return len(batch), now

    def _arrival(self, stamp: float | None, now: float, wall: float) -> float:
        """A segment's arrival on the driver's clock: `now` (read with `wall`, CLOCK_REALTIME) less how long
        the kernel held it, but never before a time the connection has been given already."""
        if stamp is not None:   # a stamp from a stepped wall clock moves nothing far
            now -= self.clock.scaled(min(max(0.0, wall - stamp), 1.0))
        return self._give(now)

    def _give(self, now: float) -> float:
        """Record `now` as given to the connection (it never sees an earlier one after it)."""
        self._given = max(self._given, now)
        return self._given

    def _accept(self, seg: Segment, now: float) -> TcpConnection | None:
        """Listener: a SYN (without ACK) opens the connection; anything else is a closed port's."""
        if seg.flags & (SYN | ACK | RST) != SYN:
            self._foreign(seg)
            return self.conn
        conn = self.conn
        if conn is None:
            assert self._make_conn is not None
            conn = self._make_conn(seg)
            conn.listen()
            self.conn = conn
            self._watch_links(conn)
        conn.handle(seg, now)
        self._peer_addrs = {conn.remote_addr, conn.peer_home}
        return conn

    def _foreign(self, seg: Segment) -> None:
        self.stats.foreign += 1
        rst = rst_for(seg)
        if rst is not None:
            self.stats.resets_sent_for_foreign += 1
            self._transmit([rst])

    def _malformed(self, reason: str) -> None:
        self.stats.malformed += 1
        self.stats.malformed_reasons[reason] = self.stats.malformed_reasons.get(reason, 0) + 1
        log.debug("dropped malformed packet: %s", reason)

    def _transmit(self, segments: list[Segment]) -> None:
        if not segments:
            return
        assert self.tx is not None
        send = self.tx.send
        for seg in segments:
            if not send(encode(seg), seg.dst):
                self.stats.send_drops += 1
        self.stats.segments_out += len(segments)

    def _take_notifications(self, now: float) -> None:
        assert self.notify_tap is not None
        for data in self.notify_tap.receive():
            try:
                note = Notification.decode(self.opener.open(data) if self.opener is not None else data)
            except (NotificationError, NotificationAuthError) as exc:
                self.stats.bad_notifications += 1
                log.warning("ignored handoff notification: %s", exc)
                continue
            key = (note.mh_addr, note.seq)
            if key in self._seen_notes:
                continue
            self._seen_notes.add(key)
            self.stats.notifications += 1
            conn = self.conn
            if conn is None:
                continue
            if note.mh_addr == conn.peer_home and note.path_addr != "0.0.0.0":
                self._peer_addrs.add(note.path_addr)
            conn.notify(note, now)

    def _watch_links(self, conn: TcpConnection) -> None:
        if self.link_events and self.linkwatch is None:
            self.linkwatch = LinkWatch(conn.local_addr)
            self._selector.register(self.linkwatch.fileno(), selectors.EVENT_READ)

    def _take_link_events(self, now: float) -> None:
        assert self.linkwatch is not None
        for note in self.linkwatch.events():
            self.stats.link_events += 1
            if self.conn is not None:
                self.conn.notify(note, now)

    # ------------------------------------------------------------------
    def close(self) -> None:
        """Release sockets and the kernel guard (idempotent)."""
        self._selector.close()
        for closable in (self.rx, self.tx, self.notify_tap, self.linkwatch):
            if closable is not None:
                closable.close()
        self.guard.close()
