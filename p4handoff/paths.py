"""Where the compiled P4 program is, for a process started anywhere (a checkout or an installed wheel).

The build output is not part of the installed package: `make build` (and
`make build-tofino`) write it in a source checkout. `P4HANDOFF_BUILD` names that
directory; by default it is `build` in the working directory, as for `make`.
A path is made absolute when asked for, so a child process started elsewhere
(`ip netns exec`, a Mininet host) gets the same file.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Final

BUILD_ENV: Final = "P4HANDOFF_BUILD"
V1MODEL: Final = "v1model"
TOFINO_CHIPS: Final = ("tofino", "tofino2")
TNA: Final = "tna"                      # the program both Tofino chips run (p4src/tna/bs_tna.p4)
PROGRAMS: Final = (V1MODEL, TNA)


def build_dir() -> Path:
    """The directory `make build` writes: $P4HANDOFF_BUILD, else ./build."""
    return Path(os.environ.get(BUILD_ENV) or "build").resolve()


def pipeline_files(target: str = V1MODEL) -> tuple[Path, Path]:
    """P4Info and device config of the program a target runs: bs.p4 on v1model, bs_tna.p4 on a Tofino chip.

    The Tofino device config is the compiler's binary as is (docs/tofino.md, "Driving a Tofino").
    """
    build = build_dir()
    if target in TOFINO_CHIPS:
        return (build / "tofino" / target / "bs_tna.p4info.txtpb", build / "tofino" / target / "pipe" / f"{target}.bin")
    if target != V1MODEL:
        raise ValueError(f"unknown target {target!r} (one of {', '.join((V1MODEL, *TOFINO_CHIPS))})")
    return build / "bs.p4info.txtpb", build / "bs.json"
