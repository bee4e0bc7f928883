"""Named, typed P4Runtime entities and their translation to and from the protos.

Callers describe entries with names and plain values (`TableEntry`); this
module resolves them through `P4Info`, checks every value against its width,
and builds the proto. Decoding does the reverse with full P4Info names and
ints, so `p4info`-normalised entries compare equal to what a switch reads back
(`normalize`).

Match values by kind:
    exact     value
    lpm       (value, prefix_len) or "10.0.1.0/24"
    ternary   (value, mask)
    range     (low, high)
    optional  value
A field left out of `match` is a wildcard (allowed for lpm, ternary, range,
optional); so is an lpm prefix of 0 or a ternary mask of 0, which are dropped
as P4Runtime requires.
"""
from __future__ import annotations

import weakref

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping

from ._protos import p4info_pb2, p4runtime_pb2
from .encoding import EncodingError, decode_int, encode_value, int_to_bytes, to_int
from . import protowire
from .p4info import P4Info, P4InfoError

MatchType = p4info_pb2.MatchField.MatchType
_PRIORITY_KINDS = (MatchType.TERNARY, MatchType.RANGE, MatchType.OPTIONAL)
# the kinds as plain ints: the enum wrapper's attributes are looked up through __getattr__ on every use
_EXACT, _LPM, _TERNARY, _RANGE, _OPTIONAL = (int(k) for k in (MatchType.EXACT, MatchType.LPM, MatchType.TERNARY,
                                                                  MatchType.RANGE, MatchType.OPTIONAL))


class UpdateType(enum.IntEnum):
    """P4Runtime Update.Type values."""

    INSERT = p4runtime_pb2.Update.INSERT
    MODIFY = p4runtime_pb2.Update.MODIFY
    DELETE = p4runtime_pb2.Update.DELETE


@dataclass
class TableEntry:
    """One table entry by names. `is_default` addresses the table's default action (match must be empty)."""

    table: str
    match: Mapping[str, Any] = field(default_factory=dict)
    action: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    priority: int = 0
    is_default: bool = False


@dataclass(frozen=True)
class CounterValue:
    packets: int
    bytes: int


@dataclass(frozen=True)
class PacketIn:
    """A packet the switch sent to the controller, with its `packet_in` header fields by name."""

    payload: bytes
    metadata: dict[str, int]


def encode_table_entry(p4info: P4Info, entry: TableEntry) -> p4runtime_pb2.TableEntry:
    """The proto for `entry`; P4InfoError/EncodingError name the offending table, field or value."""
    return p4runtime_pb2.TableEntry.FromString(table_entry_bytes(p4info, entry))


def table_entry_bytes(p4info: P4Info, entry: TableEntry) -> bytes:
    """`entry` as its TableEntry proto's wire bytes (what `encode_table_entry` parses), checked as it documents.

    A Write carries these bytes as they are (p4runtime.client.write_request): the controller encodes a few
    route entries per handoff, and building them field by field on message objects, resolving every name
    through the P4Info each time, was the largest part of its CPU per handoff (docs/controller.md, "The
    fourth round"). Ids, widths and checks are resolved once per P4Info and table (`_TableCodec`)."""
    return _table_codec(p4info, entry.table).encode(entry)


_CODECS: "weakref.WeakKeyDictionary[P4Info, dict[str, _TableCodec]]" = weakref.WeakKeyDictionary()


def _table_codec(p4info: P4Info, name: str) -> "_TableCodec":
    codecs = _CODECS.get(p4info)
    if codecs is None:
        codecs = _CODECS[p4info] = {}
    codec = codecs.get(name)
    if codec is None:
        table = p4info.table(name)          # an unknown name raises here, listing the tables
        codec = next((c for c in codecs.values() if c.table is table), None) or _TableCodec(p4info, table)
        codecs[name] = codec
    return codec


# keys of the p4runtime.proto fields written here (p4/v1/p4runtime.proto: field number, wire type)
_K = protowire.key
_TABLE_ID, _PRIORITY, _IS_DEFAULT = 1, 4, 8
_K_MATCH, _K_ACTION, _K_TABLE_ACTION_ACTION = _K(2, protowire.LEN), _K(3, protowire.LEN), _K(1, protowire.LEN)
_K_FIELD_ID, _K_ACTION_ID, _K_PARAM_ID = _K(1, protowire.VARINT), _K(1, protowire.VARINT), _K(2, protowire.VARINT)
_K_ACTION_PARAMS, _K_PARAM_VALUE = _K(4, protowire.LEN), _K(3, protowire.LEN)
_K_KIND = {_EXACT: _K(2, protowire.LEN), _TERNARY: _K(3, protowire.LEN), _LPM: _K(4, protowire.LEN),
           _RANGE: _K(6, protowire.LEN), _OPTIONAL: _K(7, protowire.LEN)}
_K_1, _K_2 = _K(1, protowire.LEN), _K(2, protowire.LEN)       # value / prefix_len, mask, low / high
_K_PREFIX_LEN = _K(2, protowire.VARINT)
_IS_DEFAULT_TRUE = protowire.varint_field(_IS_DEFAULT, 1)
_delimited = protowire.delimited


def _value(value: Any, width: int, what: str) -> bytes:
    """`encode_value`, with the common case (an int that fits) checked inline."""
    if type(value) is int and value >= 0 and not value >> width:
        return value.to_bytes((value.bit_length() + 7) // 8 or 1, "big")
    return encode_value(value, width, what)


class _FieldCodec:
    """One match field: its id, width and kind, and the text errors name it by."""

    def __init__(self, table: str, mf: p4info_pb2.MatchField) -> None:
        self.width, self.kind = mf.bitwidth, mf.match_type
        self.what = f"{table} match {mf.name}"
        self.head = _K_FIELD_ID + protowire.varint(mf.id)
        self.kind_key = _K_KIND.get(mf.match_type, b"")

    def encode(self, value: Any) -> bytes | None:
        """The FieldMatch as a TableEntry `match` field; None for a wildcard (lpm /0, ternary mask 0)."""
        what, width, kind = self.what, self.width, self.kind
        if kind == _EXACT or kind == _OPTIONAL:
            body = _delimited(_K_1, _value(value, width, what))
        elif kind == _LPM:
            if isinstance(value, str) and "/" in value:
                addr, _, plen_text = value.partition("/")
                value = (addr, int(plen_text))
            addr, plen = _pair(value, what, "(value, prefix_len)")
            number = to_int(addr, width, what)
            if not 0 <= plen <= width:
                raise EncodingError(f"{what}: prefix length {plen} outside 0..{width}")
            if plen == 0:
                return None
            if number & ((1 << (width - plen)) - 1):
                raise EncodingError(f"{what}: {value!r} has bits set beyond the /{plen} prefix")
            body = _delimited(_K_1, int_to_bytes(number)) + _K_PREFIX_LEN + protowire.varint(plen)
        elif kind == _TERNARY:
            val, mask = _pair(value, what, "(value, mask)")
            number, mask_number = to_int(val, width, what), to_int(mask, width, f"{what} mask")
            if mask_number == 0:
                return None
            if number & ~mask_number:
                raise EncodingError(f"{what}: value {val!r} has bits set outside mask {mask!r}")
            body = _delimited(_K_1, int_to_bytes(number)) + _delimited(_K_2, int_to_bytes(mask_number))
        elif kind == _RANGE:
            low, high = _pair(value, what, "(low, high)")
            low_n, high_n = to_int(low, width, what), to_int(high, width, what)
            if low_n > high_n:
                raise EncodingError(f"{what}: empty range {low!r}..{high!r}")
            body = _delimited(_K_1, int_to_bytes(low_n)) + _delimited(_K_2, int_to_bytes(high_n))
        else:
            raise EncodingError(f"{what}: match kind {MatchType.Name(kind)} is not supported by this client")
        return _delimited(_K_MATCH, self.head + _delimited(self.kind_key, body))


def _pair(value: Any, what: str, form: str) -> tuple[Any, Any]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise EncodingError(f"{what}: expected {form}, got {value!r}")
    return value[0], value[1]


class _ActionCodec:
    """One action as allowed in one table (as an entry's or as the default action): ids, widths, names."""

    def __init__(self, p4info: P4Info, action: p4info_pb2.Action) -> None:
        self.p4info, self.action = p4info, action
        self.head = _K_ACTION_ID + protowire.varint(action.preamble.id)
        self.params = [(p.name, _K_PARAM_ID + protowire.varint(p.id), p.bitwidth,
                        f"{action.preamble.name} param {p.name}") for p in action.params]
        self.names = {p.name for p in action.params}

    def encode(self, params: Mapping[str, Any]) -> bytes:
        """The TableEntry `action` field (a TableAction holding this Action with `params`)."""
        for name in params:
            if name not in self.names:
                self.p4info.param(self.action, name)        # raises, listing the action's parameters
        missing = [name for name, _, _, _ in self.params if name not in params]
        if missing:
            raise P4InfoError(f"action {self.action.preamble.name} needs parameter(s) {', '.join(missing)}")
        body = self.head + b"".join([
            _delimited(_K_ACTION_PARAMS, head + _delimited(_K_PARAM_VALUE, _value(params[name], width, what)))
            for name, head, width, what in self.params])
        return _delimited(_K_ACTION, _delimited(_K_TABLE_ACTION_ACTION, body))


class _TableCodec:
    """One table: its id, its match fields and the rules an entry must follow, resolved once."""

    def __init__(self, p4info: P4Info, table: p4info_pb2.Table) -> None:
        self.p4info, self.table, self.name = p4info, table, table.preamble.name
        self.head = protowire.varint_field(_TABLE_ID, table.preamble.id)
        self.fields = {mf.name: _FieldCodec(self.name, mf) for mf in table.match_fields}
        self.exact = [mf.name for mf in table.match_fields if mf.match_type == MatchType.EXACT]
        self.needs_priority = any(mf.match_type in _PRIORITY_KINDS for mf in table.match_fields)
        self.actions: dict[tuple[str, bool], _ActionCodec] = {}

    def action(self, name: str, default: bool) -> _ActionCodec:
        codec = self.actions.get((name, default))
        if codec is None:
            action = self.p4info.table_action(self.table, name, default)   # raises where it is not allowed
            codec = self.actions[(name, default)] = _ActionCodec(self.p4info, action)
        return codec

    def _unknown_field(self, name: str) -> P4InfoError:
        """The error `P4Info.match_field` gives for a name the table does not have (listing its fields)."""
        try:
            self.p4info.match_field(self.table, name)
        except P4InfoError as exc:
            return exc
        raise AssertionError(f"{self.name} has field {name} but its codec does not")

    def encode(self, entry: TableEntry) -> bytes:
        parts = [self.head]
        if entry.is_default:
            if entry.match or entry.priority:
                raise EncodingError(f"{self.name}: a default entry has no match and no priority")
        else:
            for name, value in entry.match.items():
                field = self.fields.get(name)
                if field is None:
                    raise self._unknown_field(name)
                data = field.encode(value)
                if data is not None:
                    parts.append(data)
            missing = [name for name in self.exact if name not in entry.match]
            if missing:
                raise EncodingError(f"{self.name}: exact match field(s) {', '.join(missing)} must be given")
            if self.needs_priority and entry.priority <= 0:
                raise EncodingError(f"{self.name} has ternary/range/optional fields: priority must be > 0")
            if not self.needs_priority and entry.priority:
                raise EncodingError(f"{self.name} has no ternary/range/optional field: priority must be 0")
            if not 0 <= entry.priority < 2**31:
                raise EncodingError(f"{self.name}: priority {entry.priority} outside 0..2**31-1")
        if entry.action is not None:
            parts.append(self.action(entry.action, entry.is_default).encode(entry.params))
        elif entry.params:
            raise EncodingError(f"{self.name}: params given without an action")
        if entry.priority:
            parts.append(protowire.varint_field(_PRIORITY, entry.priority))
        if entry.is_default:
            parts.append(_IS_DEFAULT_TRUE)
        return b"".join(parts)


def decode_table_entry(p4info: P4Info, proto: p4runtime_pb2.TableEntry) -> TableEntry:
    """A TableEntry with full P4Info names and int values (lpm/ternary/range as tuples)."""
    table = p4info.tables.get_id(proto.table_id)
    fields = {mf.id: mf for mf in table.match_fields}
    match: dict[str, Any] = {}
    for fm in proto.match:
        mf = fields.get(fm.field_id)
        if mf is None:
            raise P4InfoError(f"table {table.preamble.name} has no match field id {fm.field_id}")
        kind = fm.WhichOneof("field_match_type")
        if kind == "exact":
            match[mf.name] = decode_int(fm.exact.value)
        elif kind == "lpm":
            match[mf.name] = (decode_int(fm.lpm.value), fm.lpm.prefix_len)
        elif kind == "ternary":
            match[mf.name] = (decode_int(fm.ternary.value), decode_int(fm.ternary.mask))
        elif kind == "range":
            match[mf.name] = (decode_int(fm.range.low), decode_int(fm.range.high))
        elif kind == "optional":
            match[mf.name] = decode_int(fm.optional.value)
        else:
            raise EncodingError(f"table {table.preamble.name} field {mf.name}: unsupported match kind {kind}")
    action_name, params = None, {}
    if proto.action.HasField("action"):
        action = p4info.actions.get_id(proto.action.action.action_id)
        action_name = action.preamble.name
        names = {p.id: p.name for p in action.params}
        params = {names[p.param_id]: decode_int(p.value) for p in proto.action.action.params}
    return TableEntry(table.preamble.name, match, action_name, params, proto.priority, proto.is_default_action)


def normalize(p4info: P4Info, entry: TableEntry) -> TableEntry:
    """`entry` as a switch would read it back: full names, int values, wildcards dropped."""
    return decode_table_entry(p4info, encode_table_entry(p4info, entry))


def register_entry(p4info: P4Info, name: str, index: int | None,
                   value: int | None = None) -> p4runtime_pb2.RegisterEntry:
    """A RegisterEntry for a read (value None; index None = every cell) or a write of one cell."""
    reg = p4info.register(name)
    proto = p4runtime_pb2.RegisterEntry(register_id=reg.preamble.id)
    if index is not None:
        _check_index(reg.preamble.name, index, reg.size)
        proto.index.index = index
    if value is not None:
        if index is None:
            raise EncodingError(f"register {reg.preamble.name}: a write needs an index")
        width = reg.type_spec.bitstring.bit.bitwidth
        if not width:
            raise EncodingError(f"register {reg.preamble.name}: only bit<W> registers are supported")
        proto.data.bitstring = encode_value(value, width, f"register {reg.preamble.name}[{index}]")
    return proto


def counter_entry(p4info: P4Info, name: str, index: int | None,
                  value: CounterValue | None = None) -> p4runtime_pb2.CounterEntry:
    """A CounterEntry for a read (index None = every cell) or a write (reset) of one cell."""
    ctr = p4info.counter(name)
    proto = p4runtime_pb2.CounterEntry(counter_id=ctr.preamble.id)
    if index is not None:
        _check_index(ctr.preamble.name, index, ctr.size)
        proto.index.index = index
    if value is not None:
        proto.data.packet_count, proto.data.byte_count = value.packets, value.bytes
    return proto


def meter_entry(p4info: P4Info, name: str, index: int, rate: int, burst: int) -> p4runtime_pb2.MeterEntry:
    """One cell of an indirect meter: committed and peak rate `rate` units/s (packets for a packets meter),
    bursts `burst` units; a single-rate limiter (above the rate is red)."""
    m = p4info.meter(name)
    _check_index(m.preamble.name, index, m.size)
    proto = p4runtime_pb2.MeterEntry(meter_id=m.preamble.id)
    proto.index.index = index
    proto.config.cir, proto.config.cburst, proto.config.pir, proto.config.pburst = rate, burst, rate, burst
    return proto


def _check_index(name: str, index: int, size: int) -> None:
    if not 0 <= index < size:
        raise EncodingError(f"{name}: index {index} outside 0..{size - 1}")


def is_padding(field: p4info_pb2.ControllerPacketMetadata.Metadata) -> bool:
    """A controller-header field that only aligns the header: named `_pad...` or annotated @padding."""
    return field.name.startswith("_pad") or any(a.startswith("@padding") for a in field.annotations)


def encode_packet_out(p4info: P4Info, payload: bytes,
                      metadata: Mapping[str, Any]) -> p4runtime_pb2.PacketOut:
    """A PacketOut whose `packet_out` header fields are given by name.

    Every field must be given except padding (`is_padding`), which defaults to 0.
    """
    header = p4info.controller_metadata("packet_out")
    fields = {m.name: m for m in header.metadata}
    unknown = sorted(set(metadata) - set(fields))
    if unknown:
        raise P4InfoError(f"packet_out has no field(s) {', '.join(unknown)}; its fields: {', '.join(fields)}")
    missing = [n for n, m in fields.items() if n not in metadata and not is_padding(m)]
    if missing:
        raise P4InfoError(f"packet_out field(s) {', '.join(missing)} must be given")
    proto = p4runtime_pb2.PacketOut(payload=bytes(payload))
    for name, m in fields.items():
        value = metadata.get(name, 0)
        proto.metadata.add(metadata_id=m.id, value=encode_value(value, m.bitwidth, f"packet_out.{name}"))
    return proto


def decode_packet_in(p4info: P4Info, proto: p4runtime_pb2.PacketIn) -> PacketIn:
    """PacketIn with the `packet_in` header fields by name (padding left out)."""
    fields = _packet_in_fields(p4info)
    metadata = {}
    for m in proto.metadata:
        name = fields.get(m.metadata_id, f"id{m.metadata_id}")
        if name:
            metadata[name] = decode_int(m.value)
    return PacketIn(proto.payload, metadata)


_PACKET_IN_FIELDS: "weakref.WeakKeyDictionary[P4Info, dict[int, str]]" = weakref.WeakKeyDictionary()


def _packet_in_fields(p4info: P4Info) -> dict[int, str]:
    """`packet_in` field id -> name ("" for padding), once per P4Info: it runs for every punted packet."""
    fields = _PACKET_IN_FIELDS.get(p4info)
    if fields is None:
        header = p4info.controller_metadata("packet_in")
        fields = _PACKET_IN_FIELDS[p4info] = {m.id: "" if is_padding(m) else m.name for m in header.metadata}
    return fields
