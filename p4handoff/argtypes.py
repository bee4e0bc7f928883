"""argparse value types: every command line of the product takes its `type=` callables from here.

A bad value raises `argparse.ArgumentTypeError`, so argparse reports it as a
usage error (exit 2) naming the option, with the same wording everywhere.
tests/test_argtypes.py checks each type's errors and that no command line
defines its own. This is a base module (any layer uses it): what a value
means in a domain comes from the caller (`one_of(SCHEMES, "scheme")`,
`parsed_by(parse_time)`), never from an import of that domain here.
"""
from __future__ import annotations

import argparse
import ipaddress
import math
from typing import Any, Callable, Collection, TypeVar

import yaml

T = TypeVar("T")
_SI = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9}


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer >= `minimum`."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {n}")
        return n
    return parse


def real_number(minimum: float, *, above: bool = False, maximum: float = math.inf) -> Callable[[str], float]:
    """An argparse type: a finite number >= `minimum` (> with `above`) and <= `maximum`."""
    def parse(text: str) -> float:
        try:
            x = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(x):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if x < minimum or (above and x == minimum):
            raise argparse.ArgumentTypeError(f"must be {'>' if above else '>='} {minimum:g}, got {text!r}")
        if x > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum:g}, got {text!r}")
        return x
    return parse


def probability(text: str) -> float:
    """An argparse type: a number in 0..1."""
    p = real_number(0.0)(text)
    if p > 1:
        raise argparse.ArgumentTypeError(f"must be within 0..1, got {p}")
    return p


def byte_count(text: str) -> int:
    """'5000000', '5M', '64k' (decimal multipliers) -> bytes (> 0)."""
    digits, suffix = (text[:-1], text[-1]) if text and text[-1] in _SI else (text, "")
    try:
        n = int(digits) * _SI[suffix]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a byte count: {text!r} (e.g. 5000000, 64k, 5M)") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"byte count must be > 0, got {text!r}")
    return n


def port_number(text: str) -> int:
    """A TCP/UDP port, 0..65535 (0: any free / none, as the option says)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0..65535, got {port}")
    return port


def ipv4_address(text: str) -> str:
    """A dotted-quad IPv4 address, as written."""
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an IPv4 address: {text!r}") from None
    return text


def address_port(default_port: int) -> Callable[[str], tuple[str, int]]:
    """An argparse type: 'ADDR' or 'ADDR:PORT' (IPv4, port 1..65535) -> (address, port), `default_port` if none."""
    def parse(text: str) -> tuple[str, int]:
        host, sep, port = text.partition(":")
        try:
            ipv4_address(host)
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"{exc} (expected ADDR or ADDR:PORT)") from None
        number = port_number(port) if sep else default_port
        if number == 0:
            raise argparse.ArgumentTypeError("destination port must be 1..65535")
        return host, number
    return parse


def parsed_by(parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse type from a domain parser whose ValueError says what is wrong (`scenario.units.parse_time`)."""
    def convert(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return convert


def optional(convert: Callable[[str], T], *none: str) -> Callable[[str], T | None]:
    """An argparse type: None for the words in `none` (e.g. 'none', '0' for an unlimited rate), else `convert`."""
    def parse(text: str) -> T | None:
        return None if text in none else convert(text)
    return parse


def name_list(known: Collection[str], noun: str) -> Callable[[str], tuple[str, ...]]:
    """An argparse type: one or more comma-separated names, each in `known` (a `noun`, in the messages)."""
    def parse(text: str) -> tuple[str, ...]:
        names = tuple(s.strip() for s in text.split(",") if s.strip())
        if not names:
            raise argparse.ArgumentTypeError(f"give at least one {noun} (known: {', '.join(known)})")
        unknown = [n for n in names if n not in known]
        if unknown:
            raise argparse.ArgumentTypeError(
                f"unknown {noun} {', '.join(map(repr, unknown))}; known: {', '.join(known)}")
        return names
    return parse


def one_of(known: Collection[str], noun: str) -> Callable[[str], str]:
    """An argparse type: one name in `known` (`name_list`'s check, a single name)."""
    several = name_list(known, noun)
    def parse(text: str) -> str:
        names = several(text)
        if len(names) > 1:
            raise argparse.ArgumentTypeError(f"one {noun}, got {len(names)}: {text!r}")
        return names[0]
    return parse


def yaml_assignment(text: str) -> tuple[str, Any]:
    """'PATH=VALUE' -> (path, value parsed as YAML): a scenario field override."""
    path, sep, value = text.partition("=")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"expected PATH=VALUE, got {text!r}")
    try:
        return path.strip(), yaml.safe_load(value)
    except yaml.YAMLError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: value is not YAML: {exc}") from None


def yaml_values(text: str) -> tuple[str, tuple[Any, ...]]:
    """'PATH=V1,V2,...' -> (path, values parsed as YAML): a scenario field's sweep."""
    path, sep, values = text.partition("=")
    if not sep or not path or not values:
        raise argparse.ArgumentTypeError(f"expected PATH=V1,V2,..., got {text!r}")
    try:
        parsed = tuple(yaml.safe_load(v) for v in values.split(","))
    except yaml.YAMLError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: a value is not YAML: {exc}") from None
    return path.strip(), parsed
