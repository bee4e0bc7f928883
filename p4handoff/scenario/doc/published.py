"""`published:` of a scenario file: the paper's numbers and the claims the report checks against ours.

Values and bounds are in the unit the metric computes (b/s for rates:
`117kbps`; fractions for loss and utilisation: `2%`; numbers otherwise).
Every variant label, window, flow, link and sweep axis named here must be
one the file declares.
"""
from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Self, Union

from pydantic import (Discriminator, Field, ModelWrapValidatorHandler, ValidationError, ValidationInfo, create_model,
                      field_validator, model_validator)


from p4handoff.docmodel import DocModel, Problem, fail, validate_all
from p4handoff.scenario.doc.measure import QuantityFields, TableRow, known_window, metric_value, quantity
from p4handoff.scenario.doc.names import Declared, declared
from p4handoff.scenario.doc.problems import reraise, tag
from p4handoff.scenario.doc.values import Fraction, Number, Rate, Text, one_of
from p4handoff.scenario.model import (FRACTION_METRICS, METRICS, RATE_METRICS, REPEAT_RULES, Expectation, Published,
                                      Quantity)

QUANTITY_LOCS = (("metric",), ("flow",), ("link",), ("window",))


def _metric_type(metric: str) -> Any:
    return Rate if metric in RATE_METRICS else Fraction if metric in FRACTION_METRICS else Number


if TYPE_CHECKING:
    MetricValues = DocModel
else:
    MetricValues = create_model(
        "MetricValues", __base__=DocModel, __doc__="A variant's value of each metric, in the metric's unit.",
        **{m: (_metric_type(m) | None, None) for m in METRICS})


def _values(values: MetricValues) -> dict[str, float]:
    return {m: v for m in METRICS if (v := getattr(values, m)) is not None}


def _labels(named: Any, info: ValidationInfo) -> list[Problem]:
    """A problem for every variant label in `named` ({label: ...} or a list) the file does not have."""
    names = declared(info)
    labels = names("labels") if names is not None else None
    return [((), f"no variant labelled {label!r} (variants: {labels.text()})") for label in named
            if labels is not None and label not in labels]


def _by_label(cls: type[DocModel], values: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
    problems = [((label, *loc), text) for label in values for loc, text in _labels([label], info)]
    if problems:
        fail(cls, [], problems)
    return values


class PointDoc(DocModel):
    """Values read off the paper's figure at one sweep point."""

    at: dict[str, Any] = Field(description="sweep axis (label or path) -> one of its swept values")
    values: dict[str, MetricValues] = Field(default_factory=dict, description="variant label -> metric values")

    @field_validator("at", mode="before")
    @classmethod
    def _swept(cls, at: Any, info: ValidationInfo) -> Any:
        """Names the axis by its path (the runs' points do), whichever way the file names it."""
        if not isinstance(at, dict) or not at:
            raise ValueError("must map sweep axes (label or path) to a swept value")
        names = declared(info)
        if names is None:
            return at
        axes, unreadable = names.axes()
        by_name = {a.label: a for a in axes} | {a.path: a for a in axes}
        problems: list[Problem] = []
        for name, value in at.items():
            axis = by_name.get(name)
            if axis is None and not unreadable:
                problems.append(((name,), f"no sweep axis {name!r} (axes: {', '.join(a.label for a in axes) or 'none'})"))
            elif axis is not None and value not in axis.values:
                problems.append(((name,), f"{value!r} is not one of the swept values {list(axis.values)}"))
        if problems:
            fail(cls, [], problems)
        return {by_name[name].path if name in by_name else name: value for name, value in at.items()}

    @field_validator("values")
    @classmethod
    def _known_labels(cls, values: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        return _by_label(cls, values, info)

    def points(self) -> list[tuple[tuple[tuple[str, Any], ...], str, str, float]]:
        key = tuple(sorted(self.at.items()))
        return [(key, label, metric, value) for label, entry in self.values.items()
                for metric, value in _values(entry).items()]


class _Claim(QuantityFields):
    claim: Text = Field(description="the paper's claim in words")
    window: Text | None = Field(default=None, description="default: published.window, else the first window")
    at_least: float | str | None = None
    at_most: float | str | None = None
    published: Number | None = Field(default=None, description="the paper's own value of the compared quantity")
    repeats: Annotated[str, one_of(REPEAT_RULES)] = Field(
        default="majority", description="besides holding on the means over repeats, the claim must hold in more "
        "than half of the repeats (majority), in every repeat (all), or nowhere else (means); variants compared "
        "are paired by seed")

    check_window = field_validator("window")(known_window)

    @model_validator(mode="wrap")
    @classmethod
    def _measured(cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo) -> Self:
        """A claim is checked on a quantity the report measures (said even when its bounds are wrong)."""
        claim, errors = validate_all(handler, data)
        names = declared(info)
        table = _table(names) if names is not None and isinstance(data, dict) else None
        problems: list[Problem] = []
        if names is not None and table is not None and not any(e["loc"][:1] in QUANTITY_LOCS for e in errors):
            q = quantity(data["metric"], data.get("flow"), data.get("link"), data.get("window") or names.claim_window()
                         or "", data.get("flows"))
            if q not in table:
                problems.append(((), f"{q.metric}{q.subject or ' of all flows'} in window {q.window} is not "
                                     "in measure.table: a claim is checked on a quantity the report measures"))
        if errors or problems:
            reraise(cls, errors, problems)
        return claim

    @field_validator("order", "ratio", "variant", check_fields=False)
    @classmethod
    def _compared(cls, named: str | tuple[str, ...], info: ValidationInfo) -> str | tuple[str, ...]:
        """The variants a claim compares are the file's; a ratio compares two."""
        problems = _labels([named] if isinstance(named, str) else named, info)
        if info.field_name == "ratio" and len(named) != 2:
            problems.append(((), "must name two variants [numerator, denominator]"))
        if problems:
            fail(cls, [], problems)
        return named

    @field_validator("at_least", "at_most", mode="before")
    @classmethod
    def _in_metric_unit(cls, bound: Any, info: ValidationInfo) -> float | None:
        metric = info.data.get("metric")
        return None if bound is None else metric_value(metric if isinstance(metric, str) else "")(bound)

    kind: ClassVar[str]

    @abstractmethod
    def variants(self) -> tuple[str, ...]:
        """The variant labels the claim compares."""

    def expectation(self, window: str) -> Expectation:
        """The claim as the report checks it; `window` if the claim names none."""
        assert not isinstance(self.at_least, str) and not isinstance(self.at_most, str)   # converted when read
        return Expectation(self.kind, self.quantity(self.window or window), self.variants(), self.claim,
                           self.at_least, self.at_most, self.published, self.repeats)


class OrderClaim(_Claim):
    kind = "order"
    order: tuple[str, ...] = Field(description="variant labels, largest first")

    def variants(self) -> tuple[str, ...]:
        return self.order


class RatioClaim(_Claim):
    kind = "ratio"
    ratio: tuple[str, ...] = Field(description="[numerator, denominator] variant labels")

    def variants(self) -> tuple[str, ...]:
        return self.ratio


class BoundClaim(_Claim):
    kind = "bound"
    variant: str = Field(description="the variant whose quantity is bounded by at_least and/or at_most")

    @model_validator(mode="after")
    def _a_bound(self) -> BoundClaim:
        if self.at_least is None and self.at_most is None:
            raise ValueError("a bound needs at_least or at_most")
        return self

    def variants(self) -> tuple[str, ...]:
        return (self.variant,)


def _table(names: Declared) -> set[Quantity] | None:
    """The quantities measure.table measures (None while a row has mistakes: they are that row's)."""
    try:
        rows = [TableRow.model_validate(row, context=names) for row in names.table_rows()]
    except ValidationError:
        return None
    if any(row.window is None for row in rows):
        return None                 # the first window has no name: its error
    return {row.quantity(row.window) for row in rows if row.window is not None}


def _claim_kind(value: Any) -> str | None:
    """The tag of a claim written with one kind's key (or of a claim model, when one is dumped)."""
    if isinstance(value, _Claim):
        value = {"variant" if value.kind == "bound" else value.kind: True}
    kinds = [k for k in ("order", "ratio", "variant") if isinstance(value, dict) and value.get(k) is not None]
    return tag(kinds[0]).tag if len(kinds) == 1 else None


Claim = Annotated[
    Union[Annotated[OrderClaim, tag("order")], Annotated[RatioClaim, tag("ratio")],
          Annotated[BoundClaim, tag("variant")]],
    Discriminator(_claim_kind, custom_error_type="claim_kind",
                  custom_error_message="needs exactly one of order (list of variants), ratio ([a, b]) or variant "
                                       "(a bound)")]


class PublishedDoc(DocModel):
    source: Text = Field(description="the paper, and where in it")
    window: Text | None = Field(default=None, description="the window the paper's numbers are for")
    ideal: Rate | None = Field(default=None, description="the paper's ideal throughput")
    values: dict[str, MetricValues] = Field(default_factory=dict, description="variant label -> metric values")
    points: tuple[PointDoc, ...] = Field(default=(), description="values read off a figure at sweep points")
    findings: tuple[Text, ...] = Field(default=(), description="prose: listed in the report, not checked")
    expect: tuple[Claim, ...] = Field(default=(), description="claims checked at every sweep point")

    check_window = field_validator("window")(known_window)

    @field_validator("values")
    @classmethod
    def _known_labels(cls, values: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        return _by_label(cls, values, info)

    def spec(self, windows: list[str]) -> Published:
        """The paper's numbers; a claim without a window is about published.window, else the first of `windows`
        by name."""
        default = self.window or min(windows, default="")
        return Published(self.source, self.window, self.ideal, {label: _values(v) for label, v in self.values.items()},
                         self.findings, tuple(c.expectation(default) for c in self.expect),
                         tuple(p for point in self.points for p in point.points()))
