"""The controller's end of the buffer service channel: a thread that connects, authenticates and reads.

What the service sends becomes events on the daemon's queue (arrivals, released batches), handled on
the daemon's thread in arrival order like packet-ins; what the daemon sends (releases, acknowledgements)
is written from its own thread. A lost connection is retried every `RETRY` seconds; releases sent while
it is down are lost with it (their fences expire: the controller journals them released) — the service is
then gone as a switch would be.
"""
from __future__ import annotations

import socket
import threading
from dataclasses import dataclass
from typing import Any, Callable

from p4handoff.controller.bufsvc_wire import ACK, ARRIVALS, RELEASE, RELEASED, Channel, ChannelError, pack_items, \
    pack_number, unpack_items, unpack_number

RETRY = 0.2


@dataclass(frozen=True)
class ServiceArrivals:
    first: int                               # the service's sequence number of the first item
    items: list[tuple[str, bytes]]           # (diverting switch's address, inner IPv4 packet)


@dataclass(frozen=True)
class ServiceReleased:
    batch: int


@dataclass(frozen=True)
class ServiceState:
    up: bool
    reason: str = ""


class ServiceLink:
    def __init__(self, control: str, key: bytes, post: Callable[[object], None],
                 log: Callable[[str, dict[str, Any]], None]) -> None:
        host, port = control.rsplit(":", 1)
        self.addr = (host, int(port))
        self.key, self.post, self.log = key, post, log
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._chan: Channel | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bufsvc-link", daemon=True)
        self.batch = 0
        self.up = False

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            if self._sock is not None:
                self._sock.close()
        self._thread.join(2)

    def release(self, items: list[tuple[str, bytes]]) -> int | None:
        """Send one batch of releases (BS address, packet); its number, None if the service is down."""
        self.batch += 1
        return self.batch if self._send(RELEASE, pack_items(self.batch, items)) else None

    def ack(self, upto: int) -> None:
        self._send(ACK, pack_number(upto))

    def _send(self, kind: int, payload: bytes) -> bool:
        with self._lock:
            if self._sock is None or self._chan is None or not self._chan.ready:
                return False
            try:
                self._sock.sendall(self._chan.frame(kind, payload))
            except OSError:
                return False
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._session()
            except (OSError, ChannelError) as exc:
                if self.up:
                    self.up = False
                    self.post(ServiceState(False, str(exc)))
            with self._lock:
                if self._sock is not None:
                    self._sock.close()
                self._sock, self._chan = None, None
            self._stop.wait(RETRY)

    def _session(self) -> None:
        sock = socket.create_connection(self.addr, timeout=2.0)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        chan = Channel(self.key, "controller")
        with self._lock:
            self._sock, self._chan = sock, chan
        early: list[tuple[int, bytes]] = []
        while not chan.ready:
            data = sock.recv(4096)
            if not data:
                raise ChannelError("the service closed the connection during the handshake (refused us?)")
            # the service sends what we have not acknowledged right behind its last handshake message: one
            # read can hold both (with TCP_NODELAY it did, and those arrivals were lost until another restart)
            got, reply = chan.feed(data)
            early += got
            if reply:
                sock.sendall(reply)
        sock.settimeout(None)
        self.up = True
        self.post(ServiceState(True))
        self._dispatch(early)
        while not self._stop.is_set():
            data = sock.recv(1 << 20)
            if not data:
                raise ChannelError("the service closed the connection")
            self._dispatch(chan.feed(data)[0])

    def _dispatch(self, messages: list[tuple[int, bytes]]) -> None:
        for kind, payload in messages:
            if kind == ARRIVALS:
                first, items = unpack_items(payload)
                self.post(ServiceArrivals(first, items))
            elif kind == RELEASED:
                self.post(ServiceReleased(unpack_number(payload)))
