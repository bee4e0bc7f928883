"""argparse value types shared by the command lines (`p4handoff run`, `python -m p4handoff.topo.emulator`).

A bad value raises `argparse.ArgumentTypeError`, so argparse reports it as a
usage error (exit 2) naming the option, with the same wording everywhere.
"""
from __future__ import annotations

import argparse
from typing import Callable


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer >= `minimum`."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {n}")
        return n
    return parse
