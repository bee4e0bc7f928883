"""`p4handoff ctl ...`: run the handoff controller, inspect it, move mobile hosts in a lab.

Exit codes (docs/controller.md): 0 done; 1 runtime error; 2 usage; 3 the
network description is invalid (or the file is none: missing, a directory,
empty, binary, bad YAML); 4 no controller answers on the socket; 5 the
controller refused the request (unknown MH or BS, MH never attached, ...).
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from p4handoff.controller.control import ControlError, request
from p4handoff.controller.network import DEFAULT_SOCKET, Network, NetworkError, load_network, parse_network
from p4handoff.yamlfile import read_yaml
from p4handoff.argtypes import real_number, whole_number

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INVALID, EXIT_UNREACHABLE, EXIT_REFUSED = 0, 1, 2, 3, 4, 5


def add_parser(sub: argparse._SubParsersAction) -> None:
    ctl = sub.add_parser("ctl", help="the P4Runtime handoff controller",
                         description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 1)[1])
    cmds = ctl.add_subparsers(dest="ctl_command", required=True)

    run = cmds.add_parser("run", help="run the controller daemon (until SIGINT/SIGTERM)")
    run.add_argument("--network", required=True, help="network description (YAML)")
    run.add_argument("--log", help="JSON-lines event log file (default: stderr)")
    run.add_argument("--socket", help="control socket path (default: controller.socket of the description)")
    run.add_argument("--startup-timeout", type=real_number(0, above=True), default=10.0,
                     help="seconds to wait for all switches before serving (default 10)")
    run.add_argument("--profile", metavar="FILE",
                     help="cProfile the daemon's thread (every event and effect) and write the stats to FILE "
                          "when it stops; SIGUSR1 discards what was collected so far (docs/controller.md, "
                          "'Where a handoff's time goes')")
    run.set_defaults(func=_run)

    svc = cmds.add_parser("bufsvc", help="run the buffer service of a description's buffer_service (until "
                                         "SIGINT/SIGTERM; docs/controller.md, 'The buffer service')")
    svc.add_argument("--network", required=True, help="network description (YAML)")
    svc.add_argument("--log", help="JSON-lines event log file (default: stderr)")
    svc.set_defaults(func=_bufsvc)

    keys = cmds.add_parser("keys", help="write a key file (mode 0600) with a fresh key for every host of a "
                                        "description; hosts already in the file keep theirs")
    keys.add_argument("--network", required=True)
    keys.add_argument("--out", required=True, help="the key file (name it in controller.keys)")
    keys.set_defaults(func=_keys)

    certs = cmds.add_parser("certs", help="a lab CA and certificates for P4Runtime over TLS (mutual): one per "
                                          "switch (its name), one for the controller")
    certs.add_argument("--network", required=True)
    certs.add_argument("--out", required=True, type=Path, help="directory for ca.pem, <switch>.pem/.key, "
                                                               "controller.pem/.key (keys mode 0600)")
    certs.set_defaults(func=_certs)

    val = cmds.add_parser("validate", help="check a network description; list every problem")
    val.add_argument("--network", required=True)
    val.set_defaults(func=_validate)

    def target(p: argparse.ArgumentParser) -> None:
        p.add_argument("--socket", help=f"control socket (default: from --network, else {DEFAULT_SOCKET})")
        p.add_argument("--network", help="network description whose controller.socket to use")

    st = cmds.add_parser("status", help="switches, per-MH state, buffers, per-port AQM counters")
    target(st)
    st.add_argument("--json", action="store_true", help="print the raw JSON reply")
    st.set_defaults(func=_status)

    ho = cmds.add_parser("handoff", help="move a mobile host to a base station (lab)")
    target(ho)
    ho.add_argument("mh", help="mobile host name or address")
    ho.add_argument("--to", required=True, help="base station name")
    ho.add_argument("--port", type=whole_number(0), help="access port (needed if the BS has several)")
    ho.set_defaults(func=_handoff)

    en = cmds.add_parser("entries", help="the table entries a switch holds (read back from it)")
    target(en)
    en.add_argument("switch", help="switch name")
    en.set_defaults(func=_entries)

    de = cmds.add_parser("detach", help="a mobile host lost its link (lab)")
    target(de)
    de.add_argument("mh", help="mobile host name or address")
    de.set_defaults(func=_detach)

    tb = cmds.add_parser("testbed", help="start three BMv2 switches (a gateway, two base stations) to run the "
                                         "controller against, until Ctrl-C (root, BMv2)",
                         description="Start the controller's BMv2 testbed (topo/testbed.py, the one its tests "
                                     "use): switches gw, bs1, bs2 with their links, a correspondent and the mobile "
                                     "hosts' radios in network namespaces, and a network description for "
                                     "`ctl run`. Runs until SIGINT/SIGTERM, then removes everything it made.")
    tb.add_argument("--dir", type=Path, default=Path("testbed"),
                    help="network.yaml, switch logs and sockets go here (default: ./testbed)")
    tb.add_argument("--mobiles", type=whole_number(1), default=2, help="mobile hosts in the description (default 2)")
    tb.set_defaults(func=_testbed)


def _err(args: argparse.Namespace, message: str) -> None:
    print(f"p4handoff ctl {args.ctl_command}: {message}", file=sys.stderr)


def _fitting_network(path: str) -> Network | None:
    """load_network, then refuse a network whose entries would not fit the P4 tables; None once every problem
    is printed (the caller exits EXIT_INVALID)."""
    try:
        net = load_network(path)
        from p4handoff.controller.programmer import Programmer   # grpc and the protos load only here
        from p4handoff.controller.targets import program_for

        problems = Programmer(net, program_for(net.controller.target)).capacity_problems()
        if problems:
            index = {sw.name: i for i, sw in enumerate(net.switches)}
            raise NetworkError(path, [(f"switches[{index[sw]}]", problem) for sw, problem in problems])
    except NetworkError as exc:
        print(exc, file=sys.stderr)
        return None
    return net


def _validate(args: argparse.Namespace) -> int:
    net = _fitting_network(args.network)
    if net is None:
        return EXIT_INVALID
    print(f"{args.network}: valid ({len(net.switches)} switches, {len(net.mobile_hosts)} mobile hosts, "
          f"{len(net.fixed_hosts)} fixed hosts)")
    return EXIT_OK


def _keys(args: argparse.Namespace) -> int:
    from p4handoff.keyfile import KeyFileError, load_keys, write_keys
    try:
        raw = read_yaml(Path(args.network), NetworkError)
        ctl = raw.setdefault("controller", {}) if isinstance(raw, dict) else None
        if isinstance(ctl, dict) and ctl.get("auth") != "none":
            ctl.setdefault("keys", str(Path(args.out).resolve()))     # the file it writes, to be named there
        net = parse_network(raw, source=args.network, base_dir=Path(args.network).parent)
        keep = load_keys(args.out) if Path(args.out).exists() else None
    except (NetworkError, KeyFileError) as exc:
        print(exc, file=sys.stderr)
        return EXIT_INVALID
    names = [h.name for h in net.mobile_hosts] + [h.name for h in net.fixed_hosts]
    write_keys(args.out, names, keep)
    print(f"{args.out}: keys for {len(names)} hosts (mode 0600)")
    return EXIT_OK


def _certs(args: argparse.Namespace) -> int:
    from p4handoff.bmv2 import SwitchTls
    from p4handoff.lab_ca import lab_certs
    try:
        net = load_network(args.network)
    except NetworkError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INVALID
    controller, servers = lab_certs(args.out.resolve(), [s.name for s in net.switches])
    print(f"# in {args.network}, under controller:\ntls: {{ca: {controller.ca}, cert: {controller.cert}, "
          f"key: {controller.key}}}")
    for name, f in servers.items():
        opts = " ".join(SwitchTls(f.ca, f.cert, f.key, name, controller.cert, controller.key).args())
        print(f"# {name}: simple_switch_grpc ... -- {opts}")
    return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    net = _fitting_network(args.network)
    if net is None:
        return EXIT_INVALID
    from p4handoff.controller.daemon import Daemon, JsonLog   # grpc and the protos load only here
    from p4handoff.keyfile import KeyFileError

    log_file = open(args.log, "a") if args.log else None        # JsonLog flushes (a batch's lines at once)
    try:
        try:
            daemon = Daemon(net, JsonLog(log_file or sys.stderr), socket_path=args.socket,
                            startup_timeout=args.startup_timeout, network_path=args.network)
        except (KeyFileError, OSError) as exc:          # the key file, the TLS certificates
            print(exc, file=sys.stderr)
            return EXIT_INVALID
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: daemon.stop())
        if args.profile:
            import cProfile
            profile = cProfile.Profile()
            signal.signal(signal.SIGUSR1, lambda *_: profile.clear())     # from here on: a phase of its own
            try:
                profile.runcall(daemon.run)
            finally:
                profile.dump_stats(args.profile)
        else:
            daemon.run()
    finally:
        if log_file is not None:
            log_file.close()
    return EXIT_OK


def _bufsvc(args: argparse.Namespace) -> int:
    net = _fitting_network(args.network)
    if net is None:
        return EXIT_INVALID
    from p4handoff.controller.bufsvc import BufferService
    from p4handoff.controller.eventlog import JsonLog
    from p4handoff.keyfile import KeyFileError, load_keys

    svc = net.buffer_service
    if svc is None:
        print(f"{args.network}: no buffer_service in this description", file=sys.stderr)
        return EXIT_INVALID
    try:
        keys = load_keys(net.controller.keys) if net.controller.keys else None
    except KeyFileError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INVALID
    key = keys.get(svc.key_name) if keys is not None else None
    if key is None:
        print(f"the key file has no key {svc.key_name!r} for the buffer service", file=sys.stderr)
        return EXIT_INVALID
    log_file = open(args.log, "a", buffering=1) if args.log else None
    try:
        service = BufferService(net, key.key, JsonLog(log_file or sys.stderr))
        service.open()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: service.stop())
        try:
            service.serve()
        finally:
            service.close()
    finally:
        if log_file is not None:
            log_file.close()
    return EXIT_OK


def _socket(args: argparse.Namespace) -> str:
    if args.socket:
        return args.socket
    if args.network:
        return load_network(args.network).controller.socket
    return DEFAULT_SOCKET


def _call(args: argparse.Namespace, body: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    try:
        path = _socket(args)
    except NetworkError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INVALID, None
    try:
        reply = request(path, body)
    except ControlError as exc:
        _err(args, str(exc))
        return EXIT_UNREACHABLE, None
    if not reply.get("ok"):
        _err(args, reply.get("error", "request failed"))
        return (EXIT_REFUSED if reply.get("kind") == "refused" else EXIT_ERROR), reply
    return EXIT_OK, reply


def _handoff(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"cmd": "handoff", "mh": args.mh, "to": args.to}
    if args.port is not None:
        body["port"] = args.port
    code, reply = _call(args, body)
    if reply is not None and code == EXIT_OK:
        print(f"{reply['mh']}: {reply['phase']} at {reply['bs']}")
    return code


def _detach(args: argparse.Namespace) -> int:
    code, reply = _call(args, {"cmd": "detach", "mh": args.mh})
    if reply is not None and code == EXIT_OK:
        print(f"{reply['mh']}: {reply['phase']}")
    return code


def _entries(args: argparse.Namespace) -> int:
    code, reply = _call(args, {"cmd": "entries", "switch": args.switch})
    if reply is not None and code == EXIT_OK:
        for row in reply["entries"]:
            print(json.dumps(row))
    return code


def _status(args: argparse.Namespace) -> int:
    code, reply = _call(args, {"cmd": "status"})
    if reply is None or code != EXIT_OK:
        return code
    if args.json:
        print(json.dumps(reply, indent=2))
        return EXIT_OK
    print("switches:")
    for s in reply["switches"]:
        err = f"  ({s['last_error']})" if s["last_error"] and s["state"] != "up" else ""
        print(f"  {s['name']:<10} {s['role']:<8} {s['state']:<11} {s['grpc']:<22} entries={s['entries']} "
              f"connects={s['connects']}{err}")
    svc = reply.get("buffer_service")
    if svc is not None:
        print(f"buffer service: {'up' if svc['up'] else 'down'} arrivals={svc['arrivals']} "
              f"released={svc['released']} batches={svc['batches']} lost_releases={svc['lost_releases']} "
              f"refused={svc['refused']}")
    print(f"mobile hosts (buffered {reply['buffer_total']}/{reply['buffer_limit']}):")
    for m in reply["mobile_hosts"]:
        extra = f" probe={m['probe']['addr']}@{m['probe']['bs']}" if m["probe"] else ""
        hold = f" holds={','.join(m['holds'])}" if m["holds"] else ""
        print(f"  {m['mh']:<10} {m['address']:<15} {m['phase']:<19} bs={m['bs'] or '-':<6} "
              f"buffer={m['buffer']}/{m['buffer_limit']} released={m['released']} "
              f"dropped={m['dropped_overflow'] + m['dropped_global']} late={m['late']} "
              f"handoffs={m['handoffs']}{hold}{extra}")
    print("access ports:")
    for p in reply["ports"]:
        aqm = p.get("aqm")
        q = (f"mode={aqm['mode']} queued={aqm['occupancy']} avg={aqm['avg_packets']}" if aqm else "telemetry: none")
        c = p["counters"]
        print(f"  {p['switch']}:{p['port']:<4} {q} enqueued={c.get('aqm_enqueued')} "
              f"red_dropped={c.get('aqm_red_dropped')} overflow={c.get('aqm_overflow_dropped')} "
              f"dummy_dropped={c.get('aqm_dummy_dropped')} priority_admitted={c.get('priority_admitted')}")
    return EXIT_OK


def _testbed(args: argparse.Namespace) -> int:
    from p4handoff.netns import unavailable_reason
    from p4handoff.bmv2 import bmv2_available
    ok, bmv2_why = bmv2_available()
    why = unavailable_reason() or (None if ok else bmv2_why)
    if why:
        _err(args, f"cannot start the testbed here: {why}")
        return EXIT_ERROR
    from p4handoff.topo.testbed import Testbed
    workdir = args.dir.resolve()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    bed = Testbed(workdir, n_mobiles=args.mobiles, grpc_sockets=True)
    try:
        try:
            bed.start()
        except RuntimeError as exc:          # Bmv2Error, NetnsError: with the switch's log or the command
            _err(args, str(exc))
            return EXIT_ERROR
        net = bed.network_path
        mhs = ", ".join(m["name"] for m in bed.description()["mobile_hosts"])
        print(f"testbed up: gw, bs1, bs2 ({', '.join(s.grpc_addr for s in bed.switches.values())})\n"
              f"network description: {net} (mobile hosts {mhs}; correspondent ch)\n"
              f"correspondent: `ip netns exec {bed.ch_ns.name} ...` (eth0 on gw port 1); mobile hosts' "
              f"radios: `ip netns exec {bed.mh_ns.name} ...` (cell1 on bs1, cell2 on bs2)\n"
              f"next: p4handoff ctl run --network {net}\n"
              "Ctrl-C stops the switches and removes the namespaces.", flush=True)
        while not stop.wait(1.0):
            dead = [name for name, sw in bed.switches.items() if not sw.alive]
            if dead:
                _err(args, f"switch {', '.join(dead)} exited (log: {workdir}/{dead[0]}.log)")
                return EXIT_ERROR
    finally:
        bed.close()
    return EXIT_OK
