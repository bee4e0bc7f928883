"""A slice of `make chaos` (topo/chaos.py): the controller killed -9 while the moving MH's packets are buffered.

Needs BMv2, the compiled program and namespaces (skipped by name otherwise).
The full matrix (bs1, gw, controller × before, during, after) is `make chaos`.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from p4handoff.netns import unavailable_reason
from topo.bmv2 import bmv2_available

REPO = Path(__file__).resolve().parent.parent
_bmv2_ok, _bmv2_why = bmv2_available()
_netns_why = unavailable_reason()

pytestmark = [
    pytest.mark.bmv2, pytest.mark.netns, pytest.mark.slow,
    pytest.mark.skipif(not _bmv2_ok, reason=_bmv2_why or "BMv2 missing"),
    pytest.mark.skipif(not (REPO / "build" / "bs.json").exists(),
                       reason="build/bs.json not built: p4c-bm2-ss missing or 'make build' not run"),
    pytest.mark.skipif(_netns_why is not None, reason=_netns_why or ""),
]


@pytest.mark.timeout(240)
def test_controller_killed_during_the_handoff_costs_the_other_flows_nothing(tmp_path):
    from topo.chaos import PAYLOAD, RATE, one_run
    reference, ref_entries = one_run(tmp_path / "ref", None, None)
    res, entries = one_run(tmp_path / "kill", "controller", "during")
    print(reference.lost_bytes, res.lost_bytes, res.recovery_ms)
    assert res.handoff_complete
    assert reference.lost_bytes == {"mh1": 0, "mh2": 0, "mh3": 0}, reference.lost_bytes
    assert res.lost_bytes["mh2"] == res.lost_bytes["mh3"] == 0, res.lost_bytes
    # the moving MH loses at most what its old BS punted while no controller was connected
    assert res.lost_bytes["mh1"] <= (res.recovery_ms / 1000 + 0.5) * RATE * PAYLOAD, res.lost_bytes
    assert entries == ref_entries, "stale or missing entries after recovery"
    assert res.recovery_ms is not None and res.recovery_ms < 30_000
