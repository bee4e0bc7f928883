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
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from p4handoff import netns  # noqa: E402
from p4handoff.bmv2 import Bmv2Error, Bmv2Switch, bmv2_available, compile_p4, veth_port  # noqa: E402
from p4handoff.wire import load_constants  # noqa: E402

BUILD = ROOT / "build"
BENCH_BUILD = BUILD / "bench"
MINIMAL_P4 = ROOT / "bench" / "minimal.p4"
BS_JSON, BS_P4INFO = BUILD / "bs.json", BUILD / "bs.p4info.txtpb"
INSTALLED_MD = Path("/opt/p4build/INSTALLED.md")
PROGRAMS = ("minimal", "pipeline")

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


def rx_packets(ifname: str) -> int:
    """Received-packet counter of an interface in this process's namespace (/proc/net/dev)."""
    for line in Path("/proc/net/dev").read_text().splitlines()[2:]:
        name, _, fields = line.partition(":")
        if name.strip() == ifname:
            return int(fields.split()[1])
    raise RuntimeError(f"no interface {ifname} in /proc/net/dev")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of every thread of a process so far."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


def bench_frame() -> bytes:
    """CH -> MH, 106 bytes: the pipeline's routed access-port path."""
    from scapy.all import IP, UDP, Ether, Raw
    return bytes(Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:01:01") / IP(src="10.9.0.1", dst="10.1.0.10")
                 / UDP(sport=5000, dport=6000) / Raw(bytes(64)))


def program_switch(grpc_addr: str, program: str, minimal: tuple[Path, Path]) -> None:
    from p4handoff.controller.aqm_tables import PortAqm, RedParams, port_entries
    from p4handoff.wire import AQM_MODE_MRED
    from p4handoff.controller.p4runtime import P4RuntimeClient, TableEntry, UpdateType

    c = load_constants()
    with P4RuntimeClient(grpc_addr, 0) as client:
        if program == "minimal":
            client.set_pipeline(*minimal)
            client.insert(TableEntry("port_fwd", {"ingress_port": 1}, "forward", {"port": 2}))
            return
        client.set_pipeline(BS_P4INFO, BS_JSON)
        entries = [
            TableEntry("port_role", {"port": 1}, "set_port_role", {"role": c["PORT_ROLE_CORE"]}),
            TableEntry("port_role", {"port": 2}, "set_port_role", {"role": c["PORT_ROLE_ACCESS"]}),
            TableEntry("ipv4_fwd", {"dst_addr": "10.1.0.10/32"}, "deliver",
                       {"port": 2, "src_mac": "02:00:00:00:00:fe", "dst_mac": "02:00:00:00:02:10"}),
        ]
        red = RedParams(min_th=20, max_th=60, max_p=0.1, wq_shift=9, mean_pkt_time_us=100.0)
        entries += port_entries(PortAqm(2, AQM_MODE_MRED, limit=64, dummy_threshold=48, red=red))
        client.write([(UpdateType.INSERT, e) for e in entries])


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


def bmv2_build() -> str:
    """The BMv2 configure line recorded by whoever built the toolchain."""
    try:
        text = INSTALLED_MD.read_text()
    except OSError:
        return f"unknown ({INSTALLED_MD} missing)"
    for line in text.splitlines():
        if "./configure" in line and "--with-thrift" in line:  # BMv2's (PI's has no Thrift)
            return line.strip(" `")
    return f"unknown (no BMv2 configure line in {INSTALLED_MD})"


def prerequisite_problems() -> list[str]:
    """Why the pipeline benchmarks cannot run here (BMv2, build output, namespaces); empty if they can."""
    available, reason = bmv2_available()
    problems = [reason] if not available else []
    if not (BS_JSON.exists() and BS_P4INFO.exists()):
        problems.append(f"{BS_JSON.relative_to(ROOT)} missing: run `make build`")
    no_netns = netns.unavailable_reason()
    if no_netns:
        problems.append(no_netns)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--offered", type=float, default=150_000, help="offered load, packets/s")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds before counting")
    parser.add_argument("--window", type=float, default=3.0, help="seconds counted")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--minimal-p4info", help=argparse.SUPPRESS)
    parser.add_argument("--minimal-json", help=argparse.SUPPRESS)
    parser.add_argument("--log-dir", default=str(BENCH_BUILD), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inside:
        return inside(args)

    problems = prerequisite_problems()
    if problems:
        print("bench-pipeline: cannot run: " + "; ".join(problems), file=sys.stderr)
        return 2
    try:
        minimal_p4info, minimal_json = compile_p4(MINIMAL_P4, BENCH_BUILD)
    except Bmv2Error as exc:
        print(f"bench-pipeline: {exc}", file=sys.stderr)
        return 2
    with netns.Sandbox("bench") as lab:
        ns = lab.namespace("sw")
        for n in (1, 2):
            veth_port(f"sw{n}", ns, f"h{n}", switch_netns=ns)
        budget = args.rounds * len(PROGRAMS) * (args.warmup + args.window + 30)
        done = subprocess.run(["ip", "netns", "exec", ns.name, sys.executable, str(Path(__file__).resolve()),
                               "--inside", "--rounds", str(args.rounds), "--offered", str(args.offered),
                               "--warmup", str(args.warmup),
                               "--window", str(args.window), "--minimal-p4info", str(minimal_p4info),
                               "--minimal-json", str(minimal_json), "--log-dir", str(BENCH_BUILD)],
                              timeout=budget, text=True, stdout=sys.stdout, stderr=sys.stderr)
    print(f"bmv2_build: {bmv2_build()}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
