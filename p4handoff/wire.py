"""Wire constants, table sizes and header layouts shared with the P4 program, read from its source.

`p4src/include/constants.p4` (with `size.p4`, which it includes) and
`headers.p4` are the one place these are written; reading them here keeps
the data plane and the Python control plane from drifting apart. The package
carries them as data (`p4handoff/p4include` is a link to `p4src/include`, and
the wheel holds copies), so an installed p4handoff reads the same files.
tests/test_wire_contract.py checks what is read against the compiled
program (P4Info and BMv2 JSON).
"""
from __future__ import annotations

import ast
import collections
import importlib.resources
import operator
import re
import struct
from pathlib import Path
from typing import Any, Callable, NamedTuple

from p4handoff.paths import PROGRAMS

P4_INCLUDE = Path(str(importlib.resources.files("p4handoff") / "p4include"))
CONSTANTS_P4 = P4_INCLUDE / "constants.p4"
HEADERS_P4 = P4_INCLUDE / "headers.p4"
_CONST_RE = re.compile(r"^\s*const\s+bit<(\d+)>\s+([A-Z][A-Z0-9_]*)\s*=\s*([^;]+);", re.M)
_INCLUDE_RE = re.compile(r'^\s*#include\s+"([^"]+)"', re.M)
_WIDTH_PREFIX_RE = re.compile(r"\b\d+w(0x[0-9a-fA-F]+|\d+)\b")
_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift}


class ContractError(ValueError):
    """The P4 source says something this reader does not understand; the message names file and line."""


def _evaluate(expr: str, known: dict[str, int], where: str) -> int:
    """A constant initialiser: literals (optionally width-prefixed), earlier names, + - * << >> and parentheses."""
    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id in known:
            return known[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        raise ContractError(f"{where}: cannot evaluate {expr!r} (literals, earlier constants, + - * << >> only)")
    try:
        tree = ast.parse(_WIDTH_PREFIX_RE.sub(r"\1", expr.strip()), mode="eval")
    except SyntaxError as exc:
        raise ContractError(f"{where}: cannot parse {expr!r}") from exc
    return ev(tree.body)


def load_constants(path: Path = CONSTANTS_P4) -> dict[str, int]:
    """Every `const bit<N> NAME = EXPR;` of a P4 header and of the headers it `#include`s, in order."""
    out: dict[str, int] = {}
    _load_into(path, out)
    return out


def _load_into(path: Path, out: dict[str, int]) -> None:
    text = path.read_text()
    for m in _CONST_RE.finditer(text):
        width, name, expr = int(m.group(1)), m.group(2), m.group(3)
        where = f"{path.name}:{text.count(chr(10), 0, m.start()) + 1}"
        value = _evaluate(expr, out, where)
        if not 0 <= value < 1 << width:
            raise ContractError(f"{where}: {name} = {value} does not fit bit<{width}>")
        out[name] = value
    for include in _INCLUDE_RE.findall(text):
        _load_into(path.parent / include, out)


_HEADER_RE = re.compile(r"\bheader\s+(\w+)\s*\{([^}]*)\}", re.S)
_FIELD_RE = re.compile(r"^\s*bit<(\d+)>\s+(\w+)\s*;", re.M)
_STRUCT_CODES = {8: "B", 16: "H", 32: "I", 64: "Q"}


def load_header(name: str, path: Path = HEADERS_P4) -> list[tuple[str, int]]:
    """The (field, bit width) list of P4 header type `name`, in wire order."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
    for header, body in _HEADER_RE.findall(text):
        if header == name:
            return [(field, int(width)) for width, field in _FIELD_RE.findall(body)]
    raise ContractError(f"{path.name}: no header {name}")


class HeaderLayout:
    """A P4 header of whole-byte fields as a big-endian struct; `unpack` gives a record by field name.

    Field names lose a leading underscore in the record (`_pad` -> `pad`).
    """

    def __init__(self, name: str, fields: list[tuple[str, int]]) -> None:
        bad = [f"{f}: bit<{w}>" for f, w in fields if w not in _STRUCT_CODES]
        if bad:
            raise ContractError(f"header {name}: fields not 8/16/32/64 bits wide: {', '.join(bad)}")
        self.name = name
        self.fields = fields
        self.struct = struct.Struct("!" + "".join(_STRUCT_CODES[w] for _, w in fields))
        self.size = self.struct.size
        record: Any = collections.namedtuple(name, [f.lstrip("_") for f, _ in fields])  # type: ignore[misc]
        self.record = record

    def unpack(self, data: bytes) -> Any:
        """The record at the start of `data` (struct.error if `data` is shorter than `size`)."""
        return self.record(*self.struct.unpack_from(data))

_C = load_constants()

ETHERTYPE_IPV4: int = _C["ETHERTYPE_IPV4"]
ETHERTYPE_ARP: int = _C["ETHERTYPE_ARP"]
IP_PROTO_IPIP: int = _C["IP_PROTO_IPIP"]
IP_PROTO_TCP: int = _C["IP_PROTO_TCP"]
IP_PROTO_UDP: int = _C["IP_PROTO_UDP"]
DSCP_BEST_EFFORT: int = _C["DSCP_BEST_EFFORT"]
DSCP_LE: int = _C["DSCP_LE"]
DSCP_IPF_PRIORITY_DEFAULT: int = _C["DSCP_IPF_PRIORITY_DEFAULT"]
TCP_BYTE12_DUMMY_MASK: int = _C["TCP_BYTE12_DUMMY_MASK"]
UDP_PORT_MIP_REGISTRATION: int = _C["UDP_PORT_MIP_REGISTRATION"]
UDP_PORT_HANDOFF_NOTIFY: int = _C["UDP_PORT_HANDOFF_NOTIFY"]

# P4 pipeline (issue 2): docs/wire-contract.md, docs/pipeline.md
CPU_PORT: int = _C["CPU_PORT"]
QUEUE_PRIORITY_DUMMY: int = _C["QUEUE_PRIORITY_DUMMY"]
QUEUE_PRIORITY_DATA: int = _C["QUEUE_PRIORITY_DATA"]
PORT_ROLE_CORE: int = _C["PORT_ROLE_CORE"]
PORT_ROLE_ACCESS: int = _C["PORT_ROLE_ACCESS"]
PORT_ROLE_PEER: int = _C["PORT_ROLE_PEER"]
PUNT_REASON_BUFFER: int = _C["PUNT_REASON_BUFFER"]
PUNT_REASON_ARP: int = _C["PUNT_REASON_ARP"]
PUNT_REASON_REGISTRATION: int = _C["PUNT_REASON_REGISTRATION"]
PUNT_REASON_TELEMETRY: int = _C["PUNT_REASON_TELEMETRY"]
PUNT_REASON_NO_ROUTE: int = _C["PUNT_REASON_NO_ROUTE"]
AQM_MODE_DROPTAIL: int = _C["AQM_MODE_DROPTAIL"]
AQM_MODE_RED: int = _C["AQM_MODE_RED"]
AQM_MODE_MRED: int = _C["AQM_MODE_MRED"]
AQM_CLASS_NP: int = _C["AQM_CLASS_NP"]
AQM_CLASS_PRIO: int = _C["AQM_CLASS_PRIO"]
AQM_CLASS_DUMMY: int = _C["AQM_CLASS_DUMMY"]
PORT_BITS: int = _C["PORT_BITS"]
AQM_CLASS_BITS: int = _C["AQM_CLASS_BITS"]
REASON_BITS: int = _C["REASON_BITS"]
AQM_CLASS_STRIDE: int = _C["AQM_CLASS_STRIDE"]
PORT_SLOTS: int = _C["PORT_SLOTS"]
PORT_MAX: int = _C["PORT_MAX"]
AVG_FRAC_BITS: int = _C["AVG_FRAC_BITS"]
PROB_BITS: int = _C["PROB_BITS"]
DECAY_FRAC_BITS: int = _C["DECAY_FRAC_BITS"]
PROB_ONE: int = _C["PROB_ONE"]
DECAY_ONE: int = _C["DECAY_ONE"]
PB_LEVEL_NONE: int = _C["PB_LEVEL_NONE"]
COUNT_MAX: int = _C["COUNT_MAX"]
QUEUE_MAX: int = _C["QUEUE_MAX"]
TELEMETRY_AQM_MODE_NONE: int = _C["TELEMETRY_AQM_MODE_NONE"]
TNA_PROB_BITS: int = _C["TNA_PROB_BITS"]
DUMMY_MAX_RECIRC: int = _C["DUMMY_MAX_RECIRC"]
REASON_STRIDE: int = _C["REASON_STRIDE"]
PORT_CLASS_BITS: int = _C["PORT_CLASS_BITS"]
PORT_REASON_BITS: int = _C["PORT_REASON_BITS"]
PORT_CLASS_SLOTS: int = _C["PORT_CLASS_SLOTS"]
PORT_REASON_SLOTS: int = _C["PORT_REASON_SLOTS"]
PACKET_OUT_BYTES: int = _C["PACKET_OUT_BYTES"]
MALFORMED_TRUNCATED: int = _C["MALFORMED_TRUNCATED"]
MALFORMED_IPV4_VERSION: int = _C["MALFORMED_IPV4_VERSION"]
MALFORMED_IPV4_IHL: int = _C["MALFORMED_IPV4_IHL"]
MALFORMED_IPV4_LENGTH: int = _C["MALFORMED_IPV4_LENGTH"]
MALFORMED_TCP_OFFSET: int = _C["MALFORMED_TCP_OFFSET"]
MALFORMED_UDP_LENGTH: int = _C["MALFORMED_UDP_LENGTH"]
MALFORMED_CHECKSUM: int = _C["MALFORMED_CHECKSUM"]
MALFORMED_OTHER: int = _C["MALFORMED_OTHER"]
FWD_DROP_TABLE: int = _C["FWD_DROP_TABLE"]
FWD_DROP_TTL: int = _C["FWD_DROP_TTL"]
FWD_DROP_UNSUPPORTED: int = _C["FWD_DROP_UNSUPPORTED"]
FWD_DROP_PACKET_OUT: int = _C["FWD_DROP_PACKET_OUT"]
FWD_DROP_PUNT_BUDGET: int = _C["FWD_DROP_PUNT_BUDGET"]

# The AQM modes by name: AQM_MODE_DROPTAIL -> "droptail" (the one spelling, in network and scenario files).
AQM_MODES: dict[str, int] = {n.removeprefix("AQM_MODE_").lower(): v for n, v in _C.items() if n.startswith("AQM_MODE_")}


class TableSize(NamedTuple):
    """A table's `size` in one program, and the size.p4 constant that sets it."""

    constant: str
    entries: int


def table_sizes(constants: dict[str, int], program: str) -> dict[str, TableSize]:
    """Table -> its size in `program` (v1model or tna): SIZE_<TABLE> sizes a table of both programs,
    SIZE_<PROGRAM>_<TABLE> one of that program only (size.p4)."""
    own = f"SIZE_{program.upper()}_"
    others = tuple(f"SIZE_{p.upper()}_" for p in PROGRAMS if p != program)
    out = {}
    for name, value in constants.items():
        if name.startswith(own):
            out[name.removeprefix(own).lower()] = TableSize(name, value)
        elif name.startswith("SIZE_") and not name.startswith(others):
            out[name.removeprefix("SIZE_").lower()] = TableSize(name, value)
    return out


# Table sizes (size.p4) by program: TABLE_SIZES["tna"]["red_pa_gap"] = TableSize("SIZE_TNA_RED_PA_GAP", 11264).
TABLE_SIZES: dict[str, dict[str, TableSize]] = {p: table_sizes(_C, p) for p in PROGRAMS}
# The telemetry answer after packet_in in a PacketIn's payload (docs/wire-contract.md, "telemetry").
TELEMETRY = HeaderLayout("telemetry_t", load_header("telemetry_t"))
