"""`measure:` of a scenario file: the windows, the ideal throughput, the quantities the report tabulates.

Window bounds may name timeline marks (`from: handoff.end`); the marks'
instants are known once the moves are, so the bounds are checked against
the run's duration when a run is built (p4handoff.scenario.doc.build).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Callable, TypeVar

from pydantic import Field, ValidationInfo, field_validator, model_validator

from p4handoff.docmodel import DocModel, Name, Problem, fail
from p4handoff.scenario.doc.names import declared, refers_to
from p4handoff.scenario.doc.values import NUMBER, PositiveTime, Text, TimeOrMark, one_of
from p4handoff.scenario.model import (FLOW_METRICS, FRACTION_METRICS, LINK_METRICS, METRICS, OUTAGE_RULES,
                                          RATE_METRICS, IdealSpec, Quantity, flows_matching)
from p4handoff.scenario.units import parse_fraction, parse_rate


def metric_value(metric: str) -> Callable[[Any], float]:
    """The parser of a value or bound of `metric`, in the unit the metrics compute: b/s for rates
    ('2Mbps'), fractions for rates of loss and utilisation ('5%'), else numbers."""
    if metric in RATE_METRICS:
        return parse_rate
    if metric in FRACTION_METRICS:
        return parse_fraction
    return NUMBER.check


def _mark(value: float | str, info: ValidationInfo) -> float | str:
    names = declared(info)
    if isinstance(value, str) and names is not None and value not in names("marks"):
        raise ValueError(f"not a time or a timeline mark: {value!r} (marks: {names('marks').text()})")
    return value


known_window = refers_to(("windows",), "window", "windows")
_flow = refers_to(("flows",), "flow")
_link = refers_to(("links",), "link or cell", note=" (cells, or 'a->b' for a wired direction)")


def _flow_pattern(pattern: str, info: ValidationInfo) -> str:
    names = declared(info)
    if names is not None and not names("flows").open and not flows_matching(names("flows"), (pattern,)):
        raise ValueError(f"no flow matches {pattern!r} (flows: {names('flows').text()})")
    return pattern


Metric = Annotated[str, one_of(METRICS)]
T = TypeVar("T", bound=tuple[Any, ...])


def each(model: type[DocModel], items: T, check: Callable[[Any, ValidationInfo], Any], info: ValidationInfo) -> T:
    """`items` if `check` accepts every one; else every problem, at its index."""
    problems: list[Problem] = []
    for k, item in enumerate(items):
        try:
            check(item, info)
        except ValueError as exc:
            problems.append(((k,), str(exc)))
    if problems:
        fail(model, [], problems)
    return items


def quantity(metric: str, flow: str | None, link: str | None, window: str,
             flows: Sequence[str] | None = None) -> Quantity:
    """The quantity a table row or a claim is about (a flow only for per-flow metrics, a link for per-link,
    the flows summed for total_throughput)."""
    return Quantity(metric, window, flow if metric in FLOW_METRICS else None, link if metric in LINK_METRICS else None,
                    tuple(flows) if metric == "total_throughput" and flows else ())


class QuantityFields(DocModel):
    """A metric of a flow, a link or the run (a table row, or what a claim is about)."""

    metric: Metric
    flow: Name | None = Field(default=None, validate_default=True, description="per-flow metrics")
    link: Text | None = Field(default=None, validate_default=True,
                              description="per-link metrics: a cell, or 'a->b' for a wired direction")
    flows: tuple[Text, ...] | None = Field(default=None, min_length=1, description=(
        "total_throughput: the flows it sums, names or patterns ('m*': every flow whose name starts with m, "
        "however many a sweep makes); default: measure.flows"))

    @field_validator("flows")
    @classmethod
    def _summed(cls, patterns: tuple[str, ...] | None, info: ValidationInfo) -> tuple[str, ...] | None:
        """Only total_throughput sums flows, and each pattern matches one at least."""
        if patterns is None:
            return None
        if info.data.get("metric") != "total_throughput":
            raise ValueError(f"only total_throughput sums flows, not {info.data.get('metric')}")
        return each(cls, patterns, _flow_pattern, info)

    @field_validator("flow", "link")
    @classmethod
    def _subject(cls, name: str | None, info: ValidationInfo) -> str | None:
        """A per-flow metric names its flow, a per-link one its link, and those exist."""
        per, check = (("flow", _flow) if info.field_name == "flow" else ("link", _link))
        metric = info.data.get("metric")
        if name is None and metric in (FLOW_METRICS if per == "flow" else LINK_METRICS):
            raise ValueError(f"required for the per-{per} metric {metric}")
        return check(name, info)

    def quantity(self, window: str) -> Quantity:
        return quantity(self.metric, self.flow, self.link, window, self.flows)


class TableRow(QuantityFields):
    window: Text | None = Field(default=None, validate_default=True, description="default: the first window")

    @field_validator("window")
    @classmethod
    def _first_by_default(cls, window: str | None, info: ValidationInfo) -> str | None:
        names = declared(info)
        if window is None and names is not None:
            window = names.first_window()
            if window is None and not names("windows").open:     # else the unnamed window is the default
                raise ValueError("required (no measurement window is defined)")
        return known_window(window, info)


class WindowDoc(DocModel):
    name: Name
    start: TimeOrMark = Field(alias="from", description="a time, or a timeline mark (a move's label, ...)")
    to: TimeOrMark | None = None
    length: PositiveTime | None = Field(default=None, description="instead of to")

    check_marks = field_validator("start", "to")(_mark)

    @model_validator(mode="after")
    def _one_end(self) -> WindowDoc:
        if (self.to is None) == (self.length is None):
            raise ValueError("give exactly one of to or length")
        return self


_correspondent = refers_to(("correspondents",), "correspondent")


class IdealDoc(DocModel):
    """The papers' ideal: sum of (bottleneck rate x time the MH's path is up) / window."""

    mh: Name
    source: Name | None = Field(default=None, validate_default=True,
                                description="the correspondent (default: the sender of the first flow to mh)")
    outages: Annotated[str, one_of(OUTAGE_RULES)] = Field(
        description="excluded: outage time counts 0; credited: at the next link's rate")

    check_mh = field_validator("mh")(refers_to(("mobile_hosts",), "mobile host"))

    @field_validator("source")
    @classmethod
    def _known_source(cls, source: str | None, info: ValidationInfo) -> str | None:
        names = declared(info)
        if names is None:
            return source
        if source is None and "mh" in info.data:
            source = names.source_of(info.data["mh"])
            if source is None:
                raise ValueError("required (no flow goes to the mobile host)")
        return _correspondent(source, info)

    def spec(self) -> IdealSpec:
        assert self.source is not None
        return IdealSpec(self.mh, self.source, self.outages)


class QueuesDoc(DocModel):
    """Queues sampled over the run (plotted)."""

    links: tuple[Text, ...] = Field(description="cells by name, wired directions as 'a->b'")
    interval: PositiveTime = 0.01

    @field_validator("links")
    @classmethod
    def _known_links(cls, links: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        return each(cls, links, _link, info)


def _range(value: Any) -> Any:
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError("must be [from, to]")
    return value


class MeasureDoc(DocModel):
    windows: tuple[WindowDoc, ...] = Field(description="the measurement windows; table rows default to the first")
    flows: tuple[Name, ...] | None = Field(default=None, description="flows measured (default: all)")
    ideal: IdealDoc | None = None
    table: tuple[TableRow, ...] = Field(description="the quantities the report tabulates")
    queues: QueuesDoc | None = None
    series_interval: PositiveTime = 0.1
    plot_range: tuple[TimeOrMark, TimeOrMark] | None = Field(default=None, description="[from, to] of the plots")

    check_range = field_validator("plot_range", mode="before")(_range)

    @field_validator("flows")
    @classmethod
    def _known_flows(cls, flows: tuple[str, ...] | None, info: ValidationInfo) -> tuple[str, ...] | None:
        return each(cls, flows, _flow, info) if flows is not None else None

    @field_validator("table")
    @classmethod
    def _ideal_for_ideal_metrics(cls, table: tuple[TableRow, ...], info: ValidationInfo) -> tuple[TableRow, ...]:
        if "ideal" not in info.data or info.data["ideal"] is not None:
            return table
        problems: list[Problem] = [((k, "metric"), f"{row.metric} needs measure.ideal")
                                   for k, row in enumerate(table) if row.metric in ("ideal", "percent_of_ideal")]
        if problems:
            fail(cls, [], problems)
        return table

    @field_validator("plot_range")
    @classmethod
    def _range_marks(cls, value: tuple[float | str, float | str] | None,
                     info: ValidationInfo) -> tuple[float | str, float | str] | None:
        return each(cls, value, _mark, info) if value is not None else None

    def quantities(self) -> tuple[Quantity, ...]:
        """The table's quantities (every row of a valid document has its window)."""
        assert all(row.window is not None for row in self.table)
        return tuple(row.quantity(row.window) for row in self.table if row.window is not None)

