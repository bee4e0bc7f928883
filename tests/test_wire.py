"""Constants are read from the P4 header, the single source of truth."""
from pathlib import Path

from p4handoff import wire


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


def test_every_constant_in_the_header_is_exposed():
    for name, value in wire.load_constants().items():
        assert getattr(wire, name) == value, name
