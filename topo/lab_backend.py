"""The `lab` backend: the scenario on real packets (Mininet hosts, BMv2 switches, controller, emulator)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
P4_JSON = REPO_ROOT / "build" / "bs.json"
P4_INFO = REPO_ROOT / "build" / "bs.p4info.txtpb"


def available() -> tuple[bool, str]:
    """(True, "") when a lab run can start here, else (False, the first thing missing)."""
    if os.geteuid() != 0:
        return False, "the lab needs root (namespaces, raw sockets)"
    for tool in ("simple_switch_grpc", "simple_switch_CLI"):
        if shutil.which(tool) is None:
            return False, f"'{tool}' is not on PATH (BMv2 is not installed)"
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        return False, "Mininet is not importable (apt install mininet)"
    if not P4_JSON.exists() or not P4_INFO.exists():
        return False, "the P4 program is not compiled (build/bs.json missing: p4c, then `make build`)"
    return True, ""
