"""Registration authentication (RFC 5944 §3.5.2, §5.7): who may move an MH's traffic, checked before Mobility.

Every Registration Request must end with a Mobile-Home Authentication
Extension (type 32): SPI (4 bytes) and an authenticator computed over the
request, every extension before it, and this extension's type, length and
SPI (RFC 5944 §3.5.1). Ours is HMAC-SHA256 (32 bytes) under the MH's key from
the key file (`p4handoff.keyfile`, subkey `registration`), SPI 256 (the
first value RFC 5944 leaves unreserved) unless the key file gives the MH
another. Identification is in timestamp mode (§5.7.1): a 64-bit NTP
timestamp within `CLOCK_SKEW` of the controller's clock and above the last
one accepted from that MH, the bound journaled (`replay_journal`).

A request that fails changes nothing: it never reaches Mobility. It is
answered where RFC 5944 says so (131 "mobile node failed authentication";
133 "identification mismatch", with the controller's time in the high 32
bits, §5.7.1), counted per kind, and logged at most `LOG_BURST` lines per
kind per `LOG_PERIOD` seconds, with how many were suppressed in between.
Refusals are answered at most `REPLY_RATE` per second per access port
(bursts of `REPLY_BURST`), as routers limit ICMP errors (RFC 1812
§4.3.2.8): under a flood every answered refusal costs the controller a
packet-out besides its packet-in (docs/reliability.md, section 5), and a reply
per forged request reflects the flood back into the cell. The rest are
counted (`replies_suppressed`).
Replies to a home address with a key carry the extension too (§3.4).

Only a description that says `controller.auth: none` turns all of this off
(`RegistrationGuard(keys=None)`), logged as a warning at start; without that
opt-out a description must name a key file (controller/network.py).
"""
from __future__ import annotations

import hashlib
import hmac
import struct
import sys
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from p4handoff.controller.intents import Effect, Reply
from p4handoff.controller.network import PORT_ACCESS, Network
from p4handoff.controller.registration import REPLY_SIZE, REQUEST_SIZE, RegistrationReply, RegistrationRequest, ReplyCode
from p4handoff.controller.replay_journal import ReplayJournal
from p4handoff.keyfile import HostKey, Keys, derive
from p4handoff.ntptime import ntp_seconds, ntp_time

MHAE_TYPE = 32
MAC_BYTES = 32
MHAE_LENGTH = 4 + MAC_BYTES      # the extension's length field: SPI + authenticator
CLOCK_SKEW = 7.0                 # s; RFC 5944 §5.7.1's default
LOG_BURST, LOG_PERIOD = 5, 10.0
REPLY_RATE, REPLY_BURST = 10.0, 20   # refusal replies per access port: per second, and at once

KINDS = ("unknown_mh", "missing", "bad_length", "wrong_spi", "bad_mac", "not_last", "stale", "replayed")

LogFn = Callable[[str, dict[str, Any]], None]


def authenticator(key: bytes, signed: bytes) -> bytes:
    return hmac.new(derive(key, "registration"), signed, hashlib.sha256).digest()


def sign(message: bytes, host: HostKey) -> bytes:
    """`message` (a request or reply with its extensions) with the Mobile-Home Authentication Extension appended."""
    head = message + struct.pack("!BBI", MHAE_TYPE, MHAE_LENGTH, host.spi)
    return head + authenticator(host.key, head)


def signed_request(req: RegistrationRequest, host: HostKey) -> bytes:
    return sign(req.encode(), host)


@dataclass(frozen=True)
class Extension:
    """The Mobile-Home Authentication Extension of a message: where it starts, its SPI and authenticator."""

    start: int
    spi: int
    mac: bytes
    last: bool           # nothing follows it


def find_extension(message: bytes, fixed: int) -> tuple[Extension | None, str]:
    """The first Mobile-Home Authentication Extension after the `fixed`-byte part, or (None, rejection kind)."""
    i = fixed
    while i < len(message):
        if message[i] == 0:
            i += 1
            continue
        if i + 2 > len(message):
            return None, "bad_length"
        kind, length = message[i], message[i + 1]
        end = i + 2 + length
        if end > len(message):
            return None, "bad_length"
        if kind == MHAE_TYPE:
            if length != MHAE_LENGTH:
                return None, "bad_length"
            spi = struct.unpack_from("!I", message, i + 2)[0]
            return Extension(i, spi, message[i + 6:end], end == len(message)), ""
        i = end
    return None, "missing"


def verify(message: bytes, fixed: int, host: HostKey) -> str:
    """'' if `message` carries a valid extension under `host`'s key, else the rejection kind."""
    ext, why = find_extension(message, fixed)
    if ext is None:
        return why
    if ext.spi != host.spi:
        return "wrong_spi"
    if not hmac.compare_digest(ext.mac, authenticator(host.key, message[:ext.start + 6])):
        return "bad_mac"
    return "" if ext.last else "not_last"


def verify_reply(message: bytes, host: HostKey) -> str:
    """The MH's check of a Registration Reply (RFC 5944 §3.6.2.1)."""
    return verify(message, REPLY_SIZE, host)


class _RateLog:
    """At most LOG_BURST lines per kind per LOG_PERIOD; the next line says how many were held back."""

    def __init__(self, log: LogFn, clock: Callable[[], float]) -> None:
        self.log, self.clock = log, clock
        self._window: dict[str, tuple[float, int, int]] = {}     # kind -> (window start, lines, suppressed)

    def __call__(self, kind: str, fields: dict[str, Any]) -> None:
        now = self.clock()
        start, lines, held = self._window.get(kind, (now, 0, 0))
        if now - start >= LOG_PERIOD:
            start, lines = now, 0
        if lines >= LOG_BURST:
            self._window[kind] = (start, lines, held + 1)
            return
        self._window[kind] = (start, lines + 1, 0)
        self.log("registration_unauthenticated", {**fields, "kind": kind, **({"suppressed": held} if held else {})})


class _ReplyBudget:
    """A token bucket per (switch, port): whether a refusal may still be answered there now."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._buckets: dict[tuple[str, int], tuple[float, float]] = {}     # -> (tokens, when)

    def take(self, switch: str, port: int) -> bool:
        now = self.clock()
        tokens, then = self._buckets.get((switch, port), (float(REPLY_BURST), now))
        tokens = min(float(REPLY_BURST), tokens + (now - then) * REPLY_RATE)
        ok = tokens >= 1.0
        self._buckets[(switch, port)] = (tokens - 1.0 if ok else tokens, now)
        return ok


UNAUTHENTICATED_WARNING = ("controller.auth is none: registrations and notifications are NOT authenticated; any "
                           "host in a cell can move another MH's traffic or make a sender restart")

class RegistrationGuard:
    """The one gate registrations pass on their way to Mobility (controller/punts.py)."""

    def __init__(self, net: Network, keys: Keys | None, log: LogFn, journal: ReplayJournal | None = None,
                 clock: Callable[[], float] = time.time, tick: Callable[[], float] = time.monotonic) -> None:
        """`clock`: the wall clock identifications are checked against; `tick`: the rate limits' clock."""
        self.net, self.keys, self.clock = net, keys, clock
        self._by_address = {m.address: m for m in net.mobile_hosts}     # Network.mobile scans: O(MHs) each
        self.journal = journal if journal is not None else ReplayJournal(None)
        self.rejected = dict.fromkeys(KINDS, 0)
        self.replies_suppressed = 0          # refusals not answered: their port's reply budget was spent
        self._log = _RateLog(log, tick)
        self._replies = _ReplyBudget(tick)

    @property
    def enforcing(self) -> bool:
        return self.keys is not None

    def announce(self, log: LogFn) -> None:
        """Say at start whether registrations are authenticated; running without is loud (stderr too)."""
        if self.enforcing:
            log("registration_authentication", {"auth": "keys", "keys": self.net.controller.keys,
                                                "replay_bounds": len(self.journal.mh_bounds())})
        else:
            log("registration_authentication", {"auth": "none", "warning": UNAUTHENTICATED_WARNING})
            print(f"WARNING: {UNAUTHENTICATED_WARNING}", file=sys.stderr, flush=True)

    def check(self, switch: str, port: int, src_mac: str, src_addr: str, src_port: int,
              payload: bytes, req: RegistrationRequest) -> list[Effect] | None:
        """None: authenticated and fresh, on to Mobility. Otherwise the refusal's effects (a reply or nothing)."""
        if self.keys is None:
            return None
        mh = self._by_address.get(req.home_address)
        host = self.keys.get(mh.name) if mh is not None else None
        if mh is None or host is None:
            return self._refuse("unknown_mh", None, switch, port, src_mac, src_addr, src_port, req)
        why = verify(payload, REQUEST_SIZE, host)
        if why:
            return self._refuse(why, host, switch, port, src_mac, src_addr, src_port, req)
        now = self.clock()
        if abs(ntp_seconds(req.identification) - now) > CLOCK_SKEW:
            return self._refuse("stale", host, switch, port, src_mac, src_addr, src_port, req)
        if req.identification <= self.journal.bound(mh.name):
            return self._refuse("replayed", host, switch, port, src_mac, src_addr, src_port, req)
        return None

    def admitted(self, req: RegistrationRequest, effects: list[Effect]) -> list[Effect]:
        """Mobility's answer to an authenticated request: its replies signed, the bound moved if it accepted."""
        if self.keys is None:
            return effects
        mh = self._by_address.get(req.home_address)
        host = self.keys.get(mh.name) if mh is not None else None
        if host is None:
            return effects
        out: list[Effect] = []
        for e in effects:
            if isinstance(e, Reply):
                if e.code is ReplyCode.ACCEPTED and mh is not None:
                    self.journal.advance(mh.name, req.identification)     # journaled before the reply leaves
                e = replace(e, payload=sign(e.payload, host))
            out.append(e)
        return out

    def _refuse(self, kind: str, host: HostKey | None, switch: str, port: int, src_mac: str, src_addr: str,
                src_port: int, req: RegistrationRequest) -> list[Effect]:
        self.rejected[kind] += 1
        self._log(kind, {"switch": switch, "port": port, "home": req.home_address, "src": src_addr,
                         "identification": req.identification})
        sw = self.net.switch(switch)
        p = sw.port(port) if sw is not None and sw.is_bs else None
        if p is None or p.role != PORT_ACCESS:
            return []                   # not from a cell: nobody to answer (as Mobility does)
        if not self._replies.take(switch, port):
            self.replies_suppressed += 1
            return []
        if kind in ("stale", "replayed"):
            code = ReplyCode.IDENTIFICATION_MISMATCH
            ident = (ntp_time(self.clock()) & ~0xFFFFFFFF) | (req.identification & 0xFFFFFFFF)
        else:
            code, ident = ReplyCode.FAILED_AUTHENTICATION, req.identification
        payload = RegistrationReply(code, req.home_address, self.net.gateway.address, 0, ident).encode()
        if host is not None:
            payload = sign(payload, host)
        return [Reply(switch, port, src_mac, src_addr, src_port, code, payload)]
