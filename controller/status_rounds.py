"""Operator `status` requests in flight: each round is answered once its switches' counters and its
ports' telemetry probes are back, or at its deadline with what is missing named.

The model's part of the answer is ready at once (the daemon builds it); counter reads run on the
counter reader's thread and probes are answered by packet-ins, so the handoff events behind a status
request never wait for a switch. Rounds overlap (the lab polls from two threads): each has its own.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4handoff.controller.control import ControlRequest
from p4handoff.controller.network import PORT_ACCESS, Network
from p4handoff.controller.p4runtime import P4RuntimeError
from p4handoff.controller.port_counters import CounterJob, CounterReader, CountersRead
from p4handoff.controller.session import SwitchSession
from p4handoff.controller.switch_state import SwitchState
from p4handoff.wire import AQM_MODES, TELEMETRY_AQM_MODE_NONE, load_constants

_C = load_constants()
AQM_CLASS_STRIDE = _C["AQM_CLASS_STRIDE"]
AVG_FRAC_BITS = _C["AVG_FRAC_BITS"]
CLASSES = {"np": _C["AQM_CLASS_NP"], "prio": _C["AQM_CLASS_PRIO"], "dummy": _C["AQM_CLASS_DUMMY"]}
AQM_MODE_NAMES = {v: name for name, v in AQM_MODES.items()} | {TELEMETRY_AQM_MODE_NONE: "none"}
STATUS_TIMEOUT = 1.0

# a minimal Ethernet frame for telemetry probes (the switch only reads the packet_out header)
PROBE_FRAME = bytes(6) + bytes.fromhex("020000000000") + b"\x88\xb5" + bytes(46)


@dataclass
class _Round:
    request: ControlRequest
    deadline: float
    body: dict[str, Any]
    waiting: set[tuple[str, int]] = field(default_factory=set)      # telemetry probes not back yet
    reading: set[str] = field(default_factory=set)                  # switches whose counters are being read


class StatusRounds:
    """The rounds waiting for answers, by round id; `sessions` and `states` are the daemon's own dicts."""

    def __init__(self, net: Network, sessions: dict[str, SwitchSession],
                 states: dict[str, SwitchState | None]) -> None:
        self.net = net
        self.sessions = sessions
        self.states = states
        self.pending: dict[int, _Round] = {}
        self._rounds = 0

    def start(self, req: ControlRequest, body: dict[str, Any], reader: CounterReader, now: float) -> None:
        """Fill `body`'s empty "switches" and "ports" lists and send the reads and probes the round waits for."""
        self._rounds += 1
        rnd = _Round(req, now + STATUS_TIMEOUT, body)
        for sw in self.net.switches:
            s, state = self.sessions[sw.name], self.states[sw.name]
            rnd.body["switches"].append({"name": sw.name, "role": sw.role, "grpc": sw.grpc, "state": s.state,
                                         "connects": s.connects, "pipeline_pushes": s.pipeline_pushes,
                                         "last_error": s.last_error,
                                         "entries": None if state is None else len(state.entries())})
            if s.client is None or state is None or not req.args.get("counters", True):
                continue
            access = [p.number for p in sw.ports if p.role == PORT_ACCESS]
            rnd.body["switches"][-1]["sanitised"] = {}
            reader.submit(CounterJob(self._rounds, sw.name, s.client, access, [p.number for p in sw.ports],
                                     CLASSES, AQM_CLASS_STRIDE))
            rnd.reading.add(sw.name)
            for p in access:
                rnd.body["ports"].append({"switch": sw.name, "port": p, "counters": {}})
                try:
                    s.client.packet_out(PROBE_FRAME, egress_port=p, mark_priority=0, lookup=0, telemetry=1)
                    rnd.waiting.add((sw.name, p))
                except P4RuntimeError:
                    pass
        self.pending[self._rounds] = rnd

    def timeout(self, now: float, timeout: float) -> float:
        """`timeout` shortened to the nearest round's deadline."""
        return min([timeout, *(max(0.0, r.deadline - now) for r in self.pending.values())])

    def counters_read(self, ev: CountersRead) -> str | None:
        """Put a switch's counters in their round; the switch's error, if the read failed."""
        rnd = self.pending.get(ev.round_id)
        if rnd is None:
            return None                              # a round already answered (timed out)
        rnd.reading.discard(ev.switch)
        if ev.error is not None:
            return ev.error
        for entry in rnd.body["ports"]:
            if entry["switch"] == ev.switch and entry["port"] in ev.ports:
                entry["counters"] = ev.ports[entry["port"]]
                entry["counters_read_at"] = ev.read_at
        for sw in rnd.body["switches"]:
            if sw["name"] == ev.switch:
                sw["sanitised"] = ev.sanitised
        return None

    def probe_answered(self, switch: str, t: Any) -> bool:
        """A probe's answer (a decoded TELEMETRY) to the oldest round waiting for that port; False if none."""
        rnd = next((r for _, r in sorted(self.pending.items()) if (switch, t.port) in r.waiting), None)
        if rnd is None:
            return False
        rnd.waiting.discard((switch, t.port))
        for entry in rnd.body["ports"]:
            if entry["switch"] == switch and entry["port"] == t.port:
                entry["aqm"] = {"mode": AQM_MODE_NAMES.get(t.aqm_mode, str(t.aqm_mode)), "occupancy": {
                    "np": t.occ_np, "prio": t.occ_prio, "dummy": t.occ_dummy},
                    "avg_packets": round(t.avg / (1 << AVG_FRAC_BITS), 3), "red_count": t.red_count - 1}
        return True

    def answer_due(self, now: float) -> None:
        """Answer every round that is complete or past its deadline, naming what is missing."""
        for rid, rnd in list(self.pending.items()):
            if now >= rnd.deadline or not (rnd.waiting or rnd.reading):
                del self.pending[rid]
                rnd.body["telemetry_missing"] = sorted(f"{s}:{p}" for s, p in rnd.waiting)
                rnd.body["counters_missing"] = sorted(rnd.reading)
                rnd.request.respond(rnd.body)
