"""P4Testgen harness (p4handoff.testgen, docs/testgen.md): reading what P4Testgen writes, its report, the
replay's packet codecs, the Tofino-to-v1model translation and the classification of disagreements.

Sample files: real P4Testgen output is read from p4c's own test data
(testdata/p4_16_samples/invalid-hdr-warnings3-bmv2.stf) in the checkout `make toolchain` keeps in its
build directory, never copied here (their files stay out of the repository); p4c holds no
generated file with table writes or of the PROTOBUF back end, so `template-tofino.stf` and
`template-bmv2.txtpb` are written by hand, line by line after the back ends' templates
(backends/p4tools/modules/testgen/targets/tofino/test_backend/stf.cpp and
targets/bmv2/test_backend/protobuf.cpp, `getTestCaseTemplate`), with our program's names.

The smoke tests at the end run p4testgen itself (a few tests per target) and replay them on BMv2; each
skips by name with the reason where p4testgen, BMv2, root or the compiled program is missing.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from google.protobuf import text_format

from p4handoff.bmv2 import P4C, compile_p4
from p4handoff.controller.p4runtime import P4Info, TableEntry
from p4handoff.controller.p4runtime._protos import p4info_pb2, p4runtime_pb2
from p4handoff.controller.p4runtime.entities import UpdateType, encode_table_entry
from p4handoff.testgen import cases, differential, tool, uncovered
from p4handoff.wire import load_constants
from p4handoff.testgen.cases import Expected, GeneratedTest, Match, NamedWrite, GeneratedFileError
from p4handoff.testgen.replay import Observed, join_header, judge, split_header

DATA = Path(__file__).parent / "testgen_data"
ROOT = Path(__file__).resolve().parents[1]

PACKET_OUT = [("egress_port", 9), ("mark_priority", 1), ("lookup", 1), ("telemetry", 1), ("_pad", 4)]
PACKET_IN = [("ingress_port", 9), ("reason", 8), ("_pad", 7)]


# -- reading generated tests ----------------------------------------------------------------------

def _p4c_sample(name: str) -> Path:
    """A file of p4c's testdata/p4_16_samples in the toolchain's checkout (scripts/toolchain.sh's build dir)."""
    default = "/var/cache/p4handoff/toolchain" if os.geteuid() == 0 else str(Path.home() / ".cache/p4handoff/toolchain")
    src = Path(os.environ.get("P4HANDOFF_TOOLCHAIN_DIR", default)) / "src"
    for tree in ("p4c", "p4c-tofino"):
        if (path := src / tree / "testdata" / "p4_16_samples" / name).is_file():
            return path
    pytest.skip(f"p4c's testdata/p4_16_samples/{name}: no p4c checkout under {src} (make toolchain keeps one)")


def test_reads_p4cs_own_generated_stf() -> None:
    test = cases.load(_p4c_sample("invalid-hdr-warnings3-bmv2.stf"))
    assert (test.port, len(test.packet)) == (0, 253)
    assert test.packet.startswith(bytes.fromhex("00000000f802aaff"))
    assert test.expected is not None and test.expected.port == 0
    assert test.expected.data == test.packet[4:] and test.expected.mask == b"\xff" * 249
    assert test.coverage == 0.8 and test.writes == []
    assert "[State] start" in test.traces and "[State] accept" in test.traces


def test_reads_the_tofino_stf_template() -> None:
    test = cases.load(DATA / "template-tofino.stf")
    assert test.coverage == 0.41 and (test.port, test.expected and test.expected.port) == (1, 2)
    role, fwd, ipf = test.writes
    assert role == NamedWrite("port_role", "set_port_role", {"role": 1}, {"port": Match("exact", 1)})
    assert fwd.priority == 1 and fwd.action == "deliver"
    assert fwd.params == {"port": 2, "src_mac": 0x02000000FE02, "dst_mac": 0x020000000002}
    assert fwd.match["dst_addr"] == Match("lpm", 0x0A000200, 0xFFFFFE00, 23)
    assert ipf == NamedWrite("ipf_config", "set_ipf_dscp", {"dscp": 0x2E}, is_default=True)
    exp = test.expected
    assert exp is not None and exp.mask[22:24] == b"\x00\x00" and exp.mask[26] == 0 and exp.mask[27] == 0xFF
    assert exp.matches(bytes.fromhex("020000000002020000FE020800450000140001000040AAAAF8A2BB0001010A000202"))
    assert not exp.matches(bytes.fromhex("020000000002020000FE020800450000140001000040AAAAF8A3BB0001010A000202"))


def test_reads_the_quoted_bmv2_stf_form_and_ternary_keys() -> None:
    text = ('add "port_role" "port":0x001 "set_port_role"("role":0x2)\n'
            'add "acl" 7 "key":0b1*0* "permit"()\n'
            'packet 3 0200000000010200000000990806\n')
    test = cases.parse_stf(text)
    assert test.expected is None and test.port == 3
    assert test.writes[0].table == "port_role" and test.writes[0].params == {"role": 2}
    assert test.writes[1].match["key"] == Match("ternary", 0b1000, 0b1010) and test.writes[1].priority == 7


def test_reads_the_protobuf_template() -> None:
    test = cases.load(DATA / "template-bmv2.txtpb")
    assert (test.port, test.coverage) == (3, 0.37) and test.traces == ["[Parser] V1Parser", "[State] start"]
    assert test.expected == Expected(4, test.packet, b"\xff" * 12 + b"\0\0")
    (entity,) = test.entities
    entry = entity.table_entry
    assert entry.table_id == 41017136 and entry.match[0].lpm.prefix_len == 24
    assert entry.match[0].lpm.value == b"\x0a\x00\x02\x00" and entry.action.action.params[0].value == b"\x00\x02"


@pytest.mark.parametrize("text, message", [
    ("add ipv4_fwd dst_addr:0x0A deliver(port)\npacket 1 00\n", "name:value"),
    ("packet 1 0011\npacket 1 0011\n", "a second packet"),
    ("packet 1 0011\nexpect 1 0011\n", "expect <port> <hex>$"),
    ("packet 1 0*11\n", "whole, non-empty hex"),
    ("packet 1 001\n", "whole bytes of hex"),
    ("expect 1 0011$\n", "no packet line"),
    ("mirroring_add 1 2\npacket 1 00\n", "unknown STF command 'mirroring_add'"),
])
def test_a_malformed_stf_is_refused_with_its_line(text: str, message: str) -> None:
    with pytest.raises(GeneratedFileError, match=message.replace("$", r"\$").replace("(", r"\(")):
        cases.parse_stf(text, "t.stf")


def test_a_malformed_protobuf_test_is_refused() -> None:
    with pytest.raises(GeneratedFileError, match="not a p4testgen TestCase"):
        cases.parse_protobuf("input_packet { packet: 3 }", "t.txtpb")
    with pytest.raises(GeneratedFileError, match="packet_mask is 1 bytes"):
        cases.parse_protobuf('input_packet { packet: "a" port: 1 }\n'
                             'expected_output_packet { packet: "ab" port: 1 packet_mask: "a" }', "t.txtpb")


def test_load_dir_orders_by_test_number(tmp_path: Path) -> None:
    for n in (10, 2, 1):
        (tmp_path / f"bs_{n}.stf").write_text(f"packet {n} 00112233445566778899aabbccdd\n")
    (tmp_path / "p4testgen.log").write_text("not a test")
    (tmp_path / "bs_3.stf").write_text("expect 1 00$\n")
    tests, errors = cases.load_dir(tmp_path)
    assert [t.port for t in tests] == [1, 2, 10]
    assert errors == [("bs_3.stf", "bs_3.stf: no packet line")]


def test_protobuf_traces_with_quotes_do_not_break_the_test() -> None:
    """The PROTOBUF template writes traces between single quotes without escaping them."""
    text = (DATA / "template-bmv2.txtpb").read_text().replace(
        "traces: '[State] start'", "traces: '[Event]: it's \\ a trace'")
    assert cases.parse_protobuf(text).traces == ["[Parser] V1Parser", "[Event]: it's \\ a trace"]


# -- p4testgen's report -----------------------------------------------------------------------------

# lines as test_backend.cpp / midend/coverage.cpp print them (printInfo, LOG_FEATURE("coverage", 4, ...))
REPORT = """\
============ Test 1: Nodes covered: 0.2 (60/300) ============
============ End Test 1 ============
Not covered program nodes:
\t/w/p4src/include/ingress.p4\\52: meta.ipf_priority = true;
\t/w/p4src/v1model/bs.p4\\120: spend_punt_budget(color);
============ Test 2: Output port tainted - Aborting Test ============
[WARNING] Path encountered unimplemented feature. Message: Unsupported table key match type "Range"
============ Test 3: Nodes covered: 0.9 (270/300) ============
============ End Test 3 ============
Not covered program nodes:
\t/w/p4src/v1model/bs.p4\\120: spend_punt_budget(color);
"""


def test_parse_report_takes_the_last_coverage_and_uncovered_list() -> None:
    report = tool.parse_report(REPORT)
    assert (report.tests, report.aborted, report.covered, report.coverable) == (2, 1, 270, 300)
    assert report.coverage == 0.9
    assert report.uncovered == ["/w/p4src/v1model/bs.p4\\120: spend_punt_budget(color);"]
    assert report.unimplemented == ['Unsupported table key match type "Range"']


def test_the_guard_limit_ends_a_run_with_its_tests_kept_and_other_failures_still_raise(tmp_path: Path) -> None:
    """p4testgen's exit at its guard-violation limit keeps the tests it wrote (a stand-in script prints what
    small_step.cpp prints; the real tool runs in the smoke tests below); any other failure is an error."""
    script = tmp_path / "fake_p4testgen.sh"
    script.write_text('echo "============ Test 1: Nodes covered: 0.5 (160/320) ============"\n'
                      f'echo "Internal error: P4Testgen Bug: Condition x {tool.GUARD_LIMIT_MESSAGE} for this run."\n'
                      "exit 1\n")
    report = tool.run(["sh", str(script), "--out-dir", str(tmp_path / "out")], tmp_path / "log", timeout=30)
    assert (report.tests, report.covered) == (1, 160) and report.stopped and "guard" in report.stopped
    script.write_text("echo 'error: something else'\nexit 1\n")
    with pytest.raises(RuntimeError, match="exited 1"):
        tool.run(["sh", str(script), "--out-dir", str(tmp_path / "out")], tmp_path / "log", timeout=30)


def test_an_unimplemented_feature_is_reported_by_its_message_not_its_source_file() -> None:
    output = ("warning: Path encountered unimplemented feature. Message: In file: /x/table_stepper.cpp:146\n"
              "Unimplemented compiler support: Match type range not implemented for table keys.\n")
    assert tool.parse_report(output).unimplemented == [
        "Unimplemented compiler support: Match type range not implemented for table keys."]


def test_the_command_asks_for_statement_coverage_and_our_ports(tmp_path: Path) -> None:
    cmd = tool.command(tool.TOFINO, Path("p4src/tna/bs_tna.p4"), tmp_path, max_tests=5,
                       port_ranges="1:8,9:9", run=tool.Run("RANDOM_BACKTRACK", 3, ("red_pa",)))
    assert cmd[:5] == ["p4testgen", "--target", "tofino", "--arch", "tna"]
    assert "-DTNA_CPU_PORT=9" in cmd and cmd[-1] == "p4src/tna/bs_tna.p4"
    for flag, value in (("--test-backend", "STF"), ("--track-coverage", "STATEMENTS"), ("--max-tests", "5"),
                        ("--seed", "3"), ("--port-ranges", "1:8,9:9"), ("--packet-size-range", "112:12000"),
                        ("--path-selection", "RANDOM_BACKTRACK"), ("--skip-control-plane-entities", "red_pa")):
        assert cmd[cmd.index(flag) + 1] == value
    plain = tool.command(tool.BMV2, Path("p4src/v1model/bs.p4"), tmp_path, max_tests=5, port_ranges="1:8")
    assert "--skip-control-plane-entities" not in plain and "-DBS_TESTGEN_DEFINED_READS" in plain
    assert plain[plain.index("--path-selection") + 1] == "GREEDY_STATEMENT_SEARCH"


def _report(covered: int, coverable: int, uncovered: list[str]) -> tool.Report:
    return tool.Report(tests=1, covered=covered, coverable=coverable, uncovered=uncovered)


def test_union_coverage_is_what_any_run_covered() -> None:
    """A statement counts as covered if one run covered it; two statements printed alike count twice."""
    a = _report(6, 10, ["f\\1: x = 1;", "f\\1: x = 1;", "f\\2: y();", "f\\3: z();"])
    b = _report(7, 10, ["f\\1: x = 1;", "f\\3: z();", "f\\4: w();"])
    merged = tool.union([a, b])
    assert merged is not None
    assert (merged.covered, merged.coverable, merged.runs) == (8, 10, 2) and merged.coverage == 0.8
    assert merged.uncovered == ["f\\1: x = 1;", "f\\3: z();"]
    # a run that wrote no test reports nothing and adds nothing; one run is its own union
    assert tool.union([a, tool.Report()]) == tool.Union(6, 10, sorted(a.uncovered), 1)
    assert tool.union([tool.Report()]) is None


@pytest.mark.parametrize("runs, message", [
    ([_report(6, 10, ["a"] * 4), _report(6, 11, ["a"] * 5)], "different programs"),
    ([_report(6, 10, ["a"] * 3)], "lists 3 uncovered"),
])
def test_union_refuses_runs_it_cannot_merge(runs: list[tool.Report], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tool.union(runs)


def test_uncovered_statements_are_listed_relative_to_the_repository() -> None:
    from p4handoff.testgen.__main__ import ROOT as MAIN_ROOT, readable
    assert readable(f"{MAIN_ROOT}/p4src/v1model/../include/sanitise.p4\\39: hdr.ipv4.dscp = 0;") == \
        "p4src/include/sanitise.p4\\39: hdr.ipv4.dscp = 0;"


def test_run_lists_refuse_bad_input() -> None:
    from p4handoff.testgen.__main__ import BMV2_RUNS, run_list
    assert run_list("random_backtrack:5, DEPTH_FIRST:0, GREEDY_STATEMENT_SEARCH:2:data-ports") == [
        ("RANDOM_BACKTRACK", 5, False), ("DEPTH_FIRST", 0, False), ("GREEDY_STATEMENT_SEARCH", 2, True)]
    assert len(run_list(BMV2_RUNS)) == 3
    for text in ("RANDOM_BACKTRACK:1,random_backtrack:1", "BFS:1", "GREEDY_STATEMENT_SEARCH", "DEPTH_FIRST:x",
                 "DEPTH_FIRST:-1", "DEPTH_FIRST:1:cpu", "DEPTH_FIRST:1:data-ports,DEPTH_FIRST:1:data-ports"):
        with pytest.raises(ValueError):
            run_list(text)


def test_a_data_ports_run_assumes_its_input_port_and_is_counted_over_the_real_program(tmp_path: Path) -> None:
    """The precondition is a define only such a run passes; the statement it adds (P4Testgen's `assume`, run by
    every path) is taken out of the run's counts, so its union with the other runs is over bs.p4's statements."""
    run = tool.Run("GREEDY_STATEMENT_SEARCH", 1, (), data_ports=True)
    assert run.label == "greedy_statement_search-seed1-data-ports"
    cmd = tool.command(tool.BMV2, Path("bs.p4"), tmp_path, max_tests=1, port_ranges="1:8", run=run)
    assert f"-D{tool.DATA_PORTS_DEFINE}" in cmd and "-DBS_TESTGEN_DEFINED_READS" in cmd
    assert f"-D{tool.DATA_PORTS_DEFINE}" not in tool.command(tool.BMV2, Path("bs.p4"), tmp_path, max_tests=1,
                                                             port_ranges="1:8")
    source = (ROOT / "p4src" / "v1model" / "bs.p4").read_text()
    assert f"#ifdef {tool.DATA_PORTS_DEFINE}\n" in source and "testgen_assume(sm.ingress_port != CPU_PORT);" in source
    focused = tool.of_the_program(_report(9, 11, ["f\\1: x = 1;", "f\\2: y();"]), run)
    assert (focused.covered, focused.coverable, focused.uncovered) == (8, 10, ["f\\1: x = 1;", "f\\2: y();"])
    plain = _report(7, 10, ["f\\1: x = 1;", "f\\2: y();", "f\\3: z();"])
    assert tool.of_the_program(plain, tool.Run()) == plain
    merged = tool.union([plain, focused])
    assert merged is not None and (merged.covered, merged.coverable) == (8, 10)


# -- the uncovered statements and why ---------------------------------------------------------------

DOC = f"""\
# P4Testgen

| `a.p4:1: x = 1;` | not this table |

{uncovered.HEADING}

Grouped below.

| statement | why |
|---|---|
| `p4src/v1model/aqm.p4:64: meta.pa_thr = threshold;` | needs a random number |
| `p4src/include/validate.p4:85: ipv4_short = ihl_bytes \\|-\\| total_len;` | a \\| in a reason |

## Measured

| `p4src/v1model/bs.p4:9: y();` | after the section |
"""


def test_uncovered_statements_are_printed_with_the_reason_the_document_gives() -> None:
    table = uncovered.reasons(DOC)
    assert table == {"p4src/v1model/aqm.p4:64: meta.pa_thr = threshold;": "needs a random number",
                     "p4src/include/validate.p4:85: ipv4_short = ihl_bytes |-| total_len;": "a | in a reason"}
    nodes = ["p4src/v1model/aqm.p4\\64: meta.pa_thr = threshold;", "p4src/v1model/bs.p4\\9: y();"]
    listed = uncovered.explain([uncovered.printed(n) for n in nodes], table)
    assert listed == [uncovered.Explained("p4src/v1model/aqm.p4:64: meta.pa_thr = threshold;", "needs a random number"),
                      uncovered.Explained("p4src/v1model/bs.p4:9: y();", None)]


@pytest.mark.parametrize("doc, message", [
    ("# P4Testgen\n\nno such section\n", "no section"),
    (f"{uncovered.HEADING}\n| `f.p4:1: x;` | a |\n| `f.p4:1: x;` | b |\n", "listed twice"),
])
def test_a_document_without_the_section_or_with_a_statement_twice_is_refused(doc: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        uncovered.reasons(doc)


def test_docs_list_uncovered_statements_at_lines_of_our_program() -> None:
    """Each statement docs/testgen.md explains is at a line of a file of ours that holds code: a moved
    line shows here before a p4testgen run shows it unexplained."""
    table = uncovered.reasons((ROOT / "docs" / "testgen.md").read_text())
    assert len(table) >= 20
    for statement, why in table.items():
        where, line, _text = statement.split(":", 2)
        lines = (ROOT / where).read_text().splitlines()
        assert 1 <= int(line) <= len(lines) and lines[int(line) - 1].strip(), statement
        assert why.strip(), statement


# -- replay: controller headers and the verdict -----------------------------------------------------

def test_controller_headers_split_and_join() -> None:
    fields, payload = split_header(PACKET_OUT, bytes([0b00000010, 0b1_1_0_1_0000]) + b"xyz")
    assert fields == {"egress_port": 5, "mark_priority": 1, "lookup": 0, "telemetry": 1, "_pad": 0}
    assert payload == b"xyz"
    assert join_header(PACKET_IN, {"ingress_port": 300, "reason": 7}, b"p") == (
        ((300 << 15) | (7 << 7)).to_bytes(3, "big") + b"p")
    with pytest.raises(ValueError, match="shorter than its 2-byte"):
        split_header(PACKET_OUT, b"\x01")


def _test(expected: Expected | None, port: int = 1, packet: bytes = b"\0" * 20) -> GeneratedTest:
    return GeneratedTest("t", port, packet, expected)


def test_judge_wants_exactly_the_expected_packet_or_nothing() -> None:
    exp = Expected(2, b"\x01\x02", b"\xff\x0f")
    assert judge(_test(exp), Observed(((2, b"\x01\xf2"),))).ok
    assert "got port 3" in judge(_test(exp), Observed(((3, b"\x01\x02"),))).why
    assert "packet differs" in judge(_test(exp), Observed(((2, b"\x01\x03"),))).why
    assert "got [(2, 2), (2, 2)]" in judge(_test(exp), Observed(((2, b"\x01\x02"),) * 2)).why
    assert judge(_test(None), Observed(())).ok
    assert not judge(_test(None), Observed(((2, b"\x01"),))).ok


# -- the Tofino port against the v1model program ----------------------------------------------------

IPV4 = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")   # the RFC 1071 example header, checksum 0xb861
ETH = bytes.fromhex("0200000000010200000000990800")


def test_ipv4_checksums_are_made_valid_outer_and_inner() -> None:
    assert differential.ipv4_checksum(IPV4) == 0xB861
    fixed = differential.with_valid_checksums(ETH + IPV4 + b"payload")
    assert fixed[14 + 10:14 + 12] == b"\xb8\x61" and fixed[14 + 20:] == b"payload"
    outer = bytearray(IPV4)
    outer[9] = differential.IP_PROTO_IPIP
    fixed = differential.with_valid_checksums(b"\xab\xcd" + ETH + bytes(outer) + IPV4, offset=2)
    assert fixed[2 + 14 + 20 + 10:2 + 14 + 20 + 12] == b"\xb8\x61"
    assert differential.ipv4_checksum(fixed[16:36]) == int.from_bytes(fixed[26:28], "big")
    bad_version = ETH + b"\x65" + IPV4[1:]
    assert differential.with_valid_checksums(bad_version) == bad_version
    assert differential.with_valid_checksums(ETH + IPV4[:12]) == ETH + IPV4[:12]


def test_bmv2_test_renames_the_cpu_port_and_fixes_the_input() -> None:
    tna = GeneratedTest("t", 64, b"\x00\x10" + ETH + IPV4, Expected(64, b"\x01", b"\xff"))
    bm = differential.bmv2_test(tna, tna_cpu_port=64, bmv2_cpu_port=255, packet_out_bytes=2)
    assert bm.port == 255 and bm.expected is not None and bm.expected.port == 255
    assert bm.packet[2 + 14 + 10:2 + 14 + 12] == b"\xb8\x61"


def test_classify_recognises_truncated_datagrams_and_the_cpu_port() -> None:
    longer = ETH + IPV4[:2] + (200).to_bytes(2, "big") + IPV4[4:]        # total length 200, frame has 20
    c = differential.classify(_test(Expected(2, longer, b"\xff" * len(longer)), packet=longer), Observed(()),
                              64, 255, 2)
    assert (c.agree, c.difference) == (False, 5)
    to_cpu = _test(Expected(255, b"\x01\x02", b"\xff\xff"))
    c = differential.classify(to_cpu, Observed(((64, b"\x01\x02"),)), 64, 255, 2)
    assert (c.agree, c.difference) == (False, 11)
    c = differential.classify(_test(Expected(2, b"\x01", b"\xff")), Observed(((3, b"\x01"),)), 64, 255, 2)
    assert (c.agree, c.difference) == (False, None) and "got port 3" in c.why
    assert differential.classify(_test(None), Observed(()), 64, 255, 2).agree


# trace lines of a real P4Testgen tofino test (make testgen-tofino, bs_tna_1.stf: a packet-out whose TCP data
# offset the parser rejects), cut to the lines that matter
TNA_TRACE = [
    "[State] bad_tcp_offset",
    "[AssignmentStatement]: meta.bs.malformed_kind = MALFORMED_TCP_OFFSET;| Computed: meta.bs.malformed_kind = 5;",
    "[Control TnaIngress start]",
    "[AssignmentStatement]: meta.bs.ingress_port = ig_intr_md.ingress_port;| Computed: meta.bs.ingress_port = 9;",
    "[If Statement]: meta.bs.malformed_kind != 0 Condition: 5 != 0; Result: true",
    "[AssignmentStatement]: bool from_cpu = hdr.packet_out.isValid();| Computed: bs_ingress_from_cpu/from_cpu = true;",
    "[AssignmentStatement]: meta.egress_port = hdr.packet_out.egress_port;| Computed: meta.bs.egress_port = 253;",
    "[AssignmentStatement]: meta.punt_reason = PUNT_REASON_TELEMETRY;| Computed: meta.bs.punt_reason = 4;",
    "[If Statement]: meta.bs.malformed_kind != 0 || meta.bs.drop || over_budget Condition: 5 != 0 || false || 0 == 3; "
    "Result: true",
    "[AssignmentStatement]: ig_dprsr_md.drop_ctl = 1;| Computed: ig_dprsr_md.drop_ctl = 1;",
]


def test_difference_10_is_read_from_the_tna_trace() -> None:
    """A parser verdict, then BsIngress deciding anyway, then the drop: difference 10. Without the verdict
    before BsIngress (Validate's own verdicts come inside it, on both programs), or without a drop, it is not."""
    why = differential.fate_before_validity(TNA_TRACE)
    assert why is not None and "kind 5" in why and "egress_port 253, punt_reason 4" in why
    no_verdict = [line for line in TNA_TRACE if "Condition: 5 != 0; Result: true" not in line]
    assert differential.fate_before_validity(no_verdict) is None
    assert differential.fate_before_validity(TNA_TRACE[:-1]) is None
    assert differential.fate_before_validity([t for t in TNA_TRACE if "meta.bs.egress_port" not in t
                                              and "meta.bs.punt_reason" not in t]) is None
    assert differential.fate_before_validity(TNA_TRACE[:2]) is None


def test_a_disagreement_on_short_ipv4_options_is_p4testgens_own() -> None:
    """P4Testgen's Tofino model extracts IPv4 options at 320 bits whatever the IHL (bs_tna_38/129 of the
    2026-11-27 run): such a test expecting a packet that BMv2 drops is its artefact; other IHLs are not."""
    def with_ihl(ihl: int, inner: int | None = None) -> bytes:
        outer = bytes([0x40 | ihl]) + IPV4[1:9] + (bytes([4]) if inner else IPV4[9:10]) + IPV4[10:] + bytes(4 * (ihl - 5))
        tail = bytes([0x40 | inner]) + IPV4[1:] + bytes(4 * (inner - 5)) if inner else b""
        return ETH + outer + tail + bytes(160)          # no shorter than its total length (not difference 5)
    expect = Expected(255, b"\x01", b"\xff")
    for packet, artefact in ((with_ihl(6), True), (with_ihl(14), True), (with_ihl(5), False), (with_ihl(15), False),
                             (with_ihl(5, inner=6), True), (with_ihl(5, inner=5), False)):
        c = differential.classify(_test(expect, packet=packet), Observed(()), 64, 255, 2)
        assert (c.agree, c.difference, c.artefact) == (False, None, artefact), packet.hex()
        assert ("maximum width" in c.why) == artefact
    c = differential.classify(_test(expect, packet=with_ihl(6)), Observed(((3, b"\x01"),)), 64, 255, 2)
    assert not c.artefact, "only a packet BMv2 dropped"


@pytest.fixture(scope="module")
def v1model_p4info(tmp_path_factory: pytest.TempPathFactory) -> P4Info:
    built = ROOT / "build" / "bs.p4info.txtpb"
    if built.exists():
        return P4Info.load(built)
    if shutil.which(P4C) is None:
        pytest.skip(f"'{P4C}' is not on PATH and build/bs.p4info.txtpb is not built")
    p4info, _ = compile_p4(ROOT / "p4src" / "v1model" / "bs.p4", tmp_path_factory.mktemp("bs"))
    return P4Info.load(p4info)


@pytest.mark.slow
def test_tna_writes_translate_to_entries_the_v1model_p4info_accepts(v1model_p4info: P4Info) -> None:
    test = cases.load(DATA / "template-tofino.stf")
    updates = [differential.translate(v1model_p4info, w) for w in test.writes]
    assert [u for u, _ in updates] == [UpdateType.INSERT, UpdateType.INSERT, UpdateType.MODIFY]
    fwd = updates[1][1]
    assert fwd == TableEntry("ipv4_fwd", {"dst_addr": (0x0A000200, 23)}, "deliver",
                             {"port": 2, "src_mac": 0x02000000FE02, "dst_mac": 0x020000000002}, 0)
    for _, entry in updates:
        encode_table_entry(v1model_p4info, entry)           # raises if a name, width or kind is wrong
    cells = differential.TnaQueues().cells_per_packet
    aqm = NamedWrite("aqm_port", "aqm_set", {"mode": 1, "profile": 0, "qlimit": 64 * cells, "dummy_th": 3 * cells,
                                              "min_th": (20 << 16) * cells, "max_th": (60 << 16) * cells,
                                              "wq_shift": 4}, {"port": Match("exact", 2)})
    _, entry = differential.translate(v1model_p4info, aqm)
    assert entry.params == {"mode": 1, "profile": 0, "qlimit": 64, "dummy_th": 3, "min_th": 20 << 16,
                            "max_th": 60 << 16, "wq_shift": 4}
    qualified = NamedWrite("TnaIngress.bs_ingress.port_role.port_role", "TnaIngress.set_port_role", {"role": 1},
                           {"port": Match("exact", 3)})
    assert differential.translate(v1model_p4info, qualified)[1] == TableEntry("port_role", {"port": 3},
                                                                              "set_port_role", {"role": 1})
    with pytest.raises(differential.Untranslatable, match="red_pa_gap"):
        differential.translate(v1model_p4info, NamedWrite("red_pa_gap", "set_min_count", {"count": 1}))


def test_generated_entities_are_made_canonical_p4runtime() -> None:
    """P4Testgen writes don't-care LPM/ternary keys and bits beyond a prefix or mask; PI refuses both
    (docs/testgen.md, "Found"): the replay leaves don't-care keys out and clears the unmatched bits."""
    info = text_format.Parse(
        'tables { preamble { id: 7 name: "t" } match_fields { id: 1 name: "a" bitwidth: 12 match_type: LPM } '
        'match_fields { id: 2 name: "b" bitwidth: 16 match_type: TERNARY } '
        'match_fields { id: 3 name: "c" bitwidth: 8 match_type: TERNARY } }', p4info_pb2.P4Info())
    entity = text_format.Parse(
        'table_entry { table_id: 7 match { field_id: 1 lpm { value: "\\x0f\\xff" prefix_len: 6 } } '
        'match { field_id: 2 ternary { value: "\\xab\\xcd" mask: "\\xf0\\x0f" } } '
        'match { field_id: 3 ternary { value: "\\x12" mask: "\\x00" } } }', p4runtime_pb2.Entity())
    dont_care = text_format.Parse(
        'table_entry { table_id: 7 match { field_id: 1 lpm { value: "\\x0a\\xbc" prefix_len: 0 } } }',
        p4runtime_pb2.Entity())
    fixed, bare = cases.canonical_entities([entity, dont_care], P4Info(info))
    a, b = fixed.table_entry.match
    assert (a.field_id, a.lpm.value, a.lpm.prefix_len) == (1, b"\x0f\xc0", 6)    # 12-bit field: top 6 bits kept
    assert (b.field_id, b.ternary.value, b.ternary.mask) == (2, b"\xa0\x0d", b"\xf0\x0f")
    assert list(bare.table_entry.match) == []
    assert entity.table_entry.match[0].lpm.value == b"\x0f\xff"       # the generated test is not changed


# -- smoke: p4testgen itself, where it is installed ---------------------------------------------------

def _need_p4testgen(what: str) -> None:
    reason = tool.available()
    if reason:
        pytest.skip(f"{what}: {reason}")


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("target, program", [(tool.BMV2, "p4src/v1model/bs.p4"),
                                             (tool.TOFINO, "p4src/tna/bs_tna.p4"),
                                             (tool.TOFINO2, "p4src/tna/bs_tna.p4")])
def test_p4testgen_smoke_generates_readable_tests(target: tool.Target, program: str, tmp_path: Path) -> None:
    """A few tests per target: p4testgen runs on our program, reports coverage, and we read every test."""
    _need_p4testgen(f"p4testgen smoke on {program} ({target.name})")
    if target.name != "bmv2":
        target = tool.Target(target.name, target.arch, target.backend, (*target.defines, "BS_TESTGEN_CHECKSUMS_VALID"))
    cpu = load_constants()["CPU_PORT"] if target.name == "bmv2" else tool.TESTGEN_TNA_CPU_PORT
    # the ports make testgen allows: without the CPU port every punt path is a guard violation, and P4Testgen
    # stops after 100 of them, before the first test
    cmd = tool.command(target, ROOT / program, tmp_path, max_tests=3, port_ranges=f"1:8,{cpu}:{cpu}")
    report = tool.run(cmd, tmp_path / "log", timeout=900)
    tests, errors = cases.load_dir(tmp_path)
    assert errors == [] and report.tests == len(tests) >= 1, (tmp_path / "log").read_text()[-3000:]
    assert report.coverage is not None and 0 < report.coverage <= 1


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_default_bmv2_runs_cover_90_percent_and_every_statement_left_has_its_reason(tmp_path: Path) -> None:
    """make testgen's default runs, generation only (the replay is make testgen's): the union reaches the
    issue's 90 %, and each statement left uncovered has its row in docs/testgen.md."""
    _need_p4testgen("make testgen's default runs (generation only)")
    import argparse
    from p4handoff.testgen.__main__ import (BMV2_RUNS, BMV2_SKIP, TESTGEN_DOC, V1MODEL_P4, generate, readable,
                                            switch_settings)
    cpu = switch_settings()[0]
    runs = generate(tool.BMV2, V1MODEL_P4, tmp_path, argparse.Namespace(runs=None, max_tests=100, timeout=900.0),
                    f"1:8,{cpu}:{cpu}", BMV2_RUNS, BMV2_SKIP)
    assert all(g.report.aborted == 0 and g.report.stopped is None and not g.unreadable for g in runs)
    merged = tool.union([g.report for g in runs])
    assert merged is not None and merged.coverable == 332 and merged.coverage >= 0.90, merged
    listed = uncovered.explain([uncovered.printed(readable(n)) for n in merged.uncovered],
                               uncovered.reasons_in(TESTGEN_DOC))
    assert [e.statement for e in listed if e.why is None] == []


@pytest.mark.slow
@pytest.mark.timeout(1900)
@pytest.mark.bmv2
@pytest.mark.netns
def test_make_testgen_smoke_passes_on_bmv2() -> None:
    """`python -m p4handoff.testgen bmv2` with a few tests: every generated test passes on BMv2."""
    _need_p4testgen("make testgen smoke (bmv2, 5 tests replayed)")
    from p4handoff.testgen.__main__ import missing
    reason = missing()
    if reason:
        pytest.skip(reason)
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "p4handoff.testgen", "bmv2",
                           "--max-tests", "3", "--runs", "GREEDY_STATEMENT_SEARCH:1,RANDOM_BACKTRACK:1"],
                          capture_output=True, text=True, timeout=1800, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "testgen_failed: 0" in done.stdout and "union of 2 run(s)" in done.stdout
    # the uncovered statements, one line each: where, what, and the document's reason or that it gives none
    lines = done.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("testgen_uncovered_statements: "))
    count = int(lines[head].split()[1].rstrip(","))
    listed = lines[head + 1:head + 1 + count]
    assert count > 27 and lines[head + 1 + count].startswith("testgen_aborted_paths")
    assert all(re.fullmatch(r"  p4src/\S+\.p4:\d+: .+  \[.+\]", line) for line in listed), listed
    assert sum("[NO REASON GIVEN]" not in line for line in listed) >= 1


@pytest.mark.slow
@pytest.mark.timeout(1900)
@pytest.mark.bmv2
@pytest.mark.netns
def test_make_testgen_tofino_smoke_has_no_undocumented_difference() -> None:
    """`python -m p4handoff.testgen tofino` with a few tests: each agrees or is a documented difference."""
    _need_p4testgen("make testgen-tofino smoke (tofino, 5 tests replayed through bs.p4)")
    from p4handoff.testgen.__main__ import missing
    reason = missing()
    if reason:
        pytest.skip(reason)
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "p4handoff.testgen", "tofino",
                           "--max-tests", "5"], capture_output=True, text=True, timeout=1800, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "tofino_undocumented: 0" in done.stdout and "tofino_statement_coverage:" in done.stdout


# -- the replay rig on BMv2, with tests written by hand in the generated form --------------------------

@pytest.mark.slow
@pytest.mark.bmv2
@pytest.mark.netns
def test_replay_rig_forwards_drops_and_answers_through_the_cpu_port(tmp_path: Path) -> None:
    """Bmv2Replay with three tests in P4Testgen's form: a routed packet (entity written, MACs and TTL
    rewritten), a packet without a route (dropped), a telemetry probe sent as PacketOut and answered as
    PacketIn, re-serialised with its packet_in header."""
    from p4handoff import netns
    from p4handoff.bmv2 import bmv2_available
    from p4handoff.controller.p4runtime._protos import p4runtime_pb2
    from p4handoff.testgen.__main__ import BMV2_JSON, P4INFO, switch_settings
    from p4handoff.testgen.replay import Bmv2Replay
    ok, why = bmv2_available()
    for reason in (None if ok else why, netns.unavailable_reason(),
                   None if BMV2_JSON.exists() else "build/bs.json not built (make build)"):
        if reason:
            pytest.skip(reason)
    p4info = P4Info.load(P4INFO)
    route = p4runtime_pb2.Entity(table_entry=encode_table_entry(p4info, TableEntry(
        "ipv4_fwd", {"dst_addr": "10.0.2.0/24"}, "deliver", {"port": 2, "src_mac": 0x02000000FE02,
                                                           "dst_mac": 0x020000000002})))
    ip = bytearray(bytes.fromhex("450000280001000040FD000A0A0001010A000202") + bytes(20))
    ip[10:12] = differential.ipv4_checksum(bytes(ip[:20])).to_bytes(2, "big")
    frame = bytes.fromhex("020000000001020000000099") + b"\x08\x00" + bytes(ip)
    out_ip = bytearray(ip)
    out_ip[8] -= 1
    out_ip[10:12] = differential.ipv4_checksum(bytes(out_ip[:20])).to_bytes(2, "big")
    routed = bytes.fromhex("020000000002" "02000000FE02") + b"\x08\x00" + bytes(out_ip)
    cpu, queues, _ = switch_settings()
    probe_out = bytes([2 >> 1, ((2 & 1) << 7) | (1 << 4)])          # egress_port 2, telemetry 1
    # packet_in (from the CPU port, reason telemetry), telemetry (port 2, no AQM, fresh state), the frame
    probe_in = join_header(PACKET_IN, {"ingress_port": cpu, "reason": 4}, bytes([0, 2, 255, 0]) + bytes(20) + frame)
    probe_expected = Expected(cpu, probe_in, b"\xff" * len(probe_in))
    tests = [
        GeneratedTest("routed", 1, frame, Expected(2, routed, b"\xff" * len(routed)), entities=[route]),
        GeneratedTest("no route", 1, frame, None),
        GeneratedTest("probe", cpu, probe_out + frame, probe_expected),
    ]
    with netns.Sandbox("tgt") as sandbox, Bmv2Replay(sandbox, P4INFO, BMV2_JSON, {1, 2}, tmp_path, cpu, queues) as rig:
        verdicts = {}
        for test in tests:
            rig.install([(UpdateType.INSERT, e) for e in test.entities])
            rig.drain()
            rig.send(test.port, test.packet)
            verdicts[test.name] = judge(test, rig.collect())
    assert all(v.ok for v in verdicts.values()), verdicts


@pytest.mark.slow
@pytest.mark.bmv2
@pytest.mark.netns
def test_differential_replay_of_tna_form_tests_on_bmv2(tmp_path: Path) -> None:
    """differential.compare with tests in the TNA STF form, written by hand as P4Testgen would for bs_tna.p4
    (CPU port 9, checksums assumed valid, output checksums don't-care): a routed packet agrees; a probe
    answered with the TNA CPU port in packet_in.ingress_port is difference 11; a datagram longer than its
    frame, which TNA forwards, is difference 5; a red_pa_gap write is not replayed."""
    from p4handoff import netns
    from p4handoff.bmv2 import bmv2_available
    from p4handoff.testgen.__main__ import BMV2_JSON, P4INFO, switch_settings
    ok, why = bmv2_available()
    for reason in (None if ok else why, netns.unavailable_reason(),
                   None if BMV2_JSON.exists() else "build/bs.json not built (make build)"):
        if reason:
            pytest.skip(reason)
    cpu, queues, out_bytes = switch_settings()
    route = ("add ipv4_fwd 1 dst_addr:0b000010100000000000000010******** "
             "deliver(port:0x002,src_mac:0x02000000FE02,dst_mac:0x020000000002)\n")
    eth_in, eth_out = "020000000001020000000099" "0800", "020000000002" "02000000FE02" "0800"
    ip_in = "45000028000100004011" "0000" "0A0001010A000202"          # checksum 0: TNA assumed it valid
    ip_out = "4500002800010000 3F11 ****0A0001010A000202".replace(" ", "")
    udp = "1234" "5678" "0014" "0000" + "00" * 12
    probe = bytes([2 >> 1, ((2 & 1) << 7) | (1 << 4)]).hex() + eth_in + ip_in + udp
    probe_in = join_header(PACKET_IN, {"ingress_port": 9, "reason": 4}, bytes([0, 2, 255, 0])).hex()
    long_ip_in = "450000C8000100004011" "0000" "0A0001010A000202"    # total length 200 in a 54-byte frame
    long_ip_out = "450000C800010000 3F11 ****0A0001010A000202".replace(" ", "")
    tna = {
        "routed": route + f"packet 1 {eth_in}{ip_in}{udp}\nexpect 2 {eth_out}{ip_out}{udp}$\n",
        "probe": f"packet 9 {probe}\nexpect 9 {probe_in}{'*' * 40}{eth_in}{ip_in[:20]}****{ip_in[24:]}{udp}$\n",
        "longer": route + f"packet 1 {eth_in}{long_ip_in}{udp}\nexpect 2 {eth_out}{long_ip_out}{udp}$\n",
        "gap": "add red_pa_gap 1 rnd:0b0******** set_min_count(count:0x1)\n" + f"packet 1 {eth_in}{ip_in}{udp}\n",
    }
    tests = [cases.parse_stf(text, name) for name, text in tna.items()]
    bmv2 = differential.Bmv2Side(P4INFO, BMV2_JSON, cpu, queues, out_bytes)
    comparisons, not_replayed = differential.compare(tests, bmv2, 9, tmp_path, range(1, 3))
    by_name = {c.name: c for c in comparisons}
    assert by_name["routed"].agree, by_name["routed"]
    assert (by_name["probe"].agree, by_name["probe"].difference) == (False, 11), by_name["probe"]
    assert (by_name["longer"].agree, by_name["longer"].difference) == (False, 5), by_name["longer"]
    assert [name for name, _ in not_replayed] == ["gap"] and "red_pa_gap" in not_replayed[0][1]
