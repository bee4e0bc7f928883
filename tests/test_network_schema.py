"""The network description's JSON Schema (`p4handoff schema network`) and its models agree.

Every example and every description the lab generates validates against the
schema with `jsonschema` and through the models, and survives a round trip
(load, dump, load: equal). Mistakes are reported all at once, inside one
object too, and a broken entry is not reported again by the entries naming it.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.lab_support import run_desc
from p4handoff.controller.network import Network, NetworkError, load_network, parse_network
from p4handoff.cli.main import main
from p4handoff.docmodel import json_schema
from p4handoff.topo.plan import plan
from p4handoff.scenario.loader import load

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "topo").glob("*.yaml"))
TRACES = sorted((REPO / "traces").glob("*.yaml"))
SCHEMA = json_schema(Network)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def schema_errors(doc: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(doc)]


def round_trip(net: Network) -> None:
    """Dumped, the model is a document the schema accepts and that reads back as the same model."""
    dumped = net.model_dump(mode="json", exclude_unset=True)
    assert schema_errors(dumped) == []
    assert parse_network(yaml.safe_load(yaml.safe_dump(dumped))) == net


def lab_description(trace: Path) -> dict:
    sf = load(trace)
    return run_desc(plan(sf.resolve(sf.variants[-1], sf.points()[-1])))


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert set(SCHEMA["required"]) == {"access_gateway", "switches", "mobile_hosts"}
    assert SCHEMA["additionalProperties"] is False


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_validates_against_the_schema_and_the_models(path: Path):
    assert schema_errors(yaml.safe_load(path.read_text())) == []
    round_trip(load_network(path))


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_every_description_the_lab_generates_validates(trace: Path):
    doc = lab_description(trace)
    assert schema_errors(doc) == []
    round_trip(parse_network(doc, str(trace)))


@pytest.mark.parametrize("mutate, where", [
    (lambda r: r["switches"][0]["ports"][0].update(number="1"), "switches/0/ports/0/number"),
    (lambda r: r["switches"][1].update(colour="red"), "switches/1"),
    (lambda r: r["switches"][1].update(role="router"), "switches/1/role"),
    (lambda r: r["switches"][1].update(mac="zz"), "switches/1/mac"),
    (lambda r: r["mobile_hosts"][0].update(address="10.0.1.300"), "mobile_hosts/0/address"),
    (lambda r: r["switches"][1]["ports"][0]["aqm"].update(w_q=0.002), "switches/1/ports/0/aqm/w_q"),
    (lambda r: r["mobile_hosts"][0].update(buffer_packets=True), "mobile_hosts/0/buffer_packets"),
    (lambda r: r["controller"].update(spool_fsync="yes"), "controller/spool_fsync"),
])
def test_schema_and_models_both_refuse_a_mistake(mutate, where):
    raw = yaml.safe_load(EXAMPLES[0].read_text())
    mutate(raw)
    found = schema_errors(raw)      # at the field, or at an optional object holding it (anyOf: object, null)
    assert any(where.startswith(e.split(":")[0]) and e.split(":")[0] for e in found), found
    with pytest.raises(NetworkError):
        parse_network(raw)


def test_schema_command_writes_the_models_schema(tmp_path, capsys):
    out = tmp_path / "network.schema.json"
    assert main(["schema", "network", "-o", str(out)]) == 0
    assert json.loads(out.read_text()) == SCHEMA
    assert main(["schema", "network"]) == 0
    assert json.loads(capsys.readouterr().out) == SCHEMA


def errors_of(mutate) -> dict[str, str]:
    raw = copy.deepcopy(yaml.safe_load(EXAMPLES[0].read_text()))
    mutate(raw)
    with pytest.raises(NetworkError) as info:
        parse_network(raw)
    return dict(info.value.errors)


def test_every_problem_of_one_object_at_once():
    errs = errors_of(lambda r: r["switches"][1]["ports"][0].update(
        aqm={"mode": "red", "limit": 10, "min_th": "3", "max_p": 2, "w_q": 0.3, "dummy_threshold": 11, "x": 1}))
    aqm = "switches[1].ports[0].aqm"
    assert set(errs) == {f"{aqm}.{k}" for k in ("min_th", "max_th", "max_p", "w_q", "dummy_threshold", "x")}
    assert errs[f"{aqm}.max_th"] == "missing: required for mode red"
    assert errs[f"{aqm}.min_th"] == "must be an integer, got str"
    assert errs[f"{aqm}.x"].startswith("unknown field (allowed: dummy_threshold, limit, max_p, max_th, ")


@pytest.mark.parametrize("mutate, only", [
    # bs1 is broken twice over: the gateway's and bs2's peer ports, the cell address and the port
    # lookups naming it are not reported again
    (lambda r: r["switches"][1].update(grpc="localhost", mac="zz"), {"switches[1].grpc", "switches[1].mac"}),
    (lambda r: r["switches"][1].update(role="router"), {"switches[1].role"}),
    (lambda r: r["switches"][0].pop("device_id"), {"switches[0].device_id"}),
    (lambda r: r["fixed_hosts"][0].update(mac="zz"), {"fixed_hosts[0].mac"}),         # named by correspondents
    (lambda r: r["switches"][2]["ports"][0].update(aqm={"mode": "red"}),
     {f"switches[2].ports[0].aqm.{k}" for k in ("min_th", "max_th", "max_p", "w_q")}),
    (lambda r: r["switches"][0]["ports"][0].update(aqm={"mode": "red"}), {"switches[0].ports[0].aqm"}),
    # a misspelt `switches:` is two errors, not also every host naming a switch or a base station
    (lambda r: r.update(switchez=r.pop("switches")), {"switches", "switchez"}),
    (lambda r: r.update(switches="gw, bs1, bs2"), {"switches"}),
])
def test_no_follow_on_errors_for_names_that_are_declared(mutate, only):
    assert set(errors_of(mutate)) == only
