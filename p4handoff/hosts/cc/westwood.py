"""TCP Westwood+ with NewReno recovery ("Westwood-NR", the DSBP paper's baseline).

Bandwidth estimate (Mascolo et al. Westwood+, as in Linux tcp_westwood):
bytes delivered are counted per ACK (a duplicate ACK counts one SMSS
delivered; a later cumulative ACK subtracts what dup ACKs already
counted), and once per RTT window (max(SRTT, 50 ms)) the sample
bytes/interval goes through two cascaded 7/8 low-pass filters. After a
loss, ssthresh = BWE * RTTmin (at least 2 segments): on fast retransmit the
core then runs NewReno recovery from there; on timeout cwnd = 1 segment.
Before the first estimate, NewReno's halving is used.
"""
from __future__ import annotations

from typing import ClassVar

from p4handoff.hosts.cc.base import AckInfo, CongestionControl

MIN_WINDOW = 0.05  # s, Linux TCP_WESTWOOD_RTT_MIN


class Westwood(CongestionControl):
    name: ClassVar[str] = "westwood"

    def __init__(self) -> None:
        super().__init__()
        self.bwe = 0.0  # bytes per second, filtered
        self._bw_ns = 0.0  # first filter stage
        self._bk = 0  # bytes delivered in the current window
        self._accounted = 0  # bytes counted for duplicate ACKs, not yet cumulatively acknowledged
        self._window_start: float | None = None

    def on_ack(self, info: AckInfo) -> None:
        super().on_ack(info)
        delivered = info.acked
        if self._accounted:
            if delivered > self._accounted:
                delivered -= self._accounted
                self._accounted = 0
            else:
                self._accounted -= delivered
                delivered = 0
        self._count(delivered, info.now)

    def on_dupack(self, info: AckInfo) -> None:
        self._accounted += self.ctl.mss
        self._count(self.ctl.mss, info.now)

    def _count(self, delivered: int, now: float) -> None:
        if self._window_start is None:
            self._window_start = now
            return
        self._bk += delivered
        interval = now - self._window_start
        if interval >= max(self.ctl.srtt or 0.0, MIN_WINDOW):
            sample = self._bk / interval
            if self.bwe == 0.0:
                self._bw_ns = self.bwe = sample
            else:
                self._bw_ns = (7 * self._bw_ns + sample) / 8
                self.bwe = (7 * self.bwe + self._bw_ns) / 8
            self._bk = 0
            self._window_start = now

    def _bwe_ssthresh(self) -> int | None:
        rtt_min = self.ctl.min_rtt
        if self.bwe <= 0 or rtt_min is None:
            return None
        return max(2, int(self.bwe * rtt_min / self.ctl.mss)) * self.ctl.mss

    def on_loss(self, now: float) -> None:
        ssthresh = self._bwe_ssthresh()
        if ssthresh is None:
            super().on_loss(now)
        else:
            self.ctl.ssthresh = ssthresh
            self.ctl.trace("westwood_ssthresh", now, f"bwe={self.bwe:.0f}B/s")

    def on_rto(self, now: float) -> None:
        ssthresh = self._bwe_ssthresh()
        super().on_rto(now)
        if ssthresh is not None:
            self.ctl.ssthresh = ssthresh
