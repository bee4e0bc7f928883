"""One P4 <-> Python contract: every shared constant, size and layout is read from the P4 source,
checked here against the compiled program, and never copied by hand into Python."""
from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import pytest

from p4handoff.controller.p4runtime import P4Info
from p4handoff import wire
from p4handoff.paths import PROGRAMS, TNA, V1MODEL

from tests.source_tree import REPO, product_modules

OTHER_PYTHON_TREES = ("ptf-tests", "bench")       # beside the product's own modules
# make test (--dist loadgroup): one worker runs the module, so p4src/v1model/bs.p4 is compiled once, not per worker
pytestmark = pytest.mark.xdist_group("compiled-bs")


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
    v1model = {table: size.entries for table, size in wire.TABLE_SIZES[V1MODEL].items()}
    assert {name: sizes.get(name) for name in v1model} == v1model
    keyed = {t.preamble.name for t in p4info.proto.tables if t.match_fields}
    assert keyed == set(v1model)


_P4_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_P4_INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"', re.M)
_P4_TABLE = re.compile(r'((?:@\w+(?:\([^)]*\))?\s*)*)\btable\s+(\w+)\s*\{')
_P4_NAME = re.compile(r'@name\("\.?(\w+)"\)')
PROGRAM_SOURCES = {V1MODEL: REPO / "p4src" / "v1model" / "bs.p4", TNA: REPO / "p4src" / "tna" / "bs_tna.p4"}


def _sources(top: Path, seen: dict[Path, str] | None = None) -> dict[Path, str]:
    """Every P4 file a program's top file includes with quotes (angle brackets: the target's own), comments out."""
    seen = {} if seen is None else seen
    top = top.resolve()
    if top not in seen:
        seen[top] = _P4_COMMENT.sub(" ", top.read_text())
        for include in _P4_INCLUDE.findall(seen[top]):
            _sources(top.parent / include, seen)
    return seen


def _body(text: str, open_brace: int) -> str:
    depth = 0
    for i in range(open_brace, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[open_brace:i + 1]
    raise AssertionError("unbalanced braces")


def declared_sizes(top: Path) -> dict[str, str | None]:
    """Keyed table the controller sees (its P4Info name; @hidden ones left out) -> the expression of its
    `size`, over every source of a program."""
    out: dict[str, str | None] = {}
    for text in _sources(top).values():
        for m in _P4_TABLE.finditer(text):
            body = _body(text, m.end() - 1)
            if "@hidden" not in m.group(1) and re.search(r"\bkey\s*=", body):
                size = re.search(r"\bsize\s*=\s*([^;]+);", body)
                name = _P4_NAME.search(m.group(1))
                out[name.group(1) if name else m.group(2)] = size.group(1).strip() if size else None
    return out


@pytest.mark.parametrize("program", PROGRAMS)
def test_every_keyed_table_of_both_programs_takes_its_size_from_size_p4(program):
    """Both programs, TNA's too without its compiler: each keyed table's `size` is the size.p4 constant
    wire.TABLE_SIZES gives that program, and size.p4 sizes no table the program lacks."""
    sizes = wire.TABLE_SIZES[program]
    assert declared_sizes(PROGRAM_SOURCES[program]) == {table: size.constant for table, size in sizes.items()}
    assert "red_pa_gap" in wire.TABLE_SIZES[TNA] and "red_pa_gap" not in wire.TABLE_SIZES[V1MODEL]


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
    monkeypatch.setitem(wire.TABLE_SIZES[V1MODEL], "ipv4_fwd", wire.TableSize("SIZE_IPV4_FWD", need - 1))
    assert ("gw", f"{need} entries for table ipv4_fwd exceed its size {need - 1} (SIZE_IPV4_FWD, "
                  "p4src/include/size.p4)") in Programmer(net).capacity_problems()
    assert main(["ctl", "validate", "--network", str(example)]) == cli.EXIT_INVALID
    assert "switches[0]: " in capsys.readouterr().err


def test_tna_capacity_is_checked_on_its_own_tables(tmp_path):
    """Two RED profiles with the papers' parameters fit v1model's red_pa but not TNA's red_pa_gap."""
    from p4handoff.controller.network import load_network
    from p4handoff.controller.programmer import Programmer
    text = (REPO / "topo" / "three-switch.yaml").read_text()
    extra = ("      - number: 4\n        role: access\n        aqm: {mode: red, limit: 300, min_th: 100,"
             " max_th: 200, max_p: 0.021, w_q: 0.001953125}\n")
    bs1_peers = "      - {number: 2, role: peer, peer: gw}\n      - {number: 3, role: peer, peer: bs2}\n"
    text = text.replace(bs1_peers, bs1_peers + extra, 1)
    (tmp_path / "net.yaml").write_text(text)
    net = load_network(tmp_path / "net.yaml")
    assert Programmer(net, V1MODEL).capacity_problems() == []
    [(switch, problem)] = Programmer(net, TNA).capacity_problems()
    need = sum(e.table == "red_pa_gap" for e in Programmer(net, TNA).static_entries("bs1"))
    assert switch == "bs1" and need > wire.TABLE_SIZES[TNA]["red_pa_gap"].entries
    assert problem == (f"{need} entries for table red_pa_gap exceed its size 11264 (SIZE_TNA_RED_PA_GAP, "
                       f"p4src/include/size.p4)")


def test_port_and_queue_bounds_are_the_p4_constants():
    """PORT_MAX and QUEUE_MAX (constants.p4) bound the description, the AQM model and the punt handler."""
    from p4handoff.controller.aqm_tables import PortAqm
    from p4handoff.controller.network_aqm import AqmConfig
    from p4handoff.controller.network import Port
    assert wire.PORT_MAX == wire.PORT_SLOTS - 2                       # 511 is BMv2's drop port
    assert wire.QUEUE_MAX == (1 << (32 - wire.AVG_FRAC_BITS)) - 1   # the integer part of the Q16.16 average
    assert Port(number=wire.PORT_MAX, role="core").number == wire.PORT_MAX
    with pytest.raises(ValueError, match="out of range"):
        Port(number=wire.PORT_MAX + 1, role="core")
    assert AqmConfig(limit=wire.QUEUE_MAX).port_aqm(wire.PORT_MAX).limit == wire.QUEUE_MAX
    with pytest.raises(ValueError, match="out of range"):
        AqmConfig(limit=wire.QUEUE_MAX + 1)
    with pytest.raises(ValueError, match="port"):
        PortAqm(wire.PORT_MAX + 1, wire.AQM_MODE_DROPTAIL, 10, 5)


@pytest.mark.slow
def test_slot_counts_are_the_compiled_counter_and_register_sizes(compiled):
    """PORT_CLASS_SLOTS and PORT_REASON_SLOTS (constants.p4, both programs) size the per-class and per-reason
    state of the compiled v1model program."""
    _, config = compiled
    sizes = {a["name"].rpartition(".")[2]: a["size"] for kind in ("counter_arrays", "register_arrays")
             for a in config[kind]}
    assert {sizes[n] for n in ("aqm_enqueued", "aqm_red_dropped", "occupancy", "empty_since")} == {
        wire.PORT_CLASS_SLOTS}
    assert {sizes[n] for n in ("malformed", "fwd_dropped", "punted")} == {wire.PORT_REASON_SLOTS}
    assert wire.PORT_CLASS_SLOTS == wire.PORT_SLOTS * wire.AQM_CLASS_STRIDE
    assert wire.PORT_REASON_SLOTS == wire.PORT_SLOTS * wire.REASON_STRIDE


_TNA_INDEXED = re.compile(r"\b(?:Counter<bit<\d+>,|Meter<)\s*bit<([^<>]+)>>\((\w+)")


def test_tna_index_widths_are_named_for_their_slot_counts():
    """A TNA counter or meter takes its index type from constants.p4 (bit<(PORT_CLASS_BITS)> for PORT_CLASS_SLOTS
    slots, ...), and each slot count is 2 to the power of its width: a width written by hand could drift from
    the slots (bf-p4c would then refuse an index, or leave slots unreachable)."""
    width_of = {"PORT_SLOTS": "PORT_BITS", "PORT_CLASS_SLOTS": "PORT_CLASS_BITS", "PORT_REASON_SLOTS": "PORT_REASON_BITS"}
    found = [(path.name, width.strip(), slots) for path, text in _sources(PROGRAM_SOURCES[TNA]).items()
             for width, slots in _TNA_INDEXED.findall(text)]
    assert len(found) >= 10, found           # aqm_* (5), priority_admitted, sanitised, the reasons' (3), punt_budget
    assert [f for f in found if f[1] != f"({width_of.get(f[2])})"] == []
    for slots, width in width_of.items():
        assert getattr(wire, slots) == 1 << getattr(wire, width), slots
