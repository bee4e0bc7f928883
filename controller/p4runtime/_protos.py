"""The P4Runtime protos, imported in one place so missing or stale generated code gives one clear error.

`generated/` is made by `make setup` (controller/p4runtime/protogen.py) for the protobuf
installed in this environment, so protobuf's fast (upb) backend loads it.
"""
from __future__ import annotations

from google.protobuf.runtime_version import VersionError
from google.rpc import code_pb2, status_pb2

try:
    from .generated.p4.config.v1 import p4info_pb2
    from .generated.p4.v1 import p4data_pb2, p4runtime_pb2, p4runtime_pb2_grpc
except (ImportError, VersionError) as exc:
    raise ImportError(
        f"the generated P4Runtime modules do not load ({exc}); generate them for the installed protobuf "
        "with `make setup` or `make protos`") from exc

__all__ = ["code_pb2", "p4data_pb2", "p4info_pb2", "p4runtime_pb2", "p4runtime_pb2_grpc", "status_pb2"]
