"""A forged drain marker changes nothing: not the handoff's ordering wait, not the buffer, not the routes.

Markers carry a 128-bit tag under a key the controller draws from the CSPRNG
at start (controller/packets.py); a host that saw one marker knows its id and
tag, and the next id, but not the next tag.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import yaml

from p4handoff.controller.intents import Effect, SendToward
from p4handoff.controller.mobility import Mobility
from p4handoff.controller.network import parse_network
from p4handoff.controller.packets import MARKER_PORT, ethernet, marker_nonce, parse_ipv4, udp_packet
from p4handoff.controller.punts import REASON_BUFFER, dispatch
from p4handoff.controller.registration import RegistrationRequest
from p4handoff.controller.registration_auth import RegistrationGuard

EXAMPLE = Path(__file__).resolve().parent.parent / "topo" / "three-switch.yaml"
NET = parse_network(yaml.safe_load(EXAMPLE.read_text()))
MH = NET.mobile_hosts[0]


def test_forged_markers_leave_a_handoff_waiting_for_its_real_marker():
    logs: list[tuple[str, dict[str, Any]]] = []
    mob = Mobility(NET, log=lambda e, f: logs.append((e, f)), seed=1)
    guard = RegistrationGuard(NET, None, mob.log)
    mob.registration("bs1", 1, "02:aa:00:00:00:01", MH.address, 434,
                     RegistrationRequest(MH.address, MH.address, identification=1), 0.0)
    fx: list[Effect] = mob.registration("bs2", 1, "02:aa:00:00:00:01", MH.address, 434,
                                        RegistrationRequest(MH.address, MH.address, identification=2), 1.0)
    real = [e for e in fx if isinstance(e, SendToward)]
    assert real, "the handoff sends the gateway's drain marker"
    real_ip = parse_ipv4(real[0].packet)
    nonce = marker_nonce(real_ip)
    assert nonce is not None and mob.state(MH.name).gw_marker is not None
    before = (repr(mob.state(MH.name)), repr(mob.routes()), mob.pool.total)
    rng = random.Random(23)
    tried = 0
    for guess in [nonce, nonce + 1, nonce - 1] + [rng.getrandbits(64) for _ in range(200)]:
        tag = rng.randbytes(16)
        payload = b"P4HM" + guess.to_bytes(8, "big") + tag
        for dst in (MH.address, NET.controller.address):
            frame = ethernet("02:00:00:00:00:01", "02:00:00:00:10:01",
                             udp_packet(real_ip.src, dst, MARKER_PORT, MARKER_PORT, payload))
            out = dispatch(mob, guard, mob.log, "gw", {"reason": REASON_BUFFER, "ingress_port": 2}, frame, 1.01)
            assert out.kind == "ignored" and out.effects == []
            tried += 1
    assert (repr(mob.state(MH.name)), repr(mob.routes()), mob.pool.total) == before
    assert sum(1 for e, _ in logs if e == "marker_forged") == tried
    # the real marker still ends the wait
    frame = ethernet("02:00:00:00:00:01", "02:00:00:00:10:01", real[0].packet)
    dispatch(mob, guard, mob.log, "gw", {"reason": REASON_BUFFER, "ingress_port": 2}, frame, 1.02)
    assert mob.state(MH.name).gw_marker is None
