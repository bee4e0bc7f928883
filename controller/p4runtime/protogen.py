"""Generate the P4Runtime Python modules for the protobuf installed here (`make setup` runs this).

Why: the `p4runtime` wheel's `_pb2` modules were generated for protobuf 3.x and
load only with protobuf's slow pure-Python backend. Regenerated with the
protoc of grpcio-tools, they load with the fast (upb) backend.

Where the .proto sources come from: neither the `p4runtime` sdist nor its
wheel carries p4lang's `.proto` files, and Debian 12 packages none. The wheel
does carry each file's compiled form, the serialized FileDescriptorProto that
protoc made from p4lang's `p4/v1/p4runtime.proto`, `p4/v1/p4data.proto`,
`p4/config/v1/p4info.proto` and `p4/config/v1/p4types.proto`. This module reads
those bytes out of the pinned wheel's source text (without importing it), adds
their dependencies from the installed protobuf (`google/protobuf/any.proto`)
and googleapis-common-protos (`google/rpc/status.proto`), and hands the set to
`grpc_tools.protoc --descriptor_set_in`, which generates exactly as from the
`.proto` text. `google.rpc` itself is used from googleapis-common-protos, whose
modules are generated for current protobuf. docs/controller.md, "Protobuf".

    python controller/p4runtime/protogen.py [--out DIR]   (by path: the package imports the modules it makes)
"""
from __future__ import annotations

import argparse
import ast
import importlib.metadata
import re
import shutil
import sys
import tempfile
from pathlib import Path

from google.protobuf import any_pb2, descriptor_pb2

# The p4lang files, by their proto path, as the wheel's modules hold them.
P4_PROTOS = ("p4/config/v1/p4types.proto", "p4/config/v1/p4info.proto",
             "p4/v1/p4data.proto", "p4/v1/p4runtime.proto")
OUT_DIR = Path(__file__).resolve().parent / "generated"
SOURCE_DIST = "p4runtime"


class ProtogenError(RuntimeError):
    """The P4Runtime modules could not be generated; the message says which input is missing or wrong."""


def serialized_descriptor(module_source: str, proto: str) -> bytes:
    """The serialized FileDescriptorProto in a generated `_pb2` module's source.

    Accepts both generated forms: protobuf 3.x's `FileDescriptor(serialized_pb=b'...')`
    and current `AddSerializedFile(b'...')`.
    """
    for node in ast.walk(ast.parse(module_source)):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg == "serialized_pb" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bytes):
                return kw.value.value
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr == "AddSerializedFile" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, bytes)):
            return node.args[0].value
    raise ProtogenError(f"no serialized descriptor of {proto} in its generated module")


def wheel_descriptors() -> list[descriptor_pb2.FileDescriptorProto]:
    """The four p4lang FileDescriptorProtos, read from the installed `p4runtime` distribution's files."""
    try:
        dist = importlib.metadata.distribution(SOURCE_DIST)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ProtogenError(f"the '{SOURCE_DIST}' distribution is not installed (pip install -e '.[dev]')") from exc
    protos = []
    for proto in P4_PROTOS:
        path = Path(str(dist.locate_file(proto.replace(".proto", "_pb2.py"))))
        if not path.is_file():
            raise ProtogenError(f"{SOURCE_DIST} {dist.version}: {path} is missing")
        fdp = descriptor_pb2.FileDescriptorProto.FromString(serialized_descriptor(path.read_text(), proto))
        if fdp.name != proto:
            raise ProtogenError(f"{path} describes {fdp.name!r}, expected {proto!r}")
        protos.append(fdp)
    return protos


def descriptor_set() -> descriptor_pb2.FileDescriptorSet:
    """The p4lang files and every file they import, dependencies first (as protoc wants them)."""
    from google.rpc import status_pb2

    fds = descriptor_pb2.FileDescriptorSet()
    for dep in (any_pb2.DESCRIPTOR, status_pb2.DESCRIPTOR):
        dep.CopyToProto(fds.file.add())
    fds.file.extend(wheel_descriptors())
    known = {f.name for f in fds.file}
    for f in fds.file:
        missing = [d for d in f.dependency if d not in known]
        if missing:
            raise ProtogenError(f"{f.name} imports {missing}, which no installed package describes")
    return fds


_IMPORT_RE = re.compile(r"^from p4(\.[\w.]+)? import ", re.M)


def relative_imports(text: str, depth: int) -> str:
    """Make the generated `from p4.x import y` relative, so the package can live anywhere.

    `depth` is how many packages the module sits below the output root (p4/v1/ -> 2).
    """
    return _IMPORT_RE.sub(lambda m: f"from {'.' * (depth + 1)}p4{m.group(1) or ''} import ", text)


def run_protoc(fds: descriptor_pb2.FileDescriptorSet, out: Path) -> None:
    """grpcio-tools' protoc: `_pb2.py`, `.pyi` stubs and the P4Runtime service's `_pb2_grpc.py`."""
    try:
        from grpc_tools import protoc
    except ImportError as exc:
        raise ProtogenError("grpcio-tools is not installed (pip install -e '.[dev]')") from exc
    with tempfile.TemporaryDirectory() as tmp:
        set_path = Path(tmp) / "p4runtime.fds"
        set_path.write_bytes(fds.SerializeToString())
        args = ["protoc", f"--descriptor_set_in={set_path}", f"--python_out={out}", f"--pyi_out={out}",
                f"--grpc_python_out={out}", *P4_PROTOS]
        if protoc.main(args) != 0:
            raise ProtogenError(f"protoc failed: {' '.join(args)}")


def generate(out: Path = OUT_DIR) -> list[Path]:
    """Write the generated package to `out` (replacing it) and return the module files written."""
    fds = descriptor_set()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".generated-", dir=out.parent))
    try:
        run_protoc(fds, staging)
        written = []
        for path in sorted(staging.rglob("*.py*")):
            depth = len(path.relative_to(staging).parts) - 1
            path.write_text(relative_imports(path.read_text(), depth))
            written.append(out / path.relative_to(staging))
        for pkg in [p for p in staging.rglob("*") if p.is_dir()]:
            (pkg / "__init__.py").touch()
        dist = importlib.metadata.distribution(SOURCE_DIST)
        (staging / "__init__.py").write_text(
            f'"""P4Runtime modules generated by controller/p4runtime/protogen.py from {SOURCE_DIST} {dist.version}\'s '
            'descriptors; not committed (make setup)."""\n')
        shutil.rmtree(out, ignore_errors=True)
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output package directory (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        written = generate(args.out)
    except ProtogenError as exc:
        print(f"protogen: {exc}", file=sys.stderr)
        return 1
    print(f"protogen: {len(written)} files in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
