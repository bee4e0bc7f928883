"""The buffer service's release pacing, sans-IO: at most `window` releases per BS not yet echoed back.

A release burst written into a switch port as fast as a socket takes it
overruns the switch: BMv2 reads its port faster than an egress port drains
and drops at a full egress queue without a word (docs/controller.md, "Big
flushes"). So the service keeps, per BS it releases into, at most `window`
packets that it has not seen pass that BS: after every quarter window of
releases, and after the last of a run, it sends an **echo** into the same BS port (a tunnel to the BS whose inner packet is
addressed to the service); the BS forwards it back out of its buffer port
only after its ingress has handled every release before it (one port is one
FIFO into ingress). A batch from the controller is reported RELEASED once
every echo covering its packets is back. Releases leave strictly in the
order the controller sent them, across BSs too: a BS without credit holds
up everything behind it (each MH's FIFO order is the controller's, and the
simplest proof is one order for all).

An echo lost (the BS restarted) gives its credit back after `ECHO_TIMEOUT`,
counted, so a dead BS does not stop releases to the others.
"""
from __future__ import annotations

import secrets
from collections import deque
from dataclasses import dataclass, field

ECHO_TIMEOUT = 2.0


@dataclass
class Echo:
    nonce: int
    target: str
    count: int                       # releases it covers
    batches: dict[int, int]          # batch -> how many of its releases it covers
    deadline: float


@dataclass
class Send:
    """One frame to write: a release (`packet`) or an echo (`echo` = its nonce) into `target`'s port."""

    target: str
    packet: bytes = b""
    echo: int | None = None


@dataclass
class ReleasePacer:
    window: int
    queue: deque[tuple[int, str, bytes]] = field(default_factory=deque)   # (batch, target, packet) not yet sent
    inflight: dict[str, int] = field(default_factory=dict)                # target -> sent, not echoed back
    unechoed: dict[str, dict[int, int]] = field(default_factory=dict)     # target -> batch -> sent since last echo
    echoes: dict[int, Echo] = field(default_factory=dict)
    outstanding: dict[int, int] = field(default_factory=dict)             # batch -> releases not echoed back
    order: deque[int] = field(default_factory=deque)                      # batches in arrival order
    timeouts: int = 0
    _next_echo: int = field(default_factory=lambda: secrets.randbits(62))    # unguessable: a forged echo is ignored

    def add(self, batch: int, items: list[tuple[str, bytes]]) -> None:
        self.queue.extend((batch, target, packet) for target, packet in items)
        self.outstanding[batch] = self.outstanding.get(batch, 0) + len(items)
        self.order.append(batch)

    def pump(self, now: float) -> list[Send]:
        """Everything that may be sent now, in order, with the echoes that close each run."""
        out: list[Send] = []
        while self.queue:
            batch, target, packet = self.queue[0]
            if self.inflight.get(target, 0) >= self.window:
                break
            self.queue.popleft()
            self.inflight[target] = self.inflight.get(target, 0) + 1
            run = self.unechoed.setdefault(target, {})
            run[batch] = run.get(batch, 0) + 1
            out.append(Send(target, packet))
            if sum(run.values()) >= self.chunk:       # credit comes back a chunk at a time: no stop-and-wait
                out.append(self._echo(target, now))
        out += [self._echo(target, now) for target, run in list(self.unechoed.items()) if run]
        return out

    @property
    def chunk(self) -> int:
        return max(1, self.window // 4)

    def _echo(self, target: str, now: float) -> Send:
        run = self.unechoed.pop(target)
        nonce, self._next_echo = self._next_echo, self._next_echo + 1
        self.echoes[nonce] = Echo(nonce, target, sum(run.values()), run, now + ECHO_TIMEOUT)
        return Send(target, echo=nonce)

    def echoed(self, nonce: int) -> list[int]:
        """An echo came back: its credit returns; the batches now wholly released, in order."""
        echo = self.echoes.pop(nonce, None)
        if echo is None:
            return []
        self.inflight[echo.target] -= echo.count
        for batch, n in echo.batches.items():
            self.outstanding[batch] -= n
        return self._done()

    def expire(self, now: float) -> list[int]:
        """Echoes past their deadline count as back (their BS is gone); the batches that completes."""
        late = [e.nonce for e in self.echoes.values() if e.deadline <= now]
        done: list[int] = []
        for nonce in late:
            self.timeouts += 1
            done += self.echoed(nonce)
        return done

    def next_deadline(self) -> float | None:
        return min((e.deadline for e in self.echoes.values()), default=None)

    def _done(self) -> list[int]:
        done = []
        while self.order and self.outstanding.get(self.order[0], 1) == 0:     # queued ones count too
            batch = self.order.popleft()
            del self.outstanding[batch]
            done.append(batch)
        return done
