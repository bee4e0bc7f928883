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
from pathlib import Path
from types import ModuleType

from setuptools import setup
from setuptools.command.build_py import build_py

PROTOGEN = Path(__file__).resolve().parent / "controller" / "p4runtime" / "protogen.py"
GENERATED = ("p4handoff", "controller", "p4runtime", "generated")


def load_protogen() -> ModuleType:
    """This tree's generator, loaded from its file: the build does not put the source tree on sys.path (an
    import could find another installed p4handoff, or none); the file needs only protobuf, grpcio-tools and
    the p4runtime distribution, all build requirements."""
    spec = importlib.util.spec_from_file_location("p4handoff_protogen", PROTOGEN)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load the P4Runtime generator {PROTOGEN}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithProtos(build_py):
    """`build_py`, then the P4Runtime modules generated into the build directory (not in editable mode)."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        out = Path(self.build_lib, *GENERATED)
        written = load_protogen().generate(out)   # raises ProtogenError naming the missing input
        self.announce(f"protogen: {len(written)} P4Runtime files in {out}", level=2)


setup(cmdclass={"build_py": BuildPyWithProtos})
