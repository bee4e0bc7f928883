"""Buffer releases are journaled only once their switches answered a fence probe (controller/release_fence.py).

The BMv2 test that found the gap (a controller killed 3 ms after a flush lost what was still queued on
the stream) is tests/test_ctl_spool_bmv2.py; these check the bookkeeping on its own.
"""
from __future__ import annotations

from p4handoff.controller.release_fence import FENCE_TIMEOUT, ReleaseFences
from p4handoff.controller.spool import REMOVE, Record


def rec(pid: int) -> Record:
    return Record(REMOVE, "mh1", pid)


def test_releases_wait_for_every_probe_of_their_fence_and_settle_in_order():
    f = ReleaseFences()
    f.open([rec(1), rec(2)], {("bs1", 3), ("bs2", 3)}, now=0.0)
    f.open([rec(3)], {("bs2", 3)}, now=0.1)
    assert f.settle(0.2) == ([], [])
    assert f.answer("bs2", 3)                  # the oldest fence waiting for (bs2, 3) takes it
    assert f.settle(0.2) == ([], [])           # the first still waits for bs1, the second for its bs2 answer
    assert f.answer("bs2", 3)
    assert f.settle(0.2) == ([], [])           # the second is answered but may not overtake the first
    assert f.answer("bs1", 3)
    assert f.settle(0.2) == ([rec(1), rec(2), rec(3)], [])
    assert not f


def test_an_answer_no_fence_waits_for_is_not_taken():
    f = ReleaseFences()
    f.open([rec(1)], {("bs1", 3)}, now=0.0)
    assert not f.answer("bs1", 2) and not f.answer("gw", 3)
    assert f


def test_a_switch_that_never_answers_expires_its_fence():
    f = ReleaseFences()
    f.open([rec(1)], {("bs1", 3)}, now=0.0)
    f.open([rec(2)], set(), now=0.0)           # nothing to wait for (its switch was already gone)
    assert f.settle(FENCE_TIMEOUT - 0.01) == ([], [])
    records, expired = f.settle(FENCE_TIMEOUT)
    assert records == [rec(1), rec(2)]
    assert [e.waiting for e in expired] == [{("bs1", 3)}]
