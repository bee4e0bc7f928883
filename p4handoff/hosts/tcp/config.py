"""Per-connection TCP parameters: every knob the papers' experiments vary.

Frozen so one config can be shared by many connections and logged as the
exact settings of a run.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TcpConfig:
    """Settings of one endpoint. Sizes in bytes unless named `*_segments`; times in seconds.

    `mss` is the payload of a full-sized segment we send (the papers' "packet
    size"); the MSS option we advertise is `mtu - 40` (what we can receive),
    and the effective payload is further limited by the peer's MSS option
    minus the timestamp option's 12 bytes (RFC 6691).
    `window_segments` is both our receive buffer (advertised window) and the
    cap on our congestion window, in `mss` units (one paper uses 64).
    """

    mss: int = 1448
    mtu: int = 1500
    window_segments: int = 64
    iw: int = 3
    initial_ssthresh_segments: int | None = None  # None: "arbitrarily high" (RFC 5681)
    initial_rto: float = 1.0
    min_rto: float = 1.0
    max_rto: float = 60.0
    clock_granularity: float = 0.0  # RFC 6298 G
    delayed_ack: bool = False
    delack_timeout: float = 0.2
    timestamps: bool = True
    ts_hz: int = 1000  # TSval ticks per second; UCC needs both ends on the same rate
    sack: bool = True  # negotiate SACK and send SACK blocks; recovery stays NewReno
    window_scaling: bool = True
    isn: int | None = None  # None: derived from `seed` and the 4-tuple (deterministic)
    seed: int = 0
    max_retries: int = 15  # RTO expiries in a row before the connection is aborted
    syn_retries: int = 6
    time_wait: float = 1.0  # 2*MSL; short by default so drivers finish quickly
    challenge_ack_limit: int = 100  # challenge ACKs per second (RFC 5961 section 7)

    def __post_init__(self) -> None:
        if self.mss < 1 or self.mss > self.mtu - 40:
            raise ValueError(f"mss {self.mss} must be in 1..mtu-40 ({self.mtu - 40})")
        if self.window_segments < 1 or self.iw < 1:
            raise ValueError("window_segments and iw must be >= 1")
        if not 0 < self.min_rto <= self.max_rto or self.initial_rto <= 0:
            raise ValueError("need 0 < min_rto <= max_rto and initial_rto > 0")
        if self.ts_hz < 1:
            raise ValueError("ts_hz must be >= 1")

    @property
    def receive_buffer(self) -> int:
        return self.window_segments * self.mss
