"""`make tofino-resources`: what the compiled TNA program uses, per target, from bf-p4c's own logs.

Reads `resources.json` (MAU stages, SRAM, TCAM, hash bits and hash
distribution units per stage) and `metrics.json` (PHV containers) that
bf-p4c writes under each target's output directory, and prints one block per
target with a `<target>_stages: N` line first (N = highest stage holding
anything, plus one: later stages cost latency even if one in between is empty).

    python -m p4handoff.tofino_resources build/tofino/tofino build/tofino/tofino2
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

# per stage: (resources.json section, its list of used units, the (rows, columns) sizes giving what is available)
_UNITS = {
    "sram": ("rams", "srams", ("nRows", "nColumns")),
    "tcam": ("tcams", "tcams", ("nRows", "nColumns")),
    "map_ram": ("map_rams", "maprams", ("nRows", "nUnits")),
    "gateway": ("gateways", "gateways", ("nRows", "nUnits")),
    "hash_bit": ("hash_bits", "bits", ("nBits", "nFunctions")),
    "hash_dist": ("hash_distribution_units", "units", ("nHashIds", "nUnitIds")),
}


@dataclass
class Usage:
    """One target's totals: used and available units of each kind, stages, PHV."""

    target: str
    stages_available: int = 0
    stages: int = 0
    used: dict[str, int] = field(default_factory=dict)
    available: dict[str, int] = field(default_factory=dict)
    phv: dict[str, tuple[int, int]] = field(default_factory=dict)   # "normal 32b" -> (containers, bits occupied)


def _find(out_dir: Path, name: str) -> Path | None:
    hits = sorted(out_dir.rglob(name))
    return hits[0] if hits else None


def mau_usage(resources: dict, usage: Usage) -> None:
    """Stages and per-kind unit counts from a resources.json document."""
    mau = resources["resources"]["mau"]
    usage.stages_available = mau["nStages"]
    for stage in mau["mau_stages"]:
        busy = False
        for kind, (section, items, (a, b)) in _UNITS.items():
            sec = stage.get(section, {})
            n = len(sec.get(items, []))
            busy |= n > 0
            usage.used[kind] = usage.used.get(kind, 0) + n
            usage.available[kind] = usage.available.get(kind, 0) + sec.get(a, 0) * sec.get(b, 0)
        if busy:
            usage.stages = max(usage.stages, stage["stage_number"] + 1)


def phv_usage(metrics: dict, usage: Usage) -> None:
    """Occupied PHV containers and bits by kind and width from a metrics.json document."""
    for kind in ("normal", "tagalong", "mocha", "dark"):
        for row in metrics.get("phv", {}).get(kind, []):
            usage.phv[f"{kind} {row['bit_width']}b"] = (row["containers_occupied"], row["bits_occupied"])


def collect(out_dir: Path) -> Usage:
    """The usage of the program compiled into `out_dir` (its last component names the target)."""
    usage = Usage(out_dir.name)
    resources = _find(out_dir, "resources.json")
    if resources is None:
        raise FileNotFoundError(f"{out_dir}: no resources.json (compile with make build-tofino)")
    mau_usage(json.loads(resources.read_text()), usage)
    metrics = _find(out_dir, "metrics.json")
    if metrics is not None:
        phv_usage(json.loads(metrics.read_text()), usage)
    return usage


def report(usage: Usage) -> list[str]:
    """The printed block of one target."""
    overflow = f" (does not fit: {usage.stages_available})" if usage.stages > usage.stages_available else ""
    lines = [f"{usage.target}_stages: {usage.stages}{overflow}",
             f"  stages available: {usage.stages_available}"]
    for kind in _UNITS:
        used, avail = usage.used.get(kind, 0), usage.available.get(kind, 0)
        share = f" ({100 * used / avail:.1f} %)" if avail else ""
        lines.append(f"  {kind}: {used} of {avail}{share}")
    for name, (containers, bits) in sorted(usage.phv.items()):
        lines.append(f"  phv {name}: {containers} containers, {bits} bits")
    if not usage.phv:
        lines.append("  phv: no metrics.json (bf-p4c's p4c-build-logs did not run)")
    return lines


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m p4handoff.tofino_resources OUT_DIR...", file=sys.stderr)
        return 2
    for arg in argv:
        try:
            print("\n".join(report(collect(Path(arg)))))
        except FileNotFoundError as exc:
            print(exc, file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
