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
from .p4info import P4Info, P4InfoError

MatchType = p4info_pb2.MatchField.MatchType
_PRIORITY_KINDS = (MatchType.TERNARY, MatchType.RANGE, MatchType.OPTIONAL)


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


def _field_match(p4info: P4Info, table: p4info_pb2.Table, name: str,
                 value: Any) -> p4runtime_pb2.FieldMatch | None:
    mf = p4info.match_field(table, name)
    what = f"{table.preamble.name} match {name}"
    width = mf.bitwidth
    fm = p4runtime_pb2.FieldMatch(field_id=mf.id)
    kind = mf.match_type
    if kind == MatchType.EXACT:
        fm.exact.value = encode_value(value, width, what)
    elif kind == MatchType.LPM:
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
        fm.lpm.value, fm.lpm.prefix_len = int_to_bytes(number), plen
    elif kind == MatchType.TERNARY:
        val, mask = _pair(value, what, "(value, mask)")
        number, mask_number = to_int(val, width, what), to_int(mask, width, f"{what} mask")
        if mask_number == 0:
            return None
        if number & ~mask_number:
            raise EncodingError(f"{what}: value {val!r} has bits set outside mask {mask!r}")
        fm.ternary.value, fm.ternary.mask = int_to_bytes(number), int_to_bytes(mask_number)
    elif kind == MatchType.RANGE:
        low, high = _pair(value, what, "(low, high)")
        low_n, high_n = to_int(low, width, what), to_int(high, width, what)
        if low_n > high_n:
            raise EncodingError(f"{what}: empty range {low!r}..{high!r}")
        fm.range.low, fm.range.high = int_to_bytes(low_n), int_to_bytes(high_n)
    elif kind == MatchType.OPTIONAL:
        fm.optional.value = encode_value(value, width, what)
    else:
        raise EncodingError(f"{what}: match kind {MatchType.Name(kind)} is not supported by this client")
    return fm


def _pair(value: Any, what: str, form: str) -> tuple[Any, Any]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise EncodingError(f"{what}: expected {form}, got {value!r}")
    return value[0], value[1]


def _action(p4info: P4Info, table: p4info_pb2.Table, name: str, params: Mapping[str, Any],
            default: bool) -> p4runtime_pb2.Action:
    action = p4info.table_action(table, name, default)
    for param_name in params:
        p4info.param(action, param_name)  # unknown names raise
    missing = [p.name for p in action.params if p.name not in params]
    if missing:
        raise P4InfoError(f"action {action.preamble.name} needs parameter(s) {', '.join(missing)}")
    proto = p4runtime_pb2.Action(action_id=action.preamble.id)
    for p in action.params:
        proto.params.add(param_id=p.id,
                         value=encode_value(params[p.name], p.bitwidth, f"{action.preamble.name} param {p.name}"))
    return proto


def encode_table_entry(p4info: P4Info, entry: TableEntry) -> p4runtime_pb2.TableEntry:
    """The proto for `entry`; P4InfoError/EncodingError name the offending table, field or value."""
    table = p4info.table(entry.table)
    proto = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
    if entry.is_default:
        if entry.match or entry.priority:
            raise EncodingError(f"{table.preamble.name}: a default entry has no match and no priority")
        proto.is_default_action = True
    else:
        for name, value in entry.match.items():
            fm = _field_match(p4info, table, name, value)
            if fm is not None:
                proto.match.append(fm)
        given = {fm.field_id for fm in proto.match}
        missing = [mf.name for mf in table.match_fields
                   if mf.match_type == MatchType.EXACT and mf.id not in given]
        if missing:
            raise EncodingError(f"{table.preamble.name}: exact match field(s) {', '.join(missing)} must be given")
        needs_priority = any(mf.match_type in _PRIORITY_KINDS for mf in table.match_fields)
        if needs_priority and entry.priority <= 0:
            raise EncodingError(f"{table.preamble.name} has ternary/range/optional fields: priority must be > 0")
        if not needs_priority and entry.priority:
            raise EncodingError(f"{table.preamble.name} has no ternary/range/optional field: priority must be 0")
        if not 0 <= entry.priority < 2**31:
            raise EncodingError(f"{table.preamble.name}: priority {entry.priority} outside 0..2**31-1")
        proto.priority = entry.priority
    if entry.action is not None:
        proto.action.action.CopyFrom(_action(p4info, table, entry.action, entry.params, entry.is_default))
    elif entry.params:
        raise EncodingError(f"{table.preamble.name}: params given without an action")
    return proto


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
