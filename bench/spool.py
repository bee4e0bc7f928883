"""Cost of the buffer spool (controller/spool.py) per buffered packet: push + release, with and without it.

    .venv/bin/python bench/spool.py [--smoke]     (--smoke: 200 packets per case, the test suite's check)
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from p4handoff.controller.buffer import BufferPool
from p4handoff.controller.spool import Spool

PACKET = bytes(1000)


def per_packet_us(fsync: bool | None, n: int) -> float:
    with tempfile.TemporaryDirectory() as d:
        spool = None if fsync is None else Spool(Path(d) / "s.spool", fsync)
        if spool is not None:
            spool.open()
        pool = BufferPool(n, spool)
        pool.add_mh("a", n)
        t = time.perf_counter()
        for _ in range(n):
            pool.push("a", PACKET)
        for i in range(n):
            pool.pop_main("a")
            if i % 16 == 15:            # the daemon commits once per handled event; a flush releases many
                pool.commit()
        pool.commit()
        dt = time.perf_counter() - t
        if spool is not None:
            spool.close()
    return dt / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="200 packets per case (tests)")
    args = parser.parse_args()
    for label, fsync, n in (("no spool", None, 20000), ("spool", False, 20000), ("spool + fsync", True, 1000)):
        n = min(n, 200) if args.smoke else n
        print(f"{label:<14} {per_packet_us(fsync, n):8.1f} us per packet (push + release, 1000 B)")


if __name__ == "__main__":
    main()
