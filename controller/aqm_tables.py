"""RED / M-RED table contents from human parameters, and the reference model of the data plane's AQM.

The P4 program (p4src/v1model/aqm.p4) does no division and no variable
multiplication; everything non-linear lives in tables this module fills:

* `red_pb`   (profile, average range)          -> p_b level
* `red_pa`   (profile, p_b level, count)        -> drop threshold for p_a = p_b / (1 - count * p_b)
* `aqm_idle` (profile, idle time range in us)  -> Q0.12 factor (1 - w_q)^(idle / s)
* `aqm_port` (egress port)                      -> mode, profile, limits, thresholds, w_q = 2^-wq_shift

`PortAqm` (with its `RedParams`) is the one typed model of a port's AQM, from the network
description (`AqmConfig.port_aqm`) to every target's entries; `port_entries` is the v1model
builder, `controller/tofino.py` the TNA one, `controller/targets.py` chooses.

The same arithmetic is modelled here bit for bit (`ewma_step`, `decay_scale`,
`drop_fraction_fixed`) so tests can predict the switch and docs/aqm.md can
state the error against floating-point Floyd & Jacobson RED
(`drop_fraction_float`). `python -m p4handoff.controller.aqm_tables` prints that
error report.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from p4handoff.controller.p4runtime import TableEntry
from p4handoff.wire import (AQM_MODE_DROPTAIL, AQM_MODES, AVG_FRAC_BITS, COUNT_MAX, DECAY_FRAC_BITS, DECAY_ONE,
                            PB_LEVEL_NONE, PORT_MAX, PROB_ONE, QUEUE_MAX)

AVG_ONE = 1 << AVG_FRAC_BITS        # 1 packet in the Q16.16 average
AVG_MAX = (1 << 32) - 1
MAX_LEVELS = PB_LEVEL_NONE - 1      # every p_b level a profile uses stays below PB_LEVEL_NONE
IDLE_MAX_US = (1 << 32) - 1
MAX_WQ_SHIFT = 31
MODES = AQM_MODES


class AqmError(ValueError):
    """A parameter the data plane cannot take; `field` names it (the network description reports it there)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field, self.problem = field, problem


@dataclass(frozen=True)
class RedParams:
    """Floyd & Jacobson parameters in human units.

    min_th, max_th: thresholds on the average, packets. max_p: p_b at max_th.
    wq_shift: w_q = 2**-wq_shift (the paper's 0.002 is about shift 9).
    mean_pkt_time_us: s, the transmission time of a typical packet, for the
    idle-time correction; None leaves the average untouched across idle
    periods. levels: how many p_b steps between min_th and max_th.
    decay_steps: how many factor steps the idle correction uses.
    """

    min_th: float
    max_th: float
    max_p: float
    wq_shift: int
    mean_pkt_time_us: float | None = None
    levels: int = 32
    decay_steps: int = 64

    def __post_init__(self) -> None:
        if not 0 <= self.min_th < QUEUE_MAX:
            raise AqmError("min_th", f"{self.min_th} is out of range [0, {QUEUE_MAX}) packets")
        if not self.min_th < self.max_th <= QUEUE_MAX:
            raise AqmError("max_th", f"{self.max_th} must be above min_th ({self.min_th}) and at most "
                                     f"{QUEUE_MAX} packets (RED needs 0 <= min_th < max_th <= QUEUE_MAX)")
        if round(self.max_th * AVG_ONE) - round(self.min_th * AVG_ONE) < self.levels:
            raise AqmError("max_th", f"max_th - min_th = {self.max_th - self.min_th} packets is too narrow "
                                     f"for {self.levels} p_b levels")
        if not 0 < self.max_p <= 1:
            raise AqmError("max_p", f"must be in (0, 1], got {self.max_p}")
        if not 0 <= self.wq_shift <= MAX_WQ_SHIFT:
            raise AqmError("wq_shift", f"must be 0..{MAX_WQ_SHIFT} (w_q = 2^-wq_shift), got {self.wq_shift}")
        if self.mean_pkt_time_us is not None and not self.mean_pkt_time_us > 0:
            raise AqmError("mean_pkt_time_us", f"must be > 0 (or None), got {self.mean_pkt_time_us}")
        if not 1 <= self.levels <= MAX_LEVELS:
            raise AqmError("levels", f"must be 1..{MAX_LEVELS}, got {self.levels}")
        if not 1 <= self.decay_steps <= 1024:
            raise AqmError("decay_steps", f"must be 1..1024, got {self.decay_steps}")

    @property
    def w_q(self) -> float:
        return 2.0 ** -self.wq_shift

    @property
    def min_fp(self) -> int:
        return round(self.min_th * AVG_ONE)

    @property
    def max_fp(self) -> int:
        return round(self.max_th * AVG_ONE)

    def p_b(self, avg_packets: float) -> float:
        """Floating-point p_b at an average (0 below min_th, max_p at max_th)."""
        if avg_packets < self.min_th:
            return 0.0
        return self.max_p * min(1.0, (avg_packets - self.min_th) / (self.max_th - self.min_th))


@dataclass(frozen=True)
class PortAqm:
    """The AQM of one egress (access) port: what every target's entry builder takes.

    The network description's `AqmConfig.port_aqm` builds it (same field names);
    its checks here are the one validation of AQM parameters, the description
    reports their `AqmError`s at the field they name.
    limit: data packets (non-priority + priority) the queue holds; keep it at
    or below the switch's own queue depth so the switch never drops behind the
    counters. dummy_threshold: dummies are admitted only while the port's total
    occupancy is below it (at most limit: dummies always go first).
    red: required for RED and M-RED; for drop-tail it only sets how the
    (reported) average is computed.
    """

    port: int
    mode: int
    limit: int
    dummy_threshold: int
    profile: int = 0
    red: RedParams | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.port <= PORT_MAX:
            raise AqmError("port", f"must be 0..{PORT_MAX}, got {self.port}")
        if self.mode not in MODES.values():
            raise AqmError("mode", f"must be one of {sorted(MODES.values())} (AQM_MODE_*), got {self.mode}")
        if not 1 <= self.limit <= QUEUE_MAX:
            raise AqmError("limit", f"{self.limit} is out of range [1, {QUEUE_MAX}] packets")
        if not 0 <= self.dummy_threshold <= self.limit:
            raise AqmError("dummy_threshold", f"{self.dummy_threshold} exceeds the queue limit {self.limit} "
                                              f"(dummies must be dropped before data)")
        if not 0 <= self.profile < PB_LEVEL_NONE:
            raise AqmError("profile", f"must be 0..{PB_LEVEL_NONE - 1}, got {self.profile}")
        if self.mode != AQM_MODE_DROPTAIL and self.red is None:
            raise AqmError("red", "RED and M-RED need RedParams")


# -- table entries (v1model: p4src/v1model/aqm.p4; TNA: controller/tofino.py) ------------------------

def aqm_port_entry(cfg: PortAqm, default_wq_shift: int = 9) -> TableEntry:
    """The `aqm_port` entry of one port: the one place a port's parameters get their P4Info names."""
    red = cfg.red
    return TableEntry("aqm_port", {"port": cfg.port}, "aqm_set", {
        "mode": cfg.mode, "profile": cfg.profile, "qlimit": cfg.limit, "dummy_th": cfg.dummy_threshold,
        "min_th": red.min_fp if red else 0, "max_th": red.max_fp if red else 0,
        "wq_shift": red.wq_shift if red else default_wq_shift})


def profile_entries(profile: int, red: RedParams) -> list[TableEntry]:
    """Every `red_pb`, `red_pa` and `aqm_idle` entry of one profile (ports may share a profile)."""
    entries = [TableEntry("red_pb", {"profile": profile, "avg": (lo, hi)}, "set_pb_level", {"level": level},
                          priority=1)
               for lo, hi, level, _ in pb_level_ranges(red)]
    for _, _, level, p_b in pb_level_ranges(red):
        entries += [TableEntry("red_pa", {"profile": profile, "level": level, "count": count}, "set_pa",
                               {"threshold": threshold})
                    for count, threshold in enumerate(pa_thresholds(p_b))]
    entries += [TableEntry("aqm_idle", {"profile": profile, "idle_us": (lo, hi)}, "set_decay",
                           {"factor": factor}, priority=1)
                for lo, hi, factor in decay_ranges(red)]
    return entries


def port_entries(cfg: PortAqm) -> list[TableEntry]:
    """The v1model entry builder: the `aqm_port` entry plus, for RED/M-RED or a drop-tail port with
    RedParams, its profile's tables."""
    entries = [aqm_port_entry(cfg)]
    if cfg.red is not None:
        entries += profile_entries(cfg.profile, cfg.red)
    return entries


# -- the quantised law ---------------------------------------------------------------------------

def pb_level_ranges(red: RedParams) -> list[tuple[int, int, int, float]]:
    """(low, high) Q16.16 average range (inclusive), level, and the p_b used for it.

    [min_th, max_th) is cut into `levels` equal ranges; each uses the exact
    p_b at its midpoint, so the p_b error is at most max_p / (2 * levels).
    """
    lo_fp, hi_fp, n = red.min_fp, red.max_fp, red.levels
    bounds = [lo_fp + (i * (hi_fp - lo_fp)) // n for i in range(n + 1)]
    ranges = []
    for level in range(n):
        low, high = bounds[level], bounds[level + 1] - 1
        mid = (low + high + 1) / 2 / AVG_ONE
        ranges.append((low, high, level, red.p_b(mid)))
    return ranges


def pa_thresholds(p_b: float) -> list[int]:
    """Thresholds for count = 0, 1, ... while p_a = p_b / (1 - count * p_b) < 1; beyond: certain drop."""
    thresholds: list[int] = []
    count = 0
    while count <= COUNT_MAX:
        rest = 1.0 - count * p_b
        if rest <= p_b:  # p_a >= 1
            break
        threshold = round(p_b / rest * PROB_ONE)
        if threshold >= PROB_ONE:
            break
        thresholds.append(threshold)
        count += 1
    return thresholds


def decay_ranges(red: RedParams) -> list[tuple[int, int, int]]:
    """(low_us, high_us) idle ranges (inclusive) and the Q0.12 factor (1 - w_q)^(idle / s) used in each.

    Range k holds the idle times whose exact factor is within 1/(2*steps) of
    1 - k/steps; idle times shorter than the first range get no decay, so the
    factor error is at most 1/(2*steps).
    """
    mean_us = red.mean_pkt_time_us
    if mean_us is None:
        return []
    if red.wq_shift == 0:  # w_q = 1: the average is the current queue, 0 after any idle time
        return [(0, IDLE_MAX_US, 0)]
    steps = red.decay_steps
    per_packet = math.log1p(-red.w_q)  # ln(1 - w_q) < 0

    def idle_for(factor: float) -> float:
        return mean_us * math.log(factor) / per_packet

    ranges = []
    for k in range(1, steps + 1):
        upper_factor = 1.0 - (k - 0.5) / steps
        lower_factor = 1.0 - (k + 0.5) / steps
        low = math.ceil(idle_for(upper_factor))
        high = IDLE_MAX_US if k == steps or lower_factor <= 0 else math.ceil(idle_for(lower_factor)) - 1
        low, high = max(low, 0), min(high, IDLE_MAX_US)
        if low > high:
            continue
        factor = round(max(0.0, 1.0 - k / steps) * DECAY_ONE)
        ranges.append((low, high, factor))
        if high == IDLE_MAX_US:
            break
    return ranges


# -- the data plane's arithmetic, bit for bit -----------------------------------------------------

def fixed_avg(packets: float) -> int:
    """Packets as the Q16.16 average register holds them."""
    return min(AVG_MAX, max(0, round(packets * AVG_ONE)))


def ewma_step(avg_fp: int, q: int, wq_shift: int) -> int:
    """avg + (q - avg) * 2^-wq_shift as aqm.p4 computes it (truncating the step towards the old avg)."""
    q_fp = (QUEUE_MAX if q > QUEUE_MAX else q) << AVG_FRAC_BITS
    if q_fp >= avg_fp:
        return avg_fp + ((q_fp - avg_fp) >> wq_shift)
    return avg_fp - ((avg_fp - q_fp) >> wq_shift)


def decay_scale(avg_fp: int, factor: int) -> int:
    """avg * factor / 4096 by shift-and-add, as aqm.p4 computes it."""
    if factor >= DECAY_ONE:
        return avg_fp
    return sum(avg_fp >> (DECAY_FRAC_BITS - bit) for bit in range(DECAY_FRAC_BITS) if factor >> bit & 1)


def level_for_avg(red: RedParams, avg_fp: int) -> int | None:
    """The p_b level the switch uses at this average (None outside [min_th, max_th))."""
    for low, high, level, _ in pb_level_ranges(red):
        if low <= avg_fp <= high:
            return level
    return None


def _fraction(drop_probs: Iterable[float]) -> float:
    """Long-run drop fraction of a renewal process: after a drop the k-th packet drops with drop_probs[k-1]."""
    expected_gap, survive = 0.0, 1.0
    for prob in drop_probs:
        expected_gap += survive
        survive *= 1.0 - min(1.0, prob)
        if survive <= 0.0:
            break
    else:
        expected_gap += survive  # the first packet beyond the sequence drops for sure
    return 1.0 / expected_gap


def drop_fraction_fixed(red: RedParams, avg_packets: float) -> float:
    """Fraction of arrivals the switch drops early at a fixed average (its tables and fixed point)."""
    avg_fp = fixed_avg(avg_packets)
    if avg_fp < red.min_fp:
        return 0.0
    if avg_fp >= red.max_fp:
        return 1.0
    level = level_for_avg(red, avg_fp)
    # the level ranges tile [min_fp, max_fp) without gaps (pb_level_ranges), and avg_fp is inside it
    assert level is not None, (red, avg_fp)
    p_b = pb_level_ranges(red)[level][3]
    thresholds = pa_thresholds(p_b)
    # after a drop the count register is 1, so the k-th packet looks up count k
    return _fraction(t / PROB_ONE for t in thresholds[1:])


def drop_fraction_float(red: RedParams, avg_packets: float) -> float:
    """The same fraction for floating-point Floyd & Jacobson RED (their pseudocode: count = 0 after a drop,
    so gaps are uniform on 1 .. 1/p_b - 1 and the fraction is 2 p_b for p_b = 1/n)."""
    p_b = red.p_b(avg_packets)
    if p_b == 0.0:
        return 0.0
    if avg_packets >= red.max_th:
        return 1.0
    return _fraction(p_b / (1 - k * p_b) if k * p_b < 1 else 1.0 for k in range(1, COUNT_MAX + 2))


def error_report(red: RedParams, points: int = 200) -> dict[str, float]:
    """Worst errors of the fixed-point scheme against floating-point RED over [min_th, max_th)."""
    span = red.max_th - red.min_th
    avgs = [red.min_th + span * (i + 0.5) / points for i in range(points)]
    ranges = pb_level_ranges(red)
    # in a narrow profile the last averages round to max_fp, where the switch drops outright: no level to compare
    pb_err = max(abs(ranges[level][3] - red.p_b(a)) for a in avgs
                 if (level := level_for_avg(red, fixed_avg(a))) is not None)
    frac_rel = [abs(drop_fraction_fixed(red, a) - drop_fraction_float(red, a)) / drop_fraction_float(red, a)
                for a in avgs if red.p_b(a) >= red.max_p / 4]
    ewma_bias = ((1 << red.wq_shift) - 1) / AVG_ONE  # truncated step: the average stalls this close to q
    decay_err = 0.5 / red.decay_steps if red.mean_pkt_time_us is not None and red.wq_shift else 0.0
    return {
        "pb_abs_error_max": pb_err,
        "pb_abs_error_bound": red.max_p / (2 * red.levels),
        "drop_fraction_rel_error_max_upper_3_4": max(frac_rel, default=0.0),
        "ewma_stall_packets": ewma_bias,
        "decay_factor_abs_error_max": decay_err,
        "red_pa_entries": sum(len(pa_thresholds(pb)) for _, _, _, pb in pb_level_ranges(red)),
        "aqm_idle_entries": len(decay_ranges(red)),
    }


def _main() -> None:
    for name, red in (
            ("paper (IPF exp. 1)", RedParams(80, 160, 0.02, 9, mean_pkt_time_us=2048.0)),
            ("lab", RedParams(20, 60, 0.1, 4, mean_pkt_time_us=1000.0)),
            ("ptf", RedParams(10, 50, 0.5, 31, levels=16))):
        print(f"[{name}] {red}")
        for key, value in error_report(red).items():
            print(f"  {key}: {value:.6g}")


if __name__ == "__main__":
    _main()
