"""CHD (FreeBSD cc_chd.c): per-RTT queueing delay vs thresholds, probabilistic backoff, loss tolerance, shadow window."""
from __future__ import annotations

from typing import Callable

import pytest

from p4handoff.hosts.cc.chd import Chd
from tests.sim_papers import dumbbell
from p4handoff.hosts.tcp import TraceRecord
from tests.delay_harness import MSS, DelaySender, FixedDraws, flat

BASE = 0.1


def _chd(**params: object) -> tuple[DelaySender, Chd]:
    chd = Chd(**params)  # type: ignore[arg-type]
    s = DelaySender(chd, ssthresh_segments=10)
    s.ack_for(1.0, flat(BASE))  # minimum RTT learnt, congestion avoidance
    return s, chd


def _queue(qdly: float) -> Callable[[float], float]:
    return flat(BASE + qdly)


def _decreased(cwnd: int, peer_window: int = 10**9) -> int:
    win = min(cwnd, peer_window) // MSS
    return max(win - max(win // 2, 1), 2) * MSS


def _before(s: DelaySender, rec: TraceRecord) -> TraceRecord:
    return [r for r in s.records[:s.records.index(rec)] if r.event == "ack"][-1]


def test_flat_delay_grows_one_segment_per_rtt_and_never_backs_off() -> None:
    s, chd = _chd()
    cwnd = s.conn.cwnd
    s.ack_for(1.0, flat(BASE))  # 10 more round trips
    assert chd.backoffs == [] and not s.events("chd_backoff")
    assert cwnd + 9 * MSS <= s.conn.cwnd <= cwnd + 11 * MSS
    assert s.conn.cwnd % MSS == 0  # ABC: whole segments, one per cwnd of acknowledged bytes
    assert chd.shadow == s.conn.cwnd


def test_slow_start_adds_up_to_two_segments_per_ack() -> None:
    chd = Chd()
    s = DelaySender(chd, iw=4)
    s.ack_next(flat(BASE))
    assert s.conn.cwnd == 5 * MSS  # one segment acknowledged: + min(acked, 2 SMSS)


@pytest.mark.parametrize("draw, backs_off", [(0.24, True), (0.26, False)])
def test_queue_between_qmin_and_qthresh_backs_off_with_linear_probability(draw: float, backs_off: bool) -> None:
    s, chd = _chd()
    chd._rng = FixedDraws(draw)  # type: ignore[assignment]
    s.ack_for(0.5, _queue(0.0125))  # p = pmax * (12.5 - 5) / (20 - 5) = 0.25
    assert bool(chd.backoffs) is backs_off
    if backs_off:
        first = s.events("chd_backoff")[0]
        assert chd.backoffs[0][1] == pytest.approx(12_500, abs=2)
        assert first.cwnd == first.ssthresh == _decreased(_before(s, first).cwnd)
        assert len(chd.backoffs) == 1 or chd.backoffs[1][0] > first.time + BASE  # congestion recovery: one per RTT


def test_queue_below_qmin_never_backs_off() -> None:
    s, chd = _chd()
    chd._rng = FixedDraws(0.0)  # type: ignore[assignment]  # would back off at any p > 0
    s.ack_for(1.0, _queue(0.004))
    assert chd.backoffs == []


def test_queue_above_qthresh_backs_off_less_the_closer_it_is_to_the_largest_seen() -> None:
    for draw, backs_off in ((0.37, True), (0.38, False)):
        s, chd = _chd()
        chd._rng = FixedDraws(0.99)  # type: ignore[assignment]  # no backoff while the queue builds up
        s.ack_for(0.3, _queue(0.060))  # the largest queueing delay seen: 60 ms
        chd._rng = FixedDraws(draw)  # type: ignore[assignment]
        s.ack_for(0.5, _queue(0.030))  # p = pmax * (60 - 30) / (60 - 20) = 0.375
        assert bool(chd.backoffs) is backs_off, draw
        assert chd.loss_compete is backs_off  # the same draw under p: maybe competing with loss-based flows
        if backs_off:
            assert chd.shadow is not None and chd.shadow >= _before(s, s.events("chd_backoff")[0]).cwnd


def test_loss_with_a_small_queue_is_not_congestion() -> None:
    s, chd = _chd()
    cwnd, shadow = s.conn.cwnd, chd.shadow
    assert shadow
    s.dupacks()
    assert s.conn.in_recovery  # still retransmitted
    assert s.conn.ssthresh == cwnd and s.conn.cwnd == cwnd + 3 * MSS
    assert chd.shadow == max(shadow // MSS // 2, 2) * MSS
    assert "congestion=False" in s.events("chd_loss")[0].detail


def test_loss_with_a_queue_above_qthresh_halves() -> None:
    s, chd = _chd()
    chd._rng = FixedDraws(0.99)  # type: ignore[assignment]
    s.ack_for(0.3, _queue(0.030))
    cwnd = s.conn.cwnd
    s.dupacks()
    assert s.conn.ssthresh == _decreased(cwnd) < cwnd


def test_loss_while_competing_restores_the_shadow_window_first() -> None:
    s, chd = _chd()
    chd._rng = FixedDraws(0.99)  # type: ignore[assignment]
    s.ack_for(0.3, _queue(0.060))
    chd._rng = FixedDraws(0.37)  # type: ignore[assignment]
    while not chd.backoffs:
        s.ack_next(_queue(0.030))
    chd._rng = FixedDraws(0.99)  # type: ignore[assignment]
    s.ack_for(0.3, _queue(0.030))  # past the backoff's congestion recovery
    assert chd.loss_compete and chd.shadow is not None and chd.shadow > s.conn.cwnd
    shadow = chd.shadow
    s.dupacks()
    assert s.conn.ssthresh == _decreased(shadow)


def test_loss_during_the_congestion_recovery_after_a_backoff_does_not_reduce_again() -> None:
    s, chd = _chd()
    chd._rng = FixedDraws(0.0)  # type: ignore[assignment]
    while not chd.backoffs:
        s.ack_next(_queue(0.015))
    cwnd = s.conn.cwnd
    s.dupacks()
    assert s.conn.ssthresh == cwnd


def test_recovery_exit_deflates_to_ssthresh_or_flight() -> None:
    s, chd = _chd()
    s.dupacks()
    ssthresh = s.conn.ssthresh
    s.full_ack()
    assert not s.conn.in_recovery and s.conn.cwnd == min(ssthresh, 2 * MSS)  # nothing left in flight
    cwnd = s.conn.cwnd
    s.ack_for(0.3, flat(BASE))
    assert s.conn.cwnd > cwnd


def test_timeout_is_newrenos() -> None:
    s, chd = _chd()
    cwnd = s.conn.cwnd
    s.conn.poll(s.conn.next_wakeup())
    assert s.conn.cwnd == MSS and s.conn.ssthresh == max(2, cwnd // 2 // MSS) * MSS


@pytest.mark.slow
def test_newreno_pushes_chd_aside_on_a_loss_free_bottleneck() -> None:
    """The UCC paper's finding, in the simulator: 10 Mb/s / 20 ms, 50-packet buffer, no random loss, 25 s."""
    exp = dumbbell(["chd", "newreno"], loss=0.0)
    exp.run(25.0)
    chd, newreno = (f.stats.throughput_bps(0.0, 25.0) for f in exp.flows)
    assert chd < 0.6 * newreno  # measured: 1.88 vs 6.87 Mb/s
    assert chd + newreno > 8e6
