"""What the BMv2 testbed tests share: their marks (each skips by name, with the reason, where BMv2,
the compiled program or network namespaces are missing), a running testbed with its controller, and
a mobile host attached through it."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from p4handoff.controller.registration import ReplyCode
from p4handoff.topo.testbed import Testbed, mh_name
from p4handoff.bmv2 import bmv2_available
from p4handoff.netns import unavailable_reason
from p4handoff.lab.mininet import backend as mininet

REPO = Path(__file__).resolve().parent.parent
_bmv2_ok, _bmv2_why = bmv2_available()
_netns_why = unavailable_reason()

BMV2_NETNS_MARKS = [
    pytest.mark.bmv2, pytest.mark.netns, pytest.mark.slow,
    pytest.mark.skipif(not _bmv2_ok, reason=_bmv2_why or "BMv2 missing"),
    pytest.mark.skipif(not (REPO / "build" / "bs.json").exists(),
                       reason="build/bs.json not built: p4c-bm2-ss missing or 'make build' not run"),
    pytest.mark.skipif(_netns_why is not None, reason=_netns_why or ""),
]

_lab_ok, _lab_why = mininet.available()
# the Mininet lab (p4handoff/lab/mininet/backend.py): root, BMv2, Mininet, the compiled program
LAB_MARKS = [
    pytest.mark.bmv2, pytest.mark.netns, pytest.mark.mininet, pytest.mark.slow,
    pytest.mark.skipif(not _lab_ok, reason=f"lab backend unavailable: {_lab_why}"),
    pytest.mark.skipif(_netns_why is not None, reason=f"netns: {_netns_why}"),
]


@contextmanager
def running_testbed(tmp_path: Path, n_mobiles: int, buffer_service: bool = False) -> Iterator[Testbed]:
    """Gateway and two BS switches with `n_mobiles` MHs (and the buffer service if asked), the controller
    running; torn down after."""
    bed = Testbed(tmp_path, n_mobiles=n_mobiles, buffer_service=buffer_service)
    try:
        bed.start()
        bed.start_controller()
        yield bed
    finally:
        bed.close()


def attach(tb: Testbed, i: int, bs: str, ident: int) -> None:
    """Mobile host `i` registers at `bs` (identification `ident`); returns once the controller has it attached there."""
    reply = tb.register(i, bs, ident)
    assert reply is not None and reply.code is ReplyCode.ACCEPTED, reply
    tb.wait_for(lambda s: next(m for m in s["mobile_hosts"] if m["mh"] == mh_name(i))["bs"] == bs
                and next(m for m in s["mobile_hosts"] if m["mh"] == mh_name(i))["phase"] == "attached")


def send_stream(tb: Testbed, i: int, seqs: list[int] | range, gap: float, dscp: int = 0) -> threading.Thread:
    """The correspondent sends data frames `seqs` to MH `i`, one every `gap` seconds, on a thread."""
    def run() -> None:
        start = time.monotonic()
        for k, seq in enumerate(seqs):
            delay = start + k * gap - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            tb.hosts["ch"].send(tb.data_frame(i, seq, dscp))
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t
