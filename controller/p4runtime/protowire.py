"""Protobuf's wire format for the few fields the controller writes by hand (varints and length-delimited).

The controller's hot messages (route entries in Writes, packet-outs) are built as bytes and parsed once
by upb, which is several times cheaper in Python than setting fields on message objects one by one
(docs/controller.md, "The fourth round"). Only what those messages need: unsigned varints (ids, lengths,
non-negative int32 and enum values) and length-delimited fields (bytes and sub-messages). A field's key
is computed once by the caller (`key`), not per value.
"""
from __future__ import annotations

VARINT, LEN = 0, 2          # the wire types used here
_ONE_BYTE = [bytes((n,)) for n in range(0x80)]


def varint(n: int) -> bytes:
    """An unsigned varint (n >= 0)."""
    if n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def key(number: int, wire_type: int) -> bytes:
    """A field's key: its number and wire type."""
    return varint(number << 3 | wire_type)


def varint_field(number: int, value: int) -> bytes:
    """A whole varint field (a proto3 default of 0 is the caller's to leave out)."""
    return key(number, VARINT) + varint(value)


def delimited(field_key: bytes, data: bytes) -> bytes:
    """A length-delimited field (bytes, or a sub-message already in wire format) under `field_key`."""
    n = len(data)
    return field_key + (_ONE_BYTE[n] if n < 0x80 else varint(n)) + data


def bytes_field(number: int, data: bytes) -> bytes:
    """`delimited` by field number (where it is not on a hot path)."""
    return delimited(key(number, LEN), data)
