"""CDG, CAIA Delay-Gradient (Hayes & Armitage, IFIP Networking 2011), after Linux net/ipv4/tcp_cdg.c.

Followed: torvalds/linux net/ipv4/tcp_cdg.c as stored at commit ddd5856cf2d0
(the module added in v4.2, still with prandom_u32), defaults window 8, backoff_beta 0.7071 (724/1024), backoff_factor 42,
hystart_detect 3, use_ineff 5, use_shadow on, use_tolerance off.

Per round trip (`rounds.Rounds`) the minimum and maximum RTT sample are kept;
at the round's end gmin = min - previous min, gmax = max - previous max (µs)
go into a moving sum over the last `window` rounds (extrapolated while it
fills); g = sum gmin if > 0 else sum gmax. If g > 0 the sender backs off with
probability 1 - exp(-g * backoff_factor * 1e-6): shadow = max(shadow, cwnd),
ssthresh = max(2 SMSS, beta * cwnd), and until the data in flight then is
acknowledged (Linux's CWR state) no growth and no gradients. Ineffective
backoff: after `use_ineff` backoffs without the gradient sums falling by
32 µs, delay backoffs stop. Loss (fast retransmit): ssthresh = beta * cwnd if
the last event was a delay backoff, else shadow = min(shadow/2, cwnd) and
ssthresh = max(2 SMSS, shadow, cwnd/2) (without use_shadow: max(2 SMSS,
cwnd/2)); with use_tolerance a loss while the queue looks non-full keeps
cwnd. Growth (only when cwnd-limited) is the core's RFC 5681 rule, the
shadow window grows by the same amount. Hybrid slow start as in tcp_cdg.c
(ACK train over half the minimum RTT; delay: round minimum > 9/8 of the
connection's minimum after 8 ACKs) sets ssthresh = cwnd.

Reductions (the core owns recovery, the interface passes no ACK numbers):
rounds end when the acknowledged bytes pass SND.NXT at the round's start;
the backoff cuts cwnd at once instead of Proportional Rate Reduction;
recovery is the core's NewReno, not PRR, and there is no undo; "cwnd-limited"
= the flight before this ACK was within one SMSS of cwnd (slow start: over
half of it); the delayed-ACK filter counts segments as acked bytes / SMSS
and uses "not in recovery" for Linux's "nothing SACKed"; a timeout sets
ssthresh as a loss does, unless in recovery, reduction or an earlier
timeout's flight (Linux's Loss state), and cwnd = 1 SMSS; no restart after
idle (bulk transfers); handoff notifications are ignored. Windows are bytes.
Randomness: `rounds.scheme_rng` (run seed and 4-tuple via the timestamp
offset, plus `seed`).
"""
from __future__ import annotations

from typing import ClassVar

import math
from enum import Enum

from p4handoff.hosts.cc.base import AckInfo
from p4handoff.hosts.cc.rounds import DelayScheme

HYSTART_ACK_TRAIN = 1
HYSTART_DELAY = 2


class State(Enum):
    UNKNOWN = 0
    NONFULL = 1
    FULL = 2
    BACKOFF = 3


class Cdg(DelayScheme):
    name: ClassVar[str] = "cdg"

    def __init__(self, window: int = 8, backoff_beta: float = 0.7071, backoff_factor: float = 42,
                 hystart_detect: int = 3, use_ineff: int = 5, use_shadow: bool = True,
                 use_tolerance: bool = False, seed: int = 0) -> None:
        super().__init__(seed)
        if window < 1 or window > 256 or window & (window - 1):
            raise ValueError(f"cdg window must be a power of two in 1..256, got {window}")
        if not 0 <= backoff_beta <= 1:
            raise ValueError(f"cdg backoff_beta must be in [0, 1], got {backoff_beta}")
        self.window, self.beta, self.backoff_factor = window, int(backoff_beta * 1024), backoff_factor
        self.hystart_detect, self.use_ineff = hystart_detect, use_ineff
        self.use_shadow, self.use_tolerance = use_shadow, use_tolerance
        self.state = State.UNKNOWN
        self.rtt_min: int | None = None  # µs, this round
        self.rtt_max: int | None = None
        self.prev_min: int | None = None  # previous round (None: no previous round yet)
        self.prev_max: int | None = None
        self.gradients = [(0, 0)] * window
        self.gsum = (0, 0)
        self.tail = 0
        self.gfilled = False
        self.backoff_cnt = 0
        self.delack = 0
        self.delay_min: int | None = None
        self.last_ack: int | None = None  # µs, hybrid slow start's ACK train
        self.round_start = 0
        self.sample_cnt = 0
        self._cwr_end: int | None = None  # byte position ending the current delay backoff (Linux CWR)
        self._loss_end: int | None = None  # byte position ending the current timeout recovery (Linux Loss)
        self._exited_recovery = False  # the ACK being processed ended fast recovery

    # --- per-ACK ----------------------------------------------------------
    def on_ack(self, info: AckInfo) -> None:
        rtt_us = self._ack_opening(info)
        if rtt_us is not None:
            self._sample(rtt_us, info.acked)
        if self._exited_recovery or (self._cwr_end is not None and self.rounds.acked >= self._cwr_end):
            self._exited_recovery = False
            self._complete_cwr()
        if info.in_recovery or self._cwr_end is not None:
            return
        self._cong_avoid(info)

    def _sample(self, rtt_us: int, acked: int) -> None:
        """tcp_cdg_acked: round min/max, with Hayes' delayed-ACK filter."""
        if rtt_us <= 0:
            return
        if not self.ctl.in_recovery:
            segments = acked // self.ctl.mss
            if segments == 1 and self.delack:
                if self.rtt_min is not None:
                    self.rtt_min = min(self.rtt_min, rtt_us)
                self.delack -= 1
                return
            if segments > 1 and self.delack < 5:
                self.delack += 1
        self.rtt_min = rtt_us if self.rtt_min is None else min(self.rtt_min, rtt_us)
        self.rtt_max = rtt_us if self.rtt_max is None else max(self.rtt_max, rtt_us)

    def _cwnd_limited(self, acked: int) -> bool:
        ctl = self.ctl
        flight = ctl.flight_size + acked  # the flight before this ACK
        if ctl.cwnd < ctl.ssthresh:
            return ctl.cwnd < 2 * flight
        return flight + ctl.mss > ctl.cwnd

    def _cong_avoid(self, info: AckInfo) -> None:
        ctl = self.ctl
        limited = self._cwnd_limited(info.acked)
        if ctl.cwnd < ctl.ssthresh and self.hystart_detect:
            self._hystart(round(info.now * 1e6), limited, info.now)
        if self.rounds.done() and self.rtt_min is not None:
            grad = self._grad() if self.prev_min is not None else 0
            self._next_round()
            self.last_ack = None
            self.sample_cnt = 0
            if grad > 0 and self._backoff(grad, info.now):
                return
        assert self.shadow is not None
        if not limited:
            self.shadow = min(self.shadow, ctl.cwnd)
            return
        before = ctl.cwnd
        self.grow(info.acked)
        self.shadow += ctl.cwnd - before

    def _next_round(self) -> None:
        self.rounds.start(self.ctl)
        self.prev_min, self.prev_max = self.rtt_min, self.rtt_max
        self.rtt_min = self.rtt_max = None

    def _hystart(self, now_us: int, limited: bool, now: float) -> None:
        """tcp_cdg_hystart_update: leave slow start (ssthresh = cwnd) on a long ACK train or a delay rise."""
        ctl = self.ctl
        if self.rtt_min is not None:
            self.delay_min = self.rtt_min if self.delay_min is None else min(self.delay_min, self.rtt_min)
        if self.delay_min is None:
            return
        if self.hystart_detect & HYSTART_ACK_TRAIN:
            if self.last_ack is None or not limited:
                self.last_ack = self.round_start = now_us
            elif now_us < self.last_ack + 3000:
                self.last_ack = now_us
                if now_us > self.round_start + max(self.delay_min // 2, 125):
                    ctl.ssthresh = ctl.cwnd
                    ctl.trace("cdg_hystart", now, "ack train")
                    return
        if self.hystart_detect & HYSTART_DELAY:
            if self.sample_cnt < 8:
                self.sample_cnt += 1
            elif self.rtt_min is not None and self.rtt_min > max(self.delay_min + self.delay_min // 8, 125):
                ctl.ssthresh = ctl.cwnd
                ctl.trace("cdg_hystart", now, "delay")

    def _grad(self) -> int:
        """tcp_cdg_grad: the moving sum of per-round gradients (µs), extrapolated while the window fills."""
        assert self.rtt_min is not None and self.rtt_max is not None
        assert self.prev_min is not None and self.prev_max is not None
        gmin, gmax = self.rtt_min - self.prev_min, self.rtt_max - self.prev_max
        old_min, old_max = self.gradients[self.tail]
        self.gsum = (self.gsum[0] + gmin - old_min, self.gsum[1] + gmax - old_max)
        self.gradients[self.tail] = (gmin, gmax)
        self.tail = (self.tail + 1) % self.window
        gmin, gmax = self.gsum
        grad = gmin if gmin > 0 else gmax
        if not self.gfilled:
            if self.tail == 0:
                self.gfilled = True
            else:
                grad = int(grad * self.window / self.tail)
        if gmin <= -32 or gmax <= -32:
            self.backoff_cnt = 0  # the last backoff was effectual
        if self.use_tolerance:
            gmin, gmax = _div_round_closest(gmin, 64), _div_round_closest(gmax, 64)
            if gmin > 0 and gmax <= 0:
                self.state = State.FULL
            elif (gmin > 0 and gmax > 0) or gmax < 0:
                self.state = State.NONFULL
        return grad

    def _backoff(self, grad: int, now: float) -> bool:
        """tcp_cdg_backoff: back off with probability 1 - exp(-grad * backoff_factor / 1e6)."""
        ctl = self.ctl
        if self._draw() < math.exp(-grad * self.backoff_factor * 1e-6):
            return False
        if self.use_ineff:
            self.backoff_cnt += 1
            if self.backoff_cnt > self.use_ineff:
                return False
        assert self.shadow is not None
        self.shadow = max(self.shadow, ctl.cwnd)
        self.state = State.BACKOFF
        ctl.ssthresh = self._ssthresh()
        ctl.cwnd = ctl.ssthresh
        self._cwr_end = self.rounds.acked + ctl.flight_size
        self.backoffs.append((now, grad))
        ctl.trace("cdg_backoff", now, f"grad={grad}us")
        return True

    def _complete_cwr(self) -> None:
        """CA_EVENT_COMPLETE_CWR: a reduction (delay backoff or fast recovery) is over; new gradient round."""
        self._cwr_end = None
        self.state = State.UNKNOWN
        self._next_round()

    # --- losses -------------------------------------------------------------
    def _ssthresh(self) -> int:
        """tcp_cdg_ssthresh, in bytes."""
        ctl = self.ctl
        if self.state is State.BACKOFF:
            return max(2 * ctl.mss, ctl.cwnd * min(1024, self.beta) >> 10)
        if self.state is State.NONFULL and self.use_tolerance:
            return ctl.cwnd
        assert self.shadow is not None
        self.shadow = min(self.shadow // 2, ctl.cwnd)
        if self.use_shadow:
            return max(2 * ctl.mss, self.shadow, ctl.cwnd // 2)
        return max(2 * ctl.mss, ctl.cwnd // 2)

    def on_loss(self, now: float) -> None:
        ctl = self.ctl
        self._seed_shadow()
        ctl.ssthresh = self._ssthresh()
        self._cwr_end = None  # recovery replaces a delay backoff still in progress
        ctl.trace("cdg_loss", now, f"state={self.state.name} shadow={self.shadow}")

    def on_recovery_exit(self, now: float) -> None:
        """Deflate (core's rule); the reduction ends on this ACK's on_ack, once its bytes are counted."""
        super().on_recovery_exit(now)
        self._exited_recovery = True

    def on_rto(self, now: float) -> None:
        ctl = self.ctl
        self._seed_shadow()
        in_loss = self._loss_end is not None and self.rounds.acked < self._loss_end
        if not (ctl.in_recovery or self._cwr_end is not None or in_loss):
            ctl.ssthresh = self._ssthresh()
            self._loss_end = self.rounds.acked + ctl.flight_size
        self._cwr_end = None
        ctl.cwnd = ctl.mss


def _div_round_closest(x: int, d: int) -> int:
    """Linux DIV_ROUND_CLOSEST for a signed dividend and positive divisor."""
    return (x + d // 2) // d if x >= 0 else -((-x + d // 2) // d)
