"""ReleaseCredit: the window of packet-outs a switch has not been seen to read, and whose probe answer is whose."""
from __future__ import annotations

import pytest

from p4handoff.controller.release_credit import ReleaseCredit


def test_the_window_fills_and_an_answer_returns_what_its_probe_covered():
    c = ReleaseCredit(window=3)
    for _ in range(3):
        assert not c.exhausted("bs1")
        c.sent("bs1")
    assert c.exhausted("bs1") and c.uncovered("bs1")
    c.probe_sent("bs1", fence=False)
    assert not c.uncovered("bs1")
    c.sent("bs2")                                   # switches are independent
    assert c.in_flight("bs2") == 1 and not c.exhausted("bs2")
    assert c.answered("bs1") is False
    assert c.in_flight("bs1") == 0 and not c.exhausted("bs1")


def test_answers_are_matched_to_probes_in_order_fences_and_credit_alike():
    c = ReleaseCredit(window=10)
    c.sent("bs1")
    c.sent("bs1")
    c.probe_sent("bs1", fence=True)                 # a release fence covering 2
    c.sent("bs1")
    c.probe_sent("bs1", fence=False)                # a credit probe covering all 3
    c.sent("bs1")
    assert c.uncovered("bs1")
    assert c.answered("bs1") is True and c.in_flight("bs1") == 2
    assert c.answered("bs1") is False and c.in_flight("bs1") == 1
    assert c.answered("bs1") is None                # nothing of ours outstanding: someone else's answer
    assert c.answered("gw") is None


def test_a_lost_switch_starts_over_with_nothing_in_flight():
    c = ReleaseCredit(window=2)
    c.sent("bs1")
    c.sent("bs1")
    c.probe_sent("bs1", fence=False)
    c.forget("bs1")
    assert c.in_flight("bs1") == 0 and not c.uncovered("bs1") and c.answered("bs1") is None


def test_a_window_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        ReleaseCredit(window=0)
