"""controller/p4runtime/protogen.py: the P4Runtime modules regenerated from the p4runtime wheel's descriptors."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from p4handoff.controller.p4runtime import protogen


def test_descriptor_is_read_from_both_generated_forms():
    fdp = descriptor_pb2.FileDescriptorProto(name="x/y.proto", package="x")
    raw = fdp.SerializeToString()
    old = f"DESCRIPTOR = _descriptor.FileDescriptor(name='x/y.proto', serialized_pb={raw!r})\n"
    new = f"DESCRIPTOR = _descriptor_pool.Default().AddSerializedFile({raw!r})\n"
    assert protogen.serialized_descriptor(old, "x/y.proto") == raw
    assert protogen.serialized_descriptor(new, "x/y.proto") == raw
    with pytest.raises(protogen.ProtogenError, match="no serialized descriptor of x/y.proto"):
        protogen.serialized_descriptor("DESCRIPTOR = None\n", "x/y.proto")


def test_imports_of_the_p4_package_become_relative_to_the_output_root():
    text = "from p4.config.v1 import p4info_pb2 as a\nfrom p4 import b\nfrom p4x.v1 import c\n"
    assert protogen.relative_imports(text, 2) == (
        "from ...p4.config.v1 import p4info_pb2 as a\nfrom ...p4 import b\nfrom p4x.v1 import c\n")


def test_every_p4lang_file_and_its_imports_are_in_the_descriptor_set():
    names = [f.name for f in protogen.descriptor_set().file]
    assert set(protogen.P4_PROTOS) <= set(names)
    assert {"google/protobuf/any.proto", "google/rpc/status.proto"} <= set(names)


def test_generated_package_loads_on_upb_anywhere_and_describes_what_the_wheel_describes(tmp_path: Path):
    written = protogen.generate(tmp_path / "gen_p4rt")
    assert {p.name for p in written} >= {"p4runtime_pb2.py", "p4runtime_pb2_grpc.py", "p4info_pb2.pyi"}
    probe = (
        "import sys; from google.protobuf.internal import api_implementation as a\n"
        "from gen_p4rt.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc\n"
        "from gen_p4rt.p4.config.v1 import p4info_pb2, p4types_pb2\n"
        "from gen_p4rt.p4.v1 import p4data_pb2\n"
        "for m in (p4runtime_pb2, p4info_pb2, p4types_pb2, p4data_pb2):\n"
        "    sys.stdout.buffer.write(m.DESCRIPTOR.serialized_pb.hex().encode() + b'\\n')\n"
        "print(a.Type(), hasattr(p4runtime_pb2_grpc, 'P4RuntimeStub'))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    *hexes, summary = done.stdout.split("\n")[:-1]
    assert summary == "upb True"
    wheel = {f.name: f for f in protogen.wheel_descriptors()}
    generated = [descriptor_pb2.FileDescriptorProto.FromString(bytes.fromhex(h)) for h in hexes]
    assert [g.name for g in generated] == ["p4/v1/p4runtime.proto", "p4/config/v1/p4info.proto",
                                           "p4/config/v1/p4types.proto", "p4/v1/p4data.proto"]
    for g in generated:
        assert g == wheel[g.name], g.name


def test_a_missing_source_distribution_is_named(monkeypatch):
    monkeypatch.setattr(protogen, "SOURCE_DIST", "no-such-dist-p4h")
    with pytest.raises(protogen.ProtogenError, match="'no-such-dist-p4h' distribution is not installed"):
        protogen.wheel_descriptors()


def test_the_generator_runs_by_path_where_nothing_is_generated_yet(tmp_path):
    """`make setup` on a fresh clone: the package's __init__ imports the generated modules, so the generator
    must run as a file, importing nothing of p4handoff (a copy outside the tree proves it)."""
    script = tmp_path / "protogen.py"
    shutil.copy(Path(protogen.__file__), script)
    done = subprocess.run([sys.executable, "-I", str(script), "--out", str(tmp_path / "gen")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "gen" / "p4" / "v1" / "p4runtime_pb2.py").is_file()
