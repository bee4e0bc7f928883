"""The parts of `Mobility` wired as it wires them, on the example network, for tests of one part at a time.

Every part is the real one (no stand-ins): a test of the timers drives the real
IPF flush and probe path, and reads the effects and the log they produce.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from p4handoff.controller.dsbp_probe import DsbpProbe
from p4handoff.controller.handoff_notify import Notifier
from p4handoff.controller.handoff_recovery import HandoffRecovery
from p4handoff.controller.handoff_timers import HandoffTimers
from p4handoff.controller.ipf_handoff import IpfHandoff
from p4handoff.controller.mh_state import MhState
from p4handoff.controller.mobility_state import MobilityState
from p4handoff.controller.network import Network, parse_network
from p4handoff.controller.packets import udp_packet

EXAMPLE = Path(__file__).resolve().parent.parent / "topo" / "three-switch.yaml"
MH1_MAC = "02:00:00:00:20:01"


def example_net(**controller: Any) -> Network:
    """topo/three-switch.yaml (gw, bs1, bs2 peered; ch behind gw; mh1, mh2), controller settings overridden."""
    raw = copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
    raw.setdefault("controller", {}).update(controller)
    return parse_network(raw)


def data_packet(dst: str, seq: int) -> bytes:
    """A UDP packet from the correspondent to `dst` whose payload is `seq`."""
    return udp_packet("10.0.0.1", dst, 5000, 6000, seq.to_bytes(4, "big"))


@dataclass
class Parts:
    """State, notifier, probe, IPF, timers and recovery over one network, logging into `logs`."""

    net: Network
    seed: int = 7
    logs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.state = MobilityState(self.net, self.seed)
        self.notifier = Notifier(self.net, self.log)
        self.probe = DsbpProbe(self.state, self.log, self.notifier)
        self.ipf = IpfHandoff(self.state, self.log, self.notifier, self.probe)
        self.timers = HandoffTimers(self.state, self.log, self.ipf, self.probe)
        self.recovery = HandoffRecovery(self.state, self.log, self.ipf)

    def log(self, event: str, fields: dict[str, Any]) -> None:
        self.logs.append((event, fields))

    def events(self, mh: str = "mh1") -> list[str]:
        return [e for e, f in self.logs if f.get("mh") == mh]

    def mh(self, name: str = "mh1") -> MhState:
        return self.state.mhs[name]

    def attached(self, name: str = "mh1", bs: str = "bs1", now: float = 0.0) -> MhState:
        """`name` attached at `bs`'s access port 1 through the real IPF part."""
        st = self.mh(name)
        self.ipf.attach(st, bs, 1, MH1_MAC, now, "test")
        return st
