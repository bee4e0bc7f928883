"""How many of a burst of packet-outs BMv2 delivers, sent at once or credit-limited (controller/release_credit.py).

    .venv/bin/python bench/packet_out_burst.py      # needs root, simple_switch_grpc, `make build`

One simple_switch_grpc runs p4src/v1model/bs.p4 (bench/bmv2_bench.py's
"pipeline" setup) with ports 1 and 2 in a namespace of their own. A
P4Runtime client sends `--burst` numbered frames as packet-outs to port 1
(`lookup` = 0: the controller's buffer-release path), and a raw socket on
port 1's peer counts what arrives and checks the order. Two ways, each at
two egress queue depths (BMv2's default 64, and the testbed's 4,096):

- `burst`: all packet-outs queued on the stream at once (the release path
  before the credit);
- `credit`: at most `--window` packet-outs the switch has not been seen to
  read: after each window a telemetry probe, the next window once its
  packet-in came back (what the daemon does).

Rounds alternate the ways; per way and depth, one line per round, then the
summary (loss varies with the machine's load, so the worst round counts).
Output, `name: value` per line:

    delivered_burst_d64: F      (fraction of the burst that arrived in the worst round, depth 64)
    delivered_credit_d64: F
    delivered_burst_d4096: F
    delivered_credit_d4096: F
    pps_burst_d4096: N          (median arrival rate, first packet-out queued -> last frame received)
    pps_credit_d4096: N
    in_order: True/False        (every round's arrivals in the order sent)
"""
from __future__ import annotations

import argparse
import socket
import statistics
import sys
import time
from pathlib import Path

from bmv2_bench import BENCH_BUILD, program_switch, run_inside
from p4handoff.argtypes import whole_number
from p4handoff.bmv2 import DEFAULT_QUEUE_DEPTH, Bmv2Switch
from p4handoff.controller.p4runtime import P4RuntimeClient
from p4handoff.controller.release_credit import WINDOW
from p4handoff.wire import load_constants

DEPTHS = (DEFAULT_QUEUE_DEPTH, 4096)
ETHERTYPE = b"\x88\xb5"          # local experimental: nothing else on the wire carries it


def frame(seq: int) -> bytes:
    head = bytes.fromhex("020000000002" "020000000001") + ETHERTYPE + seq.to_bytes(4, "big")
    return head + bytes(60 - len(head))


def arrivals(sock: socket.socket, quiet: float) -> tuple[list[int], float]:
    """Sequence numbers received until `quiet` s pass without one, and when the last arrived."""
    seqs: list[int] = []
    last = time.monotonic()
    sock.settimeout(quiet)
    while True:
        try:
            data = sock.recv(2048)
        except TimeoutError:
            return seqs, last
        if data[12:14] == ETHERTYPE:
            seqs.append(int.from_bytes(data[14:18], "big"))
            last = time.monotonic()


def send(client: P4RuntimeClient, burst: int, window: int | None, probe_port: int) -> None:
    """The burst as packet-outs to port 1; with a `window`, a probe after each window and a wait for it."""
    step = window or burst
    for start in range(0, burst, step):
        for seq in range(start, min(burst, start + step)):
            client.packet_out(frame(seq), egress_port=1, mark_priority=0, lookup=0, telemetry=0)
        if window is None:
            continue
        client.packet_out(frame(0), egress_port=probe_port, mark_priority=0, lookup=0, telemetry=1)
        if client.packet_in(timeout=2.0) is None:
            raise RuntimeError("the switch did not answer a telemetry probe within 2 s")


def inside(args: argparse.Namespace) -> int:
    c = load_constants()
    minimal = (Path(args.minimal_p4info), Path(args.minimal_json))
    switch = Bmv2Switch({1: "sw1", 2: "sw2"}, cpu_port=c["CPU_PORT"], priority_queues=2,
                        log_path=Path(args.log_dir) / "switch-packet-out.log")
    delivered: dict[str, list[float]] = {}
    rates: dict[str, list[float]] = {}
    in_order = True
    with switch:
        program_switch(switch.grpc_addr, "pipeline", minimal)
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
        sock.bind(("h1", 0))
        with P4RuntimeClient(switch.grpc_addr, 0) as client:
            client.fetch_pipeline()
            for _ in range(args.rounds):
                for depth in DEPTHS:
                    switch.cli.set_queue_depth(depth)
                    for way, window in (("burst", None), ("credit", args.window)):
                        arrivals(sock, 0.2)                     # nothing left over from the last round
                        started = time.monotonic()
                        send(client, args.burst, window, probe_port=2)
                        seqs, last = arrivals(sock, 1.0)
                        key = f"{way}_d{depth}"
                        delivered.setdefault(key, []).append(len(seqs) / args.burst)
                        rates.setdefault(key, []).append(len(seqs) / max(last - started, 1e-6))
                        in_order &= seqs == sorted(seqs)
                        print(f"# {key}: {len(seqs)} of {args.burst} arrived, {rates[key][-1]:.0f} pps, "
                              f"in order: {seqs == sorted(seqs)}", flush=True)
        sock.close()
    for depth in DEPTHS:
        for way in ("burst", "credit"):
            print(f"delivered_{way}_d{depth}: {min(delivered[f'{way}_d{depth}']):.3f}")
    for way in ("burst", "credit"):
        print(f"pps_{way}_d4096: {statistics.median(rates[f'{way}_d4096']):.0f}")
    print(f"in_order: {in_order}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=whole_number(1), default=5)
    parser.add_argument("--burst", type=whole_number(1), default=1000, help="packet-outs per burst")
    parser.add_argument("--window", type=whole_number(1), default=WINDOW, help="credit window, packet-outs")
    parser.add_argument("--smoke", action="store_true", help="one small round (tests)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--minimal-p4info", help=argparse.SUPPRESS)
    parser.add_argument("--minimal-json", help=argparse.SUPPRESS)
    parser.add_argument("--log-dir", default=str(BENCH_BUILD), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.rounds, args.burst = 1, 200
    if args.inside:
        return inside(args)
    budget = args.rounds * len(DEPTHS) * 2 * 30 + 60
    return run_inside(Path(__file__), "pob", ["--rounds", str(args.rounds), "--burst", str(args.burst),
                                             "--window", str(args.window), "--log-dir", str(BENCH_BUILD)], budget)


if __name__ == "__main__":
    sys.exit(main())
