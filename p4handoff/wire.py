"""Wire constants shared with the P4 program, read from its constants header.

The P4 header `p4src/include/constants.p4` is the one place these values are
written; reading it here keeps the data plane and the Python control plane
from drifting apart.
"""
from __future__ import annotations

import re
from pathlib import Path

CONSTANTS_P4 = Path(__file__).resolve().parent.parent / "p4src" / "include" / "constants.p4"
_CONST_RE = re.compile(r"^\s*const\s+bit<\d+>\s+([A-Z][A-Z0-9_]*)\s*=\s*(0x[0-9a-fA-F]+|\d+)\s*;", re.M)


def load_constants(path: Path = CONSTANTS_P4) -> dict[str, int]:
    """Parse every `const bit<N> NAME = VALUE;` line of a P4 header."""
    text = path.read_text()
    return {name: int(value, 0) for name, value in _CONST_RE.findall(text)}


_C = load_constants()

ETHERTYPE_IPV4: int = _C["ETHERTYPE_IPV4"]
ETHERTYPE_ARP: int = _C["ETHERTYPE_ARP"]
IP_PROTO_IPIP: int = _C["IP_PROTO_IPIP"]
IP_PROTO_TCP: int = _C["IP_PROTO_TCP"]
IP_PROTO_UDP: int = _C["IP_PROTO_UDP"]
DSCP_BEST_EFFORT: int = _C["DSCP_BEST_EFFORT"]
DSCP_LE: int = _C["DSCP_LE"]
DSCP_IPF_PRIORITY_DEFAULT: int = _C["DSCP_IPF_PRIORITY_DEFAULT"]
TCP_BYTE12_DUMMY_MASK: int = _C["TCP_BYTE12_DUMMY_MASK"]
UDP_PORT_MIP_REGISTRATION: int = _C["UDP_PORT_MIP_REGISTRATION"]
UDP_PORT_HANDOFF_NOTIFY: int = _C["UDP_PORT_HANDOFF_NOTIFY"]
