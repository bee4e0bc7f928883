"""The security parts of the network description: TLS files for P4Runtime, the punt budget (issue 23).

Kept beside `controller/network.py` (which holds everything else) so each
file stays one job; `Network` and `ControllerConfig` use these models.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, ValidationInfo, field_validator

from p4handoff.docmodel import DocModel, PathText, whole


def beside(value: Any, info: ValidationInfo) -> Any:
    """A path relative to the description's directory, made absolute (other values as given)."""
    base_dir = (info.context or {}).get("base_dir")
    return str((Path(base_dir) / value).resolve()) if isinstance(value, str) and value and base_dir else value


class TlsConfig(DocModel):
    """P4Runtime over TLS, both ends authenticated (`p4handoff ctl certs` writes these files; docs/controller.md)."""

    ca: PathText = Field(description="the CA the switches' certificates must chain to (relative to the description)")
    cert: PathText = Field(description="the controller's client certificate")
    key: PathText = Field(description="its private key (mode 0600)")

    @field_validator("ca", "cert", "key", mode="before")
    @classmethod
    def _beside(cls, value: Any, info: ValidationInfo) -> Any:
        return beside(value, info)


class PuntBudget(DocModel):
    """Unsolicited punts (registrations, ARP, no route) each ingress port may send the controller: a packets
    meter per port in the pipeline; the excess is dropped in the switch (`fwd_dropped[FWD_DROP_PUNT_BUDGET]`).

    The default is sized to what the controller can absorb, not to what a port can carry: a refused
    registration cost the controller 0.2-0.3 ms of CPU on the lab machine, so at 1,000/s one flooded
    port took a quarter to two thirds of a core and bs2's registration p99 rose 6.6-13.6x; at 100/s
    the controller used 0.14-0.15 cores (0.09-0.11 without flood; docs/reliability.md, section 5).
    100/s still lets every MH of a 100-MH cell register each second, and the burst takes a 64-MH
    group handoff at once."""

    packets_per_s: Annotated[int, whole(1, 10_000_000)] = 100
    burst: Annotated[int, whole(1, 10_000_000)] = 200
