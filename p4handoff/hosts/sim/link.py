"""A one-way link: egress queue, serialisation at a rate, propagation delay,
random loss and outages.

A packet is serialised at `rate_bps` (size·8/rate seconds) after those ahead
of it, then propagates for `delay` seconds. Random loss is drawn when its
transmission starts (the airtime is spent, the packet never arrives). While
the link is down, arriving packets are dropped, the waiting queue is
flushed when it goes down, and every packet still on the wire (transmission
started before, arrival after the moment it went down) is lost. A link
with `rate_bps=None` has no serialisation and no queue (an ideal wire).
"""
from __future__ import annotations

from typing import Callable, Protocol

from p4handoff.hosts.sim.engine import Simulator
from p4handoff.hosts.sim.packet import Packet
from p4handoff.hosts.sim.queues import Queue


class Receiver(Protocol):
    def receive(self, pkt: Packet, link: "Link") -> None: ...


class Link:
    """One direction of a wire or radio channel, from its queue to `dst`."""

    __slots__ = ("sim", "name", "rate_bps", "delay", "loss", "queue", "dst", "up", "epoch",
                 "busy_until", "_pending", "_rng", "offered", "sent", "delivered",
                 "bytes_sent", "bytes_delivered", "_drops", "on_drop")

    def __init__(self, sim: Simulator, name: str, rate_bps: float | None, delay: float,
                 dst: Receiver, loss: float = 0.0, queue: Queue | None = None) -> None:
        if rate_bps is not None and rate_bps <= 0:
            raise ValueError(f"link {name}: rate must be positive (or None for an ideal wire), got {rate_bps}")
        if delay < 0:
            raise ValueError(f"link {name}: delay must not be negative, got {delay}")
        if not 0 <= loss < 1:
            raise ValueError(f"link {name}: loss probability must be in [0, 1), got {loss}")
        self.sim = sim
        self.name = name
        self.rate_bps = rate_bps
        self.delay = delay
        self.loss = loss
        self.dst = dst
        self.queue = queue if queue is not None else Queue(1000)
        self._rng = sim.rng(f"link/{name}")
        if rate_bps is not None:
            self.queue.attach(rate_bps, sim.rng(f"aqm/{name}"))
        self.up = True
        self.epoch = 0
        self.busy_until = 0.0
        self._pending = False
        self.offered = self.sent = self.delivered = 0
        self.bytes_sent = self.bytes_delivered = 0
        self._drops: dict[str, int] = {}
        self.on_drop: Callable[[Packet, str], None] | None = None

    # -- counters -----------------------------------------------------------
    def drop(self, pkt: Packet, cause: str) -> None:
        """Count a packet lost on this link (the queue counts its own drops)."""
        self._drops[cause] = self._drops.get(cause, 0) + 1
        if self.on_drop is not None:
            self.on_drop(pkt, cause)

    @property
    def drops(self) -> dict[str, int]:
        """Drops by cause: the queue's (overflow, early, forced, dummy…) and the link's."""
        merged = dict(self.queue.drops)
        for cause, n in self._drops.items():
            merged[cause] = merged.get(cause, 0) + n
        return merged

    def counters(self) -> dict[str, object]:
        """`bytes_sent` counts what has been serialised by now: a packet still being
        transmitted counts with the part already on the wire (utilisation ≤ 100 %)."""
        on_wire: float | int = self.bytes_sent   # an int while nothing is on the wire (counters.json)
        if self.rate_bps is not None and self.busy_until > self.sim.now:
            on_wire -= (self.busy_until - self.sim.now) * self.rate_bps / 8
        return {"link": self.name, "offered": self.offered, "sent": self.sent,
                "delivered": self.delivered, "bytes_sent": on_wire,
                "bytes_delivered": self.bytes_delivered, "drops": self.drops,
                "admitted": dict(self.queue.admitted),
                "queue": len(self.queue), "avg": self.queue.avg}

    # -- data path ----------------------------------------------------------
    def send(self, pkt: Packet) -> None:
        """Offer `pkt` to this link's egress queue at the current time."""
        self.offered += 1
        sim = self.sim
        if not self.up:
            self.drop(pkt, "outage")
            return
        if self.rate_bps is None:
            self._transmit(pkt, sim.now, 0.0)
            return
        if not self.queue.enqueue(pkt, sim.now):
            return
        if not self._pending:
            if sim.now >= self.busy_until:
                self._serve()
            else:
                self._pending = True
                sim.at(self.busy_until, self._serve)

    def _serve(self) -> None:
        self._pending = False
        sim = self.sim
        now = sim.now
        pkt = self.queue.dequeue(now)
        if pkt is None:
            return
        rate = self.rate_bps
        assert rate is not None     # send() queues (and so serves) only on a link with a rate
        tx = pkt.size * 8 / rate
        self.busy_until = now + tx
        self._transmit(pkt, now, tx)
        if len(self.queue):
            self._pending = True
            sim.at(self.busy_until, self._serve)

    def _transmit(self, pkt: Packet, now: float, tx: float) -> None:
        self.sent += 1
        self.bytes_sent += pkt.size
        if self.loss and self._rng.random() < self.loss:
            self.drop(pkt, "random")
            return
        pkt.sent_at = now
        arrive = now + tx + self.delay
        if arrive == now:
            self._deliver(pkt)
            return
        self.sim.at(arrive, self._arrive, pkt, self.epoch)

    def _arrive(self, pkt: Packet, epoch: int) -> None:
        if epoch != self.epoch:
            self.drop(pkt, "outage")
            return
        self._deliver(pkt)

    def _deliver(self, pkt: Packet) -> None:
        self.delivered += 1
        self.bytes_delivered += pkt.size
        self.dst.receive(pkt, self)

    # -- outages ------------------------------------------------------------
    def set_down(self) -> None:
        """Take the link down now: flush the queue, lose what is on the wire."""
        if not self.up:
            return
        self.up = False
        self.epoch += 1
        for pkt in self.queue.clear(self.sim.now):
            self.drop(pkt, "outage")

    def set_up(self) -> None:
        """Bring the link back; it transmits what is offered from now on."""
        self.up = True

    def schedule_outage(self, start: float, end: float) -> None:
        """Down from `start` to `end` (seconds of virtual time)."""
        if not 0 <= start < end:
            raise ValueError(f"link {self.name}: outage needs 0 <= start < end, got {start}..{end}")
        self.sim.at(start, self.set_down)
        self.sim.at(end, self.set_up)

    def __repr__(self) -> str:
        return f"Link({self.name}, {self.rate_bps} b/s, {self.delay} s)"
