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

# P4 pipeline (issue 2): docs/wire-contract.md, docs/pipeline.md
CPU_PORT: int = _C["CPU_PORT"]
QUEUE_PRIORITY_DUMMY: int = _C["QUEUE_PRIORITY_DUMMY"]
QUEUE_PRIORITY_DATA: int = _C["QUEUE_PRIORITY_DATA"]
PORT_ROLE_CORE: int = _C["PORT_ROLE_CORE"]
PORT_ROLE_ACCESS: int = _C["PORT_ROLE_ACCESS"]
PORT_ROLE_PEER: int = _C["PORT_ROLE_PEER"]
PUNT_REASON_BUFFER: int = _C["PUNT_REASON_BUFFER"]
PUNT_REASON_ARP: int = _C["PUNT_REASON_ARP"]
PUNT_REASON_REGISTRATION: int = _C["PUNT_REASON_REGISTRATION"]
PUNT_REASON_TELEMETRY: int = _C["PUNT_REASON_TELEMETRY"]
PUNT_REASON_NO_ROUTE: int = _C["PUNT_REASON_NO_ROUTE"]
AQM_MODE_DROPTAIL: int = _C["AQM_MODE_DROPTAIL"]
AQM_MODE_RED: int = _C["AQM_MODE_RED"]
AQM_MODE_MRED: int = _C["AQM_MODE_MRED"]
AQM_CLASS_NP: int = _C["AQM_CLASS_NP"]
AQM_CLASS_PRIO: int = _C["AQM_CLASS_PRIO"]
AQM_CLASS_DUMMY: int = _C["AQM_CLASS_DUMMY"]
AQM_CLASS_STRIDE: int = _C["AQM_CLASS_STRIDE"]
PORT_SLOTS: int = _C["PORT_SLOTS"]
AVG_FRAC_BITS: int = _C["AVG_FRAC_BITS"]
PROB_BITS: int = _C["PROB_BITS"]
DECAY_FRAC_BITS: int = _C["DECAY_FRAC_BITS"]
TNA_PROB_BITS: int = _C["TNA_PROB_BITS"]
DUMMY_MAX_RECIRC: int = _C["DUMMY_MAX_RECIRC"]
REASON_STRIDE: int = _C["REASON_STRIDE"]
MALFORMED_TRUNCATED: int = _C["MALFORMED_TRUNCATED"]
MALFORMED_IPV4_VERSION: int = _C["MALFORMED_IPV4_VERSION"]
MALFORMED_IPV4_IHL: int = _C["MALFORMED_IPV4_IHL"]
MALFORMED_IPV4_LENGTH: int = _C["MALFORMED_IPV4_LENGTH"]
MALFORMED_TCP_OFFSET: int = _C["MALFORMED_TCP_OFFSET"]
MALFORMED_UDP_LENGTH: int = _C["MALFORMED_UDP_LENGTH"]
MALFORMED_CHECKSUM: int = _C["MALFORMED_CHECKSUM"]
MALFORMED_OTHER: int = _C["MALFORMED_OTHER"]
FWD_DROP_TABLE: int = _C["FWD_DROP_TABLE"]
FWD_DROP_TTL: int = _C["FWD_DROP_TTL"]
FWD_DROP_UNSUPPORTED: int = _C["FWD_DROP_UNSUPPORTED"]
FWD_DROP_PACKET_OUT: int = _C["FWD_DROP_PACKET_OUT"]
