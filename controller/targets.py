"""Which program a switch runs, and the AQM entry builder that goes with it: chosen once, per Programmer.

The programs differ only in their AQM tables (docs/tofino.md), so a target is
one function from the port's `PortAqm` to its entries: v1model's
`aqm_tables.port_entries`, TNA's `tofino.port_entries` (queue thresholds in
traffic-manager cells). Nothing on the v1model path calls into tofino.py.
"""
from __future__ import annotations

from functools import partial
from typing import Callable

from p4handoff.controller.aqm_tables import PortAqm
from p4handoff.controller.aqm_tables import port_entries as v1model_entries
from p4handoff.controller.p4runtime import TableEntry
from p4handoff.controller.tofino import TnaQueues
from p4handoff.controller.tofino import port_entries as tna_entries
from p4handoff.paths import PROGRAMS, TNA, V1MODEL

AqmBuilder = Callable[[PortAqm], list[TableEntry]]


def program_for(target: str) -> str:
    """The program a description's `controller.target` runs (p4handoff.paths.pipeline_files): v1model, or TNA
    on either Tofino."""
    return V1MODEL if target == V1MODEL else TNA


def aqm_builder(target: str, queues: TnaQueues = TnaQueues()) -> AqmBuilder:
    """The entry builder of `target` ("v1model" or "tna"); `queues` sets TNA's packets-to-cells scale."""
    if target == V1MODEL:
        return v1model_entries
    if target == TNA:
        return partial(tna_entries, queues=queues)
    raise ValueError(f"target must be one of {PROGRAMS}, got {target!r}")
