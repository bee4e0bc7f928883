"""The in-process slice of `make security` (p4handoff/reliability/forgery.py), smaller, same code."""
from __future__ import annotations

from pathlib import Path

from p4handoff.reliability.forgery import KINDS, Figures, forge_registrations, run


def test_no_forgery_of_any_kind_is_accepted_and_every_authentic_one_is():
    f = run(200, seed=23)
    assert f.forged_registrations_tried == 200 * len(KINDS)
    assert f.forged_registrations_accepted == 0
    assert all(tried == 200 and accepted == 0 for tried, accepted in f.by_kind.values())
    assert f.legit_sent > 2 and f.legit_accepted == f.legit_sent
    assert f.replays_after_restart_tried == 200 and f.replays_after_restart_accepted == 0
    assert f.forged_notifications_tried == 1000 and f.forged_notifications_accepted == 0
    assert f.legit_notifications_accepted == 1000


def test_the_harness_sees_forgeries_win_against_a_controller_without_keys(tmp_path: Path):
    f = Figures(seed=5)
    forge_registrations(100, 5, tmp_path, f, enforce=False)
    assert f.by_kind["other_mh"][1] > 0            # another MH's address, fresh identification: moved


def test_the_same_seed_gives_the_same_figures():
    assert run(30, seed=7).__dict__ == run(30, seed=7).__dict__
