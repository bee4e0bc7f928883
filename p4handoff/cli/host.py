"""`p4handoff host send|recv`: our user-space TCP endpoints on real packets.

Run inside the network namespace of the host (e.g. `ip netns exec NS
p4handoff host recv`, or a Mininet host's command); needs root (raw
sockets, nftables). Results are printed as `name: value` lines.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from p4handoff.argtypes import address_port, byte_count, ipv4_address, one_of, port_number, real_number, whole_number
from p4handoff.hosts.cc import SCHEMES
from p4handoff.hosts.net.timescale import MAX_TIME_SCALE
from p4handoff.hosts.net.transfer import DEFAULT_PORT, receive, send
from p4handoff.interrupt import sigterm_as_interrupt
from p4handoff.keyfile import load_keys
from p4handoff.wire import UDP_PORT_HANDOFF_NOTIFY

def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scheme", type=one_of(SCHEMES, "scheme"), default="newreno",
                   help=f"congestion-control scheme: {', '.join(sorted(SCHEMES))} (default newreno)")
    p.add_argument("--trace", type=Path, metavar="FILE",
                   help="per-connection trace: CSV if FILE ends in .csv, else JSON lines")
    p.add_argument("--notify-port", type=port_number, default=UDP_PORT_HANDOFF_NOTIFY, metavar="P",
                   help=f"UDP port for handoff notifications (default {UDP_PORT_HANDOFF_NOTIFY}; 0 = none)")
    p.add_argument("--keys", type=Path, metavar="FILE",
                   help="key file (mode 0600): accept only handoff notifications authenticated with our key")
    p.add_argument("--key-name", metavar="NAME", help="our name in the key file (with --keys)")
    p.add_argument("--link-events", action="store_true",
                   help="we are the mobile host: our interface losing / regaining its carrier is DETACH / HANDOFF")
    p.add_argument("--window-segments", type=whole_number(1), metavar="N",
                   help="receive buffer and cwnd cap in segments (default 64)")
    p.add_argument("--min-rto", type=real_number(0, above=True), metavar="S", help="minimum RTO in seconds (default 1)")
    p.add_argument("--delayed-ack", action="store_true", help="ACK every second segment (RFC 1122/5681)")
    p.add_argument("--iw", type=whole_number(1), metavar="N", help="initial window in segments (default 3)")
    p.add_argument("--no-sack", action="store_true", help="do not negotiate SACK (default: offer and accept it)")
    p.add_argument("--no-timestamps", action="store_true",
                   help="do not negotiate timestamps (RFC 7323; default: offer and accept them)")
    p.add_argument("--time-wait", type=real_number(0, above=True), metavar="S", help="TIME-WAIT (2 MSL) in seconds (default 1)")
    p.add_argument("--timeout", type=real_number(0, above=True), default=300.0, metavar="S",
                   help="give up (RST) after this long (default 300; for send, added to --seconds)")
    p.add_argument("--seed", type=whole_number(0), default=0, help="seed for the ISN and the generated data")
    p.add_argument("--time-scale", type=real_number(1, maximum=MAX_TIME_SCALE), default=1.0, metavar="S",
                   help="run TCP, the trace, --seconds and --timeout on a clock S times slower than the machine's "
                        "(a lab network stretched S times; default 1)")


def _notify_key(args: argparse.Namespace) -> bytes | None:
    """Our key from `--keys`/`--key-name`, or None (notifications unauthenticated, docs/wire-contract.md)."""
    if (args.keys is None) != (args.key_name is None):
        raise ValueError("--keys and --key-name go together")
    if args.keys is None:
        return None
    host = load_keys(args.keys).get(args.key_name)
    if host is None:
        raise ValueError(f"--key-name {args.key_name!r} is not in {args.keys}")
    return host.key


def _settings(args: argparse.Namespace) -> dict[str, object]:
    pairs = {"window_segments": args.window_segments, "min_rto": args.min_rto, "time_wait": args.time_wait,
             "iw": args.iw}
    settings = {k: v for k, v in pairs.items() if v is not None}
    if args.delayed_ack:
        settings["delayed_ack"] = True
    if args.no_sack:
        settings["sack"] = False
    if args.no_timestamps:
        settings["timestamps"] = False
    if args.min_rto is not None:
        settings["initial_rto"] = max(1.0, args.min_rto)
    return settings


def add_parser(sub: argparse._SubParsersAction) -> None:
    host = sub.add_parser("host", help="our TCP endpoints (user-space, raw sockets) in this network namespace",
                          description=__doc__)
    roles = host.add_subparsers(dest="role", required=True)

    snd = roles.add_parser("send", help="connect to ADDR[:PORT] and send a stream")
    snd.add_argument("--to", type=address_port(DEFAULT_PORT), required=True, metavar="ADDR[:PORT]",
                     help=f"receiver (any TCP server; port default {DEFAULT_PORT})")
    what = snd.add_mutually_exclusive_group(required=True)
    what.add_argument("--bytes", type=byte_count, metavar="N", help="send N bytes of generated data (5M = 5e6)")
    what.add_argument("--seconds", type=real_number(0, above=True), metavar="T", help="send generated data for T seconds")
    what.add_argument("--data", type=Path, metavar="FILE", help="send the contents of FILE")
    snd.add_argument("--mss", type=whole_number(1), metavar="BYTES",
                     help="payload per segment (default: route MTU - 40, less 12 for timestamps)")
    snd.add_argument("--port", type=port_number, default=0, metavar="P", help="local port (default: any free)")
    snd.add_argument("--start-at", type=real_number(0), metavar="T",
                     help="connect at this CLOCK_MONOTONIC instant (seconds), once set up: the flow begins then, "
                          "not after the process's start-up (default: at once)")
    _common(snd)
    snd.set_defaults(func=_send)

    rcv = roles.add_parser("recv", help="accept one connection, read it to the end, report")
    rcv.add_argument("--port", type=port_number, default=DEFAULT_PORT, metavar="P",
                     help=f"port to listen on (default {DEFAULT_PORT})")
    rcv.add_argument("--addr", type=ipv4_address, metavar="ADDR", help="accept only segments to this local address")
    rcv.add_argument("--out", type=Path, metavar="FILE", help="write the received bytes to FILE")
    _common(rcv)
    rcv.set_defaults(func=_recv)


def _send(args: argparse.Namespace) -> int:
    sigterm_as_interrupt()  # stopped by a lab: RST to the peer, guard removed
    if args.data is not None and not args.data.is_file():
        raise ValueError(f"--data {args.data}: no such file")
    host, port = args.to
    result = send(host, port, scheme=args.scheme, total=args.bytes, seconds=args.seconds, data_file=args.data,
                  trace=args.trace, mss=args.mss, local_port=args.port, notify_port=args.notify_port or None,
                  link_events=args.link_events, notify_key=_notify_key(args), timeout=args.timeout, seed=args.seed,
                  start_at=args.start_at, time_scale=args.time_scale, **_settings(args))
    print("\n".join(result.lines()), flush=True)
    return 0


def _recv(args: argparse.Namespace) -> int:
    sigterm_as_interrupt()  # stopped by a lab: RST to the peer, guard removed
    if args.port == 0:
        raise ValueError("--port must be 1..65535 for a receiver")

    def ready(port: int) -> None:
        print(f"listening: {port}", flush=True)

    result = receive(args.port, scheme=args.scheme, out=args.out, trace=args.trace, addr=args.addr,
                     notify_port=args.notify_port or None, link_events=args.link_events,
                     notify_key=_notify_key(args),
                     timeout=args.timeout, seed=args.seed, time_scale=args.time_scale,
                     on_ready=ready, **_settings(args))
    print("\n".join(result.lines()), flush=True)
    return 0
