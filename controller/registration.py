"""Mobile IPv4 Registration Request/Reply (RFC 5944 §3.3, §3.4): the UDP payload codec.

The lab's mobile host announces itself with an ordinary Registration Request
on UDP port 434; what it puts in each field, and what the controller makes of
it, is fixed in docs/wire-contract.md ("Registration request"). Decoding is
strict about layout (a malformed request changes nothing and is answered
with code 134) and lenient about content the lab does not use (extensions
are skipped, the home-agent field is not checked).
"""
from __future__ import annotations

import enum
import functools
import ipaddress
import socket
import struct
from dataclasses import dataclass

TYPE_REQUEST = 1
TYPE_REPLY = 3
LIFETIME_INFINITE = 0xFFFF

FLAG_S = 0x80   # simultaneous bindings: DSBP's second address, kept alongside the first
FLAG_B = 0x40
FLAG_D = 0x20   # decapsulation by the mobile node (co-located care-of address)
FLAG_M = 0x10
FLAG_G = 0x08
FLAG_T = 0x02

_REQUEST = struct.Struct("!BBH4s4s4sQ")   # 24 bytes
_REPLY = struct.Struct("!BBH4s4sQ")       # 20 bytes
REQUEST_SIZE = _REQUEST.size
REPLY_SIZE = _REPLY.size


class ReplyCode(enum.IntEnum):
    """The subset of RFC 5944 §3.4 codes the controller (acting as home agent) sends."""

    ACCEPTED = 0
    UNSPECIFIED = 128
    ADMIN_PROHIBITED = 129          # unknown MH, unknown BS/port, care-of not this cell's
    FAILED_AUTHENTICATION = 131     # no, malformed or wrong Mobile-Home Authentication Extension
    POORLY_FORMED = 134
    IDENTIFICATION_MISMATCH = 133   # identification not newer than the last accepted one


class RegistrationError(ValueError):
    """A UDP payload that is not a well-formed Registration Request."""


@dataclass(frozen=True)
class RegistrationRequest:
    home_address: str
    care_of: str
    home_agent: str = "0.0.0.0"
    lifetime: int = LIFETIME_INFINITE   # seconds; 0 = deregistration
    identification: int = 0
    flags: int = 0

    @property
    def simultaneous(self) -> bool:
        return bool(self.flags & FLAG_S)

    @property
    def deregistration(self) -> bool:
        return self.lifetime == 0

    def encode(self) -> bytes:
        return _REQUEST.pack(TYPE_REQUEST, self.flags, self.lifetime, _a(self.home_address),
                             _a(self.home_agent), _a(self.care_of), self.identification)

    @classmethod
    def decode(cls, data: bytes) -> "RegistrationRequest":
        if len(data) < REQUEST_SIZE:
            raise RegistrationError(f"registration request too short: {len(data)} bytes, need {REQUEST_SIZE}")
        kind, flags, lifetime, home, agent, coa, ident = _REQUEST.unpack_from(data)
        if kind != TYPE_REQUEST:
            raise RegistrationError(f"not a registration request: type {kind}, expected {TYPE_REQUEST}")
        _check_extensions(data[REQUEST_SIZE:])
        home_s, coa_s = _s(home), _s(coa)
        if home_s == "0.0.0.0":
            raise RegistrationError("home address is 0.0.0.0 (NAI-based registration is not supported)")
        if coa_s == "0.0.0.0":
            raise RegistrationError("care-of address is 0.0.0.0")
        return cls(home_s, coa_s, _s(agent), lifetime, ident, flags)


@dataclass(frozen=True)
class RegistrationReply:
    code: ReplyCode
    home_address: str
    home_agent: str
    lifetime: int
    identification: int

    def encode(self) -> bytes:
        return _REPLY.pack(TYPE_REPLY, int(self.code), self.lifetime, _a(self.home_address),
                           _a(self.home_agent), self.identification)

    @classmethod
    def decode(cls, data: bytes) -> "RegistrationReply":
        if len(data) < REPLY_SIZE:
            raise RegistrationError(f"registration reply too short: {len(data)} bytes, need {REPLY_SIZE}")
        kind, code, lifetime, home, agent, ident = _REPLY.unpack_from(data)
        if kind != TYPE_REPLY:
            raise RegistrationError(f"not a registration reply: type {kind}, expected {TYPE_REPLY}")
        try:
            rc = ReplyCode(code)
        except ValueError:
            raise RegistrationError(f"unknown reply code {code}") from None
        _check_extensions(data[REPLY_SIZE:])
        return cls(rc, _s(home), _s(agent), lifetime, ident)


def _check_extensions(data: bytes) -> None:
    """Walk the extensions (type, length, value; type 0 is a one-byte pad) without using them."""
    i = 0
    while i < len(data):
        if data[i] == 0:
            i += 1
            continue
        if i + 2 > len(data):
            raise RegistrationError(f"truncated extension header at byte {REQUEST_SIZE + i}")
        end = i + 2 + data[i + 1]
        if end > len(data):
            raise RegistrationError(f"extension type {data[i]} at byte {REQUEST_SIZE + i} "
                                    f"claims {data[i + 1]} bytes, {len(data) - i - 2} present")
        i = end


@functools.lru_cache(maxsize=65_536)
def _a(addr: str) -> bytes:
    """An address as 4 bytes, parsed strictly once per address (every reply packs two)."""
    return ipaddress.IPv4Address(addr).packed


def _s(raw: bytes) -> str:
    """4 bytes as a dotted quad: inet_ntoa's text is ipaddress's, at a tenth of the cost."""
    return socket.inet_ntoa(raw)
