"""The results of a sweep: every run's record and the statistics over repeats.

Its own module so that the runner (which makes it), the report and the plots
(which read it) all import it, and none of them imports another to get it.
"""
from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p4handoff.lab.rundata import RunData
from p4handoff.scenario.loader import Scenario, ScenarioFile


@dataclass(frozen=True)
class RunPlace:
    """Where one run stands in a sweep: variant, point, repeat, seed, its directory and resolved scenario.

    The plan's runs (`p4handoff.lab.runner.PlannedRun`) and the executed ones (`RunRecord`) both carry it.
    """

    variant: str
    point: tuple[tuple[str, Any], ...]
    repeat: int
    seed: int
    directory: Path
    scenario: Scenario


@dataclass(frozen=True)
class RunRecord(RunPlace):
    """One executed run: where it stands in the plan, its directory and its numbers."""

    quantities: dict[str, float]
    detail: dict[str, Any]
    data: RunData | None = None          # kept for repeat 0 only (the plots use it)
    host: str = ""                       # the machine that ran it


@dataclass
class Results:
    scenario_file: ScenarioFile
    backend: str
    backend_reason: str
    seed: int
    repeats: int
    run_id: str
    directory: Path
    records: list[RunRecord] = field(default_factory=list)
    wall_seconds: float = 0.0            # of this session only
    resumed: int = 0                     # runs kept from an earlier session (`--resume`), not in wall_seconds
    provenance: list[dict[str, Any]] = field(default_factory=list)   # what produced it, per session (provenance.py)

    def summary(self) -> list[dict[str, Any]]:
        """Mean, sd, min, max and n of every quantity per (point, variant), in plan order."""
        out: list[dict[str, Any]] = []
        groups: dict[tuple, list[RunRecord]] = {}
        for r in self.records:
            groups.setdefault((r.point, r.variant), []).append(r)
        for (point, variant), recs in groups.items():
            stats = {}
            for key in recs[0].quantities:
                vals = [r.quantities[key] for r in recs if not math.isnan(r.quantities[key])]
                stats[key] = _stats(vals)
            out.append({"point": [[p, v] for p, v in point], "variant": variant, "quantities": stats})
        return out

    def values(self, point: tuple, variant: str, key: str) -> list[float]:
        """The repeats' values of one quantity, without the n/a ones (NaN, or a run that does not measure it):
        statistics.stdev raises on NaN."""
        return [v for r in self.records if r.point == point and r.variant == variant
                and not math.isnan(v := r.quantities.get(key, math.nan))]

    def in_repeat(self, point: tuple, variant: str, key: str, repeat: int) -> float:
        """One repeat's value of a quantity (NaN if that repeat did not run or could not measure it)."""
        return next((r.quantities[key] for r in self.records
                     if r.point == point and r.variant == variant and r.repeat == repeat), math.nan)

    def seed_of(self, repeat: int) -> int:
        """Repeat k runs with seed `seed + k` in every variant: repeats with one k are paired by seed."""
        return self.seed + repeat

    def mean(self, point: tuple, variant: str, key: str) -> float:
        vals = self.values(point, variant, key)
        return statistics.fmean(vals) if vals else math.nan

    def spread(self, point: tuple, variant: str, key: str) -> float:
        vals = self.values(point, variant, key)
        return statistics.stdev(vals) if len(vals) > 1 else 0.0


def _stats(vals: list[float]) -> dict[str, float]:
    if not vals:
        return {"mean": math.nan, "sd": math.nan, "min": math.nan, "max": math.nan, "n": 0}
    return {"mean": statistics.fmean(vals), "sd": statistics.stdev(vals) if len(vals) > 1 else 0.0,
            "min": min(vals), "max": max(vals), "n": len(vals)}


def slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._=-]+", "-", text).strip("-")
    return s or "x"


def point_slug(point: tuple[tuple[str, Any], ...]) -> str:
    if not point:
        return "base"
    return slug("_".join(f"{path.split('.')[-1]}={value}" for path, value in point))


def point_label(sf: ScenarioFile, point: tuple[tuple[str, Any], ...]) -> str:
    labels = {a.path: a.label for a in sf.sweep}
    return ", ".join(f"{labels.get(p, p)} = {v}" for p, v in point)
