"""One P4 <-> Python contract: every shared constant, size and layout is read from the P4 source,
checked here against the compiled program, and never copied by hand into Python."""
from __future__ import annotations

import ast
import json
import shutil

import pytest

from p4handoff.controller.p4runtime import P4Info
from p4handoff import wire

from tests.source_tree import REPO, product_modules

OTHER_PYTHON_TREES = ("ptf-tests", "bench")       # beside the product's own modules


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[P4Info, dict]:
    """p4src/v1model/bs.p4 compiled now (so a stale build/ cannot hide a drift): its P4Info and BMv2 JSON."""
    from p4handoff.bmv2 import P4C, compile_p4
    if shutil.which(P4C) is None:
        pytest.skip(f"'{P4C}' (p4c for BMv2) is not on PATH")
    p4info, config = compile_p4(REPO / "p4src" / "v1model" / "bs.p4", tmp_path_factory.mktemp("bs"),
                                include_dirs=[REPO / "p4src" / "include"])
    return P4Info.load(p4info), json.loads(config.read_text())


@pytest.mark.slow   # compiles p4src/v1model/bs.p4 (~8 s) when p4c is here
def test_every_table_size_is_the_compiled_size_and_every_keyed_table_has_one(compiled):
    p4info, _ = compiled
    sizes = {t.preamble.name: t.size for t in p4info.proto.tables}
    assert {name: sizes.get(name) for name in wire.TABLE_SIZES} == wire.TABLE_SIZES
    keyed = {t.preamble.name for t in p4info.proto.tables if t.match_fields}
    assert keyed == set(wire.TABLE_SIZES)


@pytest.mark.slow   # compiles p4src/v1model/bs.p4 (~8 s) when p4c is here
def test_packet_out_bytes_is_the_packet_out_header(compiled):
    p4info, _ = compiled
    widths = [m.bitwidth for m in p4info.controller_metadata("packet_out").metadata]
    assert sum(widths) == 8 * wire.PACKET_OUT_BYTES


@pytest.mark.slow   # compiles p4src/v1model/bs.p4 (~8 s) when p4c is here
def test_telemetry_layout_is_the_compiled_header(compiled):
    _, config = compiled
    [header] = [h for h in config["header_types"] if h["name"] == "telemetry_t"]
    assert [(name, width) for name, width, _signed in header["fields"]] == wire.TELEMETRY.fields
    assert wire.TELEMETRY.size == sum(w for _, w in wire.TELEMETRY.fields) // 8 == 24


@pytest.mark.slow   # compiles p4src/v1model/bs.p4 (~8 s) when p4c is here
def test_random_number_is_drawn_below_prob_one(compiled):
    _, config = compiled
    bounds = [int(p["parameters"][2]["value"], 16) for a in config["actions"] for p in a["primitives"]
              if p["op"] == "modify_field_rng_uniform"]
    assert bounds == [wire.PROB_ONE - 1]


def test_derived_values_follow_their_bit_counts():
    assert wire.PROB_ONE == 1 << wire.PROB_BITS
    assert wire.DECAY_ONE == 1 << wire.DECAY_FRAC_BITS
    assert wire.AQM_MODES == {"droptail": wire.AQM_MODE_DROPTAIL, "red": wire.AQM_MODE_RED,
                              "mred": wire.AQM_MODE_MRED}
    assert wire.TELEMETRY_AQM_MODE_NONE not in wire.AQM_MODES.values()


def _literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int)
    if isinstance(node, ast.BinOp):
        return _literal(node.left) and _literal(node.right)
    return False


def test_no_python_module_writes_a_shared_value_by_hand():
    shared = set(wire.load_constants())
    copies = []
    python = list(product_modules().values()) + [p for tree in OTHER_PYTHON_TREES for p in (REPO / tree).rglob("*.py")]
    for path in sorted(p for p in python if p != REPO / "p4handoff" / "wire.py"):
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AnnAssign) else [])
            value = getattr(node, "value", None)
            for t in targets:
                if isinstance(t, ast.Name) and t.id in shared and value is not None and _literal(value):
                    copies.append(f"{path.relative_to(REPO)}:{node.lineno} {t.id}")
    assert copies == []


def test_a_network_that_overflows_a_table_is_refused_naming_it(monkeypatch, capsys):
    from p4handoff.cli import ctl as cli
    from p4handoff.cli.main import main
    from p4handoff.controller.network import load_network
    from p4handoff.controller.programmer import Programmer
    example = REPO / "topo" / "three-switch.yaml"
    net = load_network(example)
    assert Programmer(net).capacity_problems() == []
    need = len([e for e in Programmer(net).static_entries("gw") if e.table == "ipv4_fwd"]) + len(net.mobile_hosts)
    monkeypatch.setitem(wire.TABLE_SIZES, "ipv4_fwd", need - 1)
    assert ("gw", f"{need} entries for table ipv4_fwd exceed its size {need - 1} (SIZE_IPV4_FWD, "
                  "p4src/include/size.p4)") in Programmer(net).capacity_problems()
    assert main(["ctl", "validate", "--network", str(example)]) == cli.EXIT_INVALID
    assert "switches[0]: " in capsys.readouterr().err
