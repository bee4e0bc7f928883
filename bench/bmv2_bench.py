"""What the two BMv2 pipeline benchmarks share (bench/pipeline_pps.py, bench/pipeline_instructions.py).

Their prerequisites, bench/minimal.p4 beside the full program, the frame
they send and how each program is set up, and the harness: a namespace with
two veth ports (switch side sw1/sw2, host side h1/h2) in which the script
runs again with `--inside` and the minimal program's files.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from p4handoff import netns
from p4handoff.bmv2 import Bmv2Error, bmv2_available, compile_p4, veth_port
from p4handoff.wire import load_constants

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
BENCH_BUILD = BUILD / "bench"
MINIMAL_P4 = ROOT / "bench" / "minimal.p4"
BS_JSON, BS_P4INFO = BUILD / "bs.json", BUILD / "bs.p4info.txtpb"
INSTALLED_MD = Path("/opt/p4build/INSTALLED.md")
PROGRAMS = ("minimal", "pipeline")


def rx_packets(ifname: str) -> int:
    """Received-packet counter of an interface in this process's namespace (/proc/net/dev)."""
    for line in Path("/proc/net/dev").read_text().splitlines()[2:]:
        name, _, fields = line.partition(":")
        if name.strip() == ifname:
            return int(fields.split()[1])
    raise RuntimeError(f"no interface {ifname} in /proc/net/dev")


def bench_frame() -> bytes:
    """CH -> MH, 106 bytes: the pipeline's routed access-port path."""
    from scapy.all import IP, UDP, Ether, Raw
    return bytes(Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:01:01") / IP(src="10.9.0.1", dst="10.1.0.10")
                 / UDP(sport=5000, dport=6000) / Raw(bytes(64)))


def program_switch(grpc_addr: str, program: str, minimal: tuple[Path, Path]) -> None:
    """Load `program` ("minimal": port 1 -> 2; "pipeline": bs.p4 routing to an M-RED access port)."""
    from p4handoff.controller.aqm_tables import PortAqm, RedParams, port_entries
    from p4handoff.controller.p4runtime import P4RuntimeClient, TableEntry, UpdateType
    from p4handoff.wire import AQM_MODE_MRED

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


def prerequisite_problems(tools: tuple[str, ...] = ()) -> list[str]:
    """Why the pipeline benchmarks cannot run here (BMv2, build output, namespaces, `tools`); empty if they can."""
    available, reason = bmv2_available()
    problems = [reason] if not available else []
    if not (BS_JSON.exists() and BS_P4INFO.exists()):
        problems.append(f"{BS_JSON.relative_to(ROOT)} missing: run `make build`")
    no_netns = netns.unavailable_reason()
    if no_netns:
        problems.append(no_netns)
    problems += [f"{tool} not on PATH" for tool in tools if shutil.which(tool) is None]
    return problems


def run_inside(script: Path, label: str, args: list[str], budget: float, tools: tuple[str, ...] = ()) -> int:
    """Check the prerequisites, compile minimal.p4, build the two-port namespace and run
    `script --inside ... args` in it; print the BMv2 build. 2 (with the reason on stderr) if it cannot run."""
    problems = prerequisite_problems(tools)
    if problems:
        print(f"{script.stem}: cannot run: " + "; ".join(problems), file=sys.stderr)
        return 2
    try:
        minimal_p4info, minimal_json = compile_p4(MINIMAL_P4, BENCH_BUILD)
    except Bmv2Error as exc:
        print(f"{script.stem}: {exc}", file=sys.stderr)
        return 2
    with netns.Sandbox(label) as sandbox:
        ns = sandbox.namespace("sw")
        for n in (1, 2):
            veth_port(f"sw{n}", ns, f"h{n}", switch_netns=ns)
        done = subprocess.run(["ip", "netns", "exec", ns.name, sys.executable, str(script.resolve()), "--inside",
                               "--minimal-p4info", str(minimal_p4info), "--minimal-json", str(minimal_json), *args],
                              timeout=budget, text=True, stdout=sys.stdout, stderr=sys.stderr)
    print(f"bmv2_build: {bmv2_build()}")
    return done.returncode
