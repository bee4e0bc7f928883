"""Sequence checks shared by the handoff tests (fake network and BMv2)."""
from __future__ import annotations


def overtaken(seqs: list[int]) -> int:
    """How many packets arrived after a higher-numbered one."""
    top, n = -1, 0
    for s in seqs:
        n += s < top
        top = max(top, s)
    return n
