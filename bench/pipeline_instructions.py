"""Instructions per packet of bs.p4 and bench/minimal.p4 on simple_switch_grpc, counted by callgrind.

    .venv/bin/python bench/pipeline_instructions.py [--packets 1000]

Why: on this shared 2-core machine the packets/s of `make bench-pipeline`
swings by 2x between runs with other jobs' load, which hides changes of 10-20 %.
Instruction counts do not depend on load: the switch runs under
`valgrind --tool=callgrind` (instrumentation off until both programs are
programmed), the same frame as bench/pipeline_pps.py is sent slowly enough
that nothing queues, and the inclusive counts of BMv2's per-packet functions
are divided by the packets forwarded. Output, one `name: value` per line:

    <program>_ingress_instr: N     (SimpleSwitch::ingress_thread: parser, ingress, PHV reset)
    <program>_pipeline_instr: N    (bm::Pipeline::apply, ingress + egress control flow)
    <program>_egress_instr: N      (SimpleSwitch::egress_thread: egress, deparser, checksums)
    <program>_total_instr: N       (the whole process, all threads)
    total_instr_ratio: R           (minimal / pipeline: what pps would be if instructions were all)

The packets are sent at ~125/s, so every arrival finds its queue empty after an
idle period: the AQM takes its idle-decay path (aqm_idle hit, shift-and-add)
on every packet, which a busy port does not. Needs root, valgrind, BMv2, p4c
and `make build`. `--smoke`: 20 packets (the test suite's check that it runs).
"""
from __future__ import annotations

import argparse
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import bmv2_bench as harness
from p4handoff.argtypes import whole_number
from p4handoff.bmv2 import Bmv2Switch
from p4handoff.wire import load_constants

FUNCTIONS = {"ingress": "SimpleSwitch::ingress_thread()", "pipeline": "bm::Pipeline::apply(",
             "egress": "SimpleSwitch::egress_thread("}
GAP_S = 0.008  # between packets: valgrind slows BMv2 ~50x, nothing may queue or drop


class CallgrindSwitch(Bmv2Switch):
    """simple_switch_grpc under callgrind, instrumentation off until `instrument(True)`."""

    def __init__(self, out_file: Path, **kwargs) -> None:
        super().__init__({1: "sw1", 2: "sw2"}, start_timeout=240.0, **kwargs)
        self.out_file = out_file

    def command(self) -> list[str]:
        return ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                f"--callgrind-out-file={self.out_file}", *super().command()]

    def control(self, *args: str) -> None:
        subprocess.run(["callgrind_control", *args, str(self.pid)], check=True, capture_output=True, timeout=60)


def inclusive_counts(dump: Path) -> dict[str, int]:
    """Inclusive instruction counts of FUNCTIONS and the program total in one callgrind dump."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(dump)],
                          check=True, capture_output=True, text=True, timeout=120).stdout
    counts: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \(.*?\)\s+(.*)", line)
        if not m:
            continue
        value = int(m.group(1).replace(",", ""))
        if "PROGRAM TOTALS" in line:
            counts["total"] = value
        for name, symbol in FUNCTIONS.items():
            if symbol in m.group(2) and name not in counts:
                counts[name] = value
    return counts


def measure(program: str, minimal: tuple[Path, Path], packets: int, out_dir: Path) -> dict[str, float]:
    """Per-packet instruction counts of one program; runs inside the bench namespace."""
    out_file = out_dir / f"callgrind-{program}.out"
    for old in out_dir.glob(f"callgrind-{program}.out*"):
        old.unlink()
    switch = CallgrindSwitch(out_file, cpu_port=load_constants()["CPU_PORT"], priority_queues=2,
                             log_path=out_dir / f"callgrind-{program}.log")
    with switch:
        harness.program_switch(switch.grpc_addr, program, minimal)
        frame = harness.bench_frame()
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
            sock.bind(("h1", 0))
            switch.control("-i", "on")
            start = harness.rx_packets("h2")
            for _ in range(packets):
                sock.send(frame)
                time.sleep(GAP_S)
            time.sleep(3.0)  # the last packets through valgrind
            switch.control("-i", "off")
            forwarded = harness.rx_packets("h2") - start
            switch.control("-d")
        time.sleep(1.0)
    dumps = sorted(out_dir.glob(f"callgrind-{program}.out.*"))
    if not dumps or forwarded == 0:
        raise RuntimeError(f"{program}: no callgrind dump or nothing forwarded ({forwarded} packets)")
    return {name: value / forwarded for name, value in inclusive_counts(dumps[0]).items()}


def inside(args: argparse.Namespace) -> int:
    minimal = (Path(args.minimal_p4info), Path(args.minimal_json))
    totals = {}
    for program in harness.PROGRAMS:
        counts = measure(program, minimal, args.packets, Path(args.out_dir))
        for name in (*FUNCTIONS, "total"):
            print(f"{program}_{name}_instr: {counts.get(name, 0):.0f}", flush=True)
        totals[program] = counts.get("total", 0)
    print(f"total_instr_ratio: {totals['minimal'] / totals['pipeline']:.3f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=whole_number(1), default=1000)
    parser.add_argument("--smoke", action="store_true", help="20 packets (tests)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--minimal-p4info", help=argparse.SUPPRESS)
    parser.add_argument("--minimal-json", help=argparse.SUPPRESS)
    parser.add_argument("--out-dir", default=str(harness.BENCH_BUILD), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.packets = 20
    if args.inside:
        return inside(args)
    budget = len(harness.PROGRAMS) * (args.packets * GAP_S + 300)
    return harness.run_inside(Path(__file__), "cg", ["--packets", str(args.packets),
                                                     "--out-dir", str(harness.BENCH_BUILD)], budget,
                              tools=("valgrind", "callgrind_control", "callgrind_annotate"))


if __name__ == "__main__":
    sys.exit(main())
