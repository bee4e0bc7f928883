"""The authentication trailer of handoff notifications: who may make a sender restart or probe.

A notification (p4handoff.notify) is a body of any version followed by a
32-byte trailer at the very end of the datagram, so it composes with every
body version (the body's own length and version are inside what it covers):

| offset from the trailer's start | size | field |
|---|---|---|
| 0 | 4 | magic `P4HA` |
| 4 | 1 | algorithm: 1 = HMAC-SHA256 truncated to 128 bits |
| 5 | 3 | 0 |
| 8 | 8 | counter: the controller's NTP-format clock when sent, strictly increasing per controller |
| 16 | 16 | MAC over the body and the trailer's first 16 bytes |

The key is the receiving host's key from the key file (p4handoff.keyfile,
subkey `notification`): one per correspondent, so a host that knows its own
key cannot forge notifications to another. A receiver with a key accepts a
notification only with a valid MAC and a counter above the last one it
accepted and no older than `FRESHNESS` (so a restarted receiver, whose last
counter is gone, still refuses a notification captured more than that long
ago). Receivers without a key (old ones, `p4handoff host` without `--keys`)
read the body and ignore the trailer as the bytes after 32 they always
ignored: they keep working, and stay as unprotected as before.
"""
from __future__ import annotations

import hashlib
import hmac
import struct
import time
from typing import Callable

from p4handoff.keyfile import derive
from p4handoff.ntptime import ntp_time

MAGIC = b"P4HA"
ALG_HMAC_SHA256_128 = 1
_HEAD = struct.Struct("!4sB3xQ")
MAC_BYTES = 16
TRAILER_SIZE = _HEAD.size + MAC_BYTES     # 32
FRESHNESS = 10.0                          # s


class NotificationAuthError(ValueError):
    """A notification without a valid trailer, or one seen before."""


def _mac(key: bytes, signed: bytes) -> bytes:
    return hmac.new(derive(key, "notification"), signed, hashlib.sha256).digest()[:MAC_BYTES]


class Sealer:
    """The controller's side: a trailer for each notification, counters strictly increasing."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._last = 0

    def seal(self, body: bytes, key: bytes) -> bytes:
        self._last = max(self._last + 1, ntp_time(self.clock()))
        head = body + _HEAD.pack(MAGIC, ALG_HMAC_SHA256_128, self._last)
        return head + _mac(key, head)


class Opener:
    """A receiver's side: the body of an authentic, fresh notification; NotificationAuthError otherwise."""

    def __init__(self, key: bytes, clock: Callable[[], float] = time.time) -> None:
        self.key = key
        self.clock = clock
        self.last = 0

    def open(self, data: bytes) -> bytes:
        if len(data) < TRAILER_SIZE:
            raise NotificationAuthError(f"no authentication trailer ({len(data)} bytes)")
        body, head, mac = data[:-TRAILER_SIZE], data[:-MAC_BYTES], data[-MAC_BYTES:]
        magic, alg, counter = _HEAD.unpack_from(data, len(body))
        if magic != MAGIC or alg != ALG_HMAC_SHA256_128:
            raise NotificationAuthError("no authentication trailer")
        if not hmac.compare_digest(mac, _mac(self.key, head)):
            raise NotificationAuthError("authentication failed (MAC)")
        if counter <= self.last:
            raise NotificationAuthError(f"replayed (counter {counter:#x} not above {self.last:#x})")
        if counter < ntp_time(self.clock() - FRESHNESS):
            raise NotificationAuthError(f"stale (sent more than {FRESHNESS:g} s ago)")
        self.last = counter
        return body
