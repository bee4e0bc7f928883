"""The TNA port (issue 10): the controller's one mapping (controller/tofino.py) and the P4Info parity
of the two programs on exactly the entities the controller uses.

The compiled-program tests need the open-source Tofino back end of p4c
(bf-p4c, the driver `make toolchain-tofino` links); `make test` compiles both targets first when it is
on PATH, and each test skips by name with the reason otherwise.
"""
from __future__ import annotations

import json
import math
import os
import random
import shutil
from pathlib import Path

import pytest

from p4handoff.controller.aqm_tables import AVG_ONE, PortAqm, RedParams, pa_thresholds, pb_level_ranges, port_entries
from p4handoff.controller.network import load_network
from p4handoff.controller.p4runtime import P4Info, TableEntry
from p4handoff.controller.p4runtime.entities import encode_table_entry
from p4handoff.controller.port_counters import PORT_COUNTERS
from p4handoff.controller.programmer import Programmer
from p4handoff.controller.targets import aqm_builder
from p4handoff.controller.tofino import (TNA_PROB_ONE, TnaQueues, cell_ranges, gap_prefixes, gap_ranges, lpf_error_report,
                               lpf_time_constant_ns, pa_quantisation_error, red_pa_gap_entries,
                               scale_port, tna_thresholds)
from p4handoff.wire import AQM_MODE_MRED, AQM_MODE_RED, PROB_ONE, TNA_PROB_BITS

ROOT = Path(__file__).resolve().parents[1]
NET = load_network(ROOT / "topo" / "three-switch.yaml")
V1_P4INFO = ROOT / "build" / "bs.p4info.txtpb"
TNA_TARGETS = ("tofino", "tofino2")
TNA_DIR = ROOT / "build" / "tofino"
PAPER = RedParams(80, 160, 0.02, 9, mean_pkt_time_us=2048.0)
LAB = RedParams(20, 60, 0.1, 4, mean_pkt_time_us=1000.0)
COUNTERS = (*PORT_COUNTERS, "priority_admitted", "sanitised")
PACKET_METADATA = ("packet_in", "packet_out")


def tofino_compiler() -> str | None:
    """The driver `make build-tofino` uses (P4C_TOFINO, else bf-p4c on PATH)."""
    return shutil.which(os.environ.get("P4C_TOFINO") or "bf-p4c")


def tna_p4info_path(target: str) -> Path:
    return TNA_DIR / target / "bs_tna.p4info.txtpb"


def load_tna(target: str) -> P4Info:
    path = tna_p4info_path(target)
    if not path.exists():
        if tofino_compiler() is None:
            pytest.skip("no Tofino compiler (bf-p4c, or P4C_TOFINO) on PATH: the TNA program "
                        "is not compiled (README, 'Tofino')")
        pytest.skip(f"{path.relative_to(ROOT)} missing: run make build-tofino")
    return P4Info.load(path)


def load_v1() -> P4Info:
    if not V1_P4INFO.exists():
        pytest.skip("build/bs.p4info.txtpb missing: the v1model program is not compiled (make build, needs p4c)")
    return P4Info.load(V1_P4INFO)


def controller_entries(target: str) -> list[TableEntry]:
    """Every kind of entry the controller writes: a whole example network, plus a RED port."""
    p = Programmer(NET, target)
    entries = [e for sw in NET.switches for e in p.static_entries(sw.name)] + [p.ipf_config()]
    red = PortAqm(9, AQM_MODE_RED, limit=64, dummy_threshold=48, profile=3, red=LAB)
    return entries + aqm_builder(target)(red)


# -- the mapping -------------------------------------------------------------------------------------

@pytest.mark.parametrize("p_b", [0.5, 0.1, 0.02, 0.0031, 0.0004])
def test_gap_ranges_drop_exactly_when_the_threshold_does(p_b):
    thresholds = pa_thresholds(p_b)
    ranges = gap_ranges(thresholds)
    assert ranges[0][0] == 0 and ranges[-1][1] == PROB_ONE - 1
    assert all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:]))          # a tiling, no gaps
    rng = random.Random(p_b)
    rnds = [0, PROB_ONE - 1, *thresholds[:50], *(rng.randrange(PROB_ONE) for _ in range(300))]
    for rnd in rnds:
        [c_star] = [c for low, high, c in ranges if low <= rnd <= high]
        for count in range(len(thresholds) + 2):
            v1_drops = count >= len(thresholds) or rnd < thresholds[count]
            assert (count >= c_star) == v1_drops, (rnd, count)


def lpm_lookup_all(prefixes: list[tuple[int, int, int]], default: int = 0) -> list[int]:
    """What a longest-prefix-match table of `prefixes` answers for every TNA_PROB_BITS-bit number."""
    out = [default] * TNA_PROB_ONE
    for value, plen, result in sorted(prefixes, key=lambda p: p[1]):      # longer prefixes paint last
        assert value % (1 << (TNA_PROB_BITS - plen)) == 0, (value, plen)   # no bits beyond the prefix
        width = 1 << (TNA_PROB_BITS - plen)
        out[value:value + width] = [result] * width
    return out


def prefix_count(low: int, high: int) -> int:
    """How many prefixes cover exactly [low, high] (the greedy split, which is the fewest)."""
    n = 0
    while low <= high:
        size = low & -low or TNA_PROB_ONE
        while low + size - 1 > high:
            size //= 2
        low, n = low + size, n + 1
    return n


@pytest.mark.parametrize("red", [PAPER, LAB], ids=["paper", "lab"])
def test_gap_prefixes_answer_as_the_ranges_for_every_random_number(red):
    """red_pa_gap's prefixes, a miss being gap_certain (c* = 0), give every level's c* for all 2^16
    random numbers exactly as gap_ranges does: with test_gap_ranges_drop_exactly_when_the_threshold_does,
    the drop law decision for decision."""
    entries = red_pa_gap_entries(0, red)
    for _, _, level, p_b in pb_level_ranges(red):
        ranges = gap_ranges(tna_thresholds(pa_thresholds(p_b)), TNA_PROB_ONE)
        want = [0] * TNA_PROB_ONE
        for low, high, c_star in ranges:
            want[low:high + 1] = [c_star] * (high - low + 1)
        mine = [(e.match["rnd"][0], e.match["rnd"][1], e.params["count"]) for e in entries
                if e.match["level"] == level]
        assert mine == gap_prefixes(ranges)
        assert len({(v, plen) for v, plen, _ in mine}) == len(mine)               # no duplicate keys
        assert lpm_lookup_all(mine) == want, level
        # never more rows than the ranges cut into prefixes one by one (the miss serving c* = 0)
        assert len(mine) <= sum(prefix_count(low, high) for low, high, c_star in ranges if c_star)


def test_gap_prefixes_use_the_miss_and_the_enclosing_prefix():
    # [100, 2^16) -> 1 alone takes 12 prefixes; the /0 prefix -> 1 with [0, 99] carved back to 0
    # (the miss's value, but under the /0 it needs entries: 3 prefixes) takes 4, the fewest
    ranges = [(0, 99, 0), (100, TNA_PROB_ONE - 1, 1)]
    prefixes = gap_prefixes(ranges)
    assert prefix_count(100, TNA_PROB_ONE - 1) == 12 and len(prefixes) == 4
    assert lpm_lookup_all(prefixes) == [0] * 100 + [1] * (TNA_PROB_ONE - 100)
    assert gap_prefixes([(0, TNA_PROB_ONE - 1, 3)]) == [(0, 0, 3)]       # one value: the /0 prefix
    assert gap_prefixes([(0, TNA_PROB_ONE - 1, 0)]) == []                 # all misses


@pytest.mark.parametrize("red", [PAPER, LAB], ids=["paper", "lab"])
def test_tna_thresholds_round_p_a_to_the_16_bit_grid(red):
    for _, _, _, p_b in pb_level_ranges(red):
        v1 = pa_thresholds(p_b)
        t16 = tna_thresholds(v1)
        assert t16 == sorted(t16)                                   # gap_ranges needs them non-decreasing
        assert all(abs(a / TNA_PROB_ONE - b / PROB_ONE) <= 0.5 / TNA_PROB_ONE for a, b in zip(t16, v1))
        ranges = gap_ranges(t16, TNA_PROB_ONE)
        assert ranges[0][0] == 0 and ranges[-1][1] == TNA_PROB_ONE - 1
    err = pa_quantisation_error(red)
    assert err["pa_abs_error_max"] <= 0.5 / TNA_PROB_ONE and err["pa_rel_error_max"] < 0.05


def test_cell_ranges_tile_the_band_in_whole_cells():
    red = scale_port(PortAqm(2, AQM_MODE_RED, limit=64 * 19, dummy_threshold=48, red=PAPER), TnaQueues()).red
    cells = cell_ranges(pb_level_ranges(red))
    assert cells[0][0] == red.min_fp // AVG_ONE and cells[-1][1] == red.max_fp // AVG_ONE - 1
    assert all(a[1] + 1 == b[0] and a[2] < b[2] for a, b in zip(cells, cells[1:]))


def test_v1model_entries_are_untouched():
    assert aqm_builder("v1model") is port_entries


def test_tna_entries_are_in_cells_with_gap_ranges_and_no_idle_table():
    cfg = PortAqm(2, AQM_MODE_MRED, limit=64, dummy_threshold=48, profile=1, red=LAB)
    c = TnaQueues(packet_bytes=1500).cells_per_packet
    assert c == 19
    entries = aqm_builder("tna")(cfg)
    tables = {e.table for e in entries}
    assert tables == {"aqm_port", "red_pb", "red_pa_gap"}
    [port] = [e for e in entries if e.table == "aqm_port"]
    v1 = port_entries(cfg)[0]
    for name in ("qlimit", "dummy_th", "min_th", "max_th"):
        assert port.params[name] == v1.params[name] * c, name
    pb_v1 = [e.match["avg"] for e in port_entries(cfg) if e.table == "red_pb"]
    pb_tna = [e.match["avg"] for e in entries if e.table == "red_pb"]
    # whole cells: the band starts at min_th and ends below max_th, both in cells
    assert pb_tna[0][0] == pb_v1[0][0] * c // AVG_ONE and pb_tna[-1][1] + 1 == (pb_v1[-1][1] + 1) * c // AVG_ONE
    assert all(a[1] + 1 == b[0] for a, b in zip(pb_tna, pb_tna[1:]))
    assert all(e.match["profile"] == 1 and e.priority == 0 and len(e.match["rnd"]) == 2
               for e in entries if e.table == "red_pa_gap")


def test_scaling_keeps_the_port_valid_and_refuses_bad_targets():
    cfg = PortAqm(2, AQM_MODE_RED, limit=100, dummy_threshold=80, red=LAB)
    scaled = scale_port(cfg, TnaQueues(packet_bytes=160))
    assert (scaled.limit, scaled.dummy_threshold, scaled.red.min_th, scaled.red.max_th) == (200, 160, 40, 120)
    with pytest.raises(ValueError, match="target"):
        aqm_builder("psa")
    with pytest.raises(ValueError, match="target"):
        Programmer(NET, "psa")


def test_the_programmer_maps_only_aqm_entries():
    v1, tna = controller_entries("v1model"), controller_entries("tna")
    aqm = {"aqm_port", "red_pb", "red_pa", "red_pa_gap", "aqm_idle"}
    assert [e for e in v1 if e.table not in aqm] == [e for e in tna if e.table not in aqm]
    assert {e.table for e in tna} & {"red_pa", "aqm_idle"} == set()
    assert {e.table for e in v1} & {"red_pa_gap"} == set()


def test_lpf_matches_the_ewma_when_arrivals_are_paced():
    for red in (PAPER, LAB):
        report = lpf_error_report(red)
        assert report["paced_abs_diff_packets_max"] < 0.01      # the fixed point's truncation only
        assert report["bursty_abs_diff_packets_max"] > 1.0       # the semantic difference docs/tofino.md states
    assert lpf_time_constant_ns(LAB) == pytest.approx(1000e3 / -math.log1p(-1 / 16))


# -- the compiled programs -----------------------------------------------------------------------------

@pytest.mark.parametrize("target", TNA_TARGETS)
def test_tna_program_compiles(target):
    log = TNA_DIR / f"{target}.log"
    if tofino_compiler() is not None and log.exists() and not tna_p4info_path(target).exists():
        text = log.read_text()
        tail = "\n".join(text.splitlines()[-4:])    # "supports up to 12 stages, using N" when it does not fit
        pytest.fail(f"make build-tofino failed for {target} ({log.relative_to(ROOT)}):\n{tail}")
    load_tna(target)
    out = TNA_DIR / target
    produced = {p.name for p in out.rglob("*")}
    assert {"context.json", "bfrt.json"} <= produced, sorted(produced)
    assert any(name.endswith(".bin") for name in produced), sorted(produced)


@pytest.mark.parametrize("target", TNA_TARGETS)
@pytest.mark.parametrize("red", [PAPER, LAB], ids=["paper", "lab"])
def test_red_pa_gap_entries_fit_the_table(target, red):
    p4info = load_tna(target)
    size = p4info.table("red_pa_gap").size
    assert len(red_pa_gap_entries(0, red)) <= size


@pytest.mark.parametrize("target", TNA_TARGETS)
def test_controller_entries_encode_against_the_tna_p4info(target):
    p4info = load_tna(target)
    for entry in controller_entries("tna"):
        encode_table_entry(p4info, entry)


def _table_shape(p4info: P4Info, name: str) -> tuple:
    t = p4info.table(name)
    fields = tuple((f.name, f.bitwidth, f.match_type) for f in t.match_fields)
    actions = tuple(sorted(p4info.actions.get_id(r.id).preamble.name for r in t.action_refs))
    return fields, actions


def _action_shape(p4info: P4Info, name: str) -> tuple:
    return tuple((p.name, p.bitwidth) for p in p4info.action(name).params)


@pytest.mark.parametrize("target", TNA_TARGETS)
def test_p4info_parity_on_what_the_controller_uses(target):
    tna, v1 = load_tna(target), load_v1()
    v1_entries, tna_entries = controller_entries("v1model"), controller_entries("tna")
    shared_tables = {e.table for e in v1_entries} & {e.table for e in tna_entries}
    assert shared_tables >= {"port_role", "ipf_peer", "tunnel_term", "arp_gateway", "ipv4_fwd", "ipf_config",
                             "aqm_port", "red_pb"}
    for table in sorted(shared_tables - {"red_pb"}):
        assert _table_shape(tna, table) == _table_shape(v1, table), table
    # the one mapped key: red_pb matches whole cells (16 bits) on TNA, the Q16.16 average on v1model
    (v1_fields, v1_actions), (tna_fields, tna_actions) = _table_shape(v1, "red_pb"), _table_shape(tna, "red_pb")
    assert v1_actions == tna_actions and [f[0] for f in v1_fields] == [f[0] for f in tna_fields]
    assert dict((f[0], f[1]) for f in tna_fields)["avg"] == 16 and dict((f[0], f[1]) for f in v1_fields)["avg"] == 32
    for action in sorted({e.action for e in v1_entries if e.table in shared_tables}):
        assert _action_shape(tna, action) == _action_shape(v1, action), action
    for name in COUNTERS:
        a, b = tna.counter(name), v1.counter(name)
        assert (a.size, a.spec.unit) == (b.size, b.spec.unit), name
    for name in PACKET_METADATA:
        a, b = tna.controller_metadata(name), v1.controller_metadata(name)
        assert [(m.name, m.bitwidth) for m in a.metadata] == [(m.name, m.bitwidth) for m in b.metadata], name


# -- make tofino-resources -----------------------------------------------------------------------------

def _stage(number: int, srams: int, tcams: int, hash_bits: int = 0) -> dict:
    return {"stage_number": number,
            "rams": {"nRows": 8, "nColumns": 10, "srams": [{}] * srams},
            "tcams": {"nRows": 12, "nColumns": 2, "tcams": [{}] * tcams},
            "hash_bits": {"nBits": 52, "nFunctions": 8, "bits": [{}] * hash_bits}}


def test_resources_count_stages_up_to_the_last_busy_one(tmp_path):
    from p4handoff.tofino_resources import collect, main, report

    out = tmp_path / "tofino"
    (out / "pipe" / "logs").mkdir(parents=True)
    doc = {"resources": {"mau": {"nStages": 12, "mau_stages": [
        _stage(0, 4, 0, 10), _stage(1, 0, 0), _stage(2, 1, 3), _stage(3, 0, 0)]}}}
    (out / "pipe" / "logs" / "resources.json").write_text(json.dumps(doc))
    usage = collect(out)
    assert usage.stages == 3 and usage.stages_available == 12
    assert usage.used == {"sram": 5, "tcam": 3, "map_ram": 0, "gateway": 0, "hash_bit": 10, "hash_dist": 0}
    assert usage.available["sram"] == 4 * 80
    lines = report(usage)
    assert lines[0] == "tofino_stages: 3" and "  sram: 5 of 320 (1.6 %)" in lines
    assert main([str(tmp_path / "missing")]) == 1
    # a layout the assembler refused (more stages than the chip has) still reports what it used
    doc["resources"]["mau"]["mau_stages"] += [_stage(n, 1, 0) for n in range(4, 15)]
    (out / "pipe" / "logs" / "resources.json").write_text(json.dumps(doc))
    assert report(collect(out))[0] == "tofino_stages: 15 (does not fit: 12)"


@pytest.mark.parametrize("target", TNA_TARGETS)
def test_resources_parse_the_compilers_own_logs(target):
    from p4handoff.tofino_resources import collect, report

    load_tna(target)
    usage = collect(TNA_DIR / target)
    assert 0 < usage.stages <= usage.stages_available
    assert usage.used["sram"] > 0 and usage.used["tcam"] > 0 and usage.phv
    assert report(usage)[0] == f"{target}_stages: {usage.stages}"


# -- the controller driving a TNA build (controller.target) ---------------------------------------------

def _described(tmp_path: Path, **controller: object):
    """The example network with `controller` settings added, loaded as the daemon loads it."""
    import yaml

    raw = yaml.safe_load((ROOT / "topo" / "three-switch.yaml").read_text())
    raw["controller"].update(auth="none", keys=None, **controller)      # the target's files, not authentication
    path = tmp_path / "net.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_network(path)


@pytest.mark.parametrize("target", TNA_TARGETS)
def test_the_description_target_picks_the_tna_program_and_its_build(tmp_path, target):
    from p4handoff.controller.daemon import Daemon

    net = _described(tmp_path, target=target)
    assert net.controller.target == target
    assert net.controller.p4info == str(tna_p4info_path(target))
    assert net.controller.device_config == str(TNA_DIR / target / "pipe" / f"{target}.bin")
    assert Daemon(net, log=lambda *_: None).programmer.target == "tna"
    v1 = _described(tmp_path)
    assert (v1.controller.target, v1.controller.p4info) == ("v1model", str(V1_P4INFO))
    assert Daemon(v1, log=lambda *_: None).programmer.target == "v1model"
    # an explicit path still wins over the target's default
    assert _described(tmp_path, target=target, p4info="x.txtpb").controller.p4info == str((tmp_path / "x.txtpb"))


def test_an_unknown_target_is_refused_by_name(tmp_path):
    from p4handoff.controller.network import NetworkError

    with pytest.raises(NetworkError, match=r"controller\.target.*v1model, tofino, tofino2.*'bmv2'"):
        _described(tmp_path, target="bmv2")
    with pytest.raises(NetworkError, match=r"controller\.target"):
        _described(tmp_path, target=["tofino"])


@pytest.mark.parametrize("target", TNA_TARGETS)
def test_the_daemon_of_a_tna_description_writes_entries_its_p4info_takes(tmp_path, target):
    """Everything the daemon's programmer writes for a `target: tofino*` network (static state, the
    IPF codepoint, every kind of route) encodes against the P4Info the description points at."""
    from p4handoff.controller.daemon import Daemon
    from p4handoff.controller.intents import Deliver, Forward, Punt, Tunnel

    load_tna(target)   # skips by name when the TNA program is not compiled
    net = _described(tmp_path, target=target)
    p4info = P4Info.load(net.controller.p4info)
    programmer = Daemon(net, log=lambda *_: None).programmer
    routes = [programmer.route_entry("bs1", "10.0.1.1", action)
              for action in (Deliver(1, "02:00:00:00:01:01"), Tunnel("bs2", True), Tunnel("bs2", False), Punt())]
    routes.append(programmer.route_entry("gw", "10.0.1.1", Forward("bs1")))
    entries = [e for sw in net.switches for e in programmer.static_entries(sw.name)] + [programmer.ipf_config()]
    tables = {e.table for e in entries}
    assert {"red_pb", "red_pa_gap"} <= tables and not tables & {"red_pa", "aqm_idle"}   # M-RED access ports
    for entry in entries + routes:
        encode_table_entry(p4info, entry)
