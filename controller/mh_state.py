"""One mobile host's place in its handoff: phase, serving BS, what the flush still waits for.

The state `p4handoff.controller.mobility.Mobility` keeps per MH; every part of
the handoff (IPF flush, DSBP probe path, timers, recovery) reads and moves it.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from p4handoff.controller.network import MobileHost


class MobilityError(ValueError):
    """An operator request that cannot be carried out (unknown MH or BS, MH never attached, ...)."""


class Phase(enum.Enum):
    UNKNOWN = "unknown"                  # never registered: no routes
    ATTACHED = "attached"                # delivered at its BS (attached-new while old BSs still hold)
    DETACHED = "detached-buffering"      # left its BS: packets diverted into its buffer
    HANDING_OFF = "handing-off"          # attached at the new BS, buffer flushing, markers outstanding


@dataclass
class Probe:
    """DSBP's second path: the MH's address in a neighbouring cell, delivered there."""

    bs: str
    addr: str
    port: int
    mac: str
    expiry: float | None


@dataclass
class MhState:
    """Everything the controller knows of one MH between two of its inputs."""

    host: MobileHost
    phase: Phase = Phase.UNKNOWN
    bs: str | None = None            # serving BS (attached) or the BS being handed off to
    port: int | None = None
    mac: str | None = None
    anchor: str | None = None        # BS it was last attached to: releases are injected there
    left_cell: int = 0               # cell it left (notification's old_cell)
    release_src: str | None = None   # where releases are injected: anchor (tunnel) or bs (direct)
    release_tunnel: bool = False     # releases go release_src → bs by tunnel (else packet-out at bs)
    diverts: set[str] = field(default_factory=set)
    gw_marker: tuple[int, float] | None = None          # (nonce, deadline)
    path_markers: dict[int, tuple[float, str]] = field(default_factory=dict)   # nonce -> (deadline, bs)
    drain_marker: tuple[int, float] | None = None       # behind the releases of this handoff
    drain_rounds: int = 0            # drain markers sent in this handoff (at most MAX_DRAIN_ROUNDS)
    since_drain: int = 0             # packets released since the last drain marker was sent
    flushed: int = 0                 # packets released in this handoff: the HANDOFF's forwarding signal
    holds: dict[str, float] = field(default_factory=dict)   # old BS -> time its tunnel is removed
    started: float | None = None     # registration time of the running handoff
    flush_deadline: float | None = None
    binding_expiry: float | None = None
    last_ident: int = -1
    probe: Probe | None = None
    late: int = 0                    # packets punted after their switch stopped diverting
    handoffs: int = 0

