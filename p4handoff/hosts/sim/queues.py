"""Egress queues: drop-tail, RED and M-RED, each with DSBP's dummy class.

The rules are those of the base station's P4 AQM (p4src/include/aqm.p4,
docs/aqm.md), in floating point instead of fixed point:

* Occupancy is counted in packets *waiting*; the packet being transmitted
  has left the queue (as in BMv2's egress queue and ns-2).
* Data (including IPF priority packets) and DSBP dummies are two
  strict-priority classes: data is always served first. `limit` bounds the
  data waiting; a dummy is dropped when data + dummies waiting reach
  `dummy_threshold` (≤ limit), so a dummy is always dropped before data.
  Dummies are never counted in any average.
* RED (Floyd & Jacobson 1993): at each counted arrival, if packets are
  waiting, avg ← (1 − w_q)·avg + w_q·q; if none are, the queue has been
  empty since `idle_since` and avg ← (1 − w_q)^m·avg, m = idle time /
  (mean_pkt_size·8 / rate). Then avg < min_th admits (count = −1),
  avg ≥ max_th drops ("forced", count = 0), and in between count grows
  and the packet is dropped ("early") with p_a = p_b / (1 − count·p_b),
  p_b = max_p·(avg − min_th)/(max_th − min_th) (certainly once count·p_b ≥ 1).
  RED counts all data; M-RED counts, averages and early-drops non-priority
  data only, and admits priority packets unless the data limit is reached.
* A packet that passes the AQM is still dropped ("overflow") if `limit`
  data packets are waiting.
"""
from __future__ import annotations

import random
from collections import deque
from typing import Callable, ClassVar

from p4handoff.hosts.sim.packet import DUMMY, PRIORITY, Packet


class Queue:
    """Drop-tail FIFO of `limit` data packets with a lower-priority dummy class."""

    kind: ClassVar[str] = "droptail"
    avg = 0.0  # the AQM's average queue (RED sets its own)

    def __init__(self, limit: int, dummy_threshold: int | None = None) -> None:
        if limit < 1:
            raise ValueError(f"queue limit must be at least 1 packet, got {limit}")
        if dummy_threshold is None:
            dummy_threshold = max(1, limit // 2)
        if not 0 <= dummy_threshold <= limit:
            raise ValueError(f"dummy_threshold must be within 0..limit ({limit}), got {dummy_threshold}")
        self.limit = limit
        self.dummy_threshold = dummy_threshold
        self._data: deque[Packet] = deque()
        self._dummy: deque[Packet] = deque()
        self.drops: dict[str, int] = {}
        self.admitted = {"np": 0, "prio": 0, "dummy": 0}  # by class, as the switch's aqm_enqueued counter
        self.on_drop: Callable[[Packet, str], None] | None = None  # set by the network's flow accounting

    def attach(self, rate_bps: float, rng: random.Random) -> None:
        """Called by the link that owns this queue (RED needs its rate and a random stream)."""

    def __len__(self) -> int:
        return len(self._data) + len(self._dummy)

    @property
    def data_len(self) -> int:
        return len(self._data)

    @property
    def dummy_len(self) -> int:
        return len(self._dummy)

    def _drop(self, pkt: Packet, cause: str) -> bool:
        self.drops[cause] = self.drops.get(cause, 0) + 1
        if self.on_drop is not None:
            self.on_drop(pkt, cause)
        return False

    def enqueue(self, pkt: Packet, now: float) -> bool:
        """Admit `pkt` or count why not; True if it was queued."""
        if pkt.klass == DUMMY:
            if len(self._data) + len(self._dummy) >= self.dummy_threshold:
                return self._drop(pkt, "dummy")
            self._dummy.append(pkt)
            self.admitted["dummy"] += 1
            return True
        if len(self._data) >= self.limit:
            return self._drop(pkt, "overflow")
        self._data.append(pkt)
        self.admitted["prio" if pkt.klass == PRIORITY else "np"] += 1
        return True

    def dequeue(self, now: float) -> Packet | None:
        """The next packet to transmit (data before dummies), or None."""
        if self._data:
            return self._data.popleft()
        if self._dummy:
            return self._dummy.popleft()
        return None

    def take(self, dst: str, now: float) -> list[Packet]:
        """Remove and return, in order, every waiting packet for `dst` (IPF's buffer)."""
        taken = [p for p in self._data if p.dst == dst] + [p for p in self._dummy if p.dst == dst]
        if taken:
            self._data = deque(p for p in self._data if p.dst != dst)
            self._dummy = deque(p for p in self._dummy if p.dst != dst)
            self._recount(now)
        return taken

    def clear(self, now: float) -> list[Packet]:
        """Empty the queue (link outage); return what was waiting."""
        lost = list(self._data) + list(self._dummy)
        self._data.clear()
        self._dummy.clear()
        self._recount(now)
        return lost

    def _recount(self, now: float) -> None:
        pass


class RED(Queue):
    """Random Early Detection (Floyd & Jacobson 1993); see the module docstring."""

    kind: ClassVar[str] = "red"
    priority_aware: ClassVar[bool] = False

    def __init__(self, limit: int, min_th: float, max_th: float, max_p: float, w_q: float,
                 mean_pkt_size: int = 1000, dummy_threshold: int | None = None) -> None:
        super().__init__(limit, dummy_threshold)
        if not 0 <= min_th < max_th:
            raise ValueError(f"RED needs 0 <= min_th < max_th, got min_th={min_th}, max_th={max_th}")
        if not 0 < max_p <= 1:
            raise ValueError(f"RED max_p must be in (0, 1], got {max_p}")
        if not 0 <= w_q <= 1:
            raise ValueError(f"RED w_q must be in [0, 1], got {w_q}")
        if mean_pkt_size <= 0:
            raise ValueError(f"RED mean_pkt_size must be positive, got {mean_pkt_size}")
        self.min_th = float(min_th)
        self.max_th = float(max_th)
        self.max_p = float(max_p)
        self.w_q = float(w_q)
        self.mean_pkt_size = mean_pkt_size
        self.avg = 0.0
        self.count = -1
        self.counted = 0              # counted packets waiting
        self.idle_since = 0.0         # when `counted` last became 0 (decay accounted up to here)
        self._pkt_time = 0.0
        self._rng: random.Random | None = None

    def attach(self, rate_bps: float, rng: random.Random) -> None:
        self._pkt_time = self.mean_pkt_size * 8 / rate_bps
        self._rng = rng

    def _counts(self, pkt: Packet) -> bool:
        return not (self.priority_aware and pkt.klass == PRIORITY)

    def enqueue(self, pkt: Packet, now: float) -> bool:
        counted = pkt.klass != DUMMY and self._counts(pkt)
        if counted and not self._admit(pkt, now):
            return False
        if not super().enqueue(pkt, now):
            return False
        if counted:
            self.counted += 1
        return True

    def _admit(self, pkt: Packet, now: float) -> bool:
        w = self.w_q
        if self.counted:
            avg = self.avg = (1.0 - w) * self.avg + w * self.counted
        else:
            if now > self.idle_since:
                self.avg *= (1.0 - w) ** ((now - self.idle_since) / self._pkt_time)
                self.idle_since = now
            avg = self.avg
        if avg >= self.max_th:
            self.count = 0
            return self._drop(pkt, "forced")
        if avg >= self.min_th:
            self.count += 1
            p_b = self.max_p * (avg - self.min_th) / (self.max_th - self.min_th)
            denom = 1.0 - self.count * p_b
            if denom <= 0.0 or self._rng.random() < p_b / denom:  # type: ignore[union-attr]
                self.count = 0
                return self._drop(pkt, "early")
        else:
            self.count = -1
        return True

    def dequeue(self, now: float) -> Packet | None:
        pkt = super().dequeue(now)
        if pkt is not None and pkt.klass != DUMMY and self._counts(pkt):
            self.counted -= 1
            if self.counted == 0:
                self.idle_since = now
        return pkt

    def _recount(self, now: float) -> None:
        was = self.counted
        self.counted = sum(1 for p in self._data if self._counts(p))
        if was and not self.counted:
            self.idle_since = now


class MRED(RED):
    """M-RED (IPF): the average and early drops concern non-priority packets only."""

    kind: ClassVar[str] = "mred"
    priority_aware: ClassVar[bool] = True
