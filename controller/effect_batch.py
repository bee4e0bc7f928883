"""Effects of inputs handled together (a group handoff), flushed as one Write per switch per step.

The state machine answers each input (a registration, a punted packet, a
returned marker) with an ordered list of effects for one MH. When several
inputs are handled back to back before anything is applied — the daemon takes
every packet-in already queued — their lists are merged here into *steps*:
each step is at most one Write per switch (every MH's route changes for that
switch), then packet effects in input order. Sans-IO: the daemon executes the
steps; the unit tests' in-memory network executes the same steps.

Guarantees (docs/controller.md, "Group handoffs"), for each input's list:
- a packet effect is sent only after every route change before it in its list
  has been applied (its step's Writes, and all earlier steps, returned);
- a route change is written only after every effect before it in its list
  (writes to another switch, packets) has been written or sent, so the
  state machine's "downstream first" orders still hold; except that one marked
  `with_previous` (the state machine's word that no order is needed) shares the
  step of the route change just before it, to another switch;
- the inputs of one MH keep their order: a later input starts where the
  earlier one ended (an input whose MH is unknown starts after every earlier
  input);
- two updates of one key never share a Write (P4Runtime may apply a batch's
  updates in any order).
Inputs of different MHs are independent (distinct route keys and packets), so
their effects share steps.

Markers: a tunnelled drain marker waits behind every release on its path in
its step, other MHs' included; `Step.behind` counts them so the daemon can
extend its timeout (`Mobility.drain_behind`). Within one step, drain and
gateway markers that leave one switch on one path (same source, same next
hop) are *coalesced* into the last of them:
packet-outs of one switch to one port are FIFO, so when the last marker comes
back every packet sent on that path before it — including the releases the
dropped markers followed — has passed too. `Step.coalesced` maps the kept
marker's nonce to the dropped ones; the daemon answers those when it returns.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Callable

from p4handoff.controller.intents import Completed, Effect, Notify, PacketEffect, Release, Reply, SendToward, SetRoute
from p4handoff.controller.network import Network
from p4handoff.controller.packets import marker_nonce, parse_ipv4


@dataclass
class Step:
    """One Write per switch (all applied before any packet effect of the step), then packet effects in order."""

    writes: dict[str, list[SetRoute]] = field(default_factory=dict)
    after: list[PacketEffect | Completed] = field(default_factory=list)
    coalesced: dict[int, list[int]] = field(default_factory=dict)    # kept marker nonce -> dropped nonces
    behind: dict[int, int] = field(default_factory=dict)     # drain marker nonce -> releases ahead on its path


def owners_in(net: Network) -> Callable[[Effect], str | None]:
    """The MH (name) an effect concerns, from the addresses the description gives each MH; None if none."""
    by_addr: dict[str, str] = {}
    for mh in net.mobile_hosts:
        by_addr[mh.address] = mh.name
        for addr in dict(mh.cell_addresses).values():
            by_addr[addr] = mh.name

    def owner(e: Effect) -> str | None:
        if isinstance(e, (Release, Completed)):
            return e.mh
        if isinstance(e, SetRoute):
            return by_addr.get(e.addr)
        if isinstance(e, Notify):
            return by_addr.get(e.note.mh_addr)
        if isinstance(e, Reply):
            return by_addr.get(e.dst_addr)
        return None            # SendToward: a marker; the input's other effects name its MH

    return owner


class EffectBatch:
    """Collects the effect lists of inputs handled together; `steps()` merges them (module doc)."""

    def __init__(self, owner: Callable[[Effect], str | None], controller_addr: str) -> None:
        self._owner = owner
        self._controller = ipaddress.IPv4Address(controller_addr).packed
        self._levels: list[tuple[dict[str, list[SetRoute]], list[PacketEffect | Completed]]] = []
        self._keys: list[set[tuple[str, str]]] = []       # route keys written per level
        self._end: dict[str, int] = {}                     # MH -> level its last input ended at
        self._last = -1                                    # highest level used

    def _level(self, k: int) -> tuple[dict[str, list[SetRoute]], list[PacketEffect | Completed]]:
        while len(self._levels) <= k:
            self._levels.append(({}, []))
            self._keys.append(set())
        return self._levels[k]

    def add(self, effects: list[Effect]) -> None:
        """One input's effects, in the order the state machine gave them."""
        if not effects:
            return
        mhs = {m for m in map(self._owner, effects) if m is not None}
        if mhs:
            before = [self._end[m] for m in mhs if m in self._end]
            level, after_packets = (max(before), True) if before else (0, False)
        else:
            level, after_packets = max(self._last, 0), True
        switch: str | None = None
        for e in effects:
            if isinstance(e, SetRoute):
                key = (e.switch, e.addr)
                if after_packets or (switch is not None and switch != e.switch and not e.with_previous):
                    level += 1
                    after_packets = False
                self._level(level)
                while key in self._keys[level]:       # one key twice in a Write: its order would be lost
                    level += 1
                    self._level(level)
                self._levels[level][0].setdefault(e.switch, []).append(e)
                self._keys[level].add(key)
                switch = e.switch
            else:
                self._level(level)[1].append(e)
                after_packets = True
                switch = None
        for m in mhs:
            self._end[m] = level
        self._last = max(self._last, level)

    def steps(self) -> list[Step]:
        """The merged steps, markers coalesced per path within each step."""
        out = []
        for writes, after in self._levels:
            if not writes and not after:
                continue
            step = Step(writes=writes)
            step.behind = self._behind(after)
            step.after, step.coalesced = self._coalesce(after)
            for kept, dropped in step.coalesced.items():     # answered when the kept one is back: its wait is theirs
                step.behind.update((d, step.behind[kept]) for d in dropped if kept in step.behind)
            out.append(step)
        return out

    def _behind(self, after: list[PacketEffect | Completed]) -> dict[int, int]:
        """Each tunnelled drain marker's releases ahead of it on its path (old BS -> new BS) in this step, every
        MH's: the marker comes back only after all of them, its timeout must allow for them (a group's flush
        is one path). A coalesced marker stands for the kept one, whose count is at least its own."""
        ahead: dict[tuple[str, str, str], int] = {}
        behind: dict[int, int] = {}
        for e in after:
            if not isinstance(e, Release) or not e.tunnel:
                continue
            path = ("tunnel", e.source, e.target)
            if self._marker_path(e) is None:
                ahead[path] = ahead.get(path, 0) + 1
                continue
            nonce = marker_nonce(parse_ipv4(e.packet))
            if nonce is not None and ahead.get(path):
                behind[nonce] = ahead[path]
        return behind

    def _coalesce(self, after: list[PacketEffect | Completed]) -> tuple[list[PacketEffect | Completed],
                                                                       dict[int, list[int]]]:
        last: dict[tuple[str, str, str], int] = {}          # path -> index of its last marker
        nonces: dict[int, int] = {}
        for i, e in enumerate(after):
            path = self._marker_path(e)
            if path is None:
                continue
            nonce = marker_nonce(parse_ipv4(e.packet))      # type: ignore[union-attr]
            if nonce is None:
                continue
            nonces[i] = nonce
            last[path] = i
        if len(nonces) == len(last):
            return after, {}
        kept_at = {i: p for p, i in last.items()}
        coalesced: dict[int, list[int]] = {nonces[i]: [] for i in kept_at}
        keep = []
        for i, e in enumerate(after):
            if i in nonces and i not in kept_at:
                path = self._marker_path(e)
                assert path is not None
                coalesced[nonces[last[path]]].append(nonces[i])
                continue
            keep.append(e)
        return keep, {k: v for k, v in coalesced.items() if v}

    def _marker_path(self, e: PacketEffect | Completed) -> tuple[str, str, str] | None:
        """(kind, from, next hop) of a drain or gateway marker; None for anything else (path markers too:
        each must be punted by the one BS its MH left, so it is never stood in for)."""
        if isinstance(e, SendToward):
            return "toward", e.switch, e.peer
        if isinstance(e, Release) and e.tunnel and e.packet[16:20] == self._controller:   # IPv4 destination
            return "tunnel", e.source, e.target
        return None
