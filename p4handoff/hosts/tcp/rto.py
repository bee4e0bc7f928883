"""Retransmission timeout per RFC 6298: SRTT/RTTVAR, clamping, exponential backoff.

The backoff is kept as a count next to the computed RTO so that a new RTT
sample (which, under Karn's rule, only comes from a segment that was not
retransmitted, or from a timestamp echo) resets it, as RFC 6298 (5.5-5.7)
requires, while a forced expiry can reset it explicitly.
"""
from __future__ import annotations

ALPHA = 1 / 8
BETA = 1 / 4
K = 4


class RtoEstimator:
    def __init__(self, initial: float, min_rto: float, max_rto: float, granularity: float = 0.0) -> None:
        self.min_rto = min_rto
        self.max_rto = max_rto
        self.granularity = granularity
        self.srtt: float | None = None
        self.rttvar: float | None = None
        self.latest_rtt: float | None = None
        self.min_rtt: float | None = None
        self.base = min(initial, max_rto)
        self.backoff = 0

    @property
    def rto(self) -> float:
        """The timeout to arm now: the computed RTO doubled once per expiry, at most max_rto."""
        return min(self.max_rto, self.base * (1 << min(self.backoff, 30)))

    def sample(self, rtt: float) -> None:
        """A valid RTT measurement (RFC 6298 2.2/2.3); clears the backoff."""
        if self.srtt is None or self.rttvar is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = (1 - BETA) * self.rttvar + BETA * abs(self.srtt - rtt)
            self.srtt = (1 - ALPHA) * self.srtt + ALPHA * rtt
        self.latest_rtt = rtt
        self.min_rtt = rtt if self.min_rtt is None else min(self.min_rtt, rtt)
        self.base = min(self.max_rto, max(self.min_rto, self.srtt + max(self.granularity, K * self.rttvar)))
        self.backoff = 0

    def expired(self) -> None:
        """The timer fired: back off (RFC 6298 5.5)."""
        if self.rto < self.max_rto:
            self.backoff += 1

    def reset_backoff(self) -> None:
        self.backoff = 0
