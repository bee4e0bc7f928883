"""One run of a scenario document: the document validated, then resolved into the `Scenario` the backends run.

Validation (`validate`) reports every problem of the document at once, each
at its path. What depends on several sections at once is resolved and
checked next (`assemble`): the mobility timeline, windows bounded by its
marks and by the run's duration, the flows of the variant being run. It
runs on every top-level section that is valid on its own even when others
are not, so a wrong flow does not hide a window that ends after the run.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from p4handoff.scenario.rawdoc import expand_counts
from p4handoff.scenario.doc.document import ScenarioDoc, variant_list, with_changes
from p4handoff.scenario.doc.measure import MeasureDoc
from p4handoff.scenario.doc.names import TOPOLOGY_SECTIONS, Declared
from p4handoff.scenario.doc.problems import in_words
from p4handoff.scenario.doc.values import time_value
from p4handoff.scenario.model import (COMPARED, HEADER_BYTES, FlowSpec, Measure, MobilityOp, Scenario, SweepAxis,
                                          TcpSpec, Topology, Variant, Window)
from p4handoff.scenario.timeline import resolve_mobility
from p4handoff.scenario.units import Errors

Point = tuple[tuple[str, Any], ...]
_FIELDS = {name: TypeAdapter(f.rebuild_annotation()) for name, f in ScenarioDoc.model_fields.items()}


@dataclass
class Validated:
    """A document's validation: the model if it is valid, every top-level field valid on its own, the problems."""

    doc: ScenarioDoc | None
    fields: dict[str, Any]
    problems: list[tuple[str, str]] = field(default_factory=list)

    def variants(self) -> list[Variant] | None:
        """The comparison's columns, if the fields that say them are valid."""
        if not {"schemes", "labels", "variants"} <= self.fields.keys():
            return None
        return variant_list(self.fields["schemes"], self.fields["labels"], self.fields["variants"])


def expand(doc: dict, errors: Errors) -> dict:
    """The document with every `count: N` item of the topology's lists and of `flows` expanded (rawdoc)."""
    out = dict(doc)
    if isinstance(doc.get("topology"), dict):
        out["topology"] = {key: expand_counts(value, f"topology.{key}", errors) if key in TOPOLOGY_SECTIONS else value
                           for key, value in doc["topology"].items()}
    if "flows" in doc:
        out["flows"] = expand_counts(doc["flows"], "flows", errors)
    return out


def validate(raw: dict, extra_axes: tuple[SweepAxis, ...] = ()) -> Validated:
    """The document `raw` (as written, before `count:` expansion) validated; `extra_axes`: --sweep's."""
    errors = Errors()
    expanded = expand(raw, errors)
    names = Declared(expanded, raw, extra_axes)
    try:
        doc = ScenarioDoc.model_validate(expanded, context=names)
    except ValidationError as exc:
        problems = list(in_words(exc.errors(), ScenarioDoc, expanded))
        return Validated(None, _valid_fields(expanded, names), errors.items + problems)
    return Validated(doc, dict(doc), errors.items)


def _valid_fields(doc: dict, names: Declared) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, info in ScenarioDoc.model_fields.items():
        if name not in doc:
            if not info.is_required():
                out[name] = info.get_default(call_default_factory=True)
            continue
        try:
            out[name] = _FIELDS[name].validate_python(doc[name], context=names)
        except ValidationError:
            continue
    return out


def assemble(v: Validated, variant: Variant | None, point: Point = ()) -> tuple[Scenario | None, list[tuple[str, str]]]:
    """The run of `variant` at `point`, or None; and the problems found resolving it (variant None: not known)."""
    f, errors = v.fields, Errors()
    tcp: TcpSpec | None = f["tcp"].spec() if "tcp" in f else None
    topo: Topology | None = f["topology"].spec((tcp.packet_size if tcp else 1000) + HEADER_BYTES) if "topology" in f else None
    duration: float | None = f.get("duration")
    mobility: list[MobilityOp] | None = None
    marks: dict[str, float] | None = None
    if topo is not None and duration is not None:
        ops: list[MobilityOp] = []
        marks = {}
        for mh in f["topology"].mobile_hosts:
            for move in mh.moves:
                ops += move.ops(mh.name)
                marks.update(move.marks())
        mobility = resolve_mobility(topo, ops, duration, errors)
    flows = _flows(f, tcp, duration, variant, errors)
    if flows is not None and topo is not None and mobility is not None:
        _cells_for_flows(flows, topo, mobility, errors)
    measure = None
    if "measure" in f and duration is not None:
        measure = _measure(f["measure"], duration, marks, [fl.name for fl in flows] if flows is not None else None,
                           errors)
    doc = v.doc
    if v.problems or errors or doc is None or variant is None or None in (tcp, topo, flows, mobility, marks, measure):
        return None, errors.items
    assert tcp is not None and topo is not None and flows is not None and mobility is not None and marks is not None
    assert measure is not None
    return Scenario(doc.scenario, doc.title, doc.paper, doc.duration, doc.seed, tcp, topo, tuple(flows), tuple(mobility),
                    marks, measure, doc.assumptions, variant.label, point, doc.lab.time_scale), []


def _flows(f: dict[str, Any], tcp: TcpSpec | None, duration: float | None, variant: Variant | None,
           errors: Errors) -> list[FlowSpec] | None:
    """The flows of `variant` (`compared` is its scheme), each starting within the run."""
    if "flows" not in f or tcp is None or duration is None or variant is None:
        return None
    out = []
    for fl in f["flows"]:
        p = f"flows[{fl.name}]"
        scheme = variant.scheme if fl.scheme == COMPARED else fl.scheme
        if scheme is None:
            errors.add(f"{p}.scheme", "'compared' needs a schemes: list or variants with a scheme")
            continue
        if fl.start >= duration:
            errors.add(f"{p}.start", f"starts at {fl.start:g} s, after the run ends ({duration:g} s)")
        elif fl.start + fl.start_jitter >= duration:
            errors.add(f"{p}.start", f"may start at up to {fl.start + fl.start_jitter:g} s (start + start_jitter), "
                                     f"after the run ends ({duration:g} s)")
        spec = fl.tcp(tcp)
        if fl.scheme == COMPARED:
            spec = with_changes(spec, dict(variant.tcp))
        out.append(FlowSpec(fl.name, fl.src, fl.dst, scheme, fl.start, fl.stop, spec, fl.start_jitter))
    return out


def _cells_for_flows(flows: list[FlowSpec], topo: Topology, mobility: list[MobilityOp], errors: Errors) -> None:
    """A mobile host a flow uses is in a cell at some point: it starts in one, or a handoff puts it in one."""
    for fl in flows:
        for host in (fl.src, fl.dst):
            m = next((m for m in topo.mobile_hosts if m.name == host), None)
            if m is not None and m.start is None and not any(op.mh == m.name and op.op == "handoff" for op in mobility):
                errors.add(f"topology.mobile_hosts[{m.name}]", f"flow {fl.name} uses it but it never gets a cell "
                           "(give start: {iface, cell} or a move)")


def _measure(m: MeasureDoc, duration: float, marks: dict[str, float] | None, flows: list[str] | None,
             errors: Errors) -> Measure | None:
    """The windows and plot range in seconds (marks None: the timeline is not known, nothing naming a mark is)."""
    def known(*times: float | str | None) -> bool:
        return marks is not None or not any(isinstance(t, str) for t in times)

    windows: list[Window] = []
    for w in m.windows:
        if not known(w.start, w.to):
            continue
        t0 = time_value(w.start, marks or {})
        t1 = time_value(w.to, marks or {}) if w.to is not None else t0 + (w.length or 0.0)
        p = f"measure.windows[{w.name}]"
        if t1 <= t0:
            errors.add(p, f"window ends ({t1:g} s) before it starts ({t0:g} s)")
        elif t1 > duration + 1e-9:
            errors.add(p, f"window ends at {t1:g} s, after the run ({duration:g} s)")
        else:
            windows.append(Window(w.name, t0, t1))
    plot_range = (0.0, duration)
    if m.plot_range is not None and known(*m.plot_range):
        t0, t1 = (time_value(t, marks or {}) for t in m.plot_range)
        if t0 < t1:
            plot_range = (t0, min(t1, duration))
        else:
            errors.add("measure.plot_range", "must be [from, to] with from < to")
    measured = m.flows if m.flows is not None else flows
    if measured is None or marks is None:
        return None
    return Measure(tuple(windows), tuple(measured), m.ideal.spec() if m.ideal else None, m.quantities(),
                   m.queues.links if m.queues else (), m.queues.interval if m.queues else 0.01, m.series_interval,
                   plot_range)
