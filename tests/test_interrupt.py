"""SIGTERM as Ctrl-C, and teardowns that a signal cannot cut in half (p4handoff.interrupt).

Each case runs in its own interpreter: the handlers are process-wide.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from p4handoff.interrupt import sigterm_as_interrupt, uninterrupted
    sigterm_as_interrupt()
    steps = []
    try:
        with uninterrupted():
            os.kill(os.getpid(), signal.SIGTERM)       # a SIGTERM, then a Ctrl-C, while tearing down
            os.kill(os.getpid(), signal.SIGINT)
            steps.append("first half")
            steps.append("second half")
    except KeyboardInterrupt:
        steps.append("interrupted after the block")
    try:
        os.kill(os.getpid(), signal.SIGTERM)           # outside it, SIGTERM interrupts at once again
        steps.append("not interrupted")
    except KeyboardInterrupt:
        steps.append("interrupted at once")
    with uninterrupted():
        steps.append("a quiet block")
    steps.append("no interrupt without a signal")
    print(",".join(steps))
""")


def test_signals_during_an_uninterrupted_block_wait_for_its_end_then_interrupt() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().split(",") == ["first half", "second half", "interrupted after the block",
                                              "interrupted at once", "a quiet block",
                                              "no interrupt without a signal"]
