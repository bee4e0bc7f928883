"""What the delay-based schemes (cdg, chd) share: per-RTT rounds, a shadow window, a deterministic random stream.

Both kernels measure once per round trip: Linux CDG ends a round on the first
ACK beyond the SND.NXT recorded at its start (`after(ack, rtt_seq)`), FreeBSD's
ERTT when the ACK of the round's marked (first-sent) segment arrives. The
scheme interface does not pass ACK numbers, so a round is kept as a byte
position instead: the bytes acknowledged so far plus the flight at the start
(= SND.NXT - ISS); it ends when the acknowledged bytes pass it.
"""
from __future__ import annotations

import random
from typing import ClassVar

from p4handoff.hosts.cc.base import AckInfo, CongestionControl, SenderControl


class Rounds:
    """Round-trip boundaries in acknowledged-byte positions."""

    def __init__(self) -> None:
        self.acked = 0  # bytes acknowledged so far (SND.UNA - ISS)
        self.end = 0  # SND.NXT - ISS when the current round started

    def ack(self, acked: int) -> None:
        self.acked += acked

    def start(self, ctl: SenderControl) -> None:
        """A new round starts now: it ends with the first ACK covering a byte sent after this."""
        self.end = self.acked + ctl.flight_size

    def done(self) -> bool:
        return self.acked > self.end


def scheme_rng(name: str, ctl: SenderControl, seed: int) -> random.Random:
    """The scheme's own stream, the same for the same run and connection.

    `ctl.tsval(0.0)` is the connection's timestamp-clock offset, which the core
    derives from its config seed and the 4-tuple (via the ISN): so the stream
    changes with the run's seed and differs per connection without the scheme
    interface exposing either. Call it once the connection is open.
    """
    return random.Random(f"{name}|{seed}|{ctl.local_addr}|{ctl.peer_home}|{ctl.tsval(0.0)}")


class DelayScheme(CongestionControl):
    """A delay-gradient scheme's common state: rounds, a shadow window seeded from cwnd, its random draws and backoffs.

    Both kernels seed the shadow window from cwnd when the connection starts
    (Linux tcp_cdg_init, FreeBSD chd_conn_init); here at the first event that
    reads it, the first ACK or a loss before one.
    """

    randomised: ClassVar[bool] = True   # probabilistic back-off (scheme_rng)

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.seed = seed
        self.rounds = Rounds()
        self.shadow: int | None = None  # bytes; set from cwnd at the first event (chd: 0 = off)
        self.backoffs: list[tuple[float, int]] = []  # (time, delay signal µs) of each delay backoff
        self._rng: random.Random | None = None

    def _seed_shadow(self) -> int:
        """The shadow window, set from cwnd if this is the first event that reads it."""
        if self.shadow is None:
            self.shadow = self.ctl.cwnd
        return self.shadow

    def _ack_opening(self, info: AckInfo) -> int | None:
        """Every ACK starts so: shadow seeded, bytes counted into the round; the RTT sample in µs, if any."""
        self._seed_shadow()
        self.rounds.ack(info.acked)
        return None if info.rtt is None else round(info.rtt * 1e6)

    def _draw(self) -> float:
        """The next draw in [0, 1) of this connection's stream (`scheme_rng`), made on first use."""
        if self._rng is None:
            self._rng = scheme_rng(self.name, self.ctl, self.seed)
        return self._rng.random()
