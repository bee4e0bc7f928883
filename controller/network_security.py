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
    meter per port in the pipeline; the excess is dropped in the switch (`fwd_dropped[FWD_DROP_PUNT_BUDGET]`)."""

    packets_per_s: Annotated[int, whole(1, 10_000_000)] = 1000
    burst: Annotated[int, whole(1, 10_000_000)] = 200
