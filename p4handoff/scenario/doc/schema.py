"""The JSON Schema of scenario files (`p4handoff schema scenario`), so editors check and complete them.

It describes a file as written: one that `extends:` another may leave out
any field, and a list item with `count: N` is a template whose strings may
hold `{i}` and whose values may be `{first, step}` (p4handoff.scenario.rawdoc).
The models check more than the schema can say (names that exist, a
timeline that can happen): `p4handoff run --check` remains the judge.
"""
from __future__ import annotations

import copy
from typing import Any

from p4handoff.docmodel import json_schema
from p4handoff.scenario.doc.document import ScenarioDoc
from p4handoff.scenario.doc.names import TOPOLOGY_SECTIONS

#: The lists whose items may carry `count:` (p4handoff.scenario.doc.build.expand), by section ("": top level).
COUNTED = {"topology": TOPOLOGY_SECTIONS, "": ("flows",)}
STEP = {"type": "object", "properties": {"first": {}, "step": {}}, "required": ["first", "step"],
        "additionalProperties": False,
        "description": "in an item with count: N, item i has first + (i - 1) x step (numbers, or strings in one unit)"}
TEMPLATE_TEXT = {"type": "string", "pattern": r"\{i\}", "description": "{i} becomes 1..N in an item with count: N"}
COUNT = {"type": "integer", "minimum": 1, "description": "this item stands for N items"}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def _template(node: Any, defs: dict[str, Any]) -> Any:
    """`node` with every value also allowed as `{i}` text or `{first, step}` (referenced models: their templates)."""
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if f"{name}Template" not in defs:
            defs[f"{name}Template"] = {}           # taken: a model that contains itself stops here
            defs[f"{name}Template"] = _template(defs[name], defs)
        return {**node, "$ref": f"#/$defs/{name}Template"}
    out = dict(node)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if key in node:
            out[key] = [_template(n, defs) for n in node[key]]
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            out[key] = _template(node[key], defs)
    for key in ("properties", "patternProperties"):
        if key in node:
            out[key] = {k: _template(v, defs) for k, v in node[key].items()}
    if node.get("type") in ("string", "number", "integer", "boolean") or "enum" in node or "const" in node:
        return {"anyOf": [out, TEMPLATE_TEXT, _ref("Step")]}
    return out


def _countable(schema: dict[str, Any], defs: dict[str, Any]) -> None:
    """The item schema of a counted list: an item, or a template with `count`."""
    item = schema["items"]["$ref"].rsplit("/", 1)[-1]
    counted = _template(defs[item], defs)
    counted = {**counted, "properties": {**counted["properties"], "count": COUNT},
               "required": [*counted.get("required", ()), "count"]}
    defs[f"{item}Counted"] = counted
    schema["items"] = {"anyOf": [_ref(item), _ref(f"{item}Counted")]}


def scenario_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a scenario file as written."""
    schema = copy.deepcopy(json_schema(ScenarioDoc))
    defs = schema["$defs"]
    defs["Step"] = STEP
    for section, lists in COUNTED.items():
        props = defs["TopologyDoc"]["properties"] if section else schema["properties"]
        for key in lists:
            _countable(props[key], defs)
    schema["title"] = "p4handoff scenario file"
    schema["properties"] = {"extends": {"type": "string", "minLength": 1,
                                        "description": "a scenario file (relative to this one) whose top-level "
                                                       "fields this file takes, replacing those it states"},
                            **schema["properties"]}
    schema["anyOf"] = [{"required": ["extends"]}, {"required": schema.pop("required")}]
    return schema
