"""p4handoff/argtypes.py: each argparse type's accepted values and errors; no command line defines its own type."""
from __future__ import annotations

import argparse
import ast
from pathlib import Path
from typing import Any, Callable

import pytest

from p4handoff import argtypes
from p4handoff.hosts.cc import SCHEMES
from p4handoff.scenario.units import parse_rate, parse_time
from tests.source_tree import REPO, product_modules


@pytest.mark.parametrize("parse, text, value", [
    (argtypes.whole_number(1), "3", 3),
    (argtypes.whole_number(0), "0", 0),
    (argtypes.real_number(0, above=True), "0.5", 0.5),
    (argtypes.real_number(0), "0", 0.0),
    (argtypes.probability, "1", 1.0),
    (argtypes.byte_count, "64k", 64_000),
    (argtypes.byte_count, "5M", 5_000_000),
    (argtypes.port_number, "0", 0),
    (argtypes.address_port(5001), "10.0.0.2", ("10.0.0.2", 5001)),
    (argtypes.address_port(5001), "10.0.0.2:80", ("10.0.0.2", 80)),
    (argtypes.ipv4_address, "10.0.0.2", "10.0.0.2"),
    (argtypes.parsed_by(parse_time), "3ms", 0.003),
    (argtypes.optional(argtypes.parsed_by(parse_rate), "none", "0"), "2Mbps", 2e6),
    (argtypes.optional(argtypes.parsed_by(parse_rate), "none", "0"), "none", None),
    (argtypes.optional(argtypes.parsed_by(parse_rate), "none", "0"), "0", None),
    (argtypes.one_of(SCHEMES, "scheme"), "cdg", "cdg"),
    (argtypes.name_list(SCHEMES, "scheme"), "newreno, ucc", ("newreno", "ucc")),
    (argtypes.yaml_assignment, "a.b=[1, 2]", ("a.b", [1, 2])),
    (argtypes.yaml_values, "topology.x.limit=5,10ms", ("topology.x.limit", (5, "10ms"))),
])
def test_accepts(parse: Callable[[str], Any], text: str, value: object) -> None:
    assert parse(text) == value


@pytest.mark.parametrize("parse, text, message", [
    (argtypes.whole_number(1), "x", "not a whole number: 'x'"),
    (argtypes.whole_number(1), "1.5", "not a whole number: '1.5'"),
    (argtypes.whole_number(1), "0", "must be >= 1, got 0"),
    (argtypes.real_number(0, above=True), "0", "must be > 0, got '0'"),
    (argtypes.real_number(0, above=True), "-1", "must be > 0, got '-1'"),
    (argtypes.real_number(0), "-0.1", "must be >= 0, got '-0.1'"),
    (argtypes.real_number(0), "soon", "not a number: 'soon'"),
    (argtypes.real_number(0), "nan", "must be a finite number, got 'nan'"),
    (argtypes.real_number(0), "inf", "must be a finite number, got 'inf'"),
    (argtypes.probability, "1.5", "must be within 0..1, got 1.5"),
    (argtypes.probability, "-0.5", "must be >= 0, got '-0.5'"),
    (argtypes.probability, "half", "not a number: 'half'"),
    (argtypes.byte_count, "lots", "not a byte count: 'lots'"),
    (argtypes.byte_count, "k", "not a byte count: 'k'"),
    (argtypes.byte_count, "0", "byte count must be > 0, got '0'"),
    (argtypes.byte_count, "-5M", "byte count must be > 0, got '-5M'"),
    (argtypes.port_number, "http", "not a port number: 'http'"),
    (argtypes.port_number, "65536", "port must be 0..65535, got 65536"),
    (argtypes.port_number, "-1", "port must be 0..65535, got -1"),
    (argtypes.address_port(5001), "10.0.0", "not an IPv4 address: '10.0.0' (expected ADDR or ADDR:PORT)"),
    (argtypes.address_port(5001), "10.0.0.2:99999", "port must be 0..65535, got 99999"),
    (argtypes.address_port(5001), "10.0.0.2:0", "destination port must be 1..65535"),
    (argtypes.address_port(0), "10.0.0.2", "destination port must be 1..65535"),
    (argtypes.ipv4_address, "::1", "not an IPv4 address: '::1'"),
    (argtypes.optional(argtypes.parsed_by(parse_rate), "none"), "fast", "not a rate: 'fast'"),
    (argtypes.parsed_by(parse_rate), "-2Mbps", "rate must be positive, got '-2Mbps'"),
    (argtypes.parsed_by(parse_time), "soon", "not a time: 'soon'"),
    (argtypes.parsed_by(parse_time), "-3ms", "time must be >= 0, got '-3ms'"),
    (argtypes.one_of(SCHEMES, "scheme"), "cubic", "unknown scheme 'cubic'; known: newreno,"),
    (argtypes.one_of(["a", "b"], "colour"), "a,b", "one colour, got 2: 'a,b'"),
    (argtypes.name_list(["a", "b"], "colour"), " , ", "give at least one colour (known: a, b)"),
    (argtypes.name_list(SCHEMES, "scheme"), "newreno,tahoe,cubic", "unknown scheme 'tahoe', 'cubic'; known: newreno,"),
    (argtypes.yaml_assignment, "limit", "expected PATH=VALUE, got 'limit'"),
    (argtypes.yaml_assignment, "=5", "expected PATH=VALUE, got '=5'"),
    (argtypes.yaml_assignment, "a=[1", "'a=[1': value is not YAML"),
    (argtypes.yaml_values, "a=", "expected PATH=V1,V2,..., got 'a='"),
    (argtypes.yaml_values, "a=1,{", "'a=1,{': a value is not YAML"),
])
def test_rejects_with_a_message(parse: Callable[[str], Any], text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as info:
        parse(text)
    assert str(info.value).startswith(message)


def test_argparse_reports_a_bad_value_as_a_usage_error_naming_the_option(capsys: pytest.CaptureFixture) -> None:
    p = argparse.ArgumentParser(prog="x")
    p.add_argument("--loss", type=argtypes.probability)
    with pytest.raises(SystemExit) as info:
        p.parse_args(["--loss", "2"])
    assert info.value.code == 2
    assert "argument --loss: must be within 0..1, got 2.0" in capsys.readouterr().err


# Converters that check nothing at parse time: a path is checked where it is opened.
PLAIN = {"Path", "str"}


def _argtype_names(tree: ast.Module) -> set[str]:
    """The names a module binds from p4handoff.argtypes (`from p4handoff.argtypes import ...`)."""
    return {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            and node.module == "p4handoff.argtypes" for a in node.names}


def foreign_types(path: Path) -> list[str]:
    """`add_argument(..., type=X)` calls in a module whose X is neither from p4handoff.argtypes nor in PLAIN."""
    tree = ast.parse(path.read_text(), str(path))
    ours = _argtype_names(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        for kw in node.keywords:
            if kw.arg != "type":
                continue
            value = kw.value.func if isinstance(kw.value, ast.Call) else kw.value
            if not (isinstance(value, ast.Name) and (value.id in ours or value.id in PLAIN)):
                found.append(f"{path}:{node.lineno}: type={ast.unparse(kw.value)}")
    return found


def test_every_command_line_takes_its_types_from_argtypes() -> None:
    modules = [*product_modules().values(), *sorted((REPO / "bench").glob("*.py"))]
    users = [p for p in modules if "add_argument" in p.read_text()]
    assert len(users) >= 14   # cli: run, host, ctl, schema; the emulator, fuzz, chaos, protogen; 7 bench scripts
    assert [line for p in users for line in foreign_types(p)] == []


def test_the_walk_finds_a_type_of_its_own(tmp_path: Path) -> None:
    mod = tmp_path / "m.py"
    mod.write_text("from pathlib import Path\nfrom p4handoff.argtypes import whole_number\n"
                   "def own(t): return t\n"
                   "p.add_argument('--a', type=whole_number(1))\np.add_argument('--b', type=Path)\n"
                   "p.add_argument('--c', type=int)\np.add_argument('--d', type=own)\n"
                   "p.add_argument('--e', type=lambda t: t)\n")
    assert [line.split(": ", 1)[1] for line in foreign_types(mod)] == ["type=int", "type=own", "type=lambda t: t"]
