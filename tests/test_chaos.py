"""A slice of `make chaos` (topo/chaos.py): the controller killed -9 while the moving MH's packets are buffered.

Needs BMv2, the compiled program and namespaces (skipped by name otherwise).
The full matrix (bs1, gw, controller × before, during, after) is `make chaos`.
"""
from __future__ import annotations

import pytest

from tests.bmv2_support import BMV2_NETNS_MARKS

pytestmark = BMV2_NETNS_MARKS


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
