"""controller/aqm_tables.py: the RED table contents and the bit-exact model of the data plane's arithmetic."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from p4handoff.controller.aqm_tables import (AVG_ONE, IDLE_MAX_US, PortAqm, RedParams, decay_ranges, decay_scale, drop_fraction_fixed,
                                   drop_fraction_float, error_report, ewma_step, fixed_avg, level_for_avg,
                                   pa_thresholds, pb_level_ranges, port_entries)
from p4handoff.wire import AQM_MODE_DROPTAIL, AQM_MODE_MRED, AQM_MODE_RED, DECAY_ONE, PROB_ONE

PAPER = RedParams(min_th=80, max_th=160, max_p=0.02, wq_shift=9, mean_pkt_time_us=2048.0)
P4INFO = Path(__file__).resolve().parents[1] / "build" / "bs.p4info.txtpb"


def test_ewma_step_tracks_floating_point_within_the_stall_bound():
    avg_fp, avg = 0, 0.0
    w = 2.0 ** -PAPER.wq_shift
    for i in range(5000):
        q = (i // 50) % 40
        avg_fp = ewma_step(avg_fp, q, PAPER.wq_shift)
        avg += w * (q - avg)
        # truncation loses < 1 unit of 2^-16 per step; the deficit settles below 2^wq_shift units
        assert abs(avg_fp / AVG_ONE - avg) <= (1 << PAPER.wq_shift) / AVG_ONE + 1e-9


def test_ewma_step_is_exact_for_a_power_of_two_weight():
    assert ewma_step(fixed_avg(10), 26, 2) == fixed_avg(14)   # 10 + (26 - 10) / 4
    assert ewma_step(fixed_avg(14), 2, 2) == fixed_avg(11)    # 14 - 12 / 4
    assert ewma_step(fixed_avg(3), 0x20000, 0) == 0xFFFF0000  # q saturates at 65535 packets


@pytest.mark.parametrize("factor", [0, 1, 1000, 2048, 4095, 4096])
def test_decay_scale_is_shift_and_add(factor):
    avg = fixed_avg(123.456)
    exact = avg * factor / DECAY_ONE
    assert exact - 12 <= decay_scale(avg, factor) <= exact


def test_pb_levels_tile_the_red_region_with_bounded_error():
    ranges = pb_level_ranges(PAPER)
    assert ranges[0][0] == PAPER.min_fp and ranges[-1][1] == PAPER.max_fp - 1
    assert all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:]))
    assert [level for _, _, level, _ in ranges] == list(range(PAPER.levels))
    for avg in (80.0, 80.01, 100.3, 159.99):
        level = level_for_avg(PAPER, fixed_avg(avg))
        assert abs(ranges[level][3] - PAPER.p_b(avg)) <= PAPER.max_p / (2 * PAPER.levels) + 1e-12
    assert level_for_avg(PAPER, fixed_avg(79.99)) is None
    assert level_for_avg(PAPER, PAPER.max_fp) is None


def test_pa_thresholds_follow_the_count_law():
    p_b = 0.05
    thresholds = pa_thresholds(p_b)
    assert len(thresholds) == 19  # count 0..18; at count 19, count * p_b = 0.95 and p_a = 1
    for count, threshold in enumerate(thresholds):
        assert threshold == round(p_b / (1 - count * p_b) * PROB_ONE)
    assert thresholds == sorted(thresholds) and thresholds[-1] < PROB_ONE


def test_drop_fraction_matches_the_uniform_gap_result():
    red = RedParams(min_th=0, max_th=10, max_p=0.5, wq_shift=1)
    for avg in (2.0, 5.0, 8.0):  # p_b = 0.1, 0.25, 0.4
        p_b = red.p_b(avg)
        # FJ's pseudocode: count = 0 after a drop, so the k-th packet after it drops with
        # p_b / (1 - k p_b) and P(gap >= k) = (1 - k p_b) / (1 - p_b)
        expected = 1 / sum((1 - k * p_b) / (1 - p_b) for k in range(1, 100) if 1 - k * p_b > 1e-12)
        assert drop_fraction_float(red, avg) == pytest.approx(expected, rel=1e-9)
    assert drop_fraction_float(red, 2.0) == pytest.approx(2 * 0.1, rel=1e-9)  # gaps uniform on 1..9


def test_fixed_point_law_equals_float_law_at_level_midpoints():
    red = RedParams(min_th=10, max_th=50, max_p=0.5, wq_shift=31, levels=64)
    for level in (10, 34, 60):
        low, high, _, p_b = pb_level_ranges(red)[level]
        mid = (low + high + 1) / 2 / AVG_ONE
        assert red.p_b(mid) == pytest.approx(p_b)
        assert drop_fraction_fixed(red, mid) == pytest.approx(drop_fraction_float(red, mid), rel=1e-5)
    assert drop_fraction_fixed(red, 9.9) == 0.0 and drop_fraction_fixed(red, 50.0) == 1.0


def test_decay_ranges_tile_idle_time_with_bounded_factor_error():
    ranges = decay_ranges(PAPER)
    assert len(ranges) == PAPER.decay_steps
    assert all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:]))
    assert ranges[-1][1] == IDLE_MAX_US and ranges[-1][2] == 0
    assert [f for _, _, f in ranges] == sorted((f for _, _, f in ranges), reverse=True)
    per_us = math.log1p(-PAPER.w_q) / PAPER.mean_pkt_time_us
    for low, high, factor in ranges[:-1]:
        for idle in (low, (low + high) // 2, high):
            assert abs(factor / DECAY_ONE - math.exp(idle * per_us)) <= 0.5 / PAPER.decay_steps + 1e-3
    first_low = ranges[0][0]  # shorter idle times are not decayed: the exact factor is still > 1 - 1/(2*steps)
    assert math.exp((first_low - 1) * per_us) > 1 - 0.5 / PAPER.decay_steps
    assert decay_ranges(RedParams(1, 2, 0.1, 0, mean_pkt_time_us=10.0)) == [(0, IDLE_MAX_US, 0)]
    assert decay_ranges(RedParams(1, 2, 0.1, 3)) == []


def test_error_report_states_the_bounds():
    report = error_report(PAPER)
    assert report["pb_abs_error_max"] <= report["pb_abs_error_bound"] + 1e-12
    assert report["drop_fraction_rel_error_max_upper_3_4"] < 0.06
    assert report["red_pa_entries"] > 0 and report["aqm_idle_entries"] == PAPER.decay_steps


def test_error_report_of_the_narrowest_profile():
    """One Q16.16 step per level: the top averages round to max_th, where the switch has no p_b level.

    The report still answers; its p_b error then also holds the rounding of the average (half a step,
    here half a level), which the stated bound (midpoint error only) leaves out.
    """
    red = RedParams(10, 10 + 32 / AVG_ONE, 0.5, 9, levels=32)
    assert fixed_avg(red.max_th - (red.max_th - red.min_th) / 400) == red.max_fp
    report = error_report(red)
    rounding = red.max_p * 0.5 / AVG_ONE / (red.max_th - red.min_th)
    assert report["pb_abs_error_bound"] < report["pb_abs_error_max"] <= report["pb_abs_error_bound"] + rounding


@pytest.mark.parametrize("kwargs, message", [
    (dict(min_th=10, max_th=10, max_p=0.1, wq_shift=1), "min_th < max_th"),
    (dict(min_th=1, max_th=10, max_p=0.0, wq_shift=1), "max_p"),
    (dict(min_th=1, max_th=10, max_p=0.1, wq_shift=32), "wq_shift"),
    (dict(min_th=1, max_th=10, max_p=0.1, wq_shift=3, levels=255), "levels"),
    (dict(min_th=1, max_th=10, max_p=0.1, wq_shift=3, mean_pkt_time_us=0), "mean_pkt_time_us"),
])
def test_bad_red_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RedParams(**kwargs)


def test_bad_port_configurations_are_refused():
    with pytest.raises(ValueError, match="dummy_threshold"):
        PortAqm(2, AQM_MODE_DROPTAIL, limit=10, dummy_threshold=11)
    with pytest.raises(ValueError, match="need RedParams"):
        PortAqm(2, AQM_MODE_MRED, limit=10, dummy_threshold=5)
    with pytest.raises(ValueError, match="mode"):
        PortAqm(2, 3, limit=10, dummy_threshold=5)
    with pytest.raises(ValueError, match="limit"):
        PortAqm(2, AQM_MODE_DROPTAIL, limit=0, dummy_threshold=0)


def test_port_entries_carry_fixed_point_thresholds():
    entries = port_entries(PortAqm(2, AQM_MODE_RED, limit=300, dummy_threshold=200, profile=3, red=PAPER))
    port = entries[0]
    assert (port.table, dict(port.match), port.action) == ("aqm_port", {"port": 2}, "aqm_set")
    assert dict(port.params) == {"mode": AQM_MODE_RED, "profile": 3, "qlimit": 300, "dummy_th": 200,
                                 "min_th": 80 * AVG_ONE, "max_th": 160 * AVG_ONE, "wq_shift": 9}
    tables = {e.table for e in entries}
    assert tables == {"aqm_port", "red_pb", "red_pa", "aqm_idle"}
    assert all(e.match["profile"] == 3 for e in entries[1:])
    assert all(e.priority > 0 for e in entries if e.table in ("red_pb", "aqm_idle"))


@pytest.mark.skipif(not P4INFO.exists(), reason="build/bs.p4info.txtpb missing (make build)")
def test_entries_encode_against_the_compiled_p4info():
    from p4handoff.controller.p4runtime import P4Info
    from p4handoff.controller.p4runtime.entities import encode_table_entry

    p4info = P4Info.load(P4INFO)
    for cfg in (PortAqm(2, AQM_MODE_MRED, limit=64, dummy_threshold=48, red=PAPER),
                PortAqm(4, AQM_MODE_DROPTAIL, limit=64, dummy_threshold=48, profile=1)):
        for entry in port_entries(cfg):
            encode_table_entry(p4info, entry)
