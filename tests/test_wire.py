"""Constants are read from the P4 header, the single source of truth."""
import re
from pathlib import Path

import pytest

from p4handoff import wire
from p4handoff.paths import PROGRAMS


def test_constants_parse_from_p4_header(tmp_path: Path):
    header = tmp_path / "c.p4"
    header.write_text("const bit<8> FOO = 0x1f;\n  const bit<16> BAR_2 = 434;\n// const bit<8> NOT = 1;\n")
    assert wire.load_constants(header) == {"FOO": 31, "BAR_2": 434}


def test_wire_values_match_the_contract():
    # RFC 8622 LE is DSCP 1; the dummy bit is a reserved bit, not AccECN's AE (0x01).
    assert wire.DSCP_LE == 1
    assert wire.TCP_BYTE12_DUMMY_MASK & 0x0E and not wire.TCP_BYTE12_DUMMY_MASK & 0xF1
    assert 0 < wire.DSCP_IPF_PRIORITY_DEFAULT < 64
    assert wire.UDP_PORT_MIP_REGISTRATION == 434


def test_derived_constants_width_prefixes_and_includes(tmp_path: Path):
    (tmp_path / "sizes.p4").write_text("const bit<32> SIZE_T = A * 2;\n")
    header = tmp_path / "c.p4"
    header.write_text('const bit<8> A = 3;\nconst bit<32> B = 32w1 << (A + 1);\n#include "sizes.p4"\n')
    assert wire.load_constants(header) == {"A": 3, "B": 16, "SIZE_T": 6}


@pytest.mark.parametrize("line, message", [
    ("const bit<4> X = 16;", "c.p4:1: X = 16 does not fit bit<4>"),
    ("const bit<8> X = Y + 1;", "c.p4:1: cannot evaluate 'Y + 1'"),
    ("const bit<8> X = 2 ** 3;", "cannot evaluate"),
    ("const bit<8> X = (1;", "cannot parse"),
])
def test_a_constant_this_reader_cannot_take_is_named(tmp_path: Path, line: str, message: str):
    header = tmp_path / "c.p4"
    header.write_text(line + "\n")
    with pytest.raises(wire.ContractError, match=re.escape(message)):
        wire.load_constants(header)


def test_header_layout_by_field_name(tmp_path: Path):
    headers = tmp_path / "h.p4"
    headers.write_text("header t_t {\n  bit<16> a; /* x */\n  bit<8> _pad;\n  bit<8> b;\n}\nheader u_t { bit<9> p; }\n")
    layout = wire.HeaderLayout("t_t", wire.load_header("t_t", headers))
    assert layout.size == 4 and layout.unpack(b"\x01\x02\x00\x07extra") == (0x102, 0, 7)
    assert layout.unpack(b"\x01\x02\x00\x07").b == 7
    with pytest.raises(wire.ContractError, match="p: bit<9>"):
        wire.HeaderLayout("u_t", wire.load_header("u_t", headers))
    with pytest.raises(wire.ContractError, match="no header v_t"):
        wire.load_header("v_t", headers)


def test_every_constant_in_the_header_is_exposed():
    for name, value in wire.load_constants().items():
        if name.startswith("SIZE_"):
            programs = [p for p, sizes in wire.TABLE_SIZES.items() if (name, value) in sizes.values()]
            assert programs == ([p for p in PROGRAMS if name.startswith(f"SIZE_{p.upper()}_")] or list(PROGRAMS)), name
        else:
            assert getattr(wire, name) == value, name
