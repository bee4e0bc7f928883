"""The resolved timeline's primitives (p4handoff.scenario.model.MobilityOp) as the backends read them."""
from __future__ import annotations

import pytest

from p4handoff.scenario.model import MobilityOp


def test_only_an_attach_joins_a_cell():
    assert MobilityOp(1.0, "mh1", "attach", "wlan", "c2").attach_cell == "c2"
    for op in (MobilityOp(2.0, "mh1", "handoff", "wlan"), MobilityOp(3.0, "mh1", "detach", "wlan"),
               MobilityOp(4.0, "mh1", "attach", "wlan")):
        with pytest.raises(ValueError, match=f"{op.op} of mh1 at t={op.at:g} s joins no cell"):
            _ = op.attach_cell
