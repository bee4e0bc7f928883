"""One P4Runtime session per switch: connect, win mastership, keep or push the pipeline, read packet-ins.

Connecting and watching run on the session's own threads, packet-ins are
decoded on the stream's receiver thread (no reader thread in between); all
of them only *post* events (`Connected`, `Lost`, `PacketInEvent`) to the
daemon's queue; every write happens on the daemon's single thread, so the
handoff state and the switches' state change in one order. A stream that
ends (switch killed, restarted, or it dropped us) is noticed at once by the
session's watcher, reported as `Lost`, and the session reconnects with
bounded exponential backoff.

Pipeline: a switch already running our exact program (same cookie, see
`p4handoff.controller.p4runtime.client.pipeline_cookie`) keeps it and its state —
that is what lets a restarted controller leave traffic alone; any other
switch gets the pipeline pushed, which on BMv2 clears its state.
"""
from __future__ import annotations

import functools

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from p4handoff.controller.network import Switch
from p4handoff.controller.p4runtime import ClientTls, P4Info, P4InfoError, P4RuntimeClient, P4RuntimeError, PacketIn
from p4handoff.controller.p4runtime._protos import p4runtime_pb2
from p4handoff.controller.p4runtime.client import pipeline_cookie
from p4handoff.controller.p4runtime.entities import decode_packet_in


@dataclass(frozen=True)
class Connected:
    switch: str
    client: P4RuntimeClient


@dataclass(frozen=True)
class Lost:
    switch: str
    reason: str


@dataclass(frozen=True)
class BadPacketIn:
    """A packet-in whose `packet_in` header could not be decoded (the daemon logs it)."""

    switch: str
    reason: str


@dataclass(frozen=True)
class PacketInEvent:
    switch: str
    packet: PacketIn
    client: P4RuntimeClient     # which session it came from (a stale one is ignored)
    at: float                   # time.monotonic() when it reached the controller


def expected_cookie(p4info_path: str | Path, config_path: str | Path) -> int:
    """The cookie `set_pipeline` stores for these files (to recognise a switch already running them)."""
    p4info = P4Info.load(p4info_path)
    return pipeline_cookie(p4info.proto.SerializeToString(deterministic=True), Path(config_path).read_bytes())


class SwitchSession:
    """Connection management for one switch; the daemon owns `client` once `Connected` is posted."""

    def __init__(self, sw: Switch, election_id: tuple[int, int], post: Callable[[object], None], *,
                 connect_timeout: float = 2.0, backoff_max: float = 2.0, tls: ClientTls | None = None) -> None:
        """`tls`: connect over TLS, the switch authenticated by its name (ClientTls.server_name)."""
        self.sw = sw
        self.tls = tls
        self.election_id = election_id
        self.post = post
        self.connect_timeout = connect_timeout
        self.backoff_max = backoff_max
        self.client: P4RuntimeClient | None = None
        self.state = "down"            # down | connecting | up
        self.last_error = ""
        self.connects = 0
        self.pipeline_pushes = 0
        self._stop = threading.Event()
        self._connecting = threading.Lock()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Begin connecting in the background (returns at once)."""
        self._spawn(self._connect_loop, f"connect-{self.sw.name}")

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        self._threads = [x for x in self._threads if x.is_alive()] + [t]
        t.start()

    def _connect_loop(self) -> None:
        if not self._connecting.acquire(blocking=False):
            return
        try:
            delay = 0.05
            self.state = "connecting"
            while not self._stop.is_set():
                try:
                    client = P4RuntimeClient(self.sw.grpc, self.sw.device_id, self.election_id,
                                             timeout=self.connect_timeout, tls=self.tls)
                except (P4RuntimeError, ValueError) as exc:
                    self.last_error = str(exc).splitlines()[0]
                else:
                    if client.is_primary:
                        self.connects += 1
                        self.post(Connected(self.sw.name, client))      # before any of its packet-ins
                        self._spawn(functools.partial(self._read_loop, client), f"packet-in-{self.sw.name}")
                        return
                    self.last_error = f"not primary: {client.stream.arbitration_status}"
                    client.close()
                self._stop.wait(delay)
                delay = min(delay * 2, self.backoff_max)
        finally:
            self._connecting.release()

    def _read_loop(self, client: P4RuntimeClient) -> None:
        """Hand the stream's packet-ins to the daemon once the pipeline is known, then watch for the end."""
        while client.p4info is None and client.stream_alive and not self._stop.is_set():
            # packet-ins wait in the stream's queue until the daemon has fetched or pushed the pipeline
            self._stop.wait(0.01)
        if client.p4info is not None:
            client.stream.listen(functools.partial(self._packet_in, client))
        while not self._stop.is_set():
            if client.stream.wait_ended(0.2):        # at once when it ends; `stop()` within 0.2 s
                reason = str(client.stream.failure or "stream ended").splitlines()[0]
                self.post(Lost(self.sw.name, reason))
                return

    def _packet_in(self, client: P4RuntimeClient, proto: p4runtime_pb2.PacketIn) -> None:
        """One packet-in, decoded (with the pipeline the client has now: the daemon may push another after
        the first was fetched) and posted, on the stream's receiver thread (StreamChannel.listen)."""
        try:
            pkt = decode_packet_in(client.need_p4info(), proto)
        except (P4RuntimeError, P4InfoError, ValueError) as exc:   # one undecodable packet-in
            self.last_error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.post(BadPacketIn(self.sw.name, self.last_error))
            return
        self.post(PacketInEvent(self.sw.name, pkt, client, time.monotonic()))

    def reconnect(self) -> None:
        """Called by the daemon after `Lost`: drop the dead client, connect again in the background."""
        if self.client is not None:
            self.client.close()
            self.client = None
        self.state = "down"
        self.start()

    def stop(self, timeout: float = 3.0) -> None:
        self._stop.set()
        if self.client is not None:
            self.client.close()
            self.client = None
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self.state = "down"
