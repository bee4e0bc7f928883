"""The papers' scheme experiments in the simulator, with the real TCP core and schemes.

Vertical handoff (Tsukamoto et al.): WLAN 20 Mb/s/1 ms → 3G 384 kb/s/70 ms
behind a 10 Mb/s wired bottleneck, 0.5 s outage at 10 s, 1000-byte
segments, window 64 segments, min RTO 1 s. The 3G cell's buffer is the one
that decides whether NewReno's slow start after the restart overshoots: 10
packets in the main case (the paper does not state its buffer).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from hosts.sim.measure import TraceWriter
from hosts.sim.papers import vertical_handoff

OUTAGE_END = 10.5


@pytest.fixture(scope="module")
def vertical() -> dict:
    runs = {}
    for scheme in ("newreno", "immediate", "bwaware"):
        exp = vertical_handoff(scheme, second_buffer=10)
        sent: list[float] = []
        exp.flows[0].flow.sender_slot.on_send.append(lambda seg, now: sent.append(now) if seg.payload else None)
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
