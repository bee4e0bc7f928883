"""Virtual time: a heap of timed callbacks, run in a reproducible order.

The simulator never reads a wall clock. Events at the same instant run in
the order they were scheduled (a sequence number breaks ties), so a run is
a pure function of its inputs and its seed. Every random component draws
from its own `random.Random`, seeded from the run seed and the component's
name, so adding a component does not shift the random numbers of another.
"""
from __future__ import annotations

import hashlib
import random
from heapq import heappop, heappush
from typing import Any, Callable


class Simulator:
    """The event loop: `at`/`after` schedule, `run` advances virtual time."""

    __slots__ = ("now", "seed", "_heap", "_seq", "_rngs")

    def __init__(self, seed: int = 0) -> None:
        self.now = 0.0
        self.seed = seed
        self._heap: list[tuple[float, int, Callable[..., Any], tuple]] = []
        self._seq = 0
        self._rngs: dict[str, random.Random] = {}

    def at(self, when: float, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn(*args)` at virtual time `when` (never before `now`)."""
        if when < self.now:
            raise ValueError(f"cannot schedule at {when!r}, before now ({self.now!r})")
        self._seq += 1
        heappush(self._heap, (when, self._seq, fn, args))

    def reserve(self) -> int:
        """The sequence number `at` would give an event scheduled now, for one pushed later (`at_reserved`)."""
        self._seq += 1
        return self._seq

    def at_reserved(self, when: float, seq: int, fn: Callable[..., Any], *args: Any) -> None:
        """Schedule under a sequence number taken earlier by `reserve`: the event runs in the order it
        would have had if scheduled then (a timer that moved later is pushed once, when its old time comes)."""
        if when < self.now:
            raise ValueError(f"cannot schedule at {when!r}, before now ({self.now!r})")
        heappush(self._heap, (when, seq, fn, args))

    def after(self, delay: float, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn(*args)` `delay` seconds from now."""
        self.at(self.now + delay, fn, *args)

    def run(self, until: float) -> None:
        """Run every event due at or before `until`, then leave `now` at `until`."""
        heap = self._heap
        pop = heappop
        while heap and heap[0][0] <= until:
            when, _, fn, args = pop(heap)
            self.now = when
            fn(*args)
        if until > self.now:
            self.now = until

    def pending(self) -> int:
        """Events still scheduled (for tests and progress reports)."""
        return len(self._heap)

    def rng(self, name: str) -> random.Random:
        """The random stream of component `name`, derived from the run seed.

        The derivation is a hash of (seed, name), stable across Python runs
        (unlike `hash()` of a string), so the same seed gives the same
        streams on every machine.
        """
        stream = self._rngs.get(name)
        if stream is None:
            digest = hashlib.sha256(f"{self.seed}/{name}".encode()).digest()
            stream = random.Random(int.from_bytes(digest[:8], "big"))
            self._rngs[name] = stream
        return stream
