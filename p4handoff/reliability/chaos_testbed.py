"""`make chaos-testbed`: the chaos runs (p4handoff/reliability/chaos.py) on the controller's BMv2 testbed, with UDP flows.

topo/testbed.py: gw, bs1 = WLAN cell, bs2 = 3G cell whose access
queue is paced to 3G's packet rate, the real `p4handoff ctl run`. Three
constant-rate UDP flows from the correspondent, sequence-numbered so every
lost byte is counted: mh1 hands off bs1 → bs2 (signalled detach,
registration 0.3 s later: IPF buffers and flushes it priority-marked), mh2
stays at bs1, mh3 stays at bs2. Faster than the lab (no TCP, no emulators,
9 s of traffic), and exact: every flow is UDP.

Recovery: restart → the first packet sent after the restart delivered
through the restarted switch; for the controller, restart → serving with
every switch up (and mh1's handoff complete).
"""
from __future__ import annotations

import math
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from p4handoff.controller.control import ControlError
from p4handoff.topo.testbed import Collector, Testbed, mh_ip, mh_name, received_seqs
from p4handoff.netns import stop_process
from p4handoff.reliability.chaos_runs import FaultRun, FlowLoss

RATE = 100                   # packets/s per flow
PAYLOAD = 64                 # UDP payload bytes (4 of them the sequence number)
DURATION = 9.0               # seconds of traffic (a switch killed at 3.5 s is back well before the end)
DETACH_AT, REGISTER_AT = 2.0, 2.3
INSTANTS = {"before": 1.0, "during": 2.15, "after": 3.5}
TARGETS = ("bs1", "gw", "controller")
G3_PPS = 450                 # 384 kb/s in these ~106-byte frames: bs2's access queue rate
G3_DEPTH = G3_PPS            # packets: a second of that rate (`_shape_g3`)
FLOWS = (0, 1, 2)            # mh1 moves, mh2 stays at bs1, mh3 stays at bs2
PATH = {0: ["gw", "bs1", "bs2"], 1: ["gw", "bs1"], 2: ["gw", "bs2"]}


class TestbedChaos:
    """The testbed as a chaos `Mode`."""

    def targets(self) -> list[str]:
        return list(TARGETS)

    def elements(self) -> list[str]:
        return ["gw", "bs1", "bs2", "controller"]

    def instants(self) -> list[str]:
        return list(INSTANTS)

    def one_run(self, workdir: Path, target: str | None, instant: str | None) -> tuple[FaultRun, dict[str, Any]]:
        return one_run(workdir, target, instant)


def _kill(tb: Testbed, target: str) -> tuple[float, float | None]:
    """SIGKILL `target` by PID and start it again: (when the new one was started, when the controller
    serves again with every switch up — for the controller itself; None for a switch)."""
    if target == "controller":
        tb.stop_controller(kill=True)
        t = time.monotonic()
        tb.start_controller()
        return t, time.monotonic()
    old = tb.switches[target]
    assert old.proc is not None and old.pid is not None
    os.kill(old.pid, signal.SIGKILL)
    stop_process(old.proc, 5)
    t = time.monotonic()
    tb.switches[target] = tb._switch(target, old.ports, tb.workdir / f"{target}-chaos.log",
                                     grpc_port=old.grpc_port, thrift_port=old.thrift_port)
    if target == "bs2":
        _shape_g3(tb)
    return t, None


def _shape_g3(tb: Testbed) -> None:
    """bs2's access port: the 3G rate, and a queue a second deep. With BMv2's default 64 packets (0.3 s of the
    two flows there) a fault-free reference run on a loaded machine (CI, 2026-11-27) lost one datagram of mh1
    and one of mh3, the two flows of this port, together: the mark of a tail drop while the switch's thread
    was starved, a loss of the host rather than of any fault the runs inject."""
    cli = tb.switches["bs2"].cli
    cli.set_queue_rate(G3_PPS, 1)
    cli.set_queue_depth(G3_DEPTH, 1)


def _kill_into(tb: Testbed, target: str, out: list[tuple[float, float | None]]) -> None:
    out.append(_kill(tb, target))


def one_run(workdir: Path, target: str | None, instant: str | None) -> tuple[FaultRun, dict[str, Any]]:
    """One WLAN → 3G handoff with three flows, optionally with one kill; returns the result and the entries."""
    res = FaultRun(target, instant)
    tb = Testbed(workdir, n_mobiles=3, hold_time_ms=300)
    try:
        tb.start()
        _shape_g3(tb)
        tb.start_controller()
        for i, bs in ((0, "bs1"), (1, "bs1"), (2, "bs2")):
            tb.register(i, bs, 1, wait_reply=2.0)
        tb.wait_for(lambda s: all(m["phase"] == "attached" for m in s["mobile_hosts"]), timeout=20)
        cells = {c: Collector(tb.hosts[c]) for c in ("cell1", "cell2")}
        start = time.monotonic()
        sent = {i: 0 for i in FLOWS}
        t_restart: list[tuple[float, float | None]] = []

        def traffic() -> None:
            k = 0
            while time.monotonic() - start < DURATION:
                for i in FLOWS:
                    tb.hosts["ch"].send(tb.data_frame(i, k))
                    sent[i] += 1
                k += 1
                time.sleep(max(0.0, start + k / RATE - time.monotonic()))
        sender = threading.Thread(target=traffic, daemon=True)
        sender.start()
        kill_at = INSTANTS[instant] if instant else None
        steps = sorted([(DETACH_AT, "detach"), (REGISTER_AT, "register")] +
                       ([(kill_at, "kill")] if kill_at is not None else []))
        restarter: threading.Thread | None = None
        for at, what in steps:
            time.sleep(max(0.0, start + at - time.monotonic()))
            if what == "kill":
                assert target is not None
                killed = target
                if killed == "controller":
                    t_restart.append(_kill(tb, killed))    # the MH's registration then reaches the new one
                else:
                    # a switch restarts beside the scenario: the MH registers when it would (REGISTER_AT), not
                    # after the restart, which made it pay the restart's length (docs/reliability.md 3.2)
                    restarter = threading.Thread(target=_kill_into, args=(tb, killed, t_restart), daemon=True)
                    restarter.start()
            elif what == "detach":
                _ctl_retry(tb, {"cmd": "detach", "mh": mh_name(0)})
            else:
                tb.register(0, "bs2", 2, wait_reply=0)
        sender.join(DURATION + 30)
        if restarter is not None:
            restarter.join(60)
        try:   # a registration the dead controller never saw is sent again, as an MH without a reply does
            tb.wait_for(lambda s: s["mobile_hosts"][0]["bs"] == "bs2", timeout=3)
        except TimeoutError:
            tb.register(0, "bs2", 3, wait_reply=2.0)
        status = tb.wait_for(lambda s: s["mobile_hosts"][0]["phase"] == "attached"
                             and s["mobile_hosts"][0]["bs"] == "bs2" and not s["mobile_hosts"][0]["holds"],
                             timeout=20)
        res.handoff_complete = True
        time.sleep(1.0)
        for col in cells.values():
            col.stop()
        frames = {c: col.timed for c, col in cells.items()}
        for i in FLOWS:
            got = set()
            for c in ("cell1", "cell2"):
                got |= {s for s, _ in received_seqs([f for _, f in frames[c]], mh_ip(i))}
            res.flows.append(FlowLoss(mh_name(i), "udp", i == 0, PATH[i],
                                      (sent[i] - len(got & set(range(sent[i])))) * PAYLOAD))
        if t_restart:
            t0, served = t_restart[0]
            res.recovery_ms = (served - t0) * 1000 if served is not None else _first_after(target, t0 - start,
                                                                                             t0, frames)
        entries = {name: tb.ctl({"cmd": "entries", "switch": name})["entries"] for name in ("gw", "bs1", "bs2")}
        assert status["buffer_total"] == 0
        return res, entries
    finally:
        tb.close()


def _ctl_retry(tb: Testbed, body: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
    """A control request that waits out a controller being restarted."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return tb.ctl(body)
        except ControlError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _first_after(target: str | None, since: float, t0: float, frames: dict[str, list[tuple[float, bytes]]]) -> float:
    """Restart → the first packet sent after the restart (not a buffered one) that crossed the restarted
    switch and was delivered, in ms; `since` is the restart in seconds from the start of the traffic."""
    flows = [i for i in FLOWS if target in PATH[i] and i != 0] or list(FLOWS)
    first_new = math.ceil(since * RATE)
    after = [t for c in ("cell1", "cell2") for t, f in frames[c] for i in flows
             if any(seq >= first_new for seq, _ in received_seqs([f], mh_ip(i)))]
    return (min(after) - t0) * 1000 if after else math.inf
