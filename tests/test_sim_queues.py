"""The simulator's queues: drop-tail, RED against its analytic drop law, M-RED, dummies."""
from __future__ import annotations

import random

import pytest

from p4handoff.hosts.sim.packet import DATA, DUMMY, PRIORITY, Packet
from p4handoff.hosts.sim.queues import MRED, RED, Queue

RATE = 10e6  # b/s of the (imaginary) link the queue feeds


def pkt(klass: int = DATA, size: int = 1000, dst: str = "10.0.9.1") -> Packet:
    return Packet(None, size, "10.0.0.1", dst, klass)


def red(cls: type[RED] = RED, **kw: float) -> RED:
    params = dict(limit=300, min_th=80, max_th=160, max_p=0.02, w_q=0.002)
    params.update(kw)
    q = cls(**params)  # type: ignore[arg-type]
    q.attach(RATE, random.Random(7))
    return q


def test_droptail_limit_counts_waiting_packets_only() -> None:
    q = Queue(3)
    assert [q.enqueue(pkt(), 0.0) for _ in range(5)] == [True, True, True, False, False]
    assert q.drops == {"overflow": 2}
    assert q.dequeue(0.0) is not None and len(q) == 2
    assert q.enqueue(pkt(), 0.0)


def test_dummies_are_dropped_at_their_threshold_and_never_displace_data() -> None:
    q = Queue(10, dummy_threshold=4)
    dummies = [pkt(DUMMY) for _ in range(5)]
    admitted = [q.enqueue(d, 0.0) for d in dummies]
    assert admitted == [True, True, True, True, False]  # refused at the threshold
    data = [pkt() for _ in range(10)]
    assert all(q.enqueue(d, 0.0) for d in data)        # the data limit ignores dummies
    assert not q.enqueue(pkt(DUMMY), 0.0)                # data counts toward the dummies' threshold
    assert q.enqueue(pkt(), 0.0) is False                # data is dropped only at its own limit
    assert q.drops == {"dummy": 2, "overflow": 1}
    assert [q.dequeue(0.0) for _ in range(10)] == data
    assert [q.dequeue(0.0) for _ in range(4)] == dummies[:4]


def test_dummies_wait_until_no_data_is_queued() -> None:
    q = Queue(10, dummy_threshold=10)
    d = pkt(DUMMY)
    q.enqueue(d, 0.0)
    a, b = pkt(), pkt()
    q.enqueue(a, 0.0)
    q.enqueue(b, 0.0)
    assert [q.dequeue(0.0), q.dequeue(0.0), q.dequeue(0.0), q.dequeue(0.0)] == [a, b, d, None]


def _drop_fraction_law(p_b: float) -> float:
    """Analytic drop fraction of Floyd & Jacobson's count-based rule at a fixed average.

    After a drop the k-th arrival is dropped with p_a(k) = p_b / (1 − k·p_b)
    (certainly once k·p_b ≥ 1); the drop fraction is 1 / E[arrivals per drop].
    """
    survive, mean, k = 1.0, 0.0, 1
    while survive > 1e-15:
        denom = 1.0 - k * p_b
        p_a = 1.0 if denom <= 0 else min(1.0, p_b / denom)
        mean += k * survive * p_a
        survive *= 1.0 - p_a
        k += 1
    return 1.0 / mean


@pytest.mark.parametrize("avg", [90.0, 120.0, 150.0])
def test_red_drop_probability_matches_floyd_jacobson_at_fixed_average(avg: float) -> None:
    """Tolerance: 5 % relative (about 4 standard deviations at 200 000 arrivals)."""
    q = red(w_q=0.0, max_p=0.1)
    q.avg = avg
    n = 200_000
    dropped = 0
    for i in range(n):
        if not q.enqueue(pkt(), i * 1e-4):
            dropped += 1
        q.dequeue(i * 1e-4)
    p_b = 0.1 * (avg - 80) / (160 - 80)
    expected = _drop_fraction_law(p_b)
    assert dropped / n == pytest.approx(expected, rel=0.05)
    # the count-based rule is far from a plain Bernoulli(p_b) drop
    assert abs(dropped / n - p_b) > 0.2 * p_b
    assert q.drops == {"early": dropped}


def test_red_forced_drop_at_max_th_and_none_below_min_th() -> None:
    q = red(w_q=0.0)
    q.avg = 160.0
    assert not any(q.enqueue(pkt(), 0.0) for _ in range(100))
    assert q.drops == {"forced": 100}
    q2 = red(w_q=0.0)
    q2.avg = 79.9
    assert all(q2.enqueue(pkt(), 0.0) for _ in range(100))


def test_red_average_is_ewma_of_waiting_packets_with_idle_decay() -> None:
    w = 0.1
    q = red(w_q=w, min_th=1000, max_th=2000, limit=3000)
    avg = 0.0
    for k in range(20):              # arrivals at one instant, nothing leaves
        q.enqueue(pkt(), 1.0)
        avg = (1 - w) * avg + w * k  # the first arrival finds an empty queue: decay of 0 s
    assert q.avg == pytest.approx(avg, rel=1e-12)
    for _ in range(20):
        q.dequeue(1.0)               # the queue is empty from 1.0 s on
    pkt_time = 1000 * 8 / RATE       # 0.8 ms at 10 Mb/s
    q.enqueue(pkt(), 1.004)          # arrival to an empty queue: avg <- (1 - w)^m avg, m = 5
    assert q.avg == pytest.approx(avg * (1 - w) ** (0.004 / pkt_time), rel=1e-12)
    decayed = q.avg
    q.enqueue(pkt(), 1.004)          # one packet waiting now: an ordinary sample
    assert q.avg == pytest.approx((1 - w) * decayed + w * 1, rel=1e-12)


def test_red_idle_decay_is_not_applied_twice_after_a_drop() -> None:
    q = red(w_q=0.1, min_th=0.0, max_th=1e-9)   # every counted arrival is a forced drop
    q.avg = 50.0
    assert not q.enqueue(pkt(), 0.0008)         # m = 1
    assert q.avg == pytest.approx(45.0)
    assert not q.enqueue(pkt(), 0.0016)         # one more packet time idle, not two
    assert q.avg == pytest.approx(40.5)


def test_mred_never_early_drops_priority_and_averages_non_priority_only() -> None:
    q = red(MRED, w_q=0.0, limit=50)
    q.avg = 159.0                    # far into the early-drop region (forced at 160)
    assert all(q.enqueue(pkt(PRIORITY), 0.0) for _ in range(50))
    assert not q.enqueue(pkt(PRIORITY), 0.0)
    assert q.drops == {"overflow": 1}

    m = red(MRED, w_q=0.5)
    r = red(RED, w_q=0.5)
    for queue in (m, r):
        for _ in range(40):
            queue.enqueue(pkt(PRIORITY), 0.0)
        queue.enqueue(pkt(), 0.0)
    assert m.avg == 0.0              # the priority burst is invisible to M-RED's average
    assert r.avg > 39.0              # plain RED counts the same burst
    assert m.counted == 1 and r.counted == 41


def test_mred_priority_burst_does_not_cause_early_drops_of_others() -> None:
    """After a priority flush RED drops the connections' packets; M-RED does not."""
    results = {}
    for cls in (RED, MRED):
        q = red(cls, limit=300, w_q=0.05)
        for _ in range(100):
            q.enqueue(pkt(), 0.0)
            q.dequeue(0.0)            # steady state: a short queue
        for _ in range(150):
            q.enqueue(pkt(PRIORITY), 0.0)
        dropped = sum(not q.enqueue(pkt(), 0.0) for _ in range(40))
        results[cls.kind] = (dropped, q.drops)
    assert results["mred"][0] == 0
    assert results["red"][0] > 10


def test_mred_never_counts_dummies_either() -> None:
    q = red(MRED, w_q=0.5, limit=100, dummy_threshold=100)
    for _ in range(60):
        q.enqueue(pkt(DUMMY), 0.0)
    q.enqueue(pkt(), 0.0)
    assert q.avg == 0.0


@pytest.mark.parametrize("bad", [dict(min_th=100, max_th=80), dict(max_p=0), dict(w_q=1.5),
                                 dict(limit=0), dict(mean_pkt_size=0)])
def test_red_rejects_bad_parameters(bad: dict) -> None:
    params = dict(limit=300, min_th=80, max_th=160, max_p=0.02, w_q=0.002)
    params.update(bad)
    with pytest.raises(ValueError):
        RED(**params)  # type: ignore[arg-type]


def test_queue_rejects_bad_limits() -> None:
    with pytest.raises(ValueError, match="limit"):
        Queue(0)
    with pytest.raises(ValueError, match="dummy_threshold"):
        Queue(10, dummy_threshold=11)
