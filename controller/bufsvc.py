"""The buffer service (`p4handoff ctl bufsvc`): diverted packets in from every switch's buffer port,
handed to the controller over an authenticated channel; releases the controller decides go out again.

dbuf's split (docs/controller.md, "The buffer service"): packets leave the
switches through a data-plane port, not the P4Runtime stream and the
switch's CPU path, and re-enter the new BS as ordinary tunnelled packets
(priority-marked, trusted from the service's address on its buffer port).
The controller keeps every decision: it is told of each arrival (in the
order this service read it from that switch: one port, one FIFO), keeps the
MH's FIFO with its segments and markers exactly as with packet-ins, and
sends releases in order. This process keeps no handoff state.

What it keeps: arrivals the controller has not acknowledged (ACK comes after
the controller handled them and journaled them in its spool), journaled in
`buffer_service.spool` when set, so neither a controller restart nor a
service restart loses a packet diverted meanwhile (a packet may arrive
twice across a restart, never be lost); and the releases it was given until
they are echoed (bufsvc_pacer.py).

One thread, one `selectors` loop: the links (AF_PACKET, one per switch),
the listening socket, the controller's connection.
"""
from __future__ import annotations

import errno
import ipaddress
import selectors
import socket
import struct
import time
from collections import deque
from typing import Any, Callable

from p4handoff.controller.bufsvc_pacer import ReleasePacer
from p4handoff.controller.bufsvc_wire import ACK, ARRIVALS, RELEASE, RELEASED, Channel, ChannelError, pack_items, \
    pack_number, unpack_items, unpack_number
from p4handoff.controller.network import Network
from p4handoff.controller.packets import encapsulate, ethernet, udp_packet
from p4handoff.controller.spool import PUSH, REMOVE, Record, Spool
from p4handoff.wire import IP_PROTO_IPIP

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
ECHO_PORT = 9
ECHO_MAGIC = b"P4HBSECH"
_ECHO = struct.Struct("!8sQ")
READ_BURST = 256              # frames read from one link before the others get a turn
MAX_ARRIVALS = 512            # arrivals per ARRIVALS message
HANDSHAKE_S = 2.0             # a connection that has not authenticated by then is dropped


class BufferService:
    def __init__(self, net: Network, key: bytes, log: Callable[[str, dict[str, Any]], None],
                 links: dict[str, socket.socket] | None = None) -> None:
        svc = net.buffer_service
        if svc is None:
            raise ValueError("the description has no buffer_service")
        self.net, self.svc, self.key, self.log = net, svc, key, log
        self.addr_raw = ipaddress.IPv4Address(svc.address).packed
        self.by_target = {s.address: s for s in net.switches}
        self.links = links if links is not None else {
            name: _link(iface) for name, iface in svc.interfaces.items()}
        self.link_of = {sock.fileno(): name for name, sock in self.links.items()}
        self.pacer = ReleasePacer(svc.window)
        self.spool = Spool(svc.spool) if svc.spool else None
        self.unacked: deque[tuple[int, str, bytes]] = deque()     # (seq, switch address, packet)
        self.unsent = 0                                             # of `unacked`, not yet sent on this connection
        self.seq = 0
        self.sel = selectors.DefaultSelector()
        self.listener: socket.socket | None = None
        self.conn: socket.socket | None = None
        self.chan: Channel | None = None
        self.pending: dict[int, tuple[socket.socket, Channel, str, float]] = {}   # handshakes under way
        self.counters = {"arrivals": 0, "released": 0, "refused_frames": 0, "refused_peers": 0, "echoes": 0,
                         "send_failed": 0}
        self._stop = False
        self._rx = bytearray(65536)

    # ---------------------------------------------------------------- lifecycle

    def open(self) -> None:
        if self.spool is not None:
            kept: dict[int, Record] = {}
            for r in self.spool.open():
                if r.op == PUSH:
                    kept[r.pid] = r
                elif r.op == REMOVE:
                    kept.pop(r.pid, None)
            self.unacked.extend((r.pid, r.mh, r.packet) for _, r in sorted(kept.items()))
            self.seq = max(kept, default=0)
            self.spool.rewrite([Record(PUSH, a, s, "main", p) for s, a, p in self.unacked])
            if kept:
                self.log("bufsvc_restored", {"packets": len(kept)})
        host, port = self.svc.control.rsplit(":", 1)
        self.listener = socket.create_server((host, int(port)), reuse_port=False)
        self.listener.setblocking(False)
        self.sel.register(self.listener, selectors.EVENT_READ, "listen")
        for sock in self.links.values():
            sock.setblocking(False)
            self.sel.register(sock, selectors.EVENT_READ, "link")
        self.log("bufsvc_start", {"control": self.svc.control, "links": sorted(self.links),
                                  "window": self.svc.window, "restored": len(self.unacked)})

    def close(self) -> None:
        self.sel.close()
        for s in (self.listener, self.conn, *self.links.values(), *(p[0] for p in self.pending.values())):
            if s is not None:
                s.close()
        if self.spool is not None:
            self.spool.close()
        self.log("bufsvc_stop", dict(self.counters))

    def stop(self) -> None:
        self._stop = True

    def serve(self) -> None:
        while not self._stop:
            self.step(0.2)

    def step(self, timeout: float) -> None:
        deadline = self.pacer.next_deadline()
        if deadline is not None:
            timeout = max(0.0, min(timeout, deadline - time.monotonic()))
        for key, _ in self.sel.select(timeout):
            if key.data == "link":
                self._read_link(key.fileobj)       # type: ignore[arg-type]
            elif key.data == "listen":
                self._accept()
            elif key.data == "handshake":
                self._handshake(key.fileobj)      # type: ignore[arg-type]
            else:
                self._read_controller()
        expired = self.pacer.timeouts
        self._expire_handshakes(time.monotonic())
        self._released(self.pacer.expire(time.monotonic()))
        if self.pacer.timeouts != expired:
            self.log("bufsvc_echo_timeout", {"timeouts": self.pacer.timeouts})
            self._send_releases()
        self._forward()

    # ---------------------------------------------------------------- data plane

    def _read_link(self, sock: socket.socket) -> None:
        name = self.link_of[sock.fileno()]
        sw = self.net.switch(name)
        assert sw is not None
        own = ipaddress.IPv4Address(sw.address).packed
        fresh: list[Record] = []
        buf = self._rx
        for _ in range(READ_BURST):
            try:
                n, where = sock.recvfrom_into(buf)
            except BlockingIOError:
                break
            frame = bytes(buf[:n])        # one copy of the frame, not a 64 KiB buffer per read
            if where[2] == PACKET_OUTGOING:
                continue
            if frame[26:30] == self.addr_raw and frame[30:34] == self.addr_raw and frame[23] != IP_PROTO_IPIP:
                self._echo(frame[14:])       # decapsulated by the BS and sent back out of its buffer port
                continue
            inner = self._inner(frame, own)
            if inner is None:
                self.counters["refused_frames"] += 1
                continue
            self.seq += 1
            self.unacked.append((self.seq, sw.address, inner))
            self.unsent += 1
            self.counters["arrivals"] += 1
            if self.spool is not None:
                fresh.append(Record(PUSH, sw.address, self.seq, "main", inner))
        if fresh and self.spool is not None:
            self.spool.append(fresh)

    def _inner(self, frame: bytes, own: bytes) -> bytes | None:
        """The inner packet of a tunnel from the switch on this link to the service, else None (refused)."""
        if len(frame) < 54 or frame[12:14] != b"\x08\x00" or frame[14] != 0x45 or frame[23] != IP_PROTO_IPIP:
            return None
        if frame[26:30] != own or frame[30:34] != self.addr_raw:
            return None
        total = int.from_bytes(frame[16:18], "big")
        inner = frame[34:14 + total]
        return inner if len(inner) >= 20 and inner[0] >> 4 == 4 else None

    def _echo(self, inner: bytes) -> None:
        payload = inner[28:28 + _ECHO.size]
        if len(payload) == _ECHO.size:
            magic, nonce = _ECHO.unpack(payload)
            if magic == ECHO_MAGIC:
                self.counters["echoes"] += 1
                self._released(self.pacer.echoed(nonce))
                self._send_releases()            # its credit is back
                return
        self.counters["refused_frames"] += 1

    def _send_releases(self) -> None:
        for s in self.pacer.pump(time.monotonic()):
            sw = self.by_target[s.target]
            if s.echo is not None:
                inner = udp_packet(self.svc.address, self.svc.address, ECHO_PORT, ECHO_PORT,
                                   _ECHO.pack(ECHO_MAGIC, s.echo))
                dscp = 0
            else:
                inner, dscp = s.packet, self.net.priority_dscp
                self.counters["released"] += 1
            frame = ethernet(sw.mac, self.svc.mac, encapsulate(inner, self.svc.address, sw.address, dscp))
            link = self.links.get(sw.name)
            if link is None or not _send(link, frame):
                self.counters["send_failed"] += 1

    # ---------------------------------------------------------------- the controller

    def _accept(self) -> None:
        """A new connection: HELLO now; the rest of the handshake as its bytes arrive (`_handshake`), so a
        peer that connects and stalls holds up nothing (it is dropped after HANDSHAKE_S)."""
        assert self.listener is not None
        try:
            conn, peer = self.listener.accept()
        except BlockingIOError:
            return
        # arrivals are small messages sent as they come: Nagle would hold one behind the controller's delayed
        # ACK (~40 ms; a gateway marker diverted into the service waited that long, issue 24)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        chan = Channel(self.key, "service")
        try:
            conn.sendall(chan.hello())
        except OSError:
            conn.close()
            return
        conn.setblocking(False)
        self.pending[conn.fileno()] = (conn, chan, f"{peer[0]}:{peer[1]}", time.monotonic() + HANDSHAKE_S)
        self.sel.register(conn, selectors.EVENT_READ, "handshake")

    def _handshake(self, conn: socket.socket) -> None:
        _, chan, peer, _ = self.pending[conn.fileno()]
        try:
            data = conn.recv(4096)
            if not data:
                raise ChannelError("closed during the handshake")
            _, reply = chan.feed(data)
            conn.sendall(reply)
        except BlockingIOError:
            return
        except (ChannelError, OSError) as exc:
            self._refuse(conn, str(exc))
            return
        if not chan.ready:
            return
        del self.pending[conn.fileno()]
        self.sel.unregister(conn)
        if self.conn is not None:          # an authenticated controller replaces the one before
            self._drop_controller("replaced")
        self.conn, self.chan = conn, chan
        self.unsent = len(self.unacked)    # everything not acknowledged goes again (a duplicate, never a loss)
        self.sel.register(conn, selectors.EVENT_READ, "controller")
        self.log("bufsvc_controller", {"peer": peer, "unacked": len(self.unacked)})

    def _refuse(self, conn: socket.socket, reason: str) -> None:
        _, _, peer, _ = self.pending.pop(conn.fileno())
        self.sel.unregister(conn)
        self.counters["refused_peers"] += 1
        self.log("bufsvc_peer_refused", {"peer": peer, "reason": reason})  # before the peer can see the close
        conn.close()

    def _expire_handshakes(self, now: float) -> None:
        for conn, _, _, deadline in list(self.pending.values()):
            if deadline <= now:
                self._refuse(conn, f"no valid handshake within {HANDSHAKE_S} s")

    def _drop_controller(self, reason: str) -> None:
        assert self.conn is not None
        self.sel.unregister(self.conn)
        self.conn.close()
        self.conn, self.chan = None, None
        self.log("bufsvc_controller_lost", {"reason": reason})

    def _read_controller(self) -> None:
        assert self.conn is not None and self.chan is not None
        try:
            data = self.conn.recv(1 << 20)
            if not data:
                raise ChannelError("closed")
            messages, _ = self.chan.feed(data)
        except BlockingIOError:
            return
        except (ChannelError, OSError) as exc:
            self._drop_controller(str(exc))
            return
        for kind, payload in messages:
            if kind == RELEASE:
                batch, items = unpack_items(payload)
                self.pacer.add(batch, items)
            elif kind == ACK:
                self._acked(unpack_number(payload))
        self._send_releases()

    def _acked(self, upto: int) -> None:
        gone = []
        while self.unacked and self.unacked[0][0] <= upto:
            seq, addr, _ = self.unacked.popleft()
            gone.append(Record(REMOVE, addr, seq))
        self.unsent = min(self.unsent, len(self.unacked))
        if self.spool is not None and gone:
            if self.unacked:
                self.spool.append(gone)
            else:
                self.spool.clear()

    def _released(self, batches: list[int]) -> None:
        for batch in batches:
            self._out(RELEASED, pack_number(batch))

    def _forward(self) -> None:
        """Arrivals not yet sent on this connection, in order, a message of at most MAX_ARRIVALS at a time."""
        while self.unsent and self.chan is not None:
            start = len(self.unacked) - self.unsent
            chunk = [self.unacked[i] for i in range(start, min(start + MAX_ARRIVALS, len(self.unacked)))]
            if not self._out(ARRIVALS, pack_items(chunk[0][0], [(a, p) for _, a, p in chunk])):
                return
            self.unsent -= len(chunk)

    def _out(self, kind: int, payload: bytes) -> bool:
        if self.conn is None or self.chan is None:
            return False
        try:
            self.conn.setblocking(True)
            self.conn.sendall(self.chan.frame(kind, payload))
            self.conn.setblocking(False)
        except OSError as exc:
            self._drop_controller(str(exc))
            return False
        return True


def _send(link: socket.socket, frame: bytes, tries: int = 200) -> bool:
    """Write one frame; a full link queue (the window keeps it short) is waited out for up to ~40 ms."""
    for _ in range(tries):
        try:
            link.send(frame)
            return True
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as exc:
            if exc.errno != errno.ENOBUFS:
                return False
        time.sleep(0.0002)
    return False


def _link(iface: str) -> socket.socket:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind((iface, 0))
    return sock
