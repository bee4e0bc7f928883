"""Units in scenario files: rates, times and the path-named error list they report into.

Scenario authors copy numbers from papers ("384 kb/s", "70 ms"), so both
plain numbers in SI base units (b/s, seconds) and strings with a unit are
accepted; anything else is reported with the field's path, never guessed.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from p4handoff.yamlfile import DocumentError

_RATE_RE = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([kKMG]?)\s*(?:bps|b/s|bit/s)\s*$")
_TIME_RE = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(us|µs|ms|s|min)\s*$")
_RATE_MULT = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
_TIME_MULT = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}


class ScenarioError(DocumentError):
    """A scenario that cannot be run; `errors` lists every (field path, problem)."""

    kind = "scenario"


@dataclass
class Errors:
    """Collects (path, problem) pairs so a user sees every mistake at once."""

    items: list[tuple[str, str]] = field(default_factory=list)

    def add(self, path: str, problem: str) -> None:
        self.items.append((path, problem))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self, source: str) -> None:
        if self.items:
            raise ScenarioError(source, self.items)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    return v if math.isfinite(v) else None


def _quantity(value: object, pattern: re.Pattern[str], multipliers: dict[str, float]) -> float | None:
    """A plain number, or a string `pattern` matches as (number, unit) scaled by the unit's multiplier."""
    v = _number(value)
    if v is None and isinstance(value, str):
        m = pattern.match(value)
        if m:
            v = float(m.group(1)) * multipliers[m.group(2)]
    return v


def parse_rate(value: object) -> float:
    """b/s from 10e6, '10Mbps', '384 kb/s', '2.0 Mbit/s'; ValueError otherwise."""
    v = _quantity(value, _RATE_RE, _RATE_MULT)
    if v is None:
        raise ValueError(f"not a rate: {value!r} (b/s as a number, or e.g. '384kbps', '10 Mb/s')")
    if v <= 0:
        raise ValueError(f"rate must be positive, got {value!r}")
    return v


def parse_time(value: object, *, allow_zero: bool = True) -> float:
    """Seconds from 0.5, '70ms', '3.5 s', '250us'; ValueError otherwise (negative included)."""
    v = _quantity(value, _TIME_RE, _TIME_MULT)
    if v is None:
        raise ValueError(f"not a time: {value!r} (seconds as a number, or e.g. '70ms', '0.5 s')")
    if v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"time must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return v


def parse_fraction(value: object) -> float:
    """A fraction from 0.05 or '5%' / '5 %' (the reports show fractions as percentages)."""
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            return float(value.strip()[:-1]) / 100
        except ValueError:
            raise ValueError(f"not a percentage: {value!r}") from None
    v = _number(value)
    if v is None:
        raise ValueError(f"not a fraction: {value!r} (a number such as 0.05, or '5%')")
    return v


def format_rate(bps: float) -> str:
    """A rate the way the papers write it: 384 kb/s, 3.192 Mb/s."""
    if bps >= 1e6:
        return f"{bps / 1e6:.3f} Mb/s"
    return f"{bps / 1e3:.1f} kb/s"
