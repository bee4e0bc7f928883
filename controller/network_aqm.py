"""The `aqm:` of an access port in a network description: what the file says, checked by the AQM model.

`AqmConfig` carries the document's names, types and ranges (the JSON Schema
editors see); `port_aqm` turns it into the one typed model, `PortAqm`
(controller/aqm_tables.py), whose checks are the one validation of AQM
parameters and are reported here at the field they name (docs/aqm.md, "One path").
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic.functional_validators import ModelWrapValidatorHandler

from p4handoff.aqm_fields import RED_KEYS, WQ_SHIFTS, nearest_wq_shift
from p4handoff.controller.aqm_tables import AqmError, PortAqm, RedParams
from p4handoff.docmodel import Checked, DocModel, Problem, fail, hidden_default, real, validate_all, whole
from p4handoff.wire import AQM_MODES as WIRE_AQM_MODES
from p4handoff.wire import QUEUE_MAX

AQM_MODES = tuple(WIRE_AQM_MODES)     # droptail, red, mred: the one spelling (p4src AQM_MODE_*)
RENAMED_AQM_MODES = {"drop-tail": "droptail"}   # refused with the new spelling (docs/controller.md)


def _aqm_mode(value: Any) -> str:
    if isinstance(value, str) and value in RENAMED_AQM_MODES:
        raise ValueError(f"{value!r} is now spelled {RENAMED_AQM_MODES[value]!r} (one spelling in network "
                         f"and scenario files)")
    if not isinstance(value, str) or value not in AQM_MODES:
        raise ValueError(f"must be one of {', '.join(AQM_MODES)}; got {value!r}")
    return value


def _w_q(value: Any) -> float:
    """w_q must be 2**-k (shift-only EWMA, Tofino-portable)."""
    w = real(0.0, 0.5, lo_open=True).check(value)
    k = nearest_wq_shift(w)
    if abs(2.0 ** -k - w) > 1e-9 * w:
        raise ValueError(f"{value} is not a power of two 2**-k (k in {WQ_SHIFTS.start}..{WQ_SHIFTS.stop - 1}); "
                         f"nearest: {2.0 ** -k!r} (2**-{k})")
    return 2.0 ** -k


AqmMode = Annotated[str, Checked(_aqm_mode, {"enum": list(AQM_MODES)})]
PowerOfTwo = Annotated[float, Checked(_w_q, {"enum": [2.0 ** -k for k in WQ_SHIFTS]})]
QueueLength = Annotated[int, whole(0, QUEUE_MAX)]


class AqmConfig(DocModel):
    """Queue management of one access egress port, as the description states it (packets; w_q = 2**-wq_shift).

    The fields carry the document's types and ranges (the JSON Schema); whether the
    data plane can take them is `PortAqm`'s one validation, run here through
    `port_aqm` and reported at the field it names. `port_aqm` is also what the
    Programmer hands to the target's entry builder (docs/aqm.md, "One path").
    """

    mode: AqmMode = "droptail"
    limit: Annotated[int, whole(1, QUEUE_MAX)] = 64
    dummy_threshold: QueueLength = Field(default_factory=lambda data: data.get("limit", 64) // 2,
                                         description="DSBP: total occupancy from which dummies are refused "
                                                     "(default limit/2)")
    min_th: QueueLength = hidden_default(0)
    max_th: Annotated[int, whole(1, QUEUE_MAX)] = hidden_default(0)
    max_p: Annotated[float, real(0.0, 1.0, lo_open=True)] = hidden_default(0.0)
    w_q: PowerOfTwo = hidden_default(2.0 ** -9, "EWMA weight, 2**-k (shift-only)")
    mean_pkt_time_us: Annotated[float, real(0.0, 1e9, lo_open=True)] | None = Field(
        default=None, description="RED idle correction: transmission time of a typical packet (omit: off)")

    @property
    def wq_shift(self) -> int:
        return round(-math.log2(self.w_q))

    def port_aqm(self, port: int, profile: int = 0) -> PortAqm:
        """This port's AQM as every target's entry builder takes it (AqmError if the data plane cannot)."""
        red = None if self.mode == "droptail" else RedParams(self.min_th, self.max_th, self.max_p, self.wq_shift,
                                                            self.mean_pkt_time_us)
        return PortAqm(port, WIRE_AQM_MODES[self.mode], self.limit, self.dummy_threshold, profile, red)

    @model_validator(mode="wrap")
    @classmethod
    def _checked(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """The RED parameters are required by red/mred and refused on a droptail port (judged by the keys
        given); then the data plane's own checks (`PortAqm`), each at the field it names."""
        problems: list[Problem] = []
        mode = data.get("mode", "droptail") if isinstance(data, dict) else None
        if mode == "droptail":
            problems += [((key,), "RED parameter given for a droptail port")
                         for key in (*RED_KEYS, "mean_pkt_time_us") if key in data]
        elif mode in AQM_MODES:
            problems += [((key,), f"missing: required for mode {mode}") for key in RED_KEYS if key not in data]
        obj, errors = validate_all(handler, data)
        if obj is not None and not problems:
            try:
                obj.port_aqm(0)
            except AqmError as exc:
                problems.append(((_DOC_FIELD.get(exc.field, exc.field),), exc.problem))
        if errors or problems:
            fail(cls, errors, problems)
        return obj

    @field_validator("max_th")
    @classmethod
    def _within_limit(cls, value: int, info: ValidationInfo) -> int:
        """A description's own rule (the data plane would take it): RED must be able to force drops."""
        limit = info.data.get("limit")
        if limit is not None and value > limit:
            raise ValueError(f"{value} exceeds the queue limit {limit}")
        return value

    @field_validator("dummy_threshold")
    @classmethod
    def _dummies_first(cls, value: int, info: ValidationInfo) -> int:
        """PortAqm's rule, checked as soon as the limit is known: reported even when other fields fail."""
        limit = info.data.get("limit")
        if limit is not None:
            try:
                PortAqm(0, WIRE_AQM_MODES["droptail"], limit, value)
            except AqmError as exc:
                raise ValueError(exc.problem) from None
        return value


_DOC_FIELD = {"wq_shift": "w_q"}     # PortAqm's name -> the description's, where they differ
