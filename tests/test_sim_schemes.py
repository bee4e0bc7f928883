"""The papers' scheme experiments in the simulator, with the real TCP core and schemes.

Vertical handoff (Tsukamoto et al.): WLAN 20 Mb/s/1 ms → 3G 384 kb/s/70 ms
behind a 10 Mb/s wired bottleneck, 0.5 s outage at 10 s, 1000-byte
segments, window 64 segments, min RTO 1 s. The 3G cell's buffer is the one
that decides whether NewReno's slow start after the restart overshoots: 10
packets in the main case (the paper does not state its buffer).

DSBP (Taleb et al.): cells of 6 Mb/s and 1–11 Mb/s, RTT 60 ms, 1024-byte
segments, drop-tail buffers of 50 packets, MH at 50 km/h through a 150 m
overlap (10.8 s, handoff in the middle), window 90 segments: enough for the
11 Mb/s cell (77 segments per RTT), never more than a 6 Mb/s cell holds
(42 + 50), so the only losses are the handoff's own.

UCC (Utsumi & Zabir): dumbbell, 10 Mb/s / 20 ms with 1 % random loss,
buffer 50, 1000-byte segments, window 256, 30 s runs (the paper: 100 s).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from p4handoff.hosts.sim.measure import TraceWriter
from tests.sim_papers import dumbbell, overlap_handoff, vertical_handoff

pytestmark = pytest.mark.slow  # about 15 s of CPU for the module

OUTAGE_END = 10.5


@pytest.fixture(scope="module")
def vertical() -> dict:
    runs = {}
    for scheme in ("newreno", "immediate", "bwaware"):
        exp = vertical_handoff(scheme, second_buffer=10)
        sent: list[float] = []
        exp.flows[0].flow.sender_slot.on_send.append(
            lambda seg, now, sent=sent: sent.append(now) if seg.payload else None)
        exp.run(16.0)
        runs[scheme] = (exp, sent)
    return runs


def test_immediate_and_bwaware_resume_at_the_end_of_the_outage_newreno_at_its_rto(vertical: dict) -> None:
    # ACKs still on their way at 10 s clock out a few segments; the WLAN RTT is ~5 ms
    resume = {s: next(t for t in sent if t >= 10.1) for s, (_, sent) in vertical.items()}
    assert resume["immediate"] == OUTAGE_END
    assert resume["bwaware"] == OUTAGE_END
    assert resume["newreno"] > 11.0             # waits for its 1 s RTO, armed before the outage
    for s, (e, _) in vertical.items():
        assert e.flows[0].stats.delivered(16.0) > 10_000_000, s
        assert e.flows[0].stats.delivered(16.0) > e.flows[0].stats.delivered(11.5), s


def test_bwaware_at_least_twice_newreno_in_10_to_15_s_with_a_10_packet_3g_buffer(vertical: dict) -> None:
    tput = {s: e.flows[0].stats.throughput_bps(10.0, 15.0) for s, (e, _) in vertical.items()}
    assert tput["bwaware"] >= 2 * tput["newreno"]
    assert tput["bwaware"] >= tput["immediate"]
    # and near the 3G path's capacity for the 4.5 s it is available
    assert tput["bwaware"] > 0.6 * 384e3


def test_bwaware_estimates_the_3g_path_and_leaves_slow_start_near_its_bdp(vertical: dict) -> None:
    scheme = vertical["bwaware"][0].flows[0].sender.cc
    [(rtt, lag, ssthresh)] = scheme.estimates
    assert 0.14 < rtt < 0.2                               # one 3G round trip
    assert lag == pytest.approx(1052 * 8 / 384e3, rel=0.05)  # one segment's service time at 384 kb/s
    assert 2 * 1000 <= ssthresh <= 10 * 1000              # the 3G path's BDP is about 7 segments


@pytest.mark.parametrize("buffer", [5, 20, 40, 80])
def test_bwaware_never_below_newreno_whatever_the_3g_buffer(buffer: int) -> None:
    tput = {}
    for scheme in ("newreno", "bwaware"):
        exp = vertical_handoff(scheme, second_buffer=buffer)
        exp.run(15.0)
        tput[scheme] = exp.flows[0].stats.throughput_bps(10.0, 15.0)
    assert tput["bwaware"] >= tput["newreno"]


def _traced_run(tmp_path: Path, seed: int, name: str) -> bytes:
    path = tmp_path / name
    with TraceWriter(path) as trace:
        exp = vertical_handoff("bwaware", seed=seed, loss=0.005, trace=trace)
        exp.run(12.0)
    return path.read_bytes()


def test_same_seed_gives_a_byte_identical_tcp_trace(tmp_path: Path) -> None:
    one = _traced_run(tmp_path, 3, "one.csv")
    two = _traced_run(tmp_path, 3, "two.csv")
    other = _traced_run(tmp_path, 4, "other.csv")
    assert one == two
    assert one != other
    header = one.split(b"\n", 1)[0]
    assert header.startswith(b"time,conn,event,state,cwnd,ssthresh")
    assert b",handoff," in one and b",forced_rto," in one


def _sent_data(exp) -> list[tuple[float, int]]:
    sent: list[tuple[float, int]] = []
    exp.flows[0].flow.sender_slot.on_send.append(
        lambda seg, now: sent.append((now, len(seg.payload))) if seg.payload and not seg.dummy else None)
    return sent


def _rate(sent: list[tuple[float, int]], t0: float, t1: float) -> float:
    return sum(n for t, n in sent if t0 <= t < t1) * 8 / (t1 - t0)


@pytest.fixture(scope="module")
def dsbp_richer() -> tuple:
    exp = overlap_handoff("dsbp", new_rate=11e6)
    sent = _sent_data(exp)
    exp.run(exp.notes["leave"] + 0.5)
    return exp, sent


def test_dsbp_counts_the_new_cells_capacity_in_dummy_acks(dsbp_richer: tuple) -> None:
    exp, _ = dsbp_richer
    sender = exp.flows[0].sender
    per_rtt = 11e6 * 0.060 / ((1024 + 52) * 8)          # segments the 11 Mb/s cell carries per RTT
    [count] = sender.cc.handoff_counts
    assert count == pytest.approx(per_rtt, rel=0.1)
    stats = exp.flows[0].stats
    assert stats.dummies_sent > 1000 and sum(stats.dummy_drops.values()) > 100  # probing filled the cell


def test_dsbp_sends_at_the_new_cells_rate_soon_after_handoff(dsbp_richer: tuple) -> None:
    """Within 3 RTTs: in the first the old path's flight (90 segments) drains under the new cwnd (76)."""
    exp, sent = dsbp_richer
    h, rtt = exp.notes["handoff"], 0.060
    capacity = 11e6 * 1024 / (1024 + 52)                 # payload rate of the 11 Mb/s cell
    reached = next(k for k in range(20) if _rate(sent, h + k * rtt, h + (k + 1) * rtt) >= 0.9 * capacity)
    assert reached <= 2
    assert _rate(sent, h + 3 * rtt, h + 2.0) >= 0.95 * capacity
    assert exp.flows[0].stats.throughput_bps(h + 3 * rtt, h + 2.0) >= 0.95 * capacity


def test_dsbp_loses_no_data_packets_over_the_handoff_period(dsbp_richer: tuple) -> None:
    exp, _ = dsbp_richer
    stats = exp.flows[0].stats
    assert stats.data_losses_between(exp.notes["enter"], exp.notes["leave"]) == 0
    assert stats.data_segments_sent > 5000


def test_dsbp_does_not_flood_a_poorer_cell_where_newreno_does() -> None:
    losses = {}
    for scheme in ("dsbp", "newreno"):
        exp = overlap_handoff(scheme, new_rate=2e6)
        exp.run(exp.notes["leave"])
        losses[scheme] = exp.flows[0].stats.data_losses_between(exp.notes["enter"], exp.notes["leave"])
    assert losses["dsbp"] == 0
    assert losses["newreno"] >= 10


def test_two_ucc_flows_get_at_least_one_and_a_half_times_two_newreno_flows_at_1_percent_loss() -> None:
    total = {}
    for scheme in ("ucc", "newreno"):
        exp = dumbbell([scheme, scheme], loss=0.01)
        exp.run(30.0)
        total[scheme] = sum(f.stats.throughput_bps(0.0, 30.0) for f in exp.flows)
    assert total["ucc"] >= 1.5 * total["newreno"]
    assert total["ucc"] < 10e6


def test_freeze_with_a_warning_loses_nothing_on_the_old_cell_and_resumes_at_handoff() -> None:
    """Freeze-TCP needs its zero window to reach the sender before the link goes: 50 ms warning."""
    exp = vertical_handoff("freeze", warn=0.05)
    sent = _sent_data(exp)
    cwnd: list[int] = []
    exp.net.sim.at(9.9, lambda: cwnd.append(exp.flows[0].sender.cwnd))
    exp.net.sim.at(10.7, lambda: cwnd.append(exp.flows[0].sender.cwnd))
    exp.run(12.0)
    stats = exp.flows[0].stats
    assert "no_receiver" not in stats.data_drops and "outage" not in stats.data_drops
    assert not [t for t, _ in sent if 9.96 < t < OUTAGE_END]   # frozen: nothing but probes
    resume = next(t for t, n in sent if t >= OUTAGE_END and n)
    assert resume < OUTAGE_END + 0.2                           # the TR-ACKs cross the 3G uplink
    before, after = cwnd
    assert after >= before > 30 * 1000                         # with the window it had on WLAN
