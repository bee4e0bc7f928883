"""P4Runtime bytestrings: Python values in, canonical big-endian bytes out, with width checks.

P4Runtime (spec 8.4) carries every bit<W> value as a byte string; the
canonical form has no leading zero bytes (zero is one 0x00 byte). BMv2's
server pads it to the field width itself, and answers reads in this form.
Values may be given as ints, bytes, or text in the natural form of the field:
a MAC for bit<48>, a dotted quad for bit<32>, an IPv6 address for bit<128>,
or a number ("42", "0x2a").
"""
from __future__ import annotations

import ipaddress
import re

_MAC_RE = re.compile(r"^[0-9a-fA-F]{1,2}(?::[0-9a-fA-F]{1,2}){5}$")


class EncodingError(ValueError):
    """A value does not fit its P4 field, or its text form is not understood."""


def _text_to_int(text: str, bitwidth: int, what: str) -> int:
    text = text.strip()
    if _MAC_RE.match(text):
        natural, value = 48, int("".join(part.zfill(2) for part in text.split(":")), 16)
    elif "." in text:
        natural, value = 32, _parse_address(ipaddress.IPv4Address, text, what)
    elif ":" in text:
        natural, value = 128, _parse_address(ipaddress.IPv6Address, text, what)
    else:
        try:
            return int(text, 0)
        except ValueError:
            raise EncodingError(f"{what}: {text!r} is not a number, MAC, IPv4 or IPv6 address") from None
    if bitwidth != natural:
        raise EncodingError(f"{what}: {text!r} is a {natural}-bit address but the field is bit<{bitwidth}>")
    return value


def _parse_address(cls: type, text: str, what: str) -> int:
    try:
        return int(cls(text))
    except ValueError as exc:
        raise EncodingError(f"{what}: {exc}") from None


def to_int(value: int | bytes | str, bitwidth: int, what: str = "value") -> int:
    """The integer a value stands for, checked to fit in `bitwidth` unsigned bits."""
    if isinstance(value, bool):
        number = int(value)
    elif isinstance(value, int):
        number = value
    elif isinstance(value, (bytes, bytearray)):
        if len(value) > (bitwidth + 7) // 8:
            raise EncodingError(f"{what}: {len(value)} bytes given for a bit<{bitwidth}> field")
        number = int.from_bytes(value, "big")
    elif isinstance(value, str):
        number = _text_to_int(value, bitwidth, what)
    else:
        raise EncodingError(f"{what}: cannot encode a {type(value).__name__} ({value!r})")
    if number < 0:
        raise EncodingError(f"{what}: {value!r} is negative; P4 bit<{bitwidth}> values are unsigned")
    if number >> bitwidth:
        raise EncodingError(f"{what}: {value!r} does not fit in bit<{bitwidth}> (max {(1 << bitwidth) - 1})")
    return number


def int_to_bytes(number: int) -> bytes:
    """Canonical P4Runtime bytestring of a non-negative int (at least one byte)."""
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


def encode_value(value: int | bytes | str, bitwidth: int, what: str = "value") -> bytes:
    """Canonical bytestring for `value` in a bit<`bitwidth`> field; EncodingError if it does not fit."""
    return int_to_bytes(to_int(value, bitwidth, what))


def decode_int(data: bytes) -> int:
    """The unsigned integer of a P4Runtime bytestring (padded or canonical)."""
    return int.from_bytes(data, "big")
