"""UCC, utilisation-based congestion control (Utsumi & Zabir): halve only when the link is busy.

rho = (N - N_min) / N over the ACKs of the measurement window, where N_min
counts one-way delays "equal" to the minimum. One-way delay per ACK that
acknowledges new data: OWD = ack.TSval - ack.TSecr (the receiver's clock at
arrival minus our clock at sending, up to a constant offset). This needs a
receiver whose TSval is its clock ticking at our rate: our receiver with the
same `ts_hz` (use 1e5-1e6 Hz in simulations; at 1 kHz one tick is longer
than a packet's service time on a 10 Mb/s link). With delayed ACKs the echo
belongs to the earlier segment, so OWDs read high: rho errs towards 1 (safe).

Choices (docs/hosts-tcp.md): "equal" = within `tolerance` seconds of the
minimum, at least one clock tick (default 0.1 ms). The minimum is a windowed
minimum over the current and previous `min_window` seconds (default 10 s),
so a path that got slower is relearned; it is forgotten at once on a
HANDOFF notification (path change). Measurement window = since the
previous loss detection (fast retransmit or timeout). No samples in the
window -> rho = 1 (treat as congested). Dup-ACK loss: ssthresh = half the
flight (NewReno) if rho > alpha, else ssthresh = cwnd (after recovery cwnd
is as before the loss; the retransmission still happens). Timeout: cwnd =
1 segment and NewReno's ssthresh.
"""
from __future__ import annotations

from typing import ClassVar, TYPE_CHECKING

from p4handoff.hosts.cc.base import AckInfo, CongestionControl
from p4handoff.notify import Event

if TYPE_CHECKING:
    from p4handoff.notify import Notification

MASK32 = 0xFFFFFFFF


class Ucc(CongestionControl):
    name: ClassVar[str] = "ucc"

    def __init__(self, alpha: float = 0.99, tolerance: float = 1e-4, min_window: float = 10.0) -> None:
        super().__init__()
        if not 0 < alpha <= 1:
            raise ValueError(f"ucc alpha must be in (0, 1], got {alpha}")
        self.alpha = alpha
        self.tolerance = tolerance
        self.min_window = min_window
        self._ref: int | None = None  # raw OWD of the first sample: later ones are kept relative to it
        self._samples: list[int] = []  # relative OWDs (ticks) since the last loss detection
        self._min_cur: int | None = None
        self._min_prev: int | None = None
        self._epoch_start: float | None = None
        self.last_rho: float | None = None
        self.decisions: list[tuple[float, float, bool]] = []  # (time, rho, halved) per dup-ACK loss

    def on_ack(self, info: AckInfo) -> None:
        super().on_ack(info)
        if info.tsval is None or info.tsecr is None or info.acked <= 0:
            return
        raw = (info.tsval - info.tsecr) & MASK32
        if self._ref is None:
            self._ref = raw
        rel = (raw - self._ref) & MASK32
        if rel >= 0x80000000:
            rel -= 0x100000000
        self._samples.append(rel)
        if self._epoch_start is None or info.now - self._epoch_start >= self.min_window:
            self._min_prev, self._min_cur, self._epoch_start = self._min_cur, None, info.now
        if self._min_cur is None or rel < self._min_cur:
            self._min_cur = rel

    @property
    def base_owd(self) -> int | None:
        """The minimum one-way delay in force (ticks, relative to the first sample)."""
        mins = [m for m in (self._min_cur, self._min_prev) if m is not None]
        return min(mins) if mins else None

    def utilisation(self) -> float:
        """rho of the current measurement window (1.0 when there is nothing to go by)."""
        base = self.base_owd
        if not self._samples or base is None:
            return 1.0
        tol = max(1, round(self.tolerance * self.ctl.ts_hz))
        at_min = sum(1 for s in self._samples if s - base <= tol)
        return (len(self._samples) - at_min) / len(self._samples)

    def on_loss(self, now: float) -> None:
        rho = self.last_rho = self.utilisation()
        congested = rho > self.alpha
        self.decisions.append((now, rho, congested))
        ctl = self.ctl
        if congested:
            super().on_loss(now)
        else:
            ctl.ssthresh = max(ctl.cwnd, 2 * ctl.mss)
        ctl.trace("ucc_loss", now, f"rho={rho:.4f} n={len(self._samples)} halve={congested}")
        self._samples = []

    def on_rto(self, now: float) -> None:
        super().on_rto(now)
        self._samples = []

    def on_notify(self, note: "Notification", now: float) -> None:
        if note.event is Event.HANDOFF:
            self._ref = self._min_cur = self._min_prev = self._epoch_start = None
            self._samples = []
