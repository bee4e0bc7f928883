"""The value types of scenario files: rates, times and fractions with units, names, choices, time series.

Scenario authors copy numbers from papers ("384 kb/s", "70 ms"), so a
value is a plain number in SI base units (b/s, seconds) or a string with a
unit (p4handoff.scenario.units parses both). Each type carries its JSON Schema.
"""
from __future__ import annotations

from typing import Annotated, Any, Sequence

from pydantic import Field

from p4handoff.docmodel import Checked, real, whole
from p4handoff.hosts.cc import SCHEMES
from p4handoff.scenario.model import COMPARED
from p4handoff.scenario.units import parse_fraction, parse_rate, parse_time

_NUMBER = r"\s*\+?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\s*"
RATE_PATTERN = rf"^{_NUMBER}[kKMG]?\s*(bps|b/s|bit/s)\s*$"
TIME_PATTERN = rf"^{_NUMBER}(us|µs|ms|s|min)\s*$"
PERCENT_PATTERN = r"^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)\s*%\s*$"


def _with_unit(pattern: str, number: dict[str, Any], description: str) -> dict[str, Any]:
    return {"anyOf": [{"type": "number", **number}, {"type": "string", "pattern": pattern}],
            "description": description}


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a non-empty string, got {value!r}")
    return value


def _positive_time(value: Any) -> float:
    return parse_time(value, allow_zero=False)


def one_of(choices: Sequence[str]) -> Checked:
    """One of a few words (an AQM, a paper, a metric)."""
    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, got {value!r}")
        return value
    return Checked(check, {"enum": list(choices)})


def _scheme(value: Any) -> str:
    if not isinstance(value, str) or value not in SCHEMES:
        raise ValueError(f"unknown scheme {value!r} (known: {', '.join(sorted(SCHEMES))})")
    return value


def _flow_scheme(value: Any) -> str:
    if value == COMPARED:
        return value
    if not isinstance(value, str) or value not in SCHEMES:
        raise ValueError(f"unknown scheme {value!r} (known: {', '.join(sorted(SCHEMES))}, or '{COMPARED}')")
    return value


def _time_or_mark(value: Any) -> float | str:
    """A time, or a string that is not one: the name of a timeline mark, checked against the marks."""
    try:
        return parse_time(value)
    except ValueError:
        if isinstance(value, str) and value:
            return value
        raise ValueError(f"not a time or a timeline mark: {value!r}") from None


_COUNT = whole(1, 100_000)


def _times(value: Any) -> tuple[float, ...]:
    """A time, a list of times, {from, every, count}, or {from, to, count} (count times evenly in [from, to))."""
    if isinstance(value, dict):
        if set(value) == {"from", "every", "count"}:
            t0, step = parse_time(value["from"]), parse_time(value["every"], allow_zero=False)
        elif set(value) == {"from", "to", "count"}:
            t0, t1 = parse_time(value["from"]), parse_time(value["to"])
            if t1 <= t0:
                raise ValueError(f"to ({t1:g} s) must be after from ({t0:g} s)")
            step = (t1 - t0) / _COUNT.check(value["count"])
        else:
            raise ValueError(f"a time series is {{from, every, count}} or {{from, to, count}}, got keys {sorted(value)}")
        return tuple(t0 + k * step for k in range(_COUNT.check(value["count"])))
    if isinstance(value, list):
        if not value:
            raise ValueError("must list at least one time")
        return tuple(parse_time(t) for t in value)
    return (parse_time(value),)


_TIME_SCHEMA = _with_unit(TIME_PATTERN, {"minimum": 0}, "seconds, or a string with a unit: 70ms, 0.5 s, 2min")
_COUNT_SCHEMA = {"type": "integer", "minimum": 1, "maximum": 100_000}

Text = Annotated[str, Checked(_text, {"type": "string", "minLength": 1})]
Rate = Annotated[float, Checked(parse_rate, _with_unit(RATE_PATTERN, {"exclusiveMinimum": 0},
                                                         "b/s, or a string with a unit: 384kbps, 10 Mb/s"))]
Time = Annotated[float, Checked(parse_time, _TIME_SCHEMA)]
PositiveTime = Annotated[float, Checked(_positive_time, _with_unit(TIME_PATTERN, {"exclusiveMinimum": 0},
                                                                     "seconds (> 0), or e.g. 200ms"))]
Fraction = Annotated[float, Checked(parse_fraction, {"anyOf": [{"type": "number"},
                                                               {"type": "string", "pattern": PERCENT_PATTERN}],
                                                     "description": "a fraction: 0.05, or 5%"})]
Probability = Annotated[float, real(0.0, 1.0)]
NUMBER = real(-1e300, 1e300)
Number = Annotated[float, NUMBER]
NonNegative = Annotated[float, real(0.0, 1e300)]
Positive = Annotated[float, real(0.0, 1e300, lo_open=True)]
Flag = Annotated[bool, Field(strict=True)]
Scheme = Annotated[str, Checked(_scheme, {"enum": sorted(SCHEMES)})]
FlowScheme = Annotated[str, Checked(_flow_scheme, {"enum": [*sorted(SCHEMES), COMPARED]})]
TimeOrMark = Annotated[float | str, Checked(_time_or_mark, {"anyOf": [_TIME_SCHEMA, {
    "type": "string", "minLength": 1, "description": "a timeline mark: a move's label (+ .end, .enter, ...)"}]})]
Times = Annotated[tuple[float, ...], Checked(_times, {"anyOf": [
    _TIME_SCHEMA,
    {"type": "array", "items": _TIME_SCHEMA, "minItems": 1},
    {"type": "object", "properties": {"from": _TIME_SCHEMA, "every": _TIME_SCHEMA, "count": _COUNT_SCHEMA},
     "required": ["from", "every", "count"], "additionalProperties": False},
    {"type": "object", "properties": {"from": _TIME_SCHEMA, "to": _TIME_SCHEMA, "count": _COUNT_SCHEMA},
     "required": ["from", "to", "count"], "additionalProperties": False}]})]


def time_value(value: float | str, marks: dict[str, float]) -> float:
    """The seconds of a TimeOrMark, given the timeline's marks (a validated mark name is among them)."""
    return marks[value] if isinstance(value, str) else value

