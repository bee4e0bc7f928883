"""The TNA program's AQM entry builder (p4src/tna/, docs/tofino.md); v1model's is `aqm_tables.port_entries`.

Both programs carry the same P4Info names for every table, action, parameter,
counter and packet-metadata field the controller uses, except where the
Tofino AQM computes differently; `port_entries` writes the TNA form of the
AQM entries from the same `PortAqm`:

* queue thresholds: the traffic manager reports depth in 80-byte cells, so
  `qlimit`, `dummy_th`, `min_th`, `max_th` and the `red_pb` average ranges
  are scaled by `cells_per_packet`;
* `red_pb` matches the integer part of the average (whole cells, 16 bits:
  bf-p4c range keys are at most 16 bits wide);
* `red_pa` (profile, level, count) -> threshold becomes `red_pa_gap`
  (profile, level, random-number prefix) -> the least count that drops: a
  stateful ALU cannot look a table up between reading and writing the count,
  but it can compare the count with a value looked up before (same law), on
  a TNA_PROB_BITS-bit random number (thresholds rounded: `tna_thresholds`).
  The random-number ranges become the fewest longest-prefix-match entries
  (`gap_prefixes`): one TCAM row each, where a range costs up to seven rows
  and twice the TCAM width (docs/tofino.md, "Resources");
* `aqm_idle` has no TNA counterpart: the Lpf average decays with time.

`lpf_time_constant_ns` gives the Lpf time constant (set outside P4Runtime's
standard entities, through the Lpf extern) that matches a per-arrival EWMA;
`lpf_error_report` states what the change costs (python -m p4handoff.controller.tofino).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterable

from p4handoff.controller.aqm_tables import (AVG_ONE, PortAqm, RedParams, aqm_port_entry, ewma_step, pa_thresholds,
                                             pb_level_ranges)
from p4handoff.controller.p4runtime import TableEntry
from p4handoff.wire import PROB_BITS, PROB_ONE, TNA_PROB_BITS

CELL_BYTES = 80                      # Tofino traffic-manager cell
T_RED_PB, T_RED_PA_GAP = "red_pb", "red_pa_gap"
TNA_PROB_ONE = 1 << TNA_PROB_BITS


@dataclass(frozen=True)
class TnaQueues:
    """How packet thresholds become cell thresholds: one packet of `packet_bytes` = whole cells."""

    packet_bytes: int = 1500

    @property
    def cells_per_packet(self) -> int:
        return math.ceil(self.packet_bytes / CELL_BYTES)


def scale_port(cfg: PortAqm, queues: TnaQueues) -> PortAqm:
    """The same port AQM with every queue threshold in cells instead of packets."""
    c = queues.cells_per_packet
    red = cfg.red and replace(cfg.red, min_th=cfg.red.min_th * c, max_th=cfg.red.max_th * c)
    return replace(cfg, limit=cfg.limit * c, dummy_threshold=cfg.dummy_threshold * c, red=red)


def tna_thresholds(thresholds: list[int]) -> list[int]:
    """v1model's PROB_BITS thresholds at TNA_PROB_BITS: p_a rounded to the nearest 2^-TNA_PROB_BITS."""
    shift = PROB_BITS - TNA_PROB_BITS
    return [(t + (1 << (shift - 1))) >> shift for t in thresholds]


def pa_quantisation_error(red: RedParams) -> dict[str, float]:
    """What the TNA_PROB_BITS random number costs: the largest |p_a(TNA) - p_a(v1model)|, absolute and
    relative to p_a, over every (level, count) of `red`."""
    worst_abs = worst_rel = 0.0
    for _, _, _, p_b in pb_level_ranges(red):
        v1 = pa_thresholds(p_b)
        for t, t16 in zip(v1, tna_thresholds(v1)):
            diff = abs(t16 / TNA_PROB_ONE - t / PROB_ONE)
            worst_abs = max(worst_abs, diff)
            if t:
                worst_rel = max(worst_rel, diff / (t / PROB_ONE))
    return {"pa_abs_error_max": worst_abs, "pa_rel_error_max": worst_rel}


def cell_ranges(ranges: list[tuple[int, int, int, float]]) -> list[tuple[int, int, int]]:
    """Q16.16 `red_pb` ranges -> (low, high, level) on whole cells: cell k takes the level of k.0; levels
    narrower than a cell vanish. TNA matches the integer part of the average."""
    out = []
    for low, high, level, _ in ranges:
        lo_c, hi_c = -(-low // AVG_ONE), (high + 1 + AVG_ONE - 1) // AVG_ONE - 1
        if lo_c <= hi_c:
            out.append((lo_c, hi_c, level))
    return out


def red_pb_entries(profile: int, red: RedParams) -> list[TableEntry]:
    """Every TNA `red_pb` entry of one profile (whole cells)."""
    return [TableEntry(T_RED_PB, {"profile": profile, "avg": (low, high)}, "set_pb_level", {"level": level},
                       priority=1)
            for low, high, level in cell_ranges(pb_level_ranges(red))]


def gap_ranges(thresholds: list[int], one: int = PROB_ONE) -> list[tuple[int, int, int]]:
    """(low, high, c*) random-number ranges: c* is the least count whose threshold exceeds the number.

    v1model drops when rnd < thresholds[count] (count beyond the list: always);
    TNA drops when count >= c*(rnd). Both say the same for every (count, rnd)
    because the thresholds never decrease with the count.
    """
    ranges = []
    low = 0
    for count, threshold in enumerate(thresholds):
        if threshold > low:
            ranges.append((low, threshold - 1, count))
            low = threshold
    ranges.append((low, one - 1, len(thresholds)))
    return ranges


@dataclass(frozen=True)
class _PrefixNode:
    """A node of the binary trie over the random number: the values its block may take (ORTC pass 2)."""

    values: frozenset[int]
    children: tuple[_PrefixNode, _PrefixNode] | None


def _prefix_trie(ranges: list[tuple[int, int, int]], low: int, bits: int) -> _PrefixNode:
    """The trie of block [low, low + 2^bits): a leaf where one range holds the block, else the children's
    common values or, if they have none, all of them (Draves et al., ORTC)."""
    for r_low, r_high, value in ranges:
        if r_low <= low <= r_high:
            if low + (1 << bits) - 1 <= r_high:
                return _PrefixNode(frozenset((value,)), None)
            break
    half = 1 << (bits - 1)
    left = _prefix_trie([r for r in ranges if r[0] < low + half], low, bits - 1)
    right = _prefix_trie([r for r in ranges if r[1] >= low + half], low + half, bits - 1)
    common = left.values & right.values
    return _PrefixNode(common or left.values | right.values, (left, right))


def gap_prefixes(ranges: list[tuple[int, int, int]], bits: int = TNA_PROB_BITS,
                 default: int = 0) -> list[tuple[int, int, int]]:
    """(value, prefix length, c*) longest-prefix-match entries equal to the tiling `ranges` of the
    `bits`-bit numbers, a miss giving `default`: the fewest such entries (ORTC: an entry only where the
    value inherited from the enclosing prefix cannot serve the block)."""
    out: list[tuple[int, int, int]] = []

    def walk(node: _PrefixNode, low: int, plen: int, inherited: int) -> None:
        value = inherited
        if inherited not in node.values:
            value = min(node.values)
            out.append((low, plen, value))
        if node.children is not None:
            half = 1 << (bits - plen - 1)
            walk(node.children[0], low, plen + 1, value)
            walk(node.children[1], low + half, plen + 1, value)

    walk(_prefix_trie(ranges, 0, bits), 0, 0, default)
    return out


def red_pa_gap_entries(profile: int, red: RedParams) -> list[TableEntry]:
    """Every `red_pa_gap` entry of one profile: `gap_ranges` as prefixes; a miss is `gap_certain` (c* = 0)."""
    return [TableEntry(T_RED_PA_GAP, {"profile": profile, "level": level, "rnd": (value, plen)}, "set_min_count",
                       {"count": count})
            for _, _, level, p_b in pb_level_ranges(red)
            for value, plen, count in gap_prefixes(gap_ranges(tna_thresholds(pa_thresholds(p_b)), TNA_PROB_ONE))]


def port_entries(cfg: PortAqm, queues: TnaQueues = TnaQueues()) -> list[TableEntry]:
    """The TNA entry builder (v1model's is `aqm_tables.port_entries`): the `aqm_port` entry in cells, and for
    RED/M-RED the profile's `red_pb` and `red_pa_gap` entries (see module doc)."""
    scaled = scale_port(cfg, queues)
    entries = [aqm_port_entry(scaled)]
    if scaled.red is not None:
        entries += red_pb_entries(scaled.profile, scaled.red) + red_pa_gap_entries(scaled.profile, scaled.red)
    return entries


# -- the average: per-arrival EWMA (v1model) vs time-decayed Lpf (TNA) ---------------------------------

def lpf_time_constant_ns(red: RedParams) -> float:
    """The Lpf time constant equal to the EWMA at one arrival per mean packet time: (1 - w_q) = exp(-s / tau)."""
    if red.mean_pkt_time_us is None:
        raise ValueError("the Lpf time constant needs mean_pkt_time_us (s)")
    if red.wq_shift == 0:
        return 0.0
    return -red.mean_pkt_time_us * 1000.0 / math.log1p(-red.w_q)


def lpf_step(avg: float, q: float, gap_us: float, tau_ns: float) -> float:
    """One Lpf sample after `gap_us` without samples: avg + (1 - exp(-gap / tau)) * (q - avg)."""
    gain = 1.0 if tau_ns == 0 else -math.expm1(-gap_us * 1000.0 / tau_ns)
    return avg + gain * (q - avg)


def average_paths(red: RedParams, arrivals: Iterable[tuple[float, int]]) -> list[tuple[float, float]]:
    """(EWMA, Lpf) averages in packets after each (gap_us, queue) arrival: the v1model fixed point vs the Lpf."""
    tau = lpf_time_constant_ns(red)
    ewma_fp, lpf = 0, 0.0
    out = []
    for gap_us, q in arrivals:
        ewma_fp = ewma_step(ewma_fp, q, red.wq_shift)
        lpf = lpf_step(lpf, q, gap_us, tau)
        out.append((ewma_fp / AVG_ONE, lpf))
    return out


def lpf_error_report(red: RedParams, burst: int = 20, q: int | None = None) -> dict[str, float]:
    """Where the two averages part, for a queue held at q (default max_th) fed by
    (a) one arrival per mean packet time, (b) bursts of `burst` back-to-back arrivals
    (1 us apart) every `burst` mean packet times: the same rate, clustered."""
    s = red.mean_pkt_time_us
    if s is None:
        raise ValueError("needs mean_pkt_time_us")
    q = round(red.max_th) if q is None else q
    n = 8 << red.wq_shift                                   # long enough to settle
    paced = average_paths(red, [(s, q)] * n)
    bursty = average_paths(red, [(1.0 if i % burst else s * burst - (burst - 1), q) for i in range(n)])
    bursty_max = max(abs(e - m) for e, m in bursty)
    return {
        "paced_abs_diff_packets_max": max(abs(e - m) for e, m in paced),
        "bursty_abs_diff_packets_max": bursty_max,
        "bursty_abs_diff_fraction_of_q": bursty_max / q,
        "lpf_time_constant_ms": lpf_time_constant_ns(red) / 1e6,
    }


def _main() -> None:
    for name, red in (("paper (IPF exp. 1)", RedParams(80, 160, 0.02, 9, mean_pkt_time_us=2048.0)),
                      ("lab", RedParams(20, 60, 0.1, 4, mean_pkt_time_us=1000.0))):
        print(f"[{name}] {red}")
        for key, value in lpf_error_report(red).items():
            print(f"  {key}: {value:.6g}")
        print(f"  red_pa_gap_entries: {len(red_pa_gap_entries(0, red))}")
        for key, value in pa_quantisation_error(red).items():
            print(f"  {key}: {value:.6g}")


if __name__ == "__main__":
    _main()
