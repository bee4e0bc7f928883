"""Scenario files (`traces/*.yaml`): reading them, and the runs one file stands for.

A scenario is one experiment of the papers (or any other): topology,
mobility timeline, flows, what to measure, and the published numbers to
compare with. `load(path)` reads and validates it — every problem is
reported at once with its field path (`topology.cells[g3].queue.limit`) —
and returns a `ScenarioFile`, whose plan holds the concrete `Scenario`s the
runner executes: one per variant × sweep point, all resolved when the file
is read, before anything runs. The file is resolved once (`Resolver`): each
distinct document its runs stand for is derived from it without copying the
rest and validated once, and each run is assembled from that. The
document's models are in p4handoff.scenario.doc; the schema with an example
is in docs/lab.md.
"""
from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from p4handoff.hosts.cc import SCHEMES
from p4handoff.scenario.rawdoc import get_path, with_path
from p4handoff.scenario.doc.build import Validated, assemble, validate
from p4handoff.scenario.model import (HEADER_BYTES, Expectation, LinkSpec, Published, Quantity, QueueSpec,
                                          Scenario, SweepAxis, Variant)
from p4handoff.scenario.units import Errors, ScenarioError
from p4handoff.yamlfile import read_yaml

__all__ = ["HEADER_BYTES", "Expectation", "LinkSpec", "Quantity", "QueueSpec", "Run", "Scenario", "ScenarioFile",
           "SweepAxis", "load", "parse", "random_elements", "read_document"]

Point = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Run:
    """One run a file stands for: a variant at a sweep point, resolved."""

    variant: Variant
    point: Point
    scenario: Scenario


@dataclass
class ScenarioFile:
    """A validated scenario file: the document, its variants and sweep axes, and every run resolved.

    Every variant at every sweep point is resolved when the file is read (`parse`), so a run that
    cannot happen is reported before anything runs and the runner gets complete `Scenario`s.
    """

    source: str
    doc: dict
    name: str
    title: str
    paper: str
    variants: tuple[Variant, ...]
    sweep: tuple[SweepAxis, ...]
    published: Published | None
    description: str = ""
    overrides: tuple[tuple[str, Any], ...] = field(default=())
    plan: tuple[Run, ...] = field(default=(), repr=False)     # points x variants, in that order
    resolver: Resolver | None = field(default=None, repr=False, compare=False)   # what resolved the plan

    @property
    def labels(self) -> list[str]:
        return [v.label for v in self.variants]

    def points(self) -> list[Point]:
        """Every sweep point as ((path, value), ...); one empty point without a sweep."""
        return sweep_points(self.sweep)

    def resolve(self, variant: Variant, point: Point = ()) -> Scenario:
        """The scenario of one variant at one point: from the plan, else (a point that is not the sweep's,
        such as () for the document without its sweep) resolved now (ScenarioError if it is invalid)."""
        for run in self.plan:
            if run.variant == variant and run.point == point:
                return run.scenario
        assert self.resolver is not None, "a ScenarioFile comes from parse(), which resolves its plan"
        return self.resolver.scenario(variant, point, bool(self.variants[1:] or point))

    def runs(self) -> Iterator[tuple[Variant, Point, Scenario]]:
        """Every run: each sweep point, each variant at it."""
        return ((run.variant, run.point, run.scenario) for run in self.plan)

    def random_elements(self) -> list[str]:
        """What in any of its runs draws from the seed in the simulator; with nothing, repeats are identical."""
        found: set[str] = set()
        for _, _, scn in self.runs():
            found.update(random_elements(scn))
        return sorted(found)


def sweep_points(sweep: tuple[SweepAxis, ...]) -> list[Point]:
    """Every point of the axes' cartesian product as ((path, value), ...); one empty point without axes."""
    if not sweep:
        return [()]
    return [tuple(zip((a.path for a in sweep), combo)) for combo in itertools.product(*(a.values for a in sweep))]


class Resolver:
    """One scenario document resolved for all the runs it stands for.

    A run's document is the file's with its variant's `set:` and its sweep point's values applied. Runs
    that apply the same changes (every variant without `set:` at one point, say) have the same document:
    it is derived once (`with_path`, sharing what the changes leave alone) and validated once; each run
    is then assembled from that validation. Problems are the same, and reported the same, as if every
    run's document were validated on its own.
    """

    def __init__(self, doc: dict, source: str, extra_sweep: tuple[SweepAxis, ...]) -> None:
        self.doc, self.source, self.extra_sweep = doc, source, extra_sweep   # doc: with --set's overrides
        # keyed by the changes' repr: YAML values are not all hashable, and 1, 1.0 and True are equal
        # in Python but not as values of a document
        self._checked: dict[str, tuple[list[tuple[str, str]], Validated | None]] = {}

    def checked(self, changes: tuple[tuple[str, Any], ...]) -> tuple[list[tuple[str, str]], Validated | None]:
        """The document with `changes` (paths, several joined by ',' -> value) validated, or the paths that
        could not be set and why."""
        key = repr(changes)
        if key not in self._checked:
            doc, bad = self.doc, []
            for paths, value in changes:
                for path in paths.split(","):
                    try:
                        doc = with_path(doc, path.strip(), value)
                    except ValueError as exc:
                        bad.append((path.strip(), str(exc)))
            self._checked[key] = (bad, None) if bad else ([], validate(doc, self.extra_sweep))
        return self._checked[key]

    def scenario(self, variant: Variant, point: Point, named: bool) -> Scenario:
        """The scenario of `variant` at `point` (ScenarioError; `named`: problems say which run)."""
        where = f"variant {variant.label}" + (f" at {_point_text(point)}" if point else "")
        bad, checked = self.checked((*variant.overrides, *point))
        if checked is None:
            raise ScenarioError(self.source, [(f"{where}: {path}", why) for path, why in bad])
        scenario, problems = assemble(checked, variant, point)
        problems = checked.problems + problems
        if problems:
            raise ScenarioError(self.source, [(f"{p} ({where})" if named else p, m) for p, m in problems])
        assert scenario is not None
        return scenario


def random_elements(scn: Scenario) -> list[str]:
    """The simulator's random draws in `scn`: random loss, RED/M-RED drops and randomised schemes.

    Nothing else depends on the seed (sequence numbers and timestamp offsets do, but never the outcome).
    """
    topo = scn.topology
    out = [f"random loss on {c.name}" for c in topo.cells if c.loss or c.up_loss]
    out += [f"random loss on {li.name}" for li in topo.links if li.loss or li.reverse_loss]
    queues = [(c.name, c.queue) for c in topo.cells] + [(li.name, q) for li in topo.links
                                                        for q in (li.queue, li.reverse_queue)]
    out += [f"{q.aqm.upper()} queue on {name}" for name, q in queues if q is not None and q.aqm != "droptail"]
    out += [f"scheme {f.scheme}" for f in scn.flows if SCHEMES[f.scheme].randomised]  # type: ignore[attr-defined]
    return out


def _point_text(point: Point) -> str:
    return ", ".join(f"{path}={value}" for path, value in point)


def _prune_published(pub: dict, labels: set[str]) -> None:
    """With --schemes the comparison has fewer columns: drop published numbers and claims about the others."""
    if isinstance(pub.get("values"), dict):
        pub["values"] = {k: v for k, v in pub["values"].items() if k in labels}
    if isinstance(pub.get("expect"), list):
        def named(item: Any) -> list:
            if not isinstance(item, dict):
                return []
            raw = item.get("order", item.get("ratio", item.get("variant", [])))
            return raw if isinstance(raw, list) else [raw]
        pub["expect"] = [e for e in pub["expect"] if all(v in labels for v in named(e))]


def parse(doc: Any, source: str = "<scenario>", overrides: tuple[tuple[str, Any], ...] = (),
          extra_sweep: tuple[SweepAxis, ...] = (), schemes: tuple[str, ...] = ()) -> ScenarioFile:
    """Validate a scenario document; every variant at every sweep point must resolve (ScenarioError lists all)."""
    if not isinstance(doc, dict):
        raise ScenarioError(source, [("(top)", f"must be a mapping, got {type(doc).__name__}")])
    doc = copy.deepcopy(doc)
    errors = Errors()
    if schemes:
        doc.pop("variants", None)
        doc["schemes"] = list(schemes)
        labels = doc.get("labels") if isinstance(doc.get("labels"), dict) else {}
        if isinstance(doc.get("published"), dict):
            _prune_published(doc["published"], {str(labels.get(s, s)) for s in schemes})
    for axis in extra_sweep:
        for one in axis.paths:
            try:
                get_path(doc, one)
            except ValueError as exc:
                errors.add(f"--sweep {one}", str(exc))
    base_doc = doc
    for path, value in overrides:
        try:
            base_doc = with_path(base_doc, path, value)
        except ValueError as exc:
            errors.add(f"--set {path}", str(exc))
    errors.raise_if_any(source)
    resolver = Resolver(base_doc, source, extra_sweep)
    _, checked = resolver.checked(())
    assert checked is not None        # no changes: nothing to set
    variants = checked.variants()
    _, problems = assemble(checked, variants[0] if variants else None)
    if checked.problems or problems:
        raise ScenarioError(source, checked.problems + problems)
    base = checked.doc
    assert base is not None and variants is not None
    sweep = [a.axis() for a in base.sweep]
    for axis in extra_sweep:
        sweep = [a for a in sweep if a.path != axis.path] + [axis]
    published = base.published.spec([w.name for w in base.measure.windows]) if base.published else None
    plan: list[Run] = []
    found: list[tuple[str, str]] = []
    for point in sweep_points(tuple(sweep)):
        for variant in variants:
            try:
                plan.append(Run(variant, point, resolver.scenario(variant, point, bool(variants[1:] or point))))
            except ScenarioError as exc:
                found += [e for e in exc.errors if e not in found]
    if found:
        raise ScenarioError(source, found)
    return ScenarioFile(source, doc, base.scenario, base.title, base.paper, tuple(variants), tuple(sweep), published,
                        base.description, tuple(overrides), tuple(plan), resolver)


def read_document(path: str | Path, _seen: tuple[Path, ...] = ()) -> Any:
    """The YAML document of a scenario file, with `extends: other.yaml` resolved.

    A file that extends another takes the other's top-level fields and
    replaces those it states itself (a sweep file is its case plus a sweep).
    """
    path = Path(path)
    if path.resolve() in _seen:
        raise ScenarioError(str(path), [("extends", "files extend each other in a cycle")])
    doc = read_yaml(path, ScenarioError)
    if not isinstance(doc, dict) or "extends" not in doc:
        return doc
    base_name = doc.pop("extends")
    if not isinstance(base_name, str):
        raise ScenarioError(str(path), [("extends", f"must be a file name, got {base_name!r}")])
    base_path = path.parent / base_name
    if not base_path.is_file():
        raise ScenarioError(str(path), [("extends", f"no file {base_path}")])
    base = read_document(base_path, (*_seen, path.resolve()))
    if not isinstance(base, dict):
        raise ScenarioError(str(base_path), [("(top)", "must be a mapping")])
    base.update(doc)
    return base


def load(path: str | Path, overrides: tuple[tuple[str, Any], ...] = (), extra_sweep: tuple[SweepAxis, ...] = (),
         schemes: tuple[str, ...] = ()) -> ScenarioFile:
    """Read and validate a scenario file (ScenarioError with every problem, or the one with the file)."""
    return parse(read_document(path), str(path), overrides, extra_sweep, schemes)
