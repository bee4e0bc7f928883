"""The simulator's hot path compiled with mypyc, and the pure-Python fallback (issue 24, docs/simulator.md).

`COMPILED` lists the modules a compiled build turns into C extensions
(`make compile` in a checkout, `make wheel-compiled` for a platform
wheel; setup.py reads this list). They stay plain, type-checked Python: an
extension sits next to its `.py`, and Python imports the extension first.
The build records the SHA-256 of each source it compiled in `_compiled.json`.
`guard()` (run when `p4handoff` is imported) keeps a stale build from
running: if any of those sources changed since, an extension is missing, or
`P4HANDOFF_PURE=1` is set, every one of the modules is imported from its
source instead (all or none: compiled modules call each other directly).
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Sequence

PACKAGE = Path(__file__).resolve().parent
RECORD = PACKAGE / "_compiled.json"
PURE_ENV = "P4HANDOFF_PURE"

COMPILED = (
    "p4handoff.hosts.cc.base",           # with every scheme: a compiled class has no interpreted subclasses
    "p4handoff.hosts.cc.bwaware",
    "p4handoff.hosts.cc.cdg",
    "p4handoff.hosts.cc.chd",
    "p4handoff.hosts.cc.dsbp",
    "p4handoff.hosts.cc.freeze",
    "p4handoff.hosts.cc.immediate",
    "p4handoff.hosts.cc.reno",
    "p4handoff.hosts.cc.rounds",
    "p4handoff.hosts.cc.ucc",
    "p4handoff.hosts.cc.westwood",
    "p4handoff.hosts.segment",
    "p4handoff.hosts.tcp.config",
    "p4handoff.hosts.tcp.connection",
    "p4handoff.hosts.tcp.reassembly",
    "p4handoff.hosts.tcp.rto",
    "p4handoff.hosts.tcp.trace",
    "p4handoff.hosts.sim.engine",
    "p4handoff.hosts.sim.link",
    "p4handoff.hosts.sim.measure",
    "p4handoff.hosts.sim.nodes",
    "p4handoff.hosts.sim.packet",
    "p4handoff.hosts.sim.queues",
    "p4handoff.hosts.sim.tcpflow",
)

#: "compiled", or "pure Python (<why>)": what `guard()` found.
status = "pure Python (not checked)"


def source_path(module: str, root: Path = PACKAGE.parent) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def extension_path(module: str, root: Path = PACKAGE.parent) -> Path | None:
    """The compiled extension of `module` next to its source, if one was built for this Python."""
    src = source_path(module, root)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = src.with_name(src.stem + suffix)
        if candidate.exists():
            return candidate
    return None


def source_digest(module: str, root: Path = PACKAGE.parent) -> str:
    return hashlib.sha256(source_path(module, root).read_bytes()).hexdigest()


def why_pure(modules: Sequence[str] = COMPILED, root: Path = PACKAGE.parent, record: Path = RECORD) -> str | None:
    """Why the modules must run from source (None: the compiled build is complete and current)."""
    if os.environ.get(PURE_ENV) == "1":
        return f"{PURE_ENV}=1"
    built = [m for m in modules if extension_path(m, root) is not None]
    if not built:
        return "not compiled: `make compile`"
    if len(built) != len(modules):
        return f"incomplete build: no extension for {', '.join(sorted(set(modules) - set(built)))}"
    try:
        recorded = json.loads(record.read_text())
    except (OSError, ValueError):
        return f"{record.name} missing or unreadable: `make compile`"
    changed = [m for m in modules if recorded.get(m) != source_digest(m, root)]
    if changed:
        return f"sources changed since `make compile`: {', '.join(changed)}"
    return None


class _SourceFinder:
    """Imports the listed modules from their `.py` files, ahead of the extensions next to them."""

    def __init__(self, modules: Sequence[str]) -> None:
        self.modules = frozenset(modules)

    def find_spec(self, name: str, path: object = None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if name not in self.modules:
            return None
        return importlib.util.spec_from_file_location(name, source_path(name))


def guard() -> str:
    """Decide, before any of them is imported, whether the compiled modules may run; returns `status`."""
    global status
    if any(isinstance(f, _SourceFinder) for f in sys.meta_path):
        return status
    reason = why_pure()
    if reason is None:
        status = "compiled"
    else:
        status = f"pure Python ({reason})"
        if not reason.startswith("not compiled"):
            sys.meta_path.insert(0, _SourceFinder(COMPILED))
    return status


def record_build(out_root: Path, modules: Sequence[str] = COMPILED, root: Path = PACKAGE.parent) -> Path:
    """Write `_compiled.json` under `out_root` (where the built package goes) for the sources under `root`
    just compiled (setup.py)."""
    out = out_root / "p4handoff" / RECORD.name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({m: source_digest(m, root) for m in modules}, indent=1, sort_keys=True) + "\n")
    return out
