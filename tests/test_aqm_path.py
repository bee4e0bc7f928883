"""One path for AQM parameters (issue 19, docs/aqm.md "One path"): the description's `AqmConfig` becomes a
`PortAqm` (the one model, the one validation) and the target's builder, chosen once, writes its entries;
the v1model path never runs code of controller/tofino.py."""
from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import yaml

from p4handoff.controller import aqm_tables, tofino
from p4handoff.controller.aqm_tables import AqmError, RedParams
from p4handoff.controller.network import Network, NetworkError, load_network, parse_network
from p4handoff.controller.programmer import Programmer
from p4handoff.controller.targets import aqm_builder

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "topo" / "three-switch.yaml"
BS1_AQM = {"mode": "red", "limit": 300, "min_th": 40, "max_th": 120, "max_p": 0.05, "w_q": 2.0 ** -7}


def _network(aqm: dict[str, Any]) -> Network:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["switches"][1]["ports"][0]["aqm"] = aqm
    return parse_network(raw)


def _files_run(call: Any) -> set[str]:
    """The source files of every Python function `call()` runs."""
    seen: set[str] = set()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            seen.add(frame.f_code.co_filename)
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return {str(Path(f).resolve()) for f in seen}


def test_the_builder_is_chosen_per_target():
    assert aqm_builder("v1model") is aqm_tables.port_entries
    tna = aqm_builder("tna")
    assert getattr(tna, "func", None) is tofino.port_entries
    with pytest.raises(ValueError, match="target must be one of"):
        aqm_builder("psa")


@pytest.mark.parametrize("target, runs_tofino", [("v1model", False), ("tna", True)])
def test_only_the_tna_path_runs_tofino_code(target, runs_tofino):
    programmer = Programmer(_network(BS1_AQM), target)
    files = _files_run(lambda: programmer.static_entries("bs1"))
    assert str(Path(aqm_tables.__file__).resolve()) in files
    assert (str(Path(tofino.__file__).resolve()) in files) is runs_tofino


@pytest.mark.parametrize("target, unit", [("v1model", 1), ("tna", 19)])
def test_each_parameter_reaches_the_entry_under_one_name(target, unit):
    """w_q = 2^-7 in the description is wq_shift 7 in the aqm_port entry; the thresholds keep their values
    (in cells of 80 bytes per 1500-byte packet on TNA)."""
    [entry] = [e for e in Programmer(_network(BS1_AQM), target).static_entries("bs1") if e.table == "aqm_port"]
    one = aqm_tables.AVG_ONE
    assert entry.params == {"mode": 1, "profile": 0, "qlimit": 300 * unit, "dummy_th": 150 * unit,
                            "min_th": 40 * unit * one, "max_th": 120 * unit * one, "wq_shift": 7}


def test_the_description_reports_the_models_own_check_at_its_field():
    """One validation: what PortAqm refuses, the description refuses at the field with the same words."""
    with pytest.raises(AqmError) as model:
        RedParams(min_th=100, max_th=100, max_p=0.05, wq_shift=7)
    with pytest.raises(NetworkError) as doc:
        _network({**BS1_AQM, "min_th": 100, "max_th": 100})
    assert dict(doc.value.errors) == {"switches[1].ports[0].aqm.max_th": model.value.problem}


def test_ports_share_a_profile_exactly_when_their_red_parameters_are_equal():
    net = load_network(EXAMPLE)
    aqm = net.switch("bs1").port(1).aqm
    assert aqm is not None
    assert aqm.port_aqm(1).red == aqm.port_aqm(7).red
    assert aqm.port_aqm(1).red != _network(BS1_AQM).switch("bs1").port(1).aqm.port_aqm(1).red
