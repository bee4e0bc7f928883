"""One bulk transfer on real packets: the sender and the receiver that `p4handoff host` runs.

Both run in the network namespace of the calling process (start them with
`ip netns exec`, or as a Mininet host's command). The segment size follows
the route's MTU unless given: MSS option = MTU - 40, data per segment =
min(our mss, the peer's MSS - 12 for the timestamp option).

With `time_scale` S > 1 (a lab run that stretches its network S times,
docs/lab.md "Time dilation") the endpoint keeps the experiment's time: its
TCP, its trace, `seconds` and `timeout` are on a clock S times slower than
the machine's (`timescale.ScaledClock`); `start_at` stays a machine instant.
"""
from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from p4handoff.hosts.net.data import FileSource, PatternSource, Sink
from p4handoff.hosts.net.driver import DriverStats, NetDriver
from p4handoff.hosts.net.timescale import ScaledClock
from p4handoff.hosts.net.tracefile import TraceWriter
from p4handoff.hosts.segment import Segment
from p4handoff.hosts.tcp.config import TcpConfig
from p4handoff.hosts.tcp.connection import TcpConnection

IP_MTU = 14  # linux/in.h
DEFAULT_PORT = 5001
MAX_IP_PACKET = 65535
MAX_START_WAIT = 600.0      # s: a start instant further ahead is a mistake (e.g. wall-clock time), not a plan


@dataclass
class TransferResult:
    """What one side saw: bytes, time from the first SYN to the last byte, content digest."""

    role: str
    scheme: str
    local: str
    peer: str
    bytes: int
    seconds: float
    sha256: str
    retransmits: int
    mss: int
    origin: float          # time.monotonic() the trace's times count from (a lab aligns the trace by it)
    stats: DriverStats = field(default_factory=DriverStats)
    time_scale: float = 1.0   # the trace's and `seconds`' clock runs this many times slower than the machine's

    @property
    def goodput_mbps(self) -> float:
        return self.bytes * 8 / self.seconds / 1e6 if self.seconds > 0 else 0.0

    def lines(self) -> list[str]:
        """`name: value` lines for scripts."""
        s = self.stats
        return [f"role: {self.role}", f"scheme: {self.scheme}", f"local: {self.local}", f"peer: {self.peer}",
                f"bytes: {self.bytes}", f"seconds: {self.seconds:.6f}", f"goodput_mbps: {self.goodput_mbps:.3f}",
                f"sha256: {self.sha256}", f"mss: {self.mss}", f"retransmits: {self.retransmits}",
                f"trace_origin: {self.origin!r}", f"time_scale: {self.time_scale:g}",
                f"segments_in: {s.segments_in}", f"segments_out: {s.segments_out}",
                f"malformed_dropped: {s.malformed}", f"foreign_segments: {s.foreign}",
                f"local_send_drops: {s.send_drops}", f"notifications: {s.notifications}",
                f"link_events: {s.link_events}"]


def route_to(addr: str) -> tuple[str, int]:
    """(our source address, route MTU) for packets to `addr`, from the kernel's routing table."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect((addr, 9))
        return probe.getsockname()[0], probe.getsockopt(socket.IPPROTO_IP, IP_MTU)
    except OSError as exc:
        raise OSError(exc.errno, f"no route to {addr}: {exc.strerror}") from None
    finally:
        probe.close()


def config_for(mtu: int, mss: int | None, **settings: object) -> TcpConfig:
    """A TcpConfig whose segments fit `mtu` (ValueError if `mss` does not)."""
    if mtu < 68 + 40:
        raise ValueError(f"route MTU {mtu} is too small for TCP with options")
    mtu = min(mtu, MAX_IP_PACKET)  # loopback's 65536 is more than an IPv4 total length can say
    return TcpConfig(mss=mss if mss is not None else mtu - 40, mtu=mtu, **settings)  # type: ignore[arg-type]


def send(to: str, port: int, *, scheme: str, total: int | None = None, seconds: float | None = None,
         data_file: Path | None = None, trace: Path | None = None, mss: int | None = None,
         local_port: int = 0, notify_port: int | None = None, link_events: bool = False,
         notify_key: bytes | None = None, timeout: float = 300.0, seed: int = 0, start_at: float | None = None,
         time_scale: float = 1.0, **settings: object) -> TransferResult:
    """Open a connection to `to:port`, send, close, and wait for the close to complete.

    Exactly one of `total` (bytes of generated data), `seconds` (generated
    data for that long) or `data_file` says what to send. `start_at` (a
    time.monotonic() instant): set everything up first, then wait for it to
    connect, so that the connection begins then and not after the
    process's start-up (a lab starts its senders ahead of their flows).
    """
    if sum(x is not None for x in (total, seconds, data_file)) != 1:
        raise ValueError("give exactly one of a byte count, a duration or a data file")
    if seconds is not None and seconds <= 0:
        raise ValueError(f"duration must be > 0 s, got {seconds}")
    if start_at is not None and start_at - time.monotonic() > MAX_START_WAIT:
        raise ValueError(f"start instant {start_at} is {start_at - time.monotonic():.0f} s away on the monotonic "
                         f"clock (now {time.monotonic():.3f}); at most {MAX_START_WAIT:.0f} s ahead is accepted")
    src, mtu = route_to(to)
    config = config_for(mtu, mss, seed=seed, **settings)
    clock = ScaledClock(time_scale)
    with NetDriver(local_port, src, notify_port=notify_port, link_events=link_events,
                   notify_key=notify_key, clock=clock) as driver:
        if start_at is not None:
            time.sleep(max(0.0, start_at - time.monotonic()))
        origin, t0 = time.monotonic(), clock()
        stop: Callable[[], bool] | None = None
        if seconds is not None:
            end = t0 + seconds
            stop = lambda: clock() >= end  # noqa: E731
        source: PatternSource | FileSource = (FileSource(data_file, stop) if data_file is not None
                                              else PatternSource(total, seed, stop))
        writer = TraceWriter(trace, t0) if trace is not None else None
        try:
            conn = TcpConnection(config, src, driver.port, cc=scheme, trace=writer,
                                 name=f"{src}:{driver.port}>{to}:{port}")
            conn.connect(to, port)
            conn.set_source(source)
            start = clock()
            limit = timeout + (seconds or 0.0)
            driver.run(conn, timeout=limit, until=lambda c: c.send_complete)
            _check(conn)
            done = clock()
            driver.run(conn, timeout=max(1.0, limit - (done - start)))  # FIN exchange, TIME-WAIT
            return TransferResult("sender", scheme, f"{src}:{driver.port}", f"{to}:{port}", conn.bytes_acked,
                                  done - start, source.hash.hexdigest(), conn.retransmits, conn.mss, origin,
                                  driver.stats, time_scale)
        finally:
            if writer is not None:
                writer.close()
            if isinstance(source, FileSource):
                source.close()


def receive(port: int = DEFAULT_PORT, *, scheme: str = "newreno", out: Path | None = None,
            trace: Path | None = None, addr: str | None = None, notify_port: int | None = None,
            link_events: bool = False, notify_key: bytes | None = None, timeout: float = 300.0, seed: int = 0,
            on_ready: Callable[[int], None] | None = None, time_scale: float = 1.0,
            **settings: object) -> TransferResult:
    """Accept one connection on `port`, read it to the end, close, and report what arrived.

    `on_ready(port)` is called once the port is guarded and captured, i.e.
    when a sender may start.
    """
    sink = Sink(out)
    clock = ScaledClock(time_scale)
    origin, t0 = time.monotonic(), clock()
    writer = TraceWriter(trace, t0) if trace is not None else None
    opened: list[float] = []

    def make_conn(syn: Segment) -> TcpConnection:
        _, mtu = route_to(syn.src)
        opened.append(clock())
        return TcpConnection(config_for(mtu, None, seed=seed, **settings), syn.dst, port, cc=scheme,
                             on_data=sink, trace=writer, name=f"{syn.dst}:{port}<{syn.src}:{syn.sport}")

    try:
        with NetDriver(port, addr, notify_port=notify_port, link_events=link_events,
                       notify_key=notify_key, clock=clock) as driver:
            if on_ready is not None:
                on_ready(driver.port)
            conn = driver.run(None, timeout=timeout, make_conn=make_conn, until=lambda c: c.eof)
            _check(conn)
            done = clock()
            driver.run(conn, timeout=max(1.0, timeout - (done - t0)), close_on_eof=True)
            return TransferResult("receiver", scheme, f"{conn.local_addr}:{port}",
                                  f"{conn.peer_home}:{conn.remote_port}", sink.count, done - opened[0],
                                  sink.hash.hexdigest(), conn.retransmits, conn.mss, origin, driver.stats,
                                  time_scale)
    finally:
        sink.close()
        if writer is not None:
            writer.close()


def _check(conn: TcpConnection) -> None:
    if conn.error:
        raise ConnectionError(f"connection {conn.name} failed: {conn.error}")
