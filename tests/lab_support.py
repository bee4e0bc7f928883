"""What the lab's tests share: a plan's controller description completed as a run completes it (topo/rig.py
through `run_description`), with made-up run-time values in place of the switches' sockets and the files."""
from __future__ import annotations

from typing import Any

from p4handoff.topo.plan import LabPlan, run_description


def run_desc(p: LabPlan) -> dict[str, Any]:
    service = {"control": "127.0.0.1:50999", "interfaces": {sw: f"sv1-{k}" for k, sw in enumerate(p.service_ports)}}
    return run_description(p, {s.name: f"unix:/tmp/p4h/{s.name}.grpc" for s in p.switches},
                           {"socket": "/tmp/p4h/ctl.sock", "keys": "/tmp/p4h/keys.yaml"},
                           service if p.service_ports else None)
