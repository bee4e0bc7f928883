"""Congestion-control schemes behind one plug-in interface (`p4handoff.hosts.cc.base.CongestionControl`).

`make_scheme("bwaware")` builds a fresh scheme instance by name; `SCHEMES`
maps each name to its class. Each scheme lives in its own module.
"""
from __future__ import annotations

import sys
from typing import Callable

from p4handoff.hosts.cc.base import AckInfo, CongestionControl, SenderControl
from p4handoff.hosts.cc.bwaware import BandwidthAware
from p4handoff.hosts.cc.cdg import Cdg
from p4handoff.hosts.cc.chd import Chd
from p4handoff.hosts.cc.dsbp import Dsbp, DsbpUnpaced
from p4handoff.hosts.cc.freeze import FreezeTcp
from p4handoff.hosts.cc.immediate import ImmediateExpiration
from p4handoff.hosts.cc.reno import Reno
from p4handoff.hosts.cc.ucc import Ucc
from p4handoff.hosts.cc.westwood import Westwood

SCHEMES: dict[str, Callable[..., CongestionControl]] = {
    "newreno": CongestionControl,
    "reno": Reno,
    "immediate": ImmediateExpiration,
    "bwaware": BandwidthAware,
    "freeze": FreezeTcp,
    "ucc": Ucc,
    "westwood": Westwood,
    "dsbp": Dsbp,
    "dsbp-unpaced": DsbpUnpaced,
    "cdg": Cdg,
    "chd": Chd,
}


def scheme_summary(name: str) -> str:
    """One line on scheme `name` for help texts: its class's docstring, else its module's."""
    factory = SCHEMES[name]
    doc = factory.__doc__ if "__doc__" in vars(factory) and factory.__doc__ else sys.modules[factory.__module__].__doc__
    return (doc or name).strip().splitlines()[0]


def make_scheme(name: str, **params: object) -> CongestionControl:
    """A new instance of scheme `name` with its parameters; ValueError for an unknown name."""
    try:
        factory = SCHEMES[name]
    except KeyError:
        raise ValueError(f"unknown congestion-control scheme {name!r}; known: {', '.join(sorted(SCHEMES))}") from None
    return factory(**params)


__all__ = ["AckInfo", "CongestionControl", "SenderControl", "SCHEMES", "make_scheme", "scheme_summary"]
