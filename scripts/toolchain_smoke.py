"""The smoke test that ends `make toolchain` (scripts/toolchain.sh): the installed tools through the project.

Compiles the v1model program with p4c-bm2-ss, starts simple_switch_grpc on loopback (no ports), pushes the
pipeline with the project's own P4Runtime client, reads a table, asks the Thrift CLI for the ports, and
stops the switch by its PID. The tools are taken from PATH (the script puts $PREFIX/bin first).
Prints `smoke: ...` lines; exits non-zero on any failure.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from p4handoff.bmv2 import Bmv2Switch, compile_p4  # noqa: E402
from p4handoff.controller.p4runtime.client import P4RuntimeClient  # noqa: E402

PROGRAM = REPO / "p4src" / "v1model" / "bs.p4"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prefix", default="/usr/local", help="for the message only: where the tools are")
    args = parser.parse_args()
    for tool in ("p4c-bm2-ss", "simple_switch_grpc", "simple_switch_CLI"):
        print(f"smoke: {tool} = {shutil.which(tool)}")
    source = PROGRAM
    with tempfile.TemporaryDirectory(prefix="p4h-toolchain-smoke-") as tmp:
        t0 = time.monotonic()
        p4info, config = compile_p4(source, tmp, include_dirs=[REPO / "p4src" / "include"])
        print(f"smoke: compiled {source.relative_to(REPO)} in {time.monotonic() - t0:.1f} s")
        switch = Bmv2Switch({}, log_path=Path(tmp) / "switch.log")
        switch.start()
        try:
            print(f"smoke: simple_switch_grpc pid {switch.pid}, P4Runtime at {switch.grpc_addr}")
            with P4RuntimeClient(switch.grpc_addr) as client:
                client.set_pipeline(p4info, config)
                tables = [t.preamble.name for t in client.p4info.proto.tables]
                if not tables:
                    raise SystemExit("smoke: FAILED: the pipeline has no table")
                entries = client.read_table(tables[0])
                print(f"smoke: pipeline pushed ({len(tables)} tables); read {tables[0]}: {len(entries)} entries")
            ports = switch.cli.run(["show_ports"])
            print(f"smoke: simple_switch_CLI (Thrift) answered show_ports ({len(ports[0].splitlines())} lines)")
        finally:
            pid, status = switch.pid, switch.stop()
        print(f"smoke: switch pid {pid} stopped (exit status {status})")
    print(f"smoke: ok ({args.prefix})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
