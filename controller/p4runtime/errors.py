"""One exception type for everything a switch (or the lack of one) answers with.

P4Runtime reports a failed batch Write as gRPC status UNKNOWN whose binary
details (trailer `grpc-status-details-bin`, a google.rpc.Status) hold one
p4.v1.Error per update; printing only the outer status hides which update
failed and why. P4RuntimeError unpacks them into `updates`.
"""
from __future__ import annotations

from dataclasses import dataclass

import grpc

from ._protos import code_pb2, p4runtime_pb2, status_pb2


@dataclass(frozen=True)
class UpdateError:
    """Why update number `index` of a Write batch failed (`code` is a google.rpc code name)."""

    index: int
    code: str
    message: str


class P4RuntimeError(Exception):
    """A P4Runtime RPC failed: `operation`, gRPC `code`, server `details`, per-update errors of a Write."""

    def __init__(self, operation: str, code: grpc.StatusCode, details: str,
                 updates: tuple[UpdateError, ...] = ()) -> None:
        self.operation = operation
        self.code = code
        self.details = details
        self.updates = updates
        super().__init__(str(self))

    def __str__(self) -> str:
        details = self.details or ("see the per-update errors below" if self.updates else "(no details)")
        lines = [f"{self.operation}: {self.code.name}: {details}"]
        lines += [f"  update {u.index}: {u.code}: {u.message}" for u in self.updates]
        return "\n".join(lines)

    @classmethod
    def from_rpc(cls, operation: str, exc: grpc.RpcError) -> "P4RuntimeError":
        """Wrap a grpc.RpcError (a grpc.Call), unpacking per-update p4.v1.Error details if present."""
        code = exc.code() if callable(getattr(exc, "code", None)) else grpc.StatusCode.UNKNOWN
        details = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
        return cls(operation, code, details or "", _update_errors(exc))


def _update_errors(exc: grpc.RpcError) -> tuple[UpdateError, ...]:
    trailers = exc.trailing_metadata() if callable(getattr(exc, "trailing_metadata", None)) else None
    status = status_pb2.Status()
    for key, value in trailers or ():
        if key == "grpc-status-details-bin":
            status.ParseFromString(value)
            break
    errors = []
    for index, detail in enumerate(status.details):
        error = p4runtime_pb2.Error()
        if detail.Unpack(error) and error.canonical_code != code_pb2.OK:
            errors.append(UpdateError(index, code_pb2.Code.Name(error.canonical_code), error.message))
    return tuple(errors)
