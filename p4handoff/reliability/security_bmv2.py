"""The figures of `make security` that need switches: a punt flood's effect on other ports, TLS refusals.

Filled in by the BMv2 measurements where BMv2, the compiled program and
namespaces are here; otherwise each figure is reported as not measured, with
the reason (never a made-up number).
"""
from __future__ import annotations

from typing import Any

from p4handoff.bmv2 import bmv2_available
from p4handoff.netns import unavailable_reason
from p4handoff.paths import pipeline_files

FIGURES = ("punt_flood_pps", "registration_p50_ms_unloaded", "registration_p99_ms_unloaded",
           "registration_p99_ms_under_flood", "registration_p99_ratio", "registration_p99_goal_met",
           "registration_p99_ratio_shared_cores", "tls_unauthenticated_clients_accepted")


def why_not() -> str | None:
    ok, why = bmv2_available()
    if not ok:
        return why
    if not pipeline_files()[1].exists():
        return "build/bs.json not built (make build)"
    return unavailable_reason()


def measure(seed: int) -> dict[str, Any]:
    reason = why_not()
    if reason is not None:
        return {name: f"not measured ({reason})" for name in FIGURES}
    from p4handoff.reliability.punt_flood import measure_flood
    from p4handoff.reliability.tls_probe import measure_tls
    return {**measure_flood(seed), **measure_tls()}
