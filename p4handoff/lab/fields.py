"""Typed readers for validating YAML mappings: each reports a bad value into `Errors` with its path."""
from __future__ import annotations

import difflib
import ipaddress
from typing import Any, Callable, Iterable, Iterator

from p4handoff.docmodel import check_name
from p4handoff.lab.units import Errors, parse_rate, parse_time

class Obj:
    """A mapping being validated: typed getters that report into `errors`, and unknown-key checks.

    A misspelt key (`rtae:` for `rate:`) is one error, "unknown field ... did you mean rate?", not also
    "rate: required".
    """

    def __init__(self, data: Any, path: str, errors: Errors, known: tuple[str, ...],
                 check_unknown: bool = True) -> None:
        self.path = path
        self.errors = errors
        self.ok = isinstance(data, dict)
        self.data: dict = data if self.ok else {}
        self.misspelt: set[str] = set()   # known keys that an unknown key is a close spelling of
        if not self.ok:
            errors.add(path, f"must be a mapping, got {type(data).__name__}")
            return
        for key in self.data if check_unknown else ():
            if key not in known:
                close = difflib.get_close_matches(str(key), [k for k in known if k not in self.data], n=1)
                self.misspelt.update(close)
                hint = f"did you mean {close[0]}? " if close else ""
                errors.add(f"{path}.{key}", f"unknown field ({hint}known: {', '.join(known)})")

    def has(self, key: str) -> bool:
        return key in self.data and self.data[key] is not None

    def raw(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def get(self, key: str, parse: Callable[[Any], Any], *, required: bool = False, default: Any = None) -> Any:
        if key not in self.data:
            if required and self.ok and key not in self.misspelt:
                self.errors.add(f"{self.path}.{key}", "required")
            return default
        try:
            return parse(self.data[key])
        except (ValueError, TypeError) as exc:
            self.errors.add(f"{self.path}.{key}", str(exc))
            return default


def whole(lo: int | None = None, hi: int | None = None) -> Callable[[Any], int]:
    def parse(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"must be a whole number, got {v!r}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise ValueError(f"must be in {lo if lo is not None else '-inf'}..{hi if hi is not None else 'inf'}, got {v}")
        return v
    return parse


def number(lo: float | None = None, hi: float | None = None, *, open_lo: bool = False) -> Callable[[Any], float]:
    def parse(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"must be a number, got {v!r}")
        if lo is not None and (v < lo or (open_lo and v == lo)):
            raise ValueError(f"must be {'>' if open_lo else '>='} {lo}, got {v}")
        if hi is not None and v > hi:
            raise ValueError(f"must be <= {hi}, got {v}")
        return float(v)
    return parse


def boolean(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"must be true or false, got {v!r}")
    return v


def text(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"must be a non-empty string, got {v!r}")
    return v


name_of = check_name


def address(v: Any) -> str:
    try:
        return str(ipaddress.IPv4Address(v))
    except (ValueError, ipaddress.AddressValueError):
        raise ValueError(f"must be an IPv4 address, got {v!r}") from None


def probability(v: Any) -> float:
    return number(0.0, 1.0)(v)


def rate_or_none(v: Any) -> float | None:
    return None if v is None else parse_rate(v)


def time_value(v: Any) -> float:
    return parse_time(v)


def positive_time(v: Any) -> float:
    return parse_time(v, allow_zero=False)


def a_list(v: Any) -> list:
    if not isinstance(v, list):
        raise ValueError(f"must be a list, got {type(v).__name__}")
    return v


def item_path(path: str, k: int, item: Any) -> str:
    name = item.get("name") if isinstance(item, dict) else None
    return f"{path}[{name}]" if isinstance(name, str) and name else f"{path}[{k}]"


class Known:
    """The names of one or more kinds of item a reference may name: `name in known`.

    A name is known if some item declares it, whatever else is wrong with that item, so a typo
    inside cell g3 does not also make every use of g3 an error; and while some item of these kinds
    has no readable name (`nmae: g3`), any name may be that item's, so none is reported unknown.
    """

    def __init__(self, names: Iterable[str], open_: bool = False) -> None:
        self.names = frozenset(names)
        self.open = open_

    def __contains__(self, name: object) -> bool:
        return self.open or name in self.names

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.names))

    def __len__(self) -> int:
        return len(self.names)

    def __or__(self, other: Known) -> Known:
        return Known(self.names | other.names, self.open or other.open)


class Declared:
    """The names a document declares, by kind (cell, flow, ...), read before the items are checked."""

    def __init__(self) -> None:
        self._known: dict[str, Known] = {}

    def declare(self, kind: str, items: Any) -> None:
        """Record the `name` of every item of `kind` (a list of mappings; anything else declares nothing)."""
        raw = [i.get("name") if isinstance(i, dict) else None for i in (items if isinstance(items, list) else [])]
        self._known[kind] = Known((n for n in raw if isinstance(n, str) and n),
                                  any(not (isinstance(n, str) and n) for n in raw))

    def __call__(self, *kinds: str) -> Known:
        out = Known(())
        for kind in kinds:
            out = out | self._known.get(kind, Known(()))
        return out
