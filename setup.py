"""Build hook: a wheel carries the P4Runtime modules, generated at build time (docs/controller.md, "Protobuf").

Everything else about the package is in pyproject.toml. The generated modules are
not committed; a source checkout makes them with `make protos`. A wheel is built
from a clean tree, so `build_py` runs the same generator
(controller/p4runtime/protogen.py) into the build directory, with grpcio-tools and
the p4runtime descriptors from pyproject's [build-system] requires. Editable
installs use the source tree as is and keep `make protos`.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PROTOGEN = HERE / "controller" / "p4runtime" / "protogen.py"
SPEEDUPS = HERE / "p4handoff" / "speedups.py"
GENERATED = ("p4handoff", "controller", "p4runtime", "generated")


def load_file(name: str, path: Path) -> ModuleType:
    """A module of this tree, loaded from its file: the build does not put the source tree on sys.path (an
    import could find another installed p4handoff, or none)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_protogen() -> ModuleType:
    """The P4Runtime generator; it needs only protobuf, grpcio-tools and the p4runtime distribution, all build
    requirements."""
    return load_file("p4handoff_protogen", PROTOGEN)


class BuildPyWithProtos(build_py):
    """`build_py`, then the P4Runtime modules generated into the build directory (not in editable mode)."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        out = Path(self.build_lib, *GENERATED)
        written = load_protogen().generate(out)   # raises ProtogenError naming the missing input
        self.announce(f"protogen: {len(written)} P4Runtime files in {out}", level=2)


class BuildExtRecorded(build_ext):
    """`build_ext`, then `_compiled.json`: the digests of the sources compiled (p4handoff/speedups.py's guard)."""

    def run(self) -> None:
        super().run()
        root = HERE if self.inplace else Path(self.build_lib)
        out = load_file("p4handoff_speedups", SPEEDUPS).record_build(root)
        self.announce(f"mypyc: recorded the compiled sources in {out}", level=2)


def mypyc_extensions() -> list[Any]:
    """The hot modules as C extensions (needs mypy, which ships mypyc, and a C compiler)."""
    from mypyc.build import mypycify
    speedups = load_file("p4handoff_speedups", SPEEDUPS)
    paths = [str(speedups.source_path(m).relative_to(HERE)) for m in speedups.COMPILED]
    extensions = mypycify(paths, opt_level="3", group_name="p4handoff._sim", target_dir="build/mypyc")
    for ext in extensions:
        ext.extra_compile_args = [*ext.extra_compile_args, "-ffp-contract=off"]   # no fused multiply-add:
        # the same float results as the interpreter on every CPU (aarch64's compilers contract by default)
    return extensions


if os.environ.get("P4HANDOFF_MYPYC") == "1":
    setup(cmdclass={"build_py": BuildPyWithProtos, "build_ext": BuildExtRecorded}, ext_modules=mypyc_extensions())
else:
    setup(cmdclass={"build_py": BuildPyWithProtos})
