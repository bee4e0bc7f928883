"""Congestion-control schemes behind one plug-in interface (`hosts.cc.base.CongestionControl`).

`make_scheme("bwaware")` builds a fresh scheme instance by name; `SCHEMES`
lists the names. Each scheme lives in its own module.
"""
from __future__ import annotations

from typing import Callable

from hosts.cc.base import AckInfo, CongestionControl, SenderControl

SCHEMES: dict[str, Callable[..., CongestionControl]] = {
    "newreno": CongestionControl,
}


def register(name: str, factory: Callable[..., CongestionControl]) -> None:
    """Add a scheme under `name` (a module's import registers its scheme)."""
    SCHEMES[name] = factory


def make_scheme(name: str, **params: object) -> CongestionControl:
    """A new instance of scheme `name` with its parameters; ValueError for an unknown name."""
    try:
        factory = SCHEMES[name]
    except KeyError:
        raise ValueError(f"unknown congestion-control scheme {name!r}; known: {', '.join(sorted(SCHEMES))}") from None
    return factory(**params)


__all__ = ["AckInfo", "CongestionControl", "SenderControl", "SCHEMES", "make_scheme", "register"]
