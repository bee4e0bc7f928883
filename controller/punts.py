"""Packet-ins, from the switch's `packet_in` header and payload to state-machine inputs.

Out of the daemon so the in-memory network of the unit tests runs the very
code that turns switch punts into registrations and buffered packets, and
hostile input can be thrown at it without a switch (tests/test_ctl_hostile.py).
Every packet-in that changes nothing is logged with the reason (one JSON line
each, `packet_in_ignored`, `registration_rejected` or `punt_malformed`): a
lab shared with other experiments must be able to tell why its packet went
nowhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from p4handoff.controller.eventlog import LogFn
from p4handoff.controller.intents import Effect
from p4handoff.controller.mobility import Mobility
from p4handoff.controller.packets import PacketError, parse_ipv4, parse_udp, split_ethernet
from p4handoff.controller.registration import RegistrationError, RegistrationRequest
from p4handoff.wire import UDP_PORT_MIP_REGISTRATION, load_constants

_C = load_constants()
REASON_BUFFER, REASON_REGISTRATION, REASON_TELEMETRY = (
    _C["PUNT_REASON_BUFFER"], _C["PUNT_REASON_REGISTRATION"], _C["PUNT_REASON_TELEMETRY"])
REASON_NAMES = {v: k[len("PUNT_REASON_"):].lower() for k, v in _C.items() if k.startswith("PUNT_REASON_")}
MAX_PORT = 511           # ingress_port is 9 bits wide



@dataclass(frozen=True)
class Dispatched:
    """What one packet-in became: `kind` (buffer, registration, telemetry, ignored) and the effects to apply."""

    kind: str
    effects: list[Effect] = field(default_factory=list)


def dispatch(mob: Mobility, log: LogFn, switch: str, metadata: dict[str, int], payload: bytes,
             now: float, received: float | None = None) -> Dispatched:
    """Route one packet-in by its punt reason; telemetry answers are left to the caller (it owns the rounds)."""
    reason, port = metadata.get("reason"), metadata.get("ingress_port")
    if reason == REASON_BUFFER:
        try:
            _, _, packet = split_ethernet(payload)
        except PacketError as exc:
            log("punt_malformed", {"switch": switch, "reason": str(exc)})
            return Dispatched("ignored")
        return Dispatched("buffer", mob.packet_in(switch, packet, now))
    if reason == REASON_REGISTRATION:
        if not isinstance(port, int) or not 0 <= port <= MAX_PORT:
            log("registration_rejected", {"switch": switch, "port": port, "reason": "no valid ingress_port"})
            return Dispatched("ignored")
        return Dispatched("registration", registration(mob, log, switch, port, payload, now, received))
    if reason == REASON_TELEMETRY:
        return Dispatched("telemetry")
    why = (f"punt reason {REASON_NAMES[reason]} ({reason}) is not handled by the controller"
           if reason in REASON_NAMES else f"unknown punt reason {reason!r}")
    log("packet_in_ignored", {"switch": switch, "port": port, "reason": why, "bytes": len(payload)})
    return Dispatched("ignored")


def registration(mob: Mobility, log: LogFn, switch: str, port: int, frame: bytes, now: float,
                 received: float | None) -> list[Effect]:
    """A frame punted as a registration: answered by the state machine, or logged and dropped."""
    try:
        _, src_mac, packet = split_ethernet(frame)
        ip = parse_ipv4(packet)
        sport, dport, payload = parse_udp(ip)
    except PacketError as exc:
        log("registration_rejected", {"switch": switch, "port": port, "reason": str(exc)})
        return []
    if dport != UDP_PORT_MIP_REGISTRATION:
        log("registration_rejected", {"switch": switch, "port": port, "reason": f"UDP port {dport}"})
        return []
    try:
        req = RegistrationRequest.decode(payload)
    except RegistrationError as exc:
        return mob.malformed_registration(switch, port, src_mac, ip.src, sport, str(exc))
    return mob.registration(switch, port, src_mac, ip.src, sport, req, now, received)
