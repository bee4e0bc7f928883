"""The congestion-control plug-in interface, and NewReno's window rules as its default.

The TCP core owns the mechanics every scheme shares (ACK clocking, RTO
timer, go-back-N after a timeout, NewReno fast retransmit / fast recovery
with partial ACKs, persist probing). A scheme decides the numbers: it is
told about every ACK, duplicate ACK, loss, timeout, recovery exit, window
change, dummy ACK and handoff notification, and acts through the
`SenderControl` the core hands it (set cwnd/ssthresh, force an RTO expiry,
freeze/unfreeze, emit extra segments, arm its own timer).

Windows are in bytes (RFC 5681); `ctl.mss` converts from segments.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol, TYPE_CHECKING

if TYPE_CHECKING:
    from p4handoff.hosts.segment import Segment
    from p4handoff.notify import Notification


@dataclass(slots=True, frozen=True)
class AckInfo:
    """What one incoming acknowledgment told the sender.

    `acked` is the number of bytes newly acknowledged (0 for a duplicate ACK);
    `rtt` a valid RTT sample taken on this ACK (timestamp echo, or Karn-timed
    segment), else None; `tsval`/`tsecr` the raw timestamp option (peer's
    clock, our echoed clock) or None; `window` the peer's advertised window
    in bytes; `in_recovery` is True if the ACK was handled as part of fast
    recovery (partial ACKs and the ACK that ends recovery).
    """

    now: float
    acked: int
    rtt: float | None
    tsval: int | None
    tsecr: int | None
    window: int
    in_recovery: bool
    dupacks: int


class SenderControl(Protocol):
    """What a scheme may read and change on its connection (implemented by TcpConnection)."""

    cwnd: int
    ssthresh: int
    mss: int
    max_cwnd: int
    snd_una: int   # sequence numbers, unwrapped (they only grow)
    snd_max: int
    local_addr: str
    remote_addr: str
    peer_home: str

    @property
    def flight_size(self) -> int: ...
    @property
    def srtt(self) -> float | None: ...
    @property
    def min_rtt(self) -> float | None: ...
    @property
    def rto(self) -> float: ...
    @property
    def in_recovery(self) -> bool: ...
    @property
    def frozen(self) -> bool: ...
    @property
    def peer_window(self) -> int: ...
    @property
    def ts_hz(self) -> int: ...
    @property
    def last_data_segment(self) -> "Segment | None": ...
    def tsval(self, now: float) -> int: ...
    def force_rto(self, now: float) -> bool: ...
    def hold_flight(self, now: float, until: float) -> bool: ...
    def pace(self, now: float, interval: float, until: float) -> None: ...
    def freeze(self, now: float) -> None: ...
    def unfreeze(self, now: float) -> None: ...
    def close_receive_window(self, now: float) -> None: ...
    def open_receive_window(self, now: float, copies: int = 1) -> None: ...
    def emit(self, segment: "Segment") -> None: ...
    def trace(self, event: str, now: float, detail: str = "") -> None: ...


class CongestionControl:
    """Base scheme = TCP NewReno (RFC 5681 / RFC 6582 window rules).

    Subclasses override the hooks they change. `answers_dummies` makes the
    core hand DSBP-marked segments to this scheme (and answer dummy data
    segments with dummy ACKs) instead of treating them as ordinary segments.
    """

    name: ClassVar[str] = "newreno"
    answers_dummies: ClassVar[bool] = False
    #: RFC 6582: a partial ACK keeps fast recovery going and retransmits the next
    #: hole. False (Reno, RFC 5681 3.2) ends recovery at the first ACK of new data.
    partial_acks: ClassVar[bool] = True
    #: The scheme draws random numbers (from the run's seed): repeats with other seeds differ.
    randomised: ClassVar[bool] = False

    def __init__(self) -> None:
        self._ctl: SenderControl | None = None

    @property
    def ctl(self) -> SenderControl:
        if self._ctl is None:
            raise RuntimeError(f"scheme {self.name!r} is not attached to a connection")
        return self._ctl

    def attach(self, ctl: SenderControl) -> None:
        """Called once by the connection that owns this scheme instance."""
        if self._ctl is not None and self._ctl is not ctl:
            raise RuntimeError(f"scheme {self.name!r} instance is already attached to another connection")
        self._ctl = ctl

    # --- window growth -------------------------------------------------
    def on_ack(self, info: AckInfo) -> None:
        """An ACK advanced SND.UNA. NewReno: slow start / congestion avoidance outside recovery."""
        if not info.in_recovery:
            self.grow(info.acked)

    def grow(self, acked: int) -> None:
        """RFC 5681: +min(acked, SMSS) per ACK in slow start, +SMSS*SMSS/cwnd per ACK in CA; capped at max_cwnd."""
        ctl = self.ctl
        if ctl.cwnd < ctl.ssthresh:
            ctl.cwnd += min(acked, ctl.mss)
        else:
            ctl.cwnd += max(1, ctl.mss * ctl.mss // ctl.cwnd)
        if ctl.cwnd > ctl.max_cwnd:
            ctl.cwnd = ctl.max_cwnd

    def on_dupack(self, info: AckInfo) -> None:
        """A duplicate ACK (RFC 5681 definition). The core counts them and inflates cwnd in recovery."""

    # --- loss responses ----------------------------------------------------
    def on_loss(self, now: float) -> None:
        """Fast retransmit is being entered (3rd duplicate ACK). Set ssthresh; the core then
        retransmits and sets cwnd = ssthresh + 3*SMSS (RFC 6582 step 2)."""
        ctl = self.ctl
        ctl.ssthresh = max(ctl.flight_size // 2, 2 * ctl.mss)

    def on_rto(self, now: float) -> None:
        """The retransmission timer expired (or was forced to). RFC 5681 eq. 4, cwnd = 1 segment."""
        ctl = self.ctl
        ctl.ssthresh = max(ctl.flight_size // 2, 2 * ctl.mss)
        ctl.cwnd = ctl.mss

    def on_recovery_exit(self, now: float) -> None:
        """An ACK ended fast recovery (a full ACK; with `partial_acks` off, any new ACK):
        deflate (RFC 6582 step 3, option 1)."""
        ctl = self.ctl
        ctl.cwnd = min(ctl.ssthresh, max(ctl.flight_size, ctl.mss) + ctl.mss)

    # --- other events ------------------------------------------------------
    def on_window_change(self, window: int, now: float) -> None:
        """The peer's advertised window (bytes) changed."""

    def on_notify(self, note: "Notification", now: float) -> None:
        """A handoff notification for this connection (the core has already switched
        `remote_addr` to the new path on HANDOFF). NewReno ("TCP/mm") ignores it."""

    def on_dummy_ack(self, segment: "Segment", now: float) -> None:
        """A DSBP dummy ACK arrived (only when `answers_dummies`)."""

    def next_wakeup(self) -> float | None:
        """When this scheme's own timer is due, if it has one."""
        return None

    def on_timer(self, now: float) -> None:
        """The scheme's timer (see next_wakeup) is due."""
