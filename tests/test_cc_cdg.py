"""CDG (Linux tcp_cdg.c): per-RTT delay gradients, probabilistic backoff by beta, shadow window, recovery."""
from __future__ import annotations

import math

import pytest

from p4handoff.hosts.cc.cdg import Cdg, State
from tests.sim_papers import dumbbell
from p4handoff.hosts.tcp import TraceRecord
from tests.delay_harness import MSS, DelaySender, FixedDraws, flat, rising

BETA = 724  # Linux's backoff_beta default, 0.7071 * 1024


def _cdg(**params: object) -> tuple[DelaySender, Cdg]:
    cdg = Cdg(**params)  # type: ignore[arg-type]
    return DelaySender(cdg, ssthresh_segments=10), cdg


def _before(s: DelaySender, rec: TraceRecord) -> TraceRecord:
    """The last ACK record before `rec`: the window the event started from."""
    return [r for r in s.records[:s.records.index(rec)] if r.event == "ack"][-1]


def test_flat_delay_never_backs_off_and_grows_one_segment_per_rtt() -> None:
    s, cdg = _cdg()
    s.ack_for(1.0, flat(0.1))  # 10 round trips in congestion avoidance
    assert cdg.backoffs == [] and not s.events("cdg_backoff")
    assert 17 * MSS <= s.conn.cwnd <= 20 * MSS
    assert cdg.shadow == s.conn.cwnd  # the shadow window follows every increase


def test_rising_delay_backs_off_by_beta_and_holds_the_window_for_one_rtt() -> None:
    s, cdg = _cdg()
    s.ack_for(1.0, flat(0.1))
    cdg._rng = FixedDraws(0.999)  # type: ignore[assignment]  # any gradient above ~24 µs backs off
    s.ack_for(1.0, rising(0.1, 0.02, s.now))  # +2 ms per round trip
    first = s.events("cdg_backoff")[0]
    before = _before(s, first)
    assert first.cwnd == max(2 * MSS, before.cwnd * BETA >> 10) and first.ssthresh == first.cwnd
    assert cdg.backoffs[0][1] > 0
    acks = [r for r in s.records[s.records.index(first):] if r.event == "ack"]  # from the backoff's own ACK on
    held = first.flight // MSS  # Linux's CWR: no growth until what was in flight at the backoff is acknowledged
    assert held > 5 and all(r.cwnd == first.cwnd for r in acks[:held]) and acks[held].cwnd > first.cwnd


def test_backoff_probability_is_one_minus_exp_of_gradient_times_factor() -> None:
    s, cdg = _cdg()
    s.ack_for(0.5, flat(0.1))
    grad = 10_000  # µs
    keep = math.exp(-grad * 42e-6)
    cdg._rng = FixedDraws(keep - 0.001)  # type: ignore[assignment]
    assert cdg._backoff(grad, s.now) is False
    cdg._rng = FixedDraws(keep + 0.001)  # type: ignore[assignment]
    cwnd = s.conn.cwnd
    assert cdg._backoff(grad, s.now) is True
    assert s.conn.cwnd == cwnd * BETA >> 10 and cdg.state is State.BACKOFF


def test_no_backoff_when_every_draw_says_keep_even_with_a_rising_delay() -> None:
    s, cdg = _cdg()
    s.ack_for(0.5, flat(0.1))
    cdg._rng = FixedDraws(0.0)  # type: ignore[assignment]
    cwnd = s.conn.cwnd
    s.ack_for(1.0, rising(0.1, 0.02, s.now))
    assert cdg.backoffs == [] and s.conn.cwnd > cwnd


@pytest.mark.parametrize("use_ineff, expected", [(5, 5), (2, 2)])
def test_ineffective_backoffs_stop_after_use_ineff(use_ineff: int, expected: int) -> None:
    s, cdg = _cdg(use_ineff=use_ineff)
    s.ack_for(0.5, flat(0.1))
    cdg._rng = FixedDraws(0.999)  # type: ignore[assignment]
    s.ack_for(4.0, rising(0.1, 0.02, s.now))  # the delay never falls: no backoff is ever effectual
    assert len(cdg.backoffs) == expected


def test_ineffective_backoff_detection_off_keeps_backing_off() -> None:
    s, cdg = _cdg(use_ineff=0)
    s.ack_for(0.5, flat(0.1))
    cdg._rng = FixedDraws(0.999)  # type: ignore[assignment]
    s.ack_for(4.0, rising(0.1, 0.02, s.now))
    assert len(cdg.backoffs) > 5


def _one_backoff_then_loss(use_shadow: bool) -> tuple[DelaySender, Cdg, int, int]:
    s, cdg = _cdg(use_ineff=1, use_shadow=use_shadow)
    s.ack_for(1.0, flat(0.1))
    cdg._rng = FixedDraws(0.999)  # type: ignore[assignment]
    s.ack_for(1.0, rising(0.1, 0.02, s.now))
    assert len(cdg.backoffs) == 1 and cdg.state is State.UNKNOWN  # the backoff's CWR is over
    assert cdg.shadow is not None
    shadow, cwnd = cdg.shadow, s.conn.cwnd
    s.dupacks()
    return s, cdg, shadow, cwnd


def test_loss_after_a_delay_backoff_restores_from_the_shadow_window() -> None:
    s, cdg, shadow, cwnd = _one_backoff_then_loss(use_shadow=True)
    assert shadow > cwnd  # the shadow window kept the size before the delay backoff
    assert s.conn.in_recovery
    assert s.conn.ssthresh == max(2 * MSS, min(shadow // 2, cwnd), cwnd // 2) == shadow // 2
    assert s.conn.ssthresh > cwnd // 2
    assert s.conn.cwnd == s.conn.ssthresh + 3 * MSS  # the core's NewReno fast recovery
    assert cdg.shadow == shadow // 2


def test_loss_without_shadow_window_halves_cwnd() -> None:
    s, _, _, cwnd = _one_backoff_then_loss(use_shadow=False)
    assert s.conn.ssthresh == cwnd // 2


def test_loss_right_after_a_delay_backoff_uses_beta() -> None:
    s, cdg = _cdg()
    s.ack_for(1.0, flat(0.1))
    cdg._rng = FixedDraws(0.999)  # type: ignore[assignment]
    while not cdg.backoffs:
        s.ack_next(rising(0.1, 0.02, 1.0))
    cwnd = s.conn.cwnd
    s.dupacks()
    assert s.conn.ssthresh == max(2 * MSS, cwnd * BETA >> 10)


def test_recovery_exit_deflates_and_starts_a_new_gradient_round() -> None:
    s, cdg, _, _ = _one_backoff_then_loss(use_shadow=True)
    ssthresh = s.conn.ssthresh
    s.full_ack()
    assert not s.conn.in_recovery
    assert s.conn.cwnd == min(ssthresh, 2 * MSS)  # everything was acknowledged: FlightSize 0 + 1 SMSS
    # Linux's COMPLETE_CWR: state reset, a new gradient round from what is in flight now (nothing)
    assert cdg.state is State.UNKNOWN and cdg.rounds.end == cdg.rounds.acked
    cwnd = s.conn.cwnd
    s.ack_for(0.5, flat(0.1))
    assert s.conn.cwnd > cwnd


def test_timeout_sets_cwnd_one_and_a_second_timeout_keeps_ssthresh() -> None:
    s, cdg = _cdg()
    s.ack_for(1.0, flat(0.1))
    cwnd = s.conn.cwnd
    s.conn.poll(s.conn.next_wakeup())
    assert s.conn.cwnd == MSS and s.conn.ssthresh == max(2 * MSS, cwnd // 2)
    ssthresh = s.conn.ssthresh
    s.conn.poll(s.conn.next_wakeup())  # still in Linux's Loss state: ssthresh is not recomputed
    assert s.conn.cwnd == MSS and s.conn.ssthresh == ssthresh


def test_hybrid_slow_start_leaves_slow_start_when_the_delay_rises() -> None:
    for detect, leaves in ((3, True), (0, False)):
        cdg = Cdg(hystart_detect=detect)
        s = DelaySender(cdg)
        cdg._rng = FixedDraws(0.0)  # type: ignore[assignment]  # no delay backoff: only hybrid slow start acts
        s.ack_for(0.35, flat(0.1))
        assert s.conn.ssthresh > 10**9
        s.ack_for(0.3, lambda sent_at: 0.13)  # above 9/8 of the minimum RTT
        assert (s.conn.ssthresh < 10**9) is leaves, detect
        if leaves:
            assert s.events("cdg_hystart")[0].detail == "delay"


def test_same_seed_same_backoffs_other_seed_other_draws() -> None:
    def backoffs(seed: int) -> list[tuple[float, int]]:
        s, cdg = _cdg(seed=seed, use_ineff=0)
        s.ack_for(0.5, flat(0.1))
        s.ack_for(3.0, rising(0.1, 0.005, s.now))
        return cdg.backoffs

    first = backoffs(1)
    assert first and backoffs(1) == first
    assert backoffs(2) != first


@pytest.mark.slow
def test_newreno_pushes_cdg_aside_on_a_loss_free_bottleneck() -> None:
    """The UCC paper's finding, in the simulator: 10 Mb/s / 20 ms, 50-packet buffer, no random loss, 25 s."""
    exp = dumbbell(["cdg", "newreno"], loss=0.0)
    exp.run(25.0)
    cdg, newreno = (f.stats.throughput_bps(0.0, 25.0) for f in exp.flows)
    assert cdg < 0.6 * newreno  # measured: 2.44 vs 6.39 Mb/s
    assert cdg + newreno > 8e6
