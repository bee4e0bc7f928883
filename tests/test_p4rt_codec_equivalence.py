"""The table-entry codec (entities.table_entry_bytes) against the encoder it replaced, byte for byte.

The codec writes protobuf's wire format itself, with ids and widths resolved once per table
(docs/controller.md, "The fourth round"). The reference below is the encoder as it was before: the
same checks, building the proto field by field through protobuf's own API. For every table and every
action of the real P4Info (build/bs.p4info.txtpb) and of a hand-built one with the match kinds it
lacks (ternary, optional), seeded random entries, valid and not, must give the same bytes, or the same
error type with the same message.
"""
from __future__ import annotations

import random
from typing import Any, Mapping

import pytest

from p4handoff.controller.p4runtime import P4Info, TableEntry, UpdateType
from p4handoff.controller.p4runtime._protos import p4info_pb2, p4runtime_pb2
from p4handoff.controller.p4runtime.client import EncodedEntries, write_request
from p4handoff.controller.p4runtime.encoding import EncodingError, encode_value, int_to_bytes, to_int
from p4handoff.controller.p4runtime.entities import encode_table_entry, table_entry_bytes
from p4handoff.controller.p4runtime.p4info import P4InfoError
from p4handoff.paths import build_dir

from tests.p4info_support import build_p4info

MatchType = p4info_pb2.MatchField.MatchType
_PRIORITY_KINDS = (MatchType.TERNARY, MatchType.RANGE, MatchType.OPTIONAL)
ENTRIES_PER_ACTION = 150


# ---------------------------------------------------------------- the encoder as it was (the reference)

def _field_match(p4info: P4Info, table: p4info_pb2.Table, name: str, value: Any) -> p4runtime_pb2.FieldMatch | None:
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
        p4info.param(action, param_name)
    missing = [p.name for p in action.params if p.name not in params]
    if missing:
        raise P4InfoError(f"action {action.preamble.name} needs parameter(s) {', '.join(missing)}")
    proto = p4runtime_pb2.Action(action_id=action.preamble.id)
    for p in action.params:
        proto.params.add(param_id=p.id,
                         value=encode_value(params[p.name], p.bitwidth, f"{action.preamble.name} param {p.name}"))
    return proto


def reference(p4info: P4Info, entry: TableEntry) -> p4runtime_pb2.TableEntry:
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


# ---------------------------------------------------------------- random entries, valid and not

def _ip(n: int) -> str:
    return ".".join(str(n >> s & 0xFF) for s in (24, 16, 8, 0))


def _mac(n: int) -> str:
    return ":".join(f"{n >> s & 0xFF:02x}" for s in range(40, -8, -8))


def value_of(rng: random.Random, width: int) -> Any:
    """A value for a bit<width> field in one of the forms callers use, now and then one that does not fit."""
    n = rng.getrandbits(width) if rng.random() < 0.9 else rng.choice([0, (1 << width) - 1])
    form = rng.random()
    if form < 0.03:
        return rng.choice([1 << width, -1, 1.5, None, "nonsense", "1.2.3", b"\x01" * ((width + 7) // 8 + 1)])
    if form < 0.55:
        return n
    if form < 0.65:
        return n.to_bytes(rng.randint(max(1, (n.bit_length() + 7) // 8), (width + 7) // 8), "big")
    if form < 0.72:
        return bool(n & 1) if width == 1 else n
    if width == 32 and form < 0.85:
        return _ip(n)
    if width == 48 and form < 0.85:
        return _mac(n)
    return rng.choice([str(n), hex(n)])


def match_value(rng: random.Random, mf: p4info_pb2.MatchField) -> Any:
    w = mf.bitwidth
    if mf.match_type in (MatchType.EXACT, MatchType.OPTIONAL):
        return value_of(rng, w)
    if mf.match_type == MatchType.LPM:
        plen = rng.randint(0, w + (1 if rng.random() < 0.03 else 0))
        n = rng.getrandbits(w) & ~((1 << max(0, w - plen)) - 1)
        if rng.random() < 0.03:
            n |= 1                                   # host bits set
        if w == 32 and rng.random() < 0.3:
            return f"{_ip(n)}/{plen}"
        return (n if rng.random() < 0.7 else n.to_bytes((w + 7) // 8, "big"), plen)
    if mf.match_type == MatchType.TERNARY:
        mask = rng.getrandbits(w) if rng.random() < 0.9 else 0
        val = rng.getrandbits(w) & (mask if rng.random() < 0.95 else -1)
        return (val, mask) if rng.random() < 0.97 else val
    low, high = sorted((rng.getrandbits(w), rng.getrandbits(w)))          # RANGE
    return (low, high) if rng.random() < 0.96 else (high + 1, low) if high + 1 >> w == 0 else low


def random_entry(rng: random.Random, p4info: P4Info, table: p4info_pb2.Table, action: p4info_pb2.Action,
                 default: bool) -> TableEntry:
    name = table.preamble.name if rng.random() < 0.5 else table.preamble.alias or table.preamble.name
    match: dict[str, Any] = {}
    if not default or rng.random() < 0.02:
        for mf in table.match_fields:
            if mf.match_type != MatchType.EXACT and rng.random() < 0.2:
                continue                             # a wildcard
            if rng.random() < 0.01:
                continue                             # an exact field left out too
            match[mf.name] = match_value(rng, mf)
        if rng.random() < 0.02:
            match["no.such.field"] = 1
    params: dict[str, Any] = {p.name: value_of(rng, p.bitwidth) for p in action.params if rng.random() < 0.99}
    if rng.random() < 0.02:
        params["no_such_param"] = 1
    needs = any(mf.match_type in _PRIORITY_KINDS for mf in table.match_fields)
    priority = rng.randint(1, 2**31 - 1) if needs and not default else 0
    if rng.random() < 0.03:
        priority = rng.choice([0, 1, -1, 2**31])
    action_name = action.preamble.name if rng.random() < 0.5 else action.preamble.alias or action.preamble.name
    if rng.random() < 0.02:
        action_name = rng.choice(list(p4info.actions.by_name))      # maybe not this table's
    return TableEntry(name, match, action_name if rng.random() < 0.99 else None, params, priority, default)


def outcome(fn: Any, p4info: P4Info, entry: TableEntry) -> tuple[str, Any]:
    try:
        return "ok", fn(p4info, entry)
    except (EncodingError, P4InfoError) as exc:
        return type(exc).__name__, str(exc)


def infos() -> list[tuple[str, P4Info]]:
    out = [("hand-built", build_p4info())]
    path = build_dir() / "bs.p4info.txtpb"
    if path.exists():
        out.append(("bs.p4info", P4Info.load(path)))
    return out


@pytest.mark.parametrize("label, p4info", infos(), ids=[label for label, _ in infos()])
def test_every_table_and_action_encodes_byte_for_byte_as_before(label: str, p4info: P4Info) -> None:
    rng = random.Random(24)
    counts = {"ok": 0, "error": 0}
    for table in p4info.proto.tables:
        for ref in table.action_refs:
            action = p4info.actions.get_id(ref.id)
            for default in (False, True):
                for _ in range(ENTRIES_PER_ACTION):
                    entry = random_entry(rng, p4info, table, action, default)
                    old_kind, old = outcome(reference, p4info, entry)
                    new_kind, new = outcome(table_entry_bytes, p4info, entry)
                    if old_kind == "ok":
                        assert new_kind == "ok", (entry, new)
                        assert new == old.SerializeToString(), entry
                        assert encode_table_entry(p4info, entry) == old, entry
                        counts["ok"] += 1
                    else:
                        assert (new_kind, new) == (old_kind, old), entry
                        counts["error"] += 1
    # both outcomes were exercised, most entries encode (a table-only action as a default is an error, etc.)
    assert counts["ok"] > counts["error"] > 0, counts
    if label == "bs.p4info":
        kinds = {mf.match_type for t in p4info.proto.tables for mf in t.match_fields}
        assert {MatchType.EXACT, MatchType.LPM, MatchType.RANGE} <= kinds


def test_a_write_request_carries_the_entries_bytes_as_the_protos_did() -> None:
    """write_request builds the request from each entry's bytes: the same bytes as copying the protos in."""
    p4info = build_p4info()
    rng = random.Random(7)
    entries = [TableEntry("ipv4_lpm", {"hdr.ipv4.dst_addr": (rng.getrandbits(24) << 8, 24)}, "set_nexthop",
                          {"port": rng.getrandbits(9), "dmac": rng.getrandbits(48)}) for _ in range(200)]
    raw = p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry(counter_id=0x04000001))
    updates: list[tuple[UpdateType, Any]] = [(rng.choice(list(UpdateType)), e) for e in entries] + \
        [(UpdateType.MODIFY, raw)]
    expected = p4runtime_pb2.WriteRequest(device_id=3, atomicity=p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR)
    expected.election_id.high, expected.election_id.low = 2**40 + 5, 2**63 + 9
    for kind, e in updates:
        u = expected.updates.add(type=kind)
        if isinstance(e, TableEntry):
            u.entity.table_entry.CopyFrom(reference(p4info, e))
        else:
            u.entity.CopyFrom(e)
    memo = EncodedEntries()
    for encode in (None, lambda e: memo.encode(p4info, e)):
        got = write_request(lambda: p4info, 3, (2**40 + 5, 2**63 + 9), updates, encode)
        assert got == expected
        assert got.SerializeToString() == expected.SerializeToString()
