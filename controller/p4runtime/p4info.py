"""P4Info lookups by name: tables, actions, match fields, params, registers, counters, packet metadata.

Everything the client writes is addressed by numeric ids the compiler chose;
people and tests think in names. Names resolve by full name
("Ingress.fwd.ipv4_fwd") or by the compiler's alias (the shortest unique
suffix, "ipv4_fwd"); an unknown name raises P4InfoError listing what exists.
"""
from __future__ import annotations

from pathlib import Path
from typing import Generic, Iterable, Protocol, TypeVar

from google.protobuf import text_format

from ._protos import p4info_pb2

BINARY_SUFFIXES = (".binpb", ".pb", ".bin")


class _Named(Protocol):
    """What every indexed P4Info object has: a preamble with its name, alias and id."""

    @property
    def preamble(self) -> p4info_pb2.Preamble: ...


E = TypeVar("E", bound=_Named)


class P4InfoError(LookupError):
    """A name or id is not in the P4Info, or the P4Info file cannot be read."""

    def __str__(self) -> str:  # LookupError quotes its argument; show the message as written
        return str(self.args[0])


class _Index(Generic[E]):
    """One kind of P4Info object, found by full name, alias or id."""

    def __init__(self, kind: str, objects: Iterable[E]) -> None:
        self.kind = kind
        self.by_name: dict[str, E] = {}
        self.by_id: dict[int, E] = {}
        for obj in objects:
            pre = obj.preamble
            self.by_name[pre.name] = obj
            if pre.alias:
                self.by_name.setdefault(pre.alias, obj)
            self.by_id[pre.id] = obj

    def get(self, name: str) -> E:
        try:
            return self.by_name[name]
        except KeyError:
            known = ", ".join(sorted(o.preamble.name for o in self.by_id.values())) or "none"
            raise P4InfoError(f"unknown {self.kind} {name!r}; the P4Info has: {known}") from None

    def get_id(self, obj_id: int) -> E:
        try:
            return self.by_id[obj_id]
        except KeyError:
            raise P4InfoError(f"unknown {self.kind} id {obj_id:#x}") from None


class P4Info:
    """Name and id resolution over one P4Info message."""

    def __init__(self, proto: p4info_pb2.P4Info) -> None:
        self.proto = proto
        self.tables = _Index("table", proto.tables)
        self.actions = _Index("action", proto.actions)
        self.registers = _Index("register", proto.registers)
        self.counters = _Index("counter", proto.counters)
        self.meters = _Index("meter", proto.meters)
        self.packet_metadata = _Index("controller packet metadata", proto.controller_packet_metadata)

    @classmethod
    def load(cls, path: str | Path) -> "P4Info":
        """Read a P4Info file: binary if it ends in .binpb/.pb/.bin, else protobuf text format."""
        path = Path(path)
        proto = p4info_pb2.P4Info()
        try:
            data = path.read_bytes()
            if path.suffix in BINARY_SUFFIXES:
                proto.ParseFromString(data)
            else:
                text_format.Parse(data.decode(), proto)
        except OSError as exc:
            raise P4InfoError(f"cannot read P4Info {path}: {exc.strerror}") from exc
        except (text_format.ParseError, UnicodeDecodeError, ValueError) as exc:
            raise P4InfoError(f"{path} is not a valid P4Info: {exc}") from exc
        return cls(proto)

    def table(self, name: str) -> p4info_pb2.Table:
        return self.tables.get(name)

    def action(self, name: str) -> p4info_pb2.Action:
        return self.actions.get(name)

    def register(self, name: str) -> p4info_pb2.Register:
        return self.registers.get(name)

    def counter(self, name: str) -> p4info_pb2.Counter:
        return self.counters.get(name)

    def meter(self, name: str) -> p4info_pb2.Meter:
        return self.meters.get(name)

    def controller_metadata(self, name: str) -> p4info_pb2.ControllerPacketMetadata:
        """The `@controller_header` named `name` ("packet_in" or "packet_out")."""
        return self.packet_metadata.get(name)

    def match_field(self, table: p4info_pb2.Table, name: str) -> p4info_pb2.MatchField:
        for mf in table.match_fields:
            if mf.name == name:
                return mf
        known = ", ".join(mf.name for mf in table.match_fields) or "none (keyless table)"
        raise P4InfoError(f"table {table.preamble.name} has no match field {name!r}; its fields: {known}")

    def param(self, action: p4info_pb2.Action, name: str) -> p4info_pb2.Action.Param:
        for param in action.params:
            if param.name == name:
                return param
        known = ", ".join(p.name for p in action.params) or "none"
        raise P4InfoError(f"action {action.preamble.name} has no parameter {name!r}; its parameters: {known}")

    def table_action(self, table: p4info_pb2.Table, name: str,
                     default: bool) -> p4info_pb2.Action:
        """The action `name`, checked to be allowed in `table` as an entry or as its default action."""
        action = self.action(name)
        refs = {ref.id: ref for ref in table.action_refs}
        ref = refs.get(action.preamble.id)
        if ref is None:
            allowed = ", ".join(self.actions.get_id(i).preamble.name for i in refs) or "none"
            raise P4InfoError(f"action {action.preamble.name} is not an action of table "
                              f"{table.preamble.name}; allowed: {allowed}")
        forbidden = p4info_pb2.ActionRef.TABLE_ONLY if default else p4info_pb2.ActionRef.DEFAULT_ONLY
        if ref.scope == forbidden:
            where = "the default action" if default else "an entry's action"
            raise P4InfoError(f"action {action.preamble.name} cannot be {where} of table {table.preamble.name} "
                              f"(@{'tableonly' if default else 'defaultonly'})")
        if default and table.const_default_action_id:
            raise P4InfoError(f"table {table.preamble.name} has a const default action")
        return action
