"""CHD, CAIA-Hamilton-Delay (Hayes & Armitage, LCN 2010), after FreeBSD sys/netinet/cc/cc_chd.c.

Followed: freebsd/freebsd-src sys/netinet/cc/cc_chd.c at e35abecc4ef7
(MODULE_VERSION 2; the UCC paper ran FreeBSD 9's, not compared line by
line) and the RTT it reads from sys/netinet/khelp/h_ertt.c. Defaults:
queue_threshold 20 ms (the UCC paper's q_th), queue_min 5 ms, pmax 50 %,
loss_fair on, use_max on (FreeBSD's are in ticks; 1 tick = 1 ms at HZ=1000).

Once per round trip (`rounds.Rounds`, FreeBSD: ERTT's marked packet) qdly =
(largest RTT sample of the round if use_max, else the latest) - smallest RTT
ever. Outside recovery, if qdly > qmin the sender backs off with probability
p: rising linearly from 0 at qmin to pmax at qthresh, then falling linearly
to 0 at the largest queueing delay ever seen (maxRTT - minRTT); above qthresh
the same random draw below p also sets loss_compete (we may be competing
with loss-based flows). A backoff: shadow = max(shadow, cwnd) if
loss_compete or qdly grew since the last backoff, else shadow = 0 (off);
ssthresh = cwnd = max(2, w - max(w/2, 1)) SMSS, w = min(peer window, cwnd)
in segments; then congestion recovery (no further delay backoff, and a loss
is not a congestion signal) until the data then in flight is acknowledged.
Loss (fast retransmit): only if qdly (max of the round so far and the latest
sample) > qthresh and not in congestion recovery is it congestion: cwnd =
max(cwnd, shadow) if loss_compete, then the same decrease; otherwise
ssthresh = cwnd (non-congestion loss: no reduction). The shadow window is
then halved (at least 2 SMSS). Growth: FreeBSD's ABC (RFC 3465, L = 2 SMSS,
1 SMSS after a timeout) slow start while cwnd <= ssthresh, + 1 SMSS per cwnd
of acknowledged bytes in congestion avoidance; the shadow window, while on,
grows by the same. Timeout: NewReno's, ssthresh = max(2, min(peer window,
cwnd)/2) SMSS, cwnd = 1 SMSS.

Reductions: the core's NewReno recovery, and no growth during it (FreeBSD's
cc_chd grows on partial ACKs too, but the recovery exit sets cwnd anyway);
RTT samples are the core's per-ACK ones (timestamp echo or Karn), in µs, not
ERTT's own matching of ACKs to sent segments; no restart after idle; handoff
notifications are ignored. Randomness: `rounds.scheme_rng` (run seed and
4-tuple via the timestamp offset, plus `seed`).
"""
from __future__ import annotations

from typing import ClassVar

from p4handoff.hosts.cc.base import AckInfo
from p4handoff.hosts.cc.rounds import DelayScheme

ABC_L = 2  # net.inet.tcp.abc_l_var


class Chd(DelayScheme):
    name: ClassVar[str] = "chd"

    def __init__(self, qthresh: float = 0.020, qmin: float = 0.005, pmax: float = 0.5, loss_fair: bool = True,
                 use_max: bool = True, seed: int = 0) -> None:
        super().__init__(seed)
        if not 0 <= qmin < qthresh:
            raise ValueError(f"chd needs 0 <= qmin < qthresh, got {qmin}, {qthresh}")
        if not 0 < pmax <= 1:
            raise ValueError(f"chd pmax must be in (0, 1], got {pmax}")
        self.qthresh, self.qmin = round(qthresh * 1e6), round(qmin * 1e6)  # µs
        self.pmax, self.loss_fair, self.use_max = pmax, loss_fair, use_max
        self.rtt = 0  # µs: latest sample (ERTT e_t->rtt); 0 = none yet
        self.minrtt = 0
        self.maxrtt = 0
        self.maxrtt_in_rtt = 0
        self.prev_backoff_qdly = 0
        self.loss_compete = False
        self._bytes_acked = 0  # ABC counter (t_bytes_acked)
        self._cong_end: int | None = None  # byte position ending the congestion recovery after a delay backoff
        self._rto_end: int | None = None  # while retransmitting after a timeout, slow start adds at most 1 SMSS

    def _in_cong_recovery(self) -> bool:
        return self._cong_end is not None and self.rounds.acked < self._cong_end

    def on_ack(self, info: AckInfo) -> None:
        ctl = self.ctl
        rtt_us = self._ack_opening(info)
        if rtt_us is not None:
            self.rtt = max(1, rtt_us)
            self.minrtt = self.rtt if not self.minrtt else min(self.minrtt, self.rtt)
            self.maxrtt = max(self.maxrtt, self.rtt)
        self.maxrtt_in_rtt = max(self.rtt, self.maxrtt_in_rtt)
        backoff, qdly = False, 0
        if self.rounds.done():
            self.rounds.start(ctl)
            rtt = self.maxrtt_in_rtt if self.use_max else self.rtt
            self.maxrtt_in_rtt = 0
            if rtt and self.minrtt and not (ctl.in_recovery or self._in_cong_recovery()):
                qdly = rtt - self.minrtt
                if qdly > self.qmin:
                    backoff = self._should_backoff(qdly, self.maxrtt - self.minrtt)
                else:
                    self.loss_compete = False
        if backoff:
            if self.loss_compete or qdly > self.prev_backoff_qdly:
                self.shadow = max(ctl.cwnd, self._seed_shadow())  # perhaps competing with loss-based flows
            else:
                self.shadow = 0
            self.prev_backoff_qdly = qdly
            ctl.ssthresh = self._decreased(ctl.cwnd)
            ctl.cwnd = ctl.ssthresh
            self._cong_end = self.rounds.acked + ctl.flight_size
            self.backoffs.append((info.now, qdly))
            ctl.trace("chd_backoff", info.now, f"qdly={qdly}us shadow={self.shadow}")
        elif not info.in_recovery:
            self._increase(info.acked)

    def _should_backoff(self, qdly: int, maxqdly: int) -> bool:
        """should_backoff(): probability up from qmin to pmax at qthresh, then down to 0 at the largest queue."""
        rand = self._draw()
        if qdly < self.qthresh:
            self.loss_compete = False
            p = self.pmax * (qdly - self.qmin) / (self.qthresh - self.qmin)
        elif qdly > self.qthresh:
            p = self.pmax * (maxqdly - qdly) / (maxqdly - self.qthresh)
            if self.loss_fair and rand < p:
                self.loss_compete = True
        else:
            p = self.pmax
            self.loss_compete = False
        return rand < p

    def _increase(self, acked: int) -> None:
        """chd_window_increase with FreeBSD's ABC accounting; the shadow window follows."""
        ctl = self.ctl
        if ctl.cwnd <= ctl.ssthresh:
            self._bytes_acked = 0
            after_rto = self._rto_end is not None and self.rounds.acked <= self._rto_end
            incr = min(acked, (1 if after_rto else ABC_L) * ctl.mss)
        else:
            self._bytes_acked += min(acked, ABC_L * ctl.mss)
            incr = 0
            if self._bytes_acked >= ctl.cwnd:
                self._bytes_acked -= ctl.cwnd
                incr = ctl.mss
        if self.shadow:
            self.shadow = min(self.shadow + incr, ctl.max_cwnd)
        ctl.cwnd = min(ctl.cwnd + incr, ctl.max_cwnd)

    def _decreased(self, cwnd: int) -> int:
        """chd_window_decrease: the new ssthresh (bytes) for a window of `cwnd` bytes."""
        mss = self.ctl.mss
        win = min(self.ctl.peer_window, cwnd) // mss
        win -= max(win // 2, 1)
        return max(win, 2) * mss

    def on_loss(self, now: float) -> None:
        ctl = self.ctl
        shadow = self._seed_shadow()
        qdly = max(self.rtt, self.maxrtt_in_rtt) - self.minrtt
        congestion = not self._in_cong_recovery() and qdly > self.qthresh
        if congestion:
            cwnd = max(ctl.cwnd, shadow) if self.loss_compete else ctl.cwnd
            ctl.ssthresh = self._decreased(cwnd)
        else:
            ctl.ssthresh = ctl.cwnd
        if shadow:
            self.shadow = max(shadow // ctl.mss // 2, 2) * ctl.mss
        ctl.trace("chd_loss", now, f"qdly={qdly}us congestion={congestion}")

    def on_rto(self, now: float) -> None:
        ctl = self.ctl
        ctl.ssthresh = max(2, min(ctl.peer_window, ctl.cwnd) // 2 // ctl.mss) * ctl.mss
        ctl.cwnd = ctl.mss
        self._bytes_acked = 0
        self._cong_end = None
        self._rto_end = self.rounds.acked + ctl.flight_size
