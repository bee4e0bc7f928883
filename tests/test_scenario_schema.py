"""The scenario file's JSON Schema (`p4handoff schema scenario`) and its models agree.

Every file in traces/ validates against the schema with `jsonschema` as
written (`extends:`, `count:` templates) and after `extends:` is resolved,
and its document survives a round trip through the models (validate, dump,
validate: equal). A mistake is refused by the schema and by the loader.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from p4handoff.cli.main import main
from p4handoff.scenario.loader import load, parse, read_document
from p4handoff.scenario.doc.build import validate
from p4handoff.scenario.doc.schema import scenario_schema
from p4handoff.scenario.units import ScenarioError

REPO = Path(__file__).resolve().parent.parent
TRACES = sorted((REPO / "traces").glob("*.yaml"))
VH = REPO / "traces" / "vh-wlan-to-3g.yaml"
SCHEMA = scenario_schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def schema_errors(doc: object) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(doc)]


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["additionalProperties"] is False
    assert {"required": ["extends"]} in SCHEMA["anyOf"]
    assert {"scenario", "title", "paper", "duration", "tcp", "topology", "flows", "measure"} == set(
        next(a["required"] for a in SCHEMA["anyOf"] if "extends" not in a["required"]))


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_every_trace_file_validates_as_written_and_extended(path: Path) -> None:
    assert schema_errors(yaml.safe_load(path.read_text())) == []
    assert schema_errors(read_document(path)) == []


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_every_trace_document_round_trips_through_the_models(path: Path) -> None:
    """The models' dump is a document the schema accepts and that reads back as the same models.

    The models hold the document after `count:` expansion, so a sweep over a template's count or step
    (a path into the template) is left out of the dump and given as --sweep axes.
    """
    checked = validate(read_document(path))
    assert checked.problems == [] and checked.doc is not None
    doc = checked.doc
    if any({"count", "step"} & set(p.strip() for p in axis.path.replace(",", ".").split(".")) for axis in doc.sweep):
        doc = doc.model_copy(update={"sweep": ()})
    dumped = doc.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert schema_errors(dumped) == []
    again = validate(yaml.safe_load(yaml.safe_dump(dumped)), tuple(a.axis() for a in checked.doc.sweep))
    assert again.problems == [] and again.doc == doc


def vh() -> dict:
    return read_document(VH)


def _cell(doc: dict, name: str) -> dict:
    return next(c for c in doc["topology"]["cells"] if c["name"] == name)


@pytest.mark.parametrize("mutate, where", [
    (lambda d: _cell(d, "g3").update(rate="fast"), "topology/cells/1/rate"),
    (lambda d: _cell(d, "g3").update(rate="-384kbps"), "topology/cells/1/rate"),
    (lambda d: _cell(d, "g3")["queue"].update(aqm="codel"), "topology/cells/1/queue/aqm"),
    (lambda d: _cell(d, "g3").update(colour="red"), "topology/cells/1"),
    (lambda d: d["tcp"].update(iw=0), "tcp/iw"),
    (lambda d: d["tcp"].update(delayed_ack="no"), "tcp/delayed_ack"),
    (lambda d: d.pop("tcp"), ""),
    (lambda d: d.update(schemes=["newreno", "cubic"]), "schemes/1"),
    (lambda d: d["topology"]["mobile_hosts"][0]["moves"][0].update(attach={"iface": "g3", "cell": "g3"}),
     "topology/mobile_hosts/0/moves/0"),
    (lambda d: d["measure"]["table"][0].update(metric="goodput"), "measure/table/0/metric"),
    (lambda d: d["measure"]["windows"][0].update(to=-5), "measure/windows/0/to"),
])
def test_schema_and_loader_both_refuse_a_mistake(mutate, where: str) -> None:
    doc = copy.deepcopy(vh())
    mutate(doc)
    found = schema_errors(doc)       # at the field, or at an object holding it (anyOf/oneOf report there)
    assert any(where.startswith(e.split(":")[0]) for e in found), found
    with pytest.raises(ScenarioError):
        parse(doc, "bad.yaml")


def test_a_bad_file_is_refused_by_both(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(VH.read_text().replace("rate: 384kbps", "rate: -384kbps").replace("  iw: 3\n", "  iw: three\n"))
    assert len(schema_errors(yaml.safe_load(bad.read_text()))) == 2
    with pytest.raises(ScenarioError) as info:
        load(bad)
    assert dict(info.value.errors) == {"topology.cells[g3].rate": "rate must be positive, got '-384kbps'",
                                       "tcp.iw": "must be an integer, got str"}
    assert main(["run", str(bad), "--check"]) == 3
    assert "topology.cells[g3].rate: rate must be positive" in capsys.readouterr().err


def test_schema_command_writes_the_models_schema(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "scenario.schema.json"
    assert main(["schema", "scenario", "-o", str(out)]) == 0
    assert json.loads(out.read_text()) == SCHEMA
    assert main(["schema", "scenario"]) == 0
    assert json.loads(capsys.readouterr().out) == SCHEMA
