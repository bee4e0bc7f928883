"""The marks of a test module that needs BMv2, the compiled program and network namespaces:
each skips by name, with the reason, where one of them is missing."""
from __future__ import annotations

from pathlib import Path

import pytest

from p4handoff.netns import unavailable_reason
from topo.bmv2 import bmv2_available

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
