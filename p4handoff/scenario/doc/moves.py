"""A mobile host's `moves:`: each item is one kind of move, which becomes attach/detach/handoff primitives.

An item names its kind by the one key it has (`switch: {to, cell}`,
`overlap: {iface, cell}`, ...); `Move` picks the model by that key, so a
mistake is reported against that kind's fields only. The primitives are
put in order and checked as a timeline by p4handoff.scenario.timeline.
"""
from __future__ import annotations

from abc import abstractmethod
from typing import Annotated, Any, Iterator, Union

from pydantic import Discriminator, Field, field_validator, model_validator

from p4handoff.docmodel import DocModel, Loc, Name
from p4handoff.scenario.doc.names import MARKS, refers_to
from p4handoff.scenario.doc.problems import tag
from p4handoff.scenario.doc.values import Flag, Positive, PositiveTime, Probability, Time, Times, one_of
from p4handoff.scenario.model import MobilityOp
from p4handoff.scenario.timeline import BACK, OLD_PATHS, PREVIOUS, switch_ops


known_cell = refers_to(("cells",), "cell")


class Place(DocModel):
    iface: Name
    cell: Name

    check_cell = field_validator("cell")(known_cell)


class SwitchTo(DocModel):
    to: Name = Field(description="the interface the MH is on afterwards (the same radio: a horizontal handoff)")
    cell: Name

    check_cell = field_validator("cell")(known_cell)


class Places(DocModel):
    between: tuple[Place, ...] = Field(description="exactly two places {iface, cell}")

    @field_validator("between")
    @classmethod
    def _two(cls, places: tuple[Place, ...]) -> tuple[Place, ...]:
        if len(places) != 2:
            raise ValueError("must list exactly two places {iface, cell}")
        return places


class VisitsTo(DocModel):
    cell: Name
    iface: Name | None = Field(default=None, description="default: the interface it was active on")

    check_cell = field_validator("cell")(known_cell)


class AttachTo(Place):
    probe: Flag = Field(default=False, description="DSBP: the MH probes the new path before the handoff")


class Detach(DocModel):
    iface: Name
    notify: Flag = True
    warn: Time = Field(default=0.0, description="the network is told this long before")


class Handoff(DocModel):
    iface: Name
    notify: Flag = True


class Geometry(DocModel):
    """Two cells of one radius whose centres are `distance_m` apart, crossed at `speed_kmh`."""

    radius_m: Positive
    distance_m: Positive
    speed_kmh: Positive

    @model_validator(mode="after")
    def _overlap(self) -> Geometry:
        if self.overlap_m <= 0:
            raise ValueError(f"cells of radius {self.radius_m} m {self.distance_m} m apart do not overlap")
        return self

    @property
    def overlap_m(self) -> float:
        return 2 * self.radius_m - self.distance_m

    @property
    def dwell(self) -> float:
        return self.overlap_m / (self.speed_kmh / 3.6)


class _Move(DocModel):
    label: Name | None = Field(default=None, description="names the move's instants as timeline marks for windows")

    @abstractmethod
    def ops(self, mh: str) -> list[MobilityOp]:
        """The primitives of the move, in the order they were written (the timeline sorts them stably)."""

    @abstractmethod
    def marks(self) -> dict[str, float]:
        """The instants the move's label names."""

    @abstractmethod
    def ifaces(self) -> Iterator[tuple[Loc, str]]:
        """The interfaces the move names, with where."""


class _Leave(_Move):
    """A move that leaves the active interface at each time in `at` and is elsewhere `outage` later."""

    at: Times
    outage: Time
    warn: Time = Field(default=0.0, description="the network is told this long before each departure")

    def marks(self) -> dict[str, float]:
        return {self.label: self.at[0], f"{self.label}.end": self.at[0] + self.outage} if self.label else {}


class SwitchMove(_Leave):
    switch: SwitchTo

    def ops(self, mh: str) -> list[MobilityOp]:
        return [op for t in self.at for op in switch_ops(mh, t, self.switch.to, self.switch.cell, self.outage, self.warn)]

    def ifaces(self) -> Iterator[tuple[Loc, str]]:
        yield ("switch", "to"), self.switch.to


class AlternateMove(_Leave):
    alternate: Places

    def ops(self, mh: str) -> list[MobilityOp]:
        places = [(p.iface, p.cell) for p in self.alternate.between]
        return [op for j, t in enumerate(self.at)
                for op in switch_ops(mh, t, *places[(j + 1) % 2], self.outage, self.warn)]

    def ifaces(self) -> Iterator[tuple[Loc, str]]:
        yield from ((("alternate", "between", j, "iface"), p.iface) for j, p in enumerate(self.alternate.between))


class VisitsMove(_Leave):
    visits: VisitsTo
    stay: PositiveTime = Field(description="how long each visit lasts before it comes back")

    def ops(self, mh: str) -> list[MobilityOp]:
        iface = self.visits.iface or ""
        return [op for t in self.at for op in (
            *switch_ops(mh, t, iface, self.visits.cell, self.outage, self.warn),
            *switch_ops(mh, t + self.outage + self.stay, iface, BACK, self.outage, self.warn))]

    def ifaces(self) -> Iterator[tuple[Loc, str]]:
        if self.visits.iface is not None:
            yield ("visits", "iface"), self.visits.iface


class OverlapMove(_Move):
    """DSBP: attach with probing on entering the overlap, hand off inside it, leave the old cell."""

    overlap: Place
    enter: Time
    dwell: PositiveTime | None = Field(default=None, description="seconds in the overlap (or geometry)")
    geometry: Geometry | None = None
    handoff_fraction: Probability = Field(default=0.5, description="handoff at enter + fraction x dwell")
    old_path: Annotated[str, one_of(OLD_PATHS)] = Field(
        default="kept", description="kept: the old cell delivers until the MH leaves the overlap; dropped: lost "
                                    "at the handoff (buffered and forwarded if the old BS has IPF)")

    @model_validator(mode="after")
    def _one_dwell(self) -> OverlapMove:
        if (self.dwell is None) == (self.geometry is None):
            raise ValueError("give exactly one of dwell (seconds in the overlap) or geometry")
        return self

    @property
    def _times(self) -> tuple[float, float, float]:
        dwell = self.dwell if self.geometry is None else self.geometry.dwell
        assert dwell is not None
        return self.enter, self.enter + dwell * self.handoff_fraction, self.enter + dwell

    def ops(self, mh: str) -> list[MobilityOp]:
        enter, handoff, leave = self._times
        attach = MobilityOp(enter, mh, "attach", self.overlap.iface, self.overlap.cell, probe=True)
        if self.old_path == "dropped":
            # the radio leaves the old cell as the binding moves: detach first, so an IPF old BS
            # buffers what it held for the MH and the handoff flushes it (issue 20: DSBP over IPF)
            return [attach, MobilityOp(handoff, mh, "detach", "", notify=False),
                    MobilityOp(handoff, mh, "handoff", self.overlap.iface)]
        return [attach, MobilityOp(handoff, mh, "handoff", self.overlap.iface),
                MobilityOp(leave, mh, "detach", PREVIOUS, notify=False)]

    def marks(self) -> dict[str, float]:
        return dict(zip((f"{self.label}{s}" for s in MARKS["overlap"]), self._times)) if self.label else {}

    def ifaces(self) -> Iterator[tuple[Loc, str]]:
        yield ("overlap", "iface"), self.overlap.iface


class _Primitive(_Move):
    at: Times

    def marks(self) -> dict[str, float]:
        return {self.label: self.at[0]} if self.label else {}


class AttachMove(_Primitive):
    attach: AttachTo

    def ops(self, mh: str) -> list[MobilityOp]:
        a = self.attach
        return [MobilityOp(t, mh, "attach", a.iface, a.cell, probe=a.probe) for t in self.at]

    def ifaces(self) -> Iterator[tuple[Loc, str]]:
        yield ("attach", "iface"), self.attach.iface


class DetachMove(_Primitive):
    detach: Detach

    def ops(self, mh: str) -> list[MobilityOp]:
        d = self.detach
        return [MobilityOp(t, mh, "detach", d.iface, notify=d.notify, warn=d.warn) for t in self.at]

    def ifaces(self) -> Iterator[tuple[Loc, str]]:
        yield ("detach", "iface"), self.detach.iface


class HandoffMove(_Primitive):
    handoff: Handoff

    def ops(self, mh: str) -> list[MobilityOp]:
        return [MobilityOp(t, mh, "handoff", self.handoff.iface, notify=self.handoff.notify) for t in self.at]

    def ifaces(self) -> Iterator[tuple[Loc, str]]:
        yield ("handoff", "iface"), self.handoff.iface


KINDS = {"switch": SwitchMove, "alternate": AlternateMove, "visits": VisitsMove, "overlap": OverlapMove,
         "attach": AttachMove, "detach": DetachMove, "handoff": HandoffMove}


def _kind(value: Any) -> str | None:
    """The tag of a move written with one kind's key (or of a move model, when one is dumped)."""
    if isinstance(value, _Move):
        return next(tag(k).tag for k, model in KINDS.items() if isinstance(value, model))
    kinds = [k for k in KINDS if k in value] if isinstance(value, dict) else []
    return tag(kinds[0]).tag if len(kinds) == 1 else None


Move = Annotated[
    Union[Annotated[SwitchMove, tag("switch")], Annotated[AlternateMove, tag("alternate")],
          Annotated[VisitsMove, tag("visits")], Annotated[OverlapMove, tag("overlap")],
          Annotated[AttachMove, tag("attach")], Annotated[DetachMove, tag("detach")],
          Annotated[HandoffMove, tag("handoff")]],
    Discriminator(_kind, custom_error_type="move_kind",
                  custom_error_message=f"must be a mapping with exactly one of {', '.join(KINDS)}")]
