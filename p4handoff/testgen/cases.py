"""The tests P4Testgen writes, read into one form: an input packet, the writes to make first, and the
expected output (a port and a packet with don't-care bits) or a drop.

Two of P4Testgen's back ends (p4c 1.2.5.16, backends/p4tools/modules/testgen):

- PROTOBUF (bmv2 target): one `<name>_<n>.txtpb` per test, protobuf text of its `p4testgen.TestCase`
  (targets/bmv2/proto/p4testgen.proto) whose `entities` are P4Runtime entities with the P4Info's ids,
  written to the switch as they are;
- STF (tofino target, the only non-PTF back end it has): one `<name>_<n>.stf` per test, table writes by
  control-plane name (`add <table> [<priority>] <key>:<value>... <action>(<param>:<value>,...)`,
  `setdefault <table> <action>(...)`), `packet <port> <hex>` and `expect <port> <hex with *>$`. The
  bmv2 STF back end quotes the names; both forms are read.

A malformed file raises `GeneratedFileError` naming the file and line; nothing is guessed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

from p4handoff.controller.p4runtime._protos import p4runtime_pb2
from p4handoff.controller.p4runtime.p4info import P4Info


class GeneratedFileError(ValueError):
    """A generated test file that does not have the form its back end writes."""


@dataclass(frozen=True)
class Expected:
    """The packet P4Testgen expects on `port`; bits where `mask` is 0 are don't-care (tainted)."""

    port: int
    data: bytes
    mask: bytes

    def matches(self, observed: bytes) -> bool:
        """Same length, and equal on every bit the mask cares about."""
        return len(observed) == len(self.data) and all(
            (o ^ d) & m == 0 for o, d, m in zip(observed, self.data, self.mask))


@dataclass(frozen=True)
class Match:
    """One key of a named (STF) entry. kind: exact (value), ternary (value, mask), lpm (value, prefix_len)."""

    kind: str
    value: int
    mask: int = 0
    prefix_len: int = 0


@dataclass(frozen=True)
class NamedWrite:
    """One STF table write by control-plane names."""

    table: str
    action: str
    params: dict[str, int]
    match: dict[str, Match] = field(default_factory=dict)
    priority: int | None = None
    is_default: bool = False


@dataclass
class GeneratedTest:
    """One generated test. `entities` (PROTOBUF) or `writes` (STF) are what to install first."""

    name: str
    port: int
    packet: bytes
    expected: Expected | None          # None: P4Testgen expects the packet dropped
    entities: list[Any] = field(default_factory=list)   # p4runtime_pb2.Entity
    writes: list[NamedWrite] = field(default_factory=list)
    coverage: float | None = None      # P4Testgen's running statement coverage at this test
    traces: list[str] = field(default_factory=list)


# -- PROTOBUF ---------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _test_case_class() -> Any:
    """p4testgen.TestCase, built from its .proto's fields over the project's generated P4Runtime protos."""
    fdp = descriptor_pb2.FileDescriptorProto(name="p4handoff/p4testgen.proto", package="p4testgen",
                                             syntax="proto3", dependency=[p4runtime_pb2.DESCRIPTOR.name])
    T = descriptor_pb2.FieldDescriptorProto
    fdp.message_type.add(name="InputPacketAtPort").field.extend([
        T(name="packet", number=1, type=T.TYPE_BYTES, label=T.LABEL_OPTIONAL),
        T(name="port", number=2, type=T.TYPE_INT32, label=T.LABEL_OPTIONAL)])
    fdp.message_type.add(name="OutputPacketAtPort").field.extend([
        T(name="packet", number=1, type=T.TYPE_BYTES, label=T.LABEL_OPTIONAL),
        T(name="port", number=2, type=T.TYPE_INT32, label=T.LABEL_OPTIONAL),
        T(name="packet_mask", number=3, type=T.TYPE_BYTES, label=T.LABEL_OPTIONAL)])
    fdp.message_type.add(name="TestCase").field.extend([
        T(name="input_packet", number=1, type=T.TYPE_MESSAGE, label=T.LABEL_OPTIONAL,
          type_name=".p4testgen.InputPacketAtPort"),
        T(name="expected_output_packet", number=2, type=T.TYPE_MESSAGE, label=T.LABEL_REPEATED,
          type_name=".p4testgen.OutputPacketAtPort"),
        T(name="entities", number=3, type=T.TYPE_MESSAGE, label=T.LABEL_REPEATED, type_name=".p4.v1.Entity"),
        T(name="traces", number=4, type=T.TYPE_STRING, label=T.LABEL_REPEATED),
        T(name="metadata", number=5, type=T.TYPE_STRING, label=T.LABEL_REPEATED)])
    pool = descriptor_pool.Default()
    try:
        file_desc = pool.FindFileByName(fdp.name)
    except KeyError:
        pool.Add(fdp)
        file_desc = pool.FindFileByName(fdp.name)
    return message_factory.GetMessageClass(file_desc.message_types_by_name["TestCase"])


_COVERAGE_RE = re.compile(r"(?:node|statement) coverage:\s*([0-9.eE+-]+)")
_TRACE_RE = re.compile(r"^traces: '(.*)'[ \t]*$", re.M)


def parse_protobuf(text: str, name: str = "test") -> GeneratedTest:
    """A test of P4Testgen's PROTOBUF back end (bmv2)."""
    case = _test_case_class()()
    # the template writes traces as '...' unescaped: a trace holding a quote or a backslash is not valid text
    # format, so traces are taken out by line and the rest parsed strictly
    traces = [m.group(1) for m in _TRACE_RE.finditer(text)]
    try:
        text_format.Parse(_TRACE_RE.sub("", text), case)
    except text_format.ParseError as exc:
        raise GeneratedFileError(f"{name}: not a p4testgen TestCase: {exc}") from exc
    if not case.HasField("input_packet") or not case.input_packet.packet:
        raise GeneratedFileError(f"{name}: no input_packet")
    if len(case.expected_output_packet) > 1:
        raise GeneratedFileError(f"{name}: {len(case.expected_output_packet)} expected packets (clones are not "
                            "used by our programs)")
    expected = None
    if case.expected_output_packet:
        out = case.expected_output_packet[0]
        mask = out.packet_mask or b"\xff" * len(out.packet)
        if len(mask) != len(out.packet):
            raise GeneratedFileError(f"{name}: packet_mask is {len(mask)} bytes, the packet {len(out.packet)}")
        expected = Expected(out.port, out.packet, mask)
    coverage = next((float(m.group(1)) for md in case.metadata if (m := _COVERAGE_RE.search(md))), None)
    return GeneratedTest(name, case.input_packet.port, case.input_packet.packet, expected,
                         entities=[p4runtime_pb2.Entity.FromString(e.SerializeToString()) for e in case.entities],
                         coverage=coverage, traces=traces)


def canonical_entities(entities: list[Any], p4info: P4Info) -> list[Any]:
    """The same matches in the form P4Runtime takes (spec 1.3, §9.1.1): P4Testgen's PROTOBUF back end writes
    an LPM key of prefix length 0 as a match field and leaves value bits beyond the prefix (or outside a
    ternary mask) set; PI refuses both ("omit match field", "incorrect number of trailing zeros"). A
    don't-care key is left out and the bits no key compares are cleared: the entry matches the same packets."""
    out = []
    for entity in entities:
        entity = p4runtime_pb2.Entity.FromString(entity.SerializeToString())
        if entity.HasField("table_entry"):
            entry = entity.table_entry
            widths = {f.id: f.bitwidth for f in p4info.tables.get_id(entry.table_id).match_fields}
            kept = [m for m in entry.match if not _dont_care(m)]
            for m in kept:
                _clear_unmatched(m, widths[m.field_id])
            del entry.match[:]
            entry.match.extend(kept)
        out.append(entity)
    return out


def _dont_care(m: Any) -> bool:
    kind = m.WhichOneof("field_match_type")
    return (kind == "lpm" and m.lpm.prefix_len == 0) or (kind == "ternary" and not any(m.ternary.mask))


def _clear_unmatched(m: Any, width: int) -> None:
    kind = m.WhichOneof("field_match_type")
    if kind == "lpm":
        size = len(m.lpm.value)
        mask = ((1 << m.lpm.prefix_len) - 1) << (width - m.lpm.prefix_len)
        m.lpm.value = (int.from_bytes(m.lpm.value, "big") & mask).to_bytes(size, "big")
    elif kind == "ternary":
        size = len(m.ternary.value)
        value = int.from_bytes(m.ternary.value, "big") & int.from_bytes(m.ternary.mask, "big")
        m.ternary.value = value.to_bytes(size, "big")


# -- STF --------------------------------------------------------------------------------------------

_NAME = r'"[^"]*"|[^\s"():]+'
_ADD_RE = re.compile(rf'^add\s+(?P<table>{_NAME})\s+(?:(?P<prio>\d+)\s+)?(?P<keys>.*?)\s*'
                     rf'(?P<action>{_NAME})\((?P<args>[^)]*)\)$')
_DEFAULT_RE = re.compile(rf'^setdefault\s+(?P<table>{_NAME})\s+(?P<action>{_NAME})\((?P<args>[^)]*)\)$')
_KEY_RE = re.compile(rf'(?P<name>{_NAME}):(?P<value>\S+)')


def _unquote(name: str) -> str:
    return name[1:-1] if name.startswith('"') else name


def _hex_bytes(text: str, where: str) -> tuple[bytes, bytes]:
    """(data, mask) of an STF hex string; a '*' nibble is don't-care."""
    text = text.replace("_", "")
    if len(text) % 2 or not re.fullmatch(r"[0-9a-fA-F*]*", text):
        raise GeneratedFileError(f"{where}: {text[:40]!r} is not whole bytes of hex")
    data = bytes.fromhex(re.sub(r"\*", "0", text))
    mask = bytes.fromhex("".join("0" if c == "*" else "f" for c in text))
    return data, mask


def _number(text: str, where: str) -> int:
    try:
        return int(text.replace("_", ""), 0)
    except ValueError:
        raise GeneratedFileError(f"{where}: {text!r} is not a number") from None


def _key(text: str, where: str) -> Match:
    """A key value: a number (exact) or 0b with '*' bits (ternary; a prefix of fixed bits reads as lpm)."""
    if not text.startswith("0b") or "*" not in text:
        return Match("exact", _number(text, where))
    bits = text[2:].replace("_", "")
    if not re.fullmatch(r"[01*]+", bits):
        raise GeneratedFileError(f"{where}: {text!r} is not a binary pattern")
    value = int(bits.replace("*", "0"), 2)
    mask = int("".join("0" if b == "*" else "1" for b in bits), 2)
    fixed = len(bits.rstrip("*"))
    if "*" not in bits[:fixed]:
        return Match("lpm", value, mask, fixed)
    return Match("ternary", value, mask)


def _args(text: str, where: str) -> dict[str, int]:
    params = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        pname, sep, value = part.rpartition(":")
        if not sep:
            raise GeneratedFileError(f"{where}: action argument {part!r} is not name:value")
        params[_unquote(pname)] = _number(value, where)
    return params


def parse_stf(text: str, name: str = "test") -> GeneratedTest:
    """A test of P4Testgen's STF back end (tofino; bmv2's quoted form too). One packet, at most one expect."""
    writes: list[NamedWrite] = []
    packet: tuple[int, bytes] | None = None
    expected: Expected | None = None
    coverage: float | None = None
    traces: list[str] = []
    in_traces = False
    for n, raw in enumerate(text.splitlines(), 1):
        line, where = raw.strip(), f"{name}:{n}"
        if not line:
            continue
        if line.startswith("#"):
            comment = line[1:].strip()
            if (m := _COVERAGE_RE.search(comment)) and coverage is None:
                coverage = float(m.group(1))
            elif comment == "Traces":
                in_traces = True
            elif in_traces and not comment.startswith("Table "):
                traces.append(comment)
            continue
        in_traces = False
        if m := _ADD_RE.match(line):
            keys = {_unquote(k.group("name")): _key(k.group("value"), where)
                    for k in _KEY_RE.finditer(m.group("keys"))}
            if _KEY_RE.sub("", m.group("keys")).strip():
                raise GeneratedFileError(f"{where}: cannot read the keys of {line!r}")
            writes.append(NamedWrite(_unquote(m.group("table")), _unquote(m.group("action")),
                                     _args(m.group("args"), where), keys,
                                     int(m.group("prio")) if m.group("prio") else None))
        elif m := _DEFAULT_RE.match(line):
            writes.append(NamedWrite(_unquote(m.group("table")), _unquote(m.group("action")),
                                     _args(m.group("args"), where), is_default=True))
        elif line.startswith("packet "):
            if packet is not None:
                raise GeneratedFileError(f"{where}: a second packet (one per test is what P4Testgen writes)")
            _, port, hexdata = (line.split() + [""])[:3]
            data, mask = _hex_bytes(hexdata, where)
            if mask != b"\xff" * len(mask) or not data:
                raise GeneratedFileError(f"{where}: an input packet must be whole, non-empty hex")
            packet = (_number(port, where), data)
        elif line.startswith("expect "):
            if expected is not None:
                raise GeneratedFileError(f"{where}: a second expect")
            parts = line.split()
            if len(parts) != 3 or not parts[2].endswith("$"):
                raise GeneratedFileError(f"{where}: expect is 'expect <port> <hex>$'")
            data, mask = _hex_bytes(parts[2][:-1], where)
            expected = Expected(_number(parts[1], where), data, mask)
        else:
            raise GeneratedFileError(f"{where}: unknown STF command {line.split()[0]!r}")
    if packet is None:
        raise GeneratedFileError(f"{name}: no packet line")
    return GeneratedTest(name, packet[0], packet[1], expected, writes=writes, coverage=coverage, traces=traces)


def load(path: Path) -> GeneratedTest:
    """A generated test file by its suffix: .txtpb (PROTOBUF) or .stf."""
    text = path.read_text()
    if path.suffix == ".txtpb":
        return parse_protobuf(text, path.name)
    if path.suffix == ".stf":
        return parse_stf(text, path.name)
    raise GeneratedFileError(f"{path}: not a P4Testgen test (.txtpb or .stf)")


def load_dir(directory: Path) -> tuple[list[GeneratedTest], list[tuple[str, str]]]:
    """Every generated test in `directory`, in P4Testgen's numbering order, and (file, why) of each file that
    does not read: one bad file is reported, not a reason to lose the others."""
    def number(p: Path) -> tuple[int, str]:
        m = re.search(r"_(\d+)$", p.stem)
        return (int(m.group(1)) if m else -1, p.name)
    tests, errors = [], []
    for path in sorted((p for p in directory.iterdir() if p.suffix in (".txtpb", ".stf")), key=number):
        try:
            tests.append(load(path))
        except (GeneratedFileError, UnicodeDecodeError) as exc:
            errors.append((path.name, str(exc)))
    return tests, errors
