"""The controller ↔ buffer service channel, sans-IO: mutual authentication, framing, messages.

One TCP connection, the service listening (`buffer_service.control`). Both
ends hold the key `buffer_service.key_name` of the key file. The service
speaks first (HELLO: its nonce); the controller proves the key (AUTH: its
nonce and an HMAC over both); the service proves it back (WELCOME). A
stranger, or a peer with another key, is refused there: the service closes
the connection and logs it, and accepts nothing from it. After that every
frame carries a sequence number and an HMAC under a key derived from both
nonces, so a frame cannot be forged, replayed, reordered or carried over to
another connection (`ChannelError` on any of these; the connection is then
dropped, nothing in it is acted on).

Messages (big-endian):
    ARRIVALS  service → controller: first sequence number, then per packet the switch that diverted it
              (its address) and the inner IPv4 packet, in the order the service read them from that switch
    ACK       controller → service: every arrival up to this sequence number is the controller's now
              (handled, and journaled in its spool if it has one): the service may forget them
    RELEASE   controller → service: a batch number, then per packet the BS to release it into (its
              address) and the IPv4 packet (buffered packets and drain/path markers, in release order)
    RELEASED  service → controller: that batch has passed the ingress of every BS it went to (echoed)
"""
from __future__ import annotations

import hashlib
import hmac
import os
import socket
import struct
from dataclasses import dataclass, field

HELLO, AUTH, WELCOME, ARRIVALS, ACK, RELEASE, RELEASED = 1, 2, 3, 4, 5, 6, 7
NONCE, TAG = 16, 16
MAX_FRAME = 4 << 20
_LEN = struct.Struct("!I")
_HEAD = struct.Struct("!BQ")          # type, sequence number
_Q = struct.Struct("!Q")
_ITEM = struct.Struct("!4sH")         # address, packet length


class ChannelError(ValueError):
    """The peer is not who it should be, or sent something that is not a valid frame."""


def _mac(key: bytes, *parts: bytes) -> bytes:
    return hmac.new(key, b"".join(parts), hashlib.sha256).digest()


def pack_items(head: int, items: list[tuple[str, bytes]]) -> bytes:
    """`head` (a sequence or batch number) and (address, packet) pairs."""
    out = [_Q.pack(head)]
    for addr, packet in items:
        out.append(_ITEM.pack(socket.inet_aton(addr), len(packet)))
        out.append(packet)
    return b"".join(out)


def unpack_items(payload: bytes) -> tuple[int, list[tuple[str, bytes]]]:
    if len(payload) < _Q.size:
        raise ChannelError("message too short")
    head = _Q.unpack_from(payload)[0]
    items, i = [], _Q.size
    while i < len(payload):
        if i + _ITEM.size > len(payload):
            raise ChannelError("truncated item")
        raw, n = _ITEM.unpack_from(payload, i)
        i += _ITEM.size
        if i + n > len(payload):
            raise ChannelError("truncated packet")
        items.append((socket.inet_ntoa(raw), payload[i:i + n]))
        i += n
    return head, items


def pack_number(n: int) -> bytes:
    return _Q.pack(n)


def unpack_number(payload: bytes) -> int:
    if len(payload) != _Q.size:
        raise ChannelError("bad number")
    return _Q.unpack(payload)[0]


@dataclass
class Channel:
    """One end of one connection. `role` is "service" or "controller"; feed it bytes, take messages out."""

    key: bytes
    role: str
    nonce: bytes = field(default_factory=lambda: os.urandom(NONCE))
    peer_nonce: bytes = b""
    session: bytes = b""
    _buf: bytearray = field(default_factory=bytearray)
    _sent: int = 0
    _got: int = 0

    @property
    def ready(self) -> bool:
        return bool(self.session)

    def hello(self) -> bytes:
        """The service's first frame."""
        assert self.role == "service"
        return self._raw(HELLO, self.nonce)

    def frame(self, kind: int, payload: bytes) -> bytes:
        """An authenticated frame (after the handshake)."""
        if not self.session:
            raise ChannelError("not authenticated yet")
        self._sent += 1
        body = _HEAD.pack(kind, self._sent) + payload
        return _LEN.pack(len(body) + TAG) + body + _mac(self.session, self.role.encode(), body)[:TAG]

    def feed(self, data: bytes) -> tuple[list[tuple[int, bytes]], bytes]:
        """Messages (kind, payload) complete in what arrived so far, and handshake bytes to send back."""
        self._buf += data
        out: list[tuple[int, bytes]] = []
        reply = b""
        while len(self._buf) >= _LEN.size:
            n = _LEN.unpack_from(self._buf)[0]
            if n > MAX_FRAME or n < _HEAD.size:
                raise ChannelError(f"frame of {n} bytes")
            if len(self._buf) < _LEN.size + n:
                break
            body = bytes(self._buf[_LEN.size:_LEN.size + n])
            del self._buf[:_LEN.size + n]
            if self.session:
                out.append(self._open(body))
            else:
                reply += self._handshake(body)
        return out, reply

    # ---------------------------------------------------------------- internals

    def _raw(self, kind: int, payload: bytes) -> bytes:
        body = _HEAD.pack(kind, 0) + payload
        return _LEN.pack(len(body)) + body

    def _open(self, body: bytes) -> tuple[int, bytes]:
        peer = b"controller" if self.role == "service" else b"service"
        data, tag = body[:-TAG], body[-TAG:]
        if len(data) < _HEAD.size or not hmac.compare_digest(_mac(self.session, peer, data)[:TAG], tag):
            raise ChannelError("frame not authenticated")
        kind, seq = _HEAD.unpack_from(data)
        if seq != self._got + 1:
            raise ChannelError(f"frame {seq} out of order (expected {self._got + 1}): replayed or lost")
        self._got = seq
        return kind, data[_HEAD.size:]

    def _handshake(self, body: bytes) -> bytes:
        kind = body[0]
        payload = body[_HEAD.size:]
        if self.role == "controller" and kind == HELLO and len(payload) == NONCE:
            self.peer_nonce = payload
            return self._raw(AUTH, self.nonce + _mac(self.key, b"ctl", self.peer_nonce, self.nonce))
        if self.role == "service" and kind == AUTH and len(payload) == NONCE + 32:
            peer, proof = payload[:NONCE], payload[NONCE:]
            if not hmac.compare_digest(proof, _mac(self.key, b"ctl", self.nonce, peer)):
                raise ChannelError("the controller's proof does not check (wrong key, or not a controller)")
            self.peer_nonce = peer
            self._derive()
            return self._raw(WELCOME, _mac(self.key, b"svc", peer, self.nonce))
        if self.role == "controller" and kind == WELCOME and self.peer_nonce:
            if not hmac.compare_digest(payload, _mac(self.key, b"svc", self.nonce, self.peer_nonce)):
                raise ChannelError("the service's proof does not check (wrong key, or not the service)")
            self._derive()
            return b""
        raise ChannelError(f"unexpected handshake frame {kind} for the {self.role}")

    def _derive(self) -> None:
        svc, ctl = (self.nonce, self.peer_nonce) if self.role == "service" else (self.peer_nonce, self.nonce)
        self.session = _mac(self.key, b"session", svc, ctl)
