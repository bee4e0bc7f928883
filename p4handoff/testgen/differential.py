"""The Tofino port against the BMv2 program: a test P4Testgen generated for `p4src/tna/bs_tna.p4`
(tofino target, STF) replayed through `p4src/v1model/bs.p4` on BMv2.

Translation, the one mapping and nothing else: table writes keep their
P4Info names (the programs share them, docs/tofino.md "One control
plane"); `aqm_port`'s queue thresholds go from cells back to packets (the
inverse of `controller.tofino.scale_port`); the TNA CPU port is BMv2's CPU
port (a packet P4Testgen sends on it is a PacketOut, one it expects there a
PacketIn). The input's IPv4 header checksums are made valid: the harness
builds the TNA program with `BS_TESTGEN_CHECKSUMS_VALID` (P4Testgen models
`Checksum.verify()` as unknown, which makes every IPv4 path untestable),
so P4Testgen's tests assume valid checksums (docs/testgen.md).

Each outcome is compared on fate (dropped, or the port) and the bytes out
under P4Testgen's don't-care mask; a disagreement is classified as one of
docs/tofino.md's "Semantic differences" by a rule that recognises it from
the packets, or as undocumented.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from p4handoff.controller.p4runtime import TableEntry
from p4handoff.controller.p4runtime.entities import MatchType, UpdateType
from p4handoff.controller.p4runtime.p4info import P4Info, P4InfoError
from p4handoff.controller.tofino import TnaQueues
from p4handoff.wire import ETHERTYPE_IPV4, IP_PROTO_IPIP

from .cases import GeneratedTest, Match, NamedWrite
from .replay import Observed, judge, replay_tests

# aqm_port parameters the TNA program takes in cells (controller.tofino.scale_port)
CELL_PARAMS = ("qlimit", "dummy_th", "min_th", "max_th")
ETH_HEADER = 14
PRIORITY_KINDS = (MatchType.TERNARY, MatchType.RANGE, MatchType.OPTIONAL)

# docs/tofino.md, "Semantic differences from the BMv2 program", by number
DIFFERENCES = {
    1: "occupancy unit and timing", 2: "drops after the queue", 3: "Lpf average", 4: "count law",
    5: "truncated datagrams", 6: "dummies", 7: "aqm_enqueued / aqm_dequeued", 8: "p_a at 16 bits",
    9: "p_b level by whole cells", 10: "fate before validity", 11: "CPU port",
}


class Untranslatable(ValueError):
    """A TNA test whose writes have no v1model counterpart."""


@dataclass(frozen=True)
class Comparison:
    name: str
    agree: bool
    difference: int | None      # docs/tofino.md's number, None if undocumented (or agreeing)
    why: str
    artefact: bool = False      # a disagreement P4Testgen's own model makes, not the programs (OPTIONS_ARTEFACT)


@dataclass(frozen=True)
class Bmv2Side:
    """The v1model program on BMv2 as the comparison replays it."""

    p4info: Path
    bmv2_json: Path
    cpu_port: int
    priority_queues: int
    packet_out_bytes: int


def _match_value(p4info: P4Info, table: Any, key: str, m: Match) -> Any:
    """An STF key value in the form `TableEntry` takes for the v1model key's match kind."""
    mf = p4info.match_field(table, key)
    if mf.match_type == MatchType.EXACT:
        return m.value
    if mf.match_type == MatchType.LPM:
        if m.kind == "exact":
            return (m.value, mf.bitwidth)
        if m.kind != "lpm":
            raise Untranslatable(f"{key}: a ternary pattern for an lpm key")
        return (m.value, m.prefix_len)
    if mf.match_type == MatchType.TERNARY:
        return (m.value, m.mask if m.kind != "exact" else (1 << mf.bitwidth) - 1)
    raise Untranslatable(f"{key}: match kind {mf.match_type} is not written by P4Testgen's STF back end")


def _lookup(find: Any, name: str, kind: str) -> Any:
    """A P4Info object by the control-plane name P4Testgen wrote: as it is, or (a name qualified by its
    controls) by its last component, which is what our global `@name(".x")` names are."""
    for candidate in (name.lstrip("."), name.rsplit(".", 1)[-1]):
        try:
            return find(candidate)
        except P4InfoError:
            continue
    raise Untranslatable(f"{kind} {name!r} has no v1model counterpart")


def translate(p4info: P4Info, write: NamedWrite, queues: TnaQueues = TnaQueues()) -> tuple[UpdateType, TableEntry]:
    """One TNA table write as the v1model write the controller would make for the same intent."""
    table = _lookup(p4info.table, write.table, "table")
    name = table.preamble.name
    params = dict(write.params)
    if name == "aqm_port":
        c = queues.cells_per_packet
        params.update({k: params[k] // c for k in CELL_PARAMS if k in params})
    action = _lookup(p4info.action, write.action, "action").preamble.name
    if write.is_default:
        return UpdateType.MODIFY, TableEntry(name, {}, action, params, is_default=True)
    match = {key: _match_value(p4info, table, key, m) for key, m in write.match.items()}
    prio = write.priority or 0
    needs_priority = any(p4info.match_field(table, k).match_type in PRIORITY_KINDS for k in match)
    return UpdateType.INSERT, TableEntry(name, match, action, params, prio if needs_priority else 0)


def ipv4_start(packet: bytes | bytearray, offset: int = 0, need: int = 4) -> int | None:
    """Where the IPv4 header of the Ethernet frame at `offset` starts, if it is IPv4 and at least `need` bytes
    of that header are there; else None."""
    start = offset + ETH_HEADER
    if len(packet) < start + need or int.from_bytes(packet[offset + 12:offset + 14], "big") != ETHERTYPE_IPV4:
        return None
    return start


def ipv4_checksum(header: bytes) -> int:
    """RFC 791 header checksum of `header` with its checksum field taken as 0."""
    words = header[:10] + b"\0\0" + header[12:]
    total = sum(int.from_bytes(words[i:i + 2], "big") for i in range(0, len(words), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def with_valid_checksums(packet: bytes, offset: int = 0) -> bytes:
    """`packet` (Ethernet at `offset`) with the outer and, for IPv4-in-IPv4, the inner IPv4 header checksum
    made valid; headers that do not parse (version, IHL, truncation) are left as they are."""
    out = bytearray(packet)
    start = ipv4_start(out, offset, need=0)
    if start is None:
        return packet
    for _ in range(2):
        if len(out) < start + 20 or out[start] >> 4 != 4 or out[start] & 0xF < 5:
            break
        ihl = (out[start] & 0xF) * 4
        if len(out) < start + ihl:
            break
        out[start + 10:start + 12] = ipv4_checksum(bytes(out[start:start + ihl])).to_bytes(2, "big")
        if out[start + 9] != IP_PROTO_IPIP or int.from_bytes(out[start + 6:start + 8], "big") & 0x1FFF:
            break
        start += ihl
    return bytes(out)


def bmv2_test(test: GeneratedTest, tna_cpu_port: int, bmv2_cpu_port: int, packet_out_bytes: int) -> GeneratedTest:
    """The TNA test's input and expectation as seen on BMv2: CPU port renamed, input checksums valid."""
    def port(p: int) -> int:
        return bmv2_cpu_port if p == tna_cpu_port else p
    offset = packet_out_bytes if test.port == tna_cpu_port else 0
    expected = test.expected and replace(test.expected, port=port(test.expected.port))
    return replace(test, port=port(test.port), packet=with_valid_checksums(test.packet, offset), expected=expected)


def ipv4_overruns_frame(packet: bytes, offset: int = 0) -> bool:
    """Does the outer IPv4 header's total length claim more bytes than the frame has?"""
    start = ipv4_start(packet, offset)
    if start is None:
        return False
    return int.from_bytes(packet[start + 2:start + 4], "big") > len(packet) - start


OPTIONS_ARTEFACT = ("P4Testgen's Tofino model extracts IPv4 options at the varbit's maximum width (320 bits) whatever "
                    "the IHL, so the header after them sits where the IHL does not put it: BMv2 parses the packet "
                    "as the IHL says and drops it as malformed (docs/testgen.md, 'P4Testgen findings')")


def options_short_of_max(packet: bytes, offset: int = 0) -> bool:
    """Does the packet carry an IPv4 header (outer, or inner of IPv4-in-IPv4) with options shorter than 40 bytes
    (IHL 6..14)? Only such options are extracted wrongly by P4Testgen's Tofino model (OPTIONS_ARTEFACT)."""
    start = ipv4_start(packet, offset, need=20)
    if start is None:
        return False
    ihl = packet[start] & 0xF
    if 5 < ihl < 15:
        return True
    inner = start + ihl * 4
    return packet[start + 9] == IP_PROTO_IPIP and len(packet) >= inner + 20 and 5 < packet[inner] & 0xF < 15


def classify(test: GeneratedTest, observed: Observed, tna_cpu_port: int, bmv2_cpu_port: int,
             packet_out_bytes: int) -> Comparison:
    """Agree, or which documented difference explains the disagreement (None: undocumented)."""
    verdict = judge(test, observed)
    if verdict.ok:
        return Comparison(test.name, True, None, "")
    offset = packet_out_bytes if test.port == bmv2_cpu_port else 0
    bmv2_dropped = not observed.packets
    if test.expected is not None and bmv2_dropped and ipv4_overruns_frame(test.packet, offset):
        return Comparison(test.name, False, 5, "TNA forwards an IPv4 datagram longer than its frame; BMv2's "
                          "Validate drops it (MALFORMED_TRUNCATED)")
    if test.expected is not None and len(observed.packets) == 1 and test.expected.port == bmv2_cpu_port:
        port, data = observed.packets[0]
        if port == tna_cpu_port and test.expected.matches(data):
            return Comparison(test.name, False, 11, f"port {tna_cpu_port} is the TNA CPU port, a data port on BMv2")
        if (port == bmv2_cpu_port and len(data) >= 2 and int.from_bytes(data[:2], "big") >> 7 == bmv2_cpu_port
                and test.expected.matches(_in_port(data, tna_cpu_port))):
            return Comparison(test.name, False, 11, f"packet_in.ingress_port of a packet from the CPU: "
                              f"{tna_cpu_port} on TNA, {bmv2_cpu_port} on BMv2")
    if test.expected is not None and bmv2_dropped and options_short_of_max(test.packet, offset):
        return Comparison(test.name, False, None, OPTIONS_ARTEFACT, artefact=True)
    return Comparison(test.name, False, None, verdict.why)


# docs/tofino.md difference 10 in a TNA test's trace (P4Testgen writes the steps it took into each STF test): the
# parser's verdict read at the start of TnaIngress, then the decisions BsIngress still makes, up to the drop
_PARSER_VERDICT = re.compile(r"^\[If Statement\]: meta\.bs\.malformed_kind != 0 Condition: (\d+) != 0; Result: true")
_GLUE_VERDICT = re.compile(r"Computed: meta\.bs\.malformed_kind = (\d+);")
_DECISION = re.compile(r"Computed: meta\.bs\.(egress_port|punt_reason|cls|drop|drop_reason) = (\w+);")


def fate_before_validity(traces: Sequence[str]) -> str | None:
    """Difference 10 as P4Testgen's trace of a TNA test shows it, or None: a packet with a parser verdict
    (malformed kind from the parser or its errors, before BsIngress) for which TNA's BsIngress still decided
    a port, punt, class or drop before the glue dropped it. BMv2's glue runs no BsIngress for such a packet;
    both drop it and count it once in `malformed` (the TNA counters and the punt meter wait for the verdict)."""
    try:
        start = traces.index("[Control TnaIngress start]")
    except ValueError:
        return None
    kind: int | None = None
    decided: dict[str, str] = {}
    for line in traces[start + 1:]:
        if "Computed: ig_dprsr_md.drop_ctl = 1;" in line:
            break
        if kind is None:
            if "bs_ingress" in line:
                return None         # BsIngress began with no verdict: both programs run it alike
            if m := _PARSER_VERDICT.match(line) or _GLUE_VERDICT.search(line):
                kind = int(m.group(1))
        elif m := _DECISION.search(line):
            decided[m.group(1)] = m.group(2)
    else:
        return None                 # not dropped in ingress
    if kind is None or not decided:
        return None
    return (f"malformed kind {kind} from the parser; TNA's BsIngress still set "
            + ", ".join(f"{k} {v}" for k, v in decided.items()) + " before the drop; BMv2 runs no BsIngress for it")


def _in_port(packet_in: bytes, port: int) -> bytes:
    """`packet_in` bytes with the header's first field, ingress_port (9 bits, include/headers.p4), set to `port`."""
    if len(packet_in) < 2:
        return packet_in
    head = (int.from_bytes(packet_in[:2], "big") & 0x7F) | (port << 7)
    return head.to_bytes(2, "big") + packet_in[2:]


def compare(tna_tests: Sequence[GeneratedTest], bmv2: Bmv2Side, tna_cpu_port: int, work_dir: Path,
            data_ports: Sequence[int] = ()) -> tuple[list[Comparison], list[tuple[str, str]]]:
    """Replay every TNA test through the v1model program: (comparisons, (name, why) of tests not replayed)."""
    p4info = P4Info.load(bmv2.p4info)
    tests = [bmv2_test(t, tna_cpu_port, bmv2.cpu_port, bmv2.packet_out_bytes) for t in tna_tests]
    observed = replay_tests(tests, lambda t: [translate(p4info, w) for w in t.writes], p4info=bmv2.p4info,
                            bmv2_json=bmv2.bmv2_json, work_dir=work_dir, cpu_port=bmv2.cpu_port,
                            priority_queues=bmv2.priority_queues, ports=[*data_ports, tna_cpu_port])
    comparisons, not_replayed = [], []
    for test, obs in zip(tests, observed):
        if isinstance(obs, str):
            not_replayed.append((test.name, obs))
        else:
            comparisons.append(classify(test, obs, tna_cpu_port, bmv2.cpu_port, bmv2.packet_out_bytes))
    return comparisons, not_replayed
