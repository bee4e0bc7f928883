"""The names a scenario document declares, read from the raw YAML before any item is validated.

Validation context for the models: a reference (a cell's `bs`, a flow's
`to`, a window a table row names, ...) is checked against the names the file
*declares*, so an item with a mistake of its own is reported once, not again
by everything naming it. While some item of a kind has no readable name
(`nmae: g3`), any name may be that item's, so none of that kind is reported
unknown.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from pydantic import ValidationInfo

from p4handoff.scenario.model import SweepAxis

TOPOLOGY_SECTIONS = ("correspondents", "routers", "base_stations", "links", "cells", "mobile_hosts",
                     "background_hosts")
#: The timeline marks a move with a `label` sets, by kind (windows start and end at them).
MARKS = {"switch": ("", ".end"), "alternate": ("", ".end"), "visits": ("", ".end"),
         "overlap": (".enter", ".handoff", ".leave"), "attach": ("",), "detach": ("",), "handoff": ("",)}


@dataclass(frozen=True)
class Known:
    """The names of one or more kinds of item a reference may name: `name in known`."""

    names: frozenset[str] = frozenset()
    open: bool = False          # some item has no readable name: any name may be its

    def __contains__(self, name: object) -> bool:
        return self.open or name in self.names

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.names))

    def __or__(self, other: Known) -> Known:
        return Known(self.names | other.names, self.open or other.open)

    def text(self) -> str:
        return ", ".join(self) or "none"


def _known(values: Iterable[Any]) -> Known:
    values = list(values)
    return Known(frozenset(v for v in values if isinstance(v, str) and v),
                 any(not (isinstance(v, str) and v) for v in values))


def _items(node: Any, *keys: str) -> list[Any]:
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, list) else []


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else None


@dataclass
class Declared:
    """What one (count-expanded) scenario document declares; `source` is it before expansion (paths name it)."""

    doc: Any
    source: Any
    extra_axes: tuple[SweepAxis, ...] = ()
    kinds: dict[str, Known] = field(init=False)

    def __post_init__(self) -> None:
        self.kinds = {key: _known(_get(i, "name") for i in _items(self.doc, "topology", key))
                      for key in TOPOLOGY_SECTIONS if key != "links"}
        self.kinds["flows"] = _known(_get(f, "name") for f in _items(self.doc, "flows"))
        self.kinds["windows"] = _known(_get(w, "name") for w in _items(self.doc, "measure", "windows"))
        self.kinds["marks"] = self._marks()
        self.kinds["links"] = self.kinds["cells"] | self._directions()
        self.kinds["labels"] = self._labels()

    def __call__(self, *kinds: str) -> Known:
        out = Known()
        for kind in kinds:
            out = out | self.kinds[kind]
        return out

    def _marks(self) -> Known:
        labels: list[Any] = []
        for mh in _items(self.doc, "topology", "mobile_hosts"):
            for move in _items(mh, "moves"):
                if isinstance(move, dict) and "label" in move:
                    kind = next((k for k in MARKS if k in move), None)
                    label = move["label"]
                    labels += [f"{label}{s}" for s in MARKS[kind]] if isinstance(label, str) and kind else [None]
        return _known(labels)

    def _directions(self) -> Known:
        names: list[Any] = []
        for link in _items(self.doc, "topology", "links"):
            ends = _get(link, "between")
            if isinstance(ends, list) and len(ends) == 2 and all(isinstance(e, str) for e in ends):
                names += [f"{ends[0]}->{ends[1]}", f"{ends[1]}->{ends[0]}"]
            else:
                names.append(None)      # a link whose ends cannot be read: any direction may be its
        return _known(names)

    def _labels(self) -> Known:
        """The variants' labels: each scheme's (renamed by `labels`), or each variant's; else `default`."""
        schemes, variants = _get(self.doc, "schemes"), _get(self.doc, "variants")
        labels = _get(self.doc, "labels")
        labels = labels if isinstance(labels, dict) else {}
        if isinstance(schemes, list):
            return _known(str(labels.get(s, s)) if isinstance(s, str) else None for s in schemes)
        if isinstance(variants, list):
            return _known(_get(v, "label") for v in variants)
        return Known(frozenset({"default"}), schemes is not None or variants is not None)

    def axes(self) -> tuple[list[SweepAxis], bool]:
        """The sweep's axes (the file's, then --sweep's), and whether some axis of the file cannot be read."""
        out: list[SweepAxis] = []
        unreadable = False
        for item in _items(self.doc, "sweep"):
            path, values = _get(item, "path"), _get(item, "values")
            if isinstance(path, list) and path and all(isinstance(p, str) for p in path):
                path = ",".join(path)
            if not isinstance(path, str) or not isinstance(values, list):
                unreadable = True
                continue
            label = _get(item, "label")
            out.append(SweepAxis(path, label if isinstance(label, str) else path.split(".")[-1], tuple(values)))
        out = [a for a in out if a.path not in {x.path for x in self.extra_axes}] + list(self.extra_axes)
        return out, unreadable

    def first_window(self) -> str | None:
        """The default window of a table row: the first window's name, even if that window has mistakes."""
        first = next(iter(_items(self.doc, "measure", "windows")), None)
        name = _get(first, "name")
        return name if isinstance(name, str) else None

    def table_rows(self) -> list[Any]:
        return _items(self.doc, "measure", "table")

    def claim_window(self) -> str | None:
        """The window of a claim that names none: published.window, else the first window by name."""
        published = _get(self.doc, "published")
        window = _get(published, "window")
        return window if isinstance(window, str) else min(self.kinds["windows"].names, default=None)

    def source_of(self, mh: Any) -> str | None:
        """The default source of the ideal throughput to `mh`: the sender of the first flow to it."""
        src = next((_get(f, "from") for f in _items(self.doc, "flows") if _get(f, "to") == mh), None)
        return src if isinstance(src, str) else None


def declared(info: ValidationInfo) -> Declared | None:
    """The document's names, when validated by p4handoff.scenario.doc.build (None: no references checked)."""
    return info.context if isinstance(info.context, Declared) else None


def refers_to(kinds: tuple[str, ...], what: str, listing: str = "",
              note: str = "") -> Callable[[Any, ValidationInfo], Any]:
    """A field validator: the value, if given, names an item of `kinds` the file declares
    ("no `what` named 'x'", then the declared names after `listing` or else `note`)."""
    def check(value: Any, info: ValidationInfo) -> Any:
        names = declared(info)
        if value is not None and names is not None and value not in names(*kinds):
            known = f" ({listing}: {names(*kinds).text()})" if listing else note
            raise ValueError(f"no {what} named {value!r}{known}")
        return value
    return check
