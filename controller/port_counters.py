"""`ctl status`'s counter reads, off the daemon's thread, one Read RPC per switch.

Why: the daemon handles registrations, punts and markers on one thread. A
status round used to read ~20 counter cells per access port one RPC at a
time on that thread (pure-Python protobuf: 0.1–2 s per round on BMv2), and
the lab polls status back to back, so a registration waited behind it for up
to ~0.9 s before its handoff started (docs/controller.md, "Status reads").
Here a worker thread does the reads, all cells of a switch in one Read, and
posts the result back to the daemon's queue as a `CountersRead` event; the
daemon only merges it into the pending status reply.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from p4handoff.controller.p4runtime import P4RuntimeClient, P4RuntimeError
from p4handoff.controller.p4runtime._protos import p4runtime_pb2
from p4handoff.controller.p4runtime.entities import counter_entry

PORT_COUNTERS = ("aqm_enqueued", "aqm_dequeued", "aqm_red_dropped", "aqm_overflow_dropped", "aqm_dummy_dropped")
READ_TIMEOUT = 1.0


@dataclass(frozen=True)
class CounterJob:
    """What to read from one switch for status round `round_id`."""
    round_id: int
    switch: str
    client: P4RuntimeClient
    access_ports: list[int]
    all_ports: list[int]
    classes: dict[str, int]
    class_stride: int


@dataclass
class CountersRead:
    """The reply to a `CounterJob`, posted to the daemon's queue."""
    round_id: int
    switch: str
    ports: dict[int, dict] = field(default_factory=dict)     # access port -> counter -> class -> packets
    sanitised: dict[int, int] = field(default_factory=dict)  # ingress port -> re-marked packets (non-zero only)
    error: str | None = None
    read_at: float | None = None   # wall clock, midpoint of the Read RPC: when the counters held these values


def read_counters(job: CounterJob) -> CountersRead:
    """Every AQM counter cell of the job's access ports and `sanitised` of all its ports, in one Read."""
    out = CountersRead(job.round_id, job.switch)
    p4info = job.client.p4info
    if p4info is None:
        out.error = "no pipeline yet"
        return out
    cells: list[tuple[str, int]] = []
    for p in job.access_ports:
        for name in PORT_COUNTERS:
            cells += [(name, p * job.class_stride + i) for i in job.classes.values()]
        cells.append(("priority_admitted", p))
    cells += [("sanitised", p) for p in job.all_ports]
    entities = [p4runtime_pb2.Entity(counter_entry=counter_entry(p4info, name, index)) for name, index in cells]
    try:
        before = time.time()
        replies = job.client.read(entities, timeout=READ_TIMEOUT)
        out.read_at = (before + time.time()) / 2
    except (P4RuntimeError, ValueError) as exc:   # ValueError: the channel was closed by a reconnect
        out.error = str(exc).splitlines()[0]
        return out
    by_id = {p4info.counter(name).preamble.id: name for name in {n for n, _ in cells}}
    got = {(by_id.get(e.counter_entry.counter_id), e.counter_entry.index.index): e.counter_entry.data.packet_count
           for e in replies}
    for p in job.access_ports:
        port: dict[str, dict[str, int] | int] = {}
        for name in PORT_COUNTERS:
            port[name] = {c: got.get((name, p * job.class_stride + i), 0) for c, i in job.classes.items()}
        port["priority_admitted"] = got.get(("priority_admitted", p), 0)
        out.ports[p] = port
    out.sanitised = {p: got[("sanitised", p)] for p in job.all_ports if got.get(("sanitised", p))}
    return out


class CounterReader:
    """One worker thread doing `CounterJob`s in order and posting each `CountersRead`."""

    def __init__(self, post: Callable[[object], None]) -> None:
        self._post = post
        self._jobs: queue.Queue[CounterJob | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="status-counters", daemon=True)
        self._thread.start()

    def submit(self, job: CounterJob) -> None:
        self._jobs.put(job)

    def stop(self, timeout: float = 3.0) -> None:
        self._jobs.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                result = read_counters(job)
            except Exception as exc:     # a decoding surprise must not kill status for the daemon's lifetime
                result = CountersRead(job.round_id, job.switch, error=f"counter read failed: {exc!r}")
            self._post(result)
