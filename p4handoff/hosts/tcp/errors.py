"""The TCP core's error for application calls its state does not allow.

Kept out of `connection` because mypyc compiles that module (p4handoff/speedups.py)
and cannot compile a subclass of a built-in exception type.
"""
from __future__ import annotations


class TcpError(RuntimeError):
    """An application call that the connection's state does not allow."""
