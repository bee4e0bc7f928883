"""P4Handoff: TCP across mobile handoffs (P4 pipeline, controller, host schemes, lab).

Layers, top down (tests/test_import_cycles.py keeps them):
- `p4handoff.cli`: the `p4handoff` command;
- `p4handoff.lab`: scenarios, the simulator and Mininet back ends, reports;
- `p4handoff.controller` (P4Runtime client, handoff controller) and
  `p4handoff.hosts` (sans-IO TCP, schemes, real-network driver, simulator);
- the shared base: `wire` (the P4 contract), documents (`docmodel`, `yamlfile`),
  infrastructure (`bmv2`, `netns`, `interrupt`, `notify`).
"""
from p4handoff import speedups as _speedups

_speedups.guard()   # a stale mypyc build of the simulator never runs (p4handoff/speedups.py)
