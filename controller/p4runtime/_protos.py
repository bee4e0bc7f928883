"""The generated P4Runtime protos, imported in one place so a wrong protobuf backend gives one clear error."""
from __future__ import annotations

try:
    from p4.config.v1 import p4info_pb2
    from p4.v1 import p4data_pb2, p4runtime_pb2, p4runtime_pb2_grpc
except TypeError as exc:  # protobuf's "Descriptors cannot be created directly"
    from google.protobuf.internal import api_implementation

    raise ImportError(
        "the p4runtime protos need protobuf's pure-Python backend, but protobuf was imported with the "
        f"{api_implementation.Type()!r} backend before controller.p4runtime: set "
        "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python or import controller.p4runtime first") from exc
from google.rpc import code_pb2, status_pb2

__all__ = ["code_pb2", "p4data_pb2", "p4info_pb2", "p4runtime_pb2", "p4runtime_pb2_grpc", "status_pb2"]
