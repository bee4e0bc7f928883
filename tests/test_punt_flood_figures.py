"""The punt-flood figures' arithmetic (p4handoff/reliability/punt_flood.py): the ratio, the goal and the suffix
that keeps the shared-core figures apart from the goal's."""
from __future__ import annotations

from p4handoff.reliability.punt_flood import Phase, flood_figures, goal_met


def phase(ms: list[float], tried: int | None = None) -> Phase:
    return Phase("x", ms, [], flood_pps=1000, flood_frames=5000, reached_controller=300, tried=tried or len(ms))


def test_the_goal_is_p99_within_twice_the_unloaded_p99() -> None:
    base = phase([float(v) for v in range(1, 101)])                      # p99 = 99
    assert goal_met(flood_figures(base, phase([v * 2.0 for v in range(1, 101)])))       # 198 = 2x
    worse = flood_figures(base, phase([v * 2.0 + 1 for v in range(1, 101)]))          # 199
    assert worse["registration_p99_ratio"] == 2.01 and not goal_met(worse)


def test_an_unanswered_registration_misses_the_goal_whatever_the_p99() -> None:
    base = phase([5.0] * 100)
    figures = flood_figures(base, phase([5.0] * 99, tried=100))
    assert figures["registrations_answered_under_flood"] == "99/100" and not goal_met(figures)


def test_the_suffix_names_every_figure() -> None:
    figures = flood_figures(phase([1.0, 2.0]), phase([1.0, 2.0]), suffix="_shared_cores")
    assert figures and all(k.endswith("_shared_cores") for k in figures)
    assert figures["registration_p99_ratio_shared_cores"] == 1.0
