"""Packets/s of the full base-station pipeline (p4src/v1model/bs.p4) against bench/minimal.p4, one run, same BMv2.

    make bench-pipeline          # = .venv/bin/python bench/pipeline_pps.py

Both programs run on one simple_switch_grpc build with the same ports and
options, one after the other, in a namespace of their own: a raw-socket sender
offers UDP packets on port 1 as fast as it can, the switch forwards them to
port 2, and the rate is the growth of port 2's peer's rx counter over a
window after a warm-up. The pipeline path measured is the common one: a
core-port packet routed to a mobile host on an access port under M-RED
(validation, sanitisation, forwarding, DSBP classification, AQM registers in
ingress and egress). Rounds alternate the programs; each rate is the median
over rounds. Output, one `name: value` per line:

    pipeline_pps: N
    minimal_pps: N
    pipeline_pps_ratio: R          (goal >= 0.8)
    minimal_cpu_us_per_packet: C   (switch CPU time per forwarded packet, all threads)
    pipeline_cpu_us_per_packet: C
    bmv2_build: how BMv2 was configured (from /opt/p4build/INSTALLED.md)

Needs root (namespaces), simple_switch_grpc, p4c-bm2-ss and `make build`.
`--smoke`: one round of half a second (the test suite's check that it runs).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bmv2_bench import BENCH_BUILD, PROGRAMS, bench_frame, program_switch, run_inside, rx_packets
from p4handoff.argtypes import real_number, whole_number
from p4handoff import netns
from p4handoff.bmv2 import Bmv2Switch
from p4handoff.wire import load_constants

# Paced sender: batches of BATCH frames at a fixed offered rate, so it takes a bounded share of the
# two cores and both programs see the same offered load (a sender spinning flat out competes with the
# switch's threads for CPU and makes the result depend on the scheduler).
_SENDER = """
import socket, sys, time
BATCH = 200
sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
sock.bind((sys.argv[1], 0))
frame, rate, duration = bytes.fromhex(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
start = time.monotonic()
end, sent = start + duration, 0
while True:
    now = time.monotonic()
    if now >= end:
        break
    ahead = start + sent / rate - now
    if ahead > 0:
        time.sleep(ahead)
    for _ in range(BATCH):
        try:
            sock.send(frame)
        except OSError:
            pass
    sent += BATCH
print(sent)
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of every thread of a process so far."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


def measure(program: str, minimal: tuple[Path, Path], offered: float, warmup: float, window: float,
            log_dir: Path) -> tuple[float, float, float]:
    """(forwarded pps, offered pps, switch CPU us per forwarded packet) of one program; runs inside the
    bench namespace."""
    c = load_constants()
    switch = Bmv2Switch({1: "sw1", 2: "sw2"}, cpu_port=c["CPU_PORT"], priority_queues=2,
                        log_path=log_dir / f"switch-{program}.log")
    with switch:
        program_switch(switch.grpc_addr, program, minimal)
        duration = warmup + window + 0.5
        sender = subprocess.Popen([sys.executable, "-c", _SENDER, "h1", bench_frame().hex(), str(offered),
                                   str(duration)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            time.sleep(warmup)
            pid = switch.pid
            if pid is None:
                raise RuntimeError("simple_switch_grpc is not running")
            start, cpu_start = rx_packets("h2"), cpu_seconds(pid)
            time.sleep(window)
            forwarded = rx_packets("h2") - start
            cpu = cpu_seconds(pid) - cpu_start
            out, _ = sender.communicate(timeout=duration + 10)
        finally:
            if sender.poll() is None:
                netns.stop_process(sender)
    return forwarded / window, int(out.strip() or 0) / duration, cpu / max(forwarded, 1) * 1e6


def inside(args: argparse.Namespace) -> int:
    """The measurement proper, run inside the namespace that holds the veth pairs."""
    minimal = (Path(args.minimal_p4info), Path(args.minimal_json))
    log_dir = Path(args.log_dir)
    rates: dict[str, list[float]] = {p: [] for p in PROGRAMS}
    costs: dict[str, list[float]] = {p: [] for p in PROGRAMS}
    for _ in range(args.rounds):
        for program in PROGRAMS:
            pps, offered, cost = measure(program, minimal, args.offered, args.warmup, args.window, log_dir)
            rates[program].append(pps)
            costs[program].append(cost)
            print(f"# {program}: {pps:.0f} pps forwarded, {offered:.0f} pps offered, "
                  f"{cost:.1f} switch CPU us per packet", flush=True)
    pipeline, minimum = statistics.median(rates["pipeline"]), statistics.median(rates["minimal"])
    print(f"pipeline_pps: {pipeline:.0f}")
    print(f"minimal_pps: {minimum:.0f}")
    print(f"pipeline_pps_ratio: {pipeline / minimum:.3f}" if minimum else "pipeline_pps_ratio: nan")
    # the same comparison as CPU cost, less sensitive to other load on the machine
    for program in PROGRAMS:
        print(f"{program}_cpu_us_per_packet: {statistics.median(costs[program]):.1f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=whole_number(1), default=5)
    parser.add_argument("--offered", type=real_number(0, above=True), default=150_000, help="offered load, packets/s")
    parser.add_argument("--warmup", type=real_number(0), default=1.0, help="seconds before counting")
    parser.add_argument("--window", type=real_number(0, above=True), default=3.0, help="seconds counted")
    parser.add_argument("--smoke", action="store_true", help="one short round (tests)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--minimal-p4info", help=argparse.SUPPRESS)
    parser.add_argument("--minimal-json", help=argparse.SUPPRESS)
    parser.add_argument("--log-dir", default=str(BENCH_BUILD), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.rounds, args.warmup, args.window = 1, 0.3, 0.5
    if args.inside:
        return inside(args)
    budget = args.rounds * len(PROGRAMS) * (args.warmup + args.window + 30)
    return run_inside(Path(__file__), "bench", ["--rounds", str(args.rounds), "--offered", str(args.offered),
                                               "--warmup", str(args.warmup), "--window", str(args.window),
                                               "--log-dir", str(BENCH_BUILD)], budget)


if __name__ == "__main__":
    sys.exit(main())
