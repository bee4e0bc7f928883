"""A registration flood from one cell, and how long the other cell's registrations take meanwhile (BMv2).

The controller's testbed (topo/testbed.py: gateway, bs1, bs2, keys and TLS
on). mh1 is attached at bs1, mh2 at bs2. `REGISTRATIONS` authentic refreshes
of mh2 at bs2 are timed (request sent to reply received) without load, then
again while a thread floods bs1's access port with well-formed,
unauthenticated registrations as fast as it can send them. Reported: the
offered flood rate (`punt_flood_pps`), how many flood frames reached the
controller (the rest were dropped by bs1's punt budget), and the p50/p99 of
the timed registrations in both phases; the goal is p99 under flood within
2x the unloaded p99.
"""
from __future__ import annotations

import random
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from p4handoff.controller.packets import ethernet, udp_packet
from p4handoff.controller.registration import RegistrationRequest, ReplyCode
from p4handoff.topo.testbed import SWITCH_IP, Testbed, mh_ip
from p4handoff.wire import UDP_PORT_MIP_REGISTRATION
from p4handoff.ntptime import ntp_time

REGISTRATIONS = 60
GOAL_RATIO = 2.0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _timed(tb: Testbed, first_ident: int) -> list[float]:
    out = []
    for k in range(REGISTRATIONS):
        t0 = time.monotonic()
        reply = tb.register(1, "bs2", first_ident + k, wait_reply=2.0)
        if reply is not None and reply.code is ReplyCode.ACCEPTED:
            out.append((time.monotonic() - t0) * 1000)
        time.sleep(0.02)
    return out


def measure_flood(seed: int, budget: dict[str, int] | None = None) -> dict[str, Any]:
    """`budget`: the description's punt_budget (None: its default)."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="p4h-flood-") as tmp:
        tb = Testbed(Path(tmp), n_mobiles=2, punt_budget=budget)
        try:
            tb.start()
            tb.start_controller()
            tb.register(0, "bs1", 1)
            tb.register(1, "bs2", 1)
            unloaded = _timed(tb, 10)
            stop = threading.Event()
            sent = [0]

            def flood() -> None:
                victim = mh_ip(0)                 # mh1's address: the flood is also a takeover attempt
                frames = [ethernet("ff:ff:ff:ff:ff:ff", "02:bb:00:00:00:%02x" % rng.randrange(256), udp_packet(
                    victim, "255.255.255.255", UDP_PORT_MIP_REGISTRATION, UDP_PORT_MIP_REGISTRATION,
                    RegistrationRequest(victim, victim, SWITCH_IP["gw"], 0xFFFF,
                                        ntp_time(time.time()) + k).encode())) for k in range(256)]
                port = tb.hosts["cell1"]
                while not stop.is_set():
                    port.send(frames[sent[0] % len(frames)])
                    sent[0] += 1

            before = sum(tb.ctl({"cmd": "status", "counters": False})["registrations_unauthenticated"].values())
            t0 = time.monotonic()
            flooder = threading.Thread(target=flood, daemon=True)
            flooder.start()
            time.sleep(0.5)
            loaded = _timed(tb, 10 + REGISTRATIONS)
            stop.set()
            flooder.join(5)
            elapsed = time.monotonic() - t0
            time.sleep(1.0)
            reached = sum(tb.ctl({"cmd": "status", "counters": False})["registrations_unauthenticated"].values())
        finally:
            tb.close()
    p99_0, p99_1 = _percentile(unloaded, 0.99), _percentile(loaded, 0.99) if loaded else float("inf")
    return {"punt_flood_pps": round(sent[0] / elapsed), "punt_flood_frames": sent[0],
            "punt_flood_reached_controller": reached - before,
            "registration_p50_ms_unloaded": round(_percentile(unloaded, 0.5), 2),
            "registration_p99_ms_unloaded": round(p99_0, 2),
            "registration_p50_ms_under_flood": round(_percentile(loaded, 0.5), 2) if loaded else None,
            "registration_p99_ms_under_flood": round(p99_1, 2),
            "registrations_answered_under_flood": f"{len(loaded)}/{REGISTRATIONS}",
            "registration_p99_goal_met": len(loaded) == REGISTRATIONS and p99_1 <= GOAL_RATIO * p99_0}
