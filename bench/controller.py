"""Handoff controller benchmark on BMv2 (`make bench-controller`).

Three simple_switch_grpc (gateway + 2 BSs, topo/testbed.py) and the real
`p4handoff ctl run`. Prints `name: value` lines:

  handoff_p50_ms / handoff_p99_ms  completion time of 100 handoffs (ping-pong
      bs1 <-> bs2), each with BUFFERED packets in the old BS's buffer:
      registration processed by the controller -> new BS delivering, buffer
      flushed (priority tunnel), gateway rerouted, all written to the switches
      (the `duration_ms` of each `handoff_active` log line); `_service`: the
      same through the buffer service
  handoffs_per_s  1000 registered MHs; RATE_MHS of them hand off at once
      (registrations sent back to back): handoffs / (last completion - first
      registration processed); rate_controller_cpu_ms_per_handoff / rate_switches_cpu_ms_per_handoff:
      the CPU time (user + system) the controller process and the three switches used over that phase, per
      handoff (what the rate would be bound by on a machine whose cores they had to themselves);
      rate_daemon_thread_cpu_ms_per_handoff: the daemon's own thread (the process's main thread) of that,
      rate_other_threads_cpu_ms_per_handoff: all its other threads (gRPC's, the sessions' stream receivers),
      the busiest six listed
  group_handoff_ms_k64_p50 / _p99  a group handoff (IPF's bus): 64 MHs, each
      with BUFFERED packets buffered, send their registrations together; the
      first registration sent -> the last of the 64 `handoff_active` (new BS
      delivering, its buffer flushed and drained, gateway rerouted); 20 groups
      ping-ponging bs1 <-> bs2; `_service_p50` / `_service_p99`: the same through the buffer service
      (`--service-window N`: its release window; `--packet-out-window N`: the controller's, in the rate and
      group runs); group_k64_lost / _service_lost: buffered packets of all
      the groups that did not reach their MH, and how many of them the new
      cell's M-RED limit counted (aqm_overflow_dropped, priority class; the
      rest were lost silently in a BMv2 egress queue)
  punt_pps / release_pps / pipeline_pps  the buffer path against the pipeline,
      on the same switches in one run: BURST packets sent back to back to a
      detached MH (punt_pps: their arrival rate at the buffer service, from the
      kernel's receive timestamps on the service's end of the old BS's port 4;
      `_controller`: first sent -> the controller's status showing all in its
      buffer, polled every 2 ms, as its buffer is behind gRPC), released when it
      registers at bs2 (release_pps: their arrival rate at the MH, from the
      kernel's receive timestamps), then the same burst forwarded by the
      pipeline gw -> bs2 -> MH (pipeline_pps, measured the same way)
  buffer_path_vs_pipeline  min(punt_pps, release_pps) / pipeline_pps of the same round
  (the three rates and the ratio: medians over ROUNDS bursts, the MH ping-ponging; each round printed
  with the 1-min load average.) Measured twice in one run: through the buffer service
  (`buffer_service`, `p4handoff ctl bufsvc` on port 4 of every switch: the unsuffixed names) and
  through the controller's packet-in / packet-out (the same names with `_controller`)
  load_at_start / load_at_end  the 1-min load average (the machine is shared)
  status_counters_p50_ms / _max_ms  `ctl status` with the switches' counters
      (one Read per switch on controller/port_counters.py's thread), 20 rounds
  flush64_ms      completion time of a handoff with a full 64-packet buffer
  punt_to_release_pps  buffered packets released per second during that flush
  p4rt_write100_ms  building and serialising a 100-entry WriteRequest (100 /32
      `ipv4_fwd` deliver routes, the client's own encoding), median of 50
  p4rt_parse100_ms  parsing that request's bytes, median of 50
  protobuf_backend  the protobuf implementation those two ran on
  inmem_handoff_us  the controller's CPU per handoff without BMv2 (bench/ctl_inmemory.py: the real daemon, its
      sessions' decoding and its clients' request building, against switches that answer at once): MOVERS of
      the 1000 MHs register at the other BS at once, median of 4 rounds (_min: the least); then one round
      profiled, printed per stage (`# ` lines); inmem_profiled_us: that round's daemon loop under cProfile,
      inmem_encode_share: the share of it encoding route entries
(the codec and in-memory figures need only build/bs.p4info.txtpb, not BMv2; `--inmemory`: only those)
`--only PART` (repeatable): only these parts: single (handoff_p*_ms, status), flush64, rate (handoffs_per_s),
  groups (controller path), groups-service, buffer-path (both kinds).
`--smoke`: 3 handoffs, 20 registered MHs, 2 groups of 8, bursts of 64 (the test suite's check that it runs).
`--profile`: the daemon of the single-MH and the handoffs/s runs is profiled (bench/ctl_profile.py), each
  run's handoffs only; where its time goes is printed per stage in µs per handoff (`profile_single_us`,
  `profile_rate_us`: the daemon loop's wall time per handoff, cProfile's overhead included).
"""
from __future__ import annotations

import argparse
import functools
import os
import socket
import statistics
import threading
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

from ctl_inmemory import measure as measure_inmemory  # noqa: E402
from ctl_profile import phase_start, report  # noqa: E402
from p4handoff.argtypes import whole_number  # noqa: E402
from p4handoff.controller.p4runtime import P4Info, TableEntry, UpdateType  # noqa: E402
from p4handoff.controller.p4runtime._protos import p4runtime_pb2  # noqa: E402
from p4handoff.controller.p4runtime.client import write_request  # noqa: E402
from p4handoff.topo.testbed import BUFSVC_IFACE, CELL_IFACE, ETH_P_ALL, PACKET_OUTGOING, Collector, Testbed, mh_ip, mh_name, \
    parse_udp_frame, received_seqs  # noqa: E402
from p4handoff.bmv2 import bmv2_available  # noqa: E402
from p4handoff.hosts.net.rawio import SO_TIMESTAMPNS, kernel_receive_time  # noqa: E402
from p4handoff.netns import Namespace, unavailable_reason  # noqa: E402
from p4handoff.wire import IP_PROTO_IPIP  # noqa: E402

BUFFERED = 10
PARTS = ("single", "single-service", "flush64", "rate", "groups", "groups-service", "buffer-path")
STATUS_ROUNDS = 20
SO_RCVBUFFORCE = 33       # Linux, <asm-generic/socket.h> (root: above rmem_max; the socket module does not name it)


def percentile(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s) + 0.5) - 1))]


def wait_handoffs(tb: Testbed, count: int, timeout: float) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        done = tb.log_events("handoff_active")
        if len(done) >= count:
            return done
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(done)}/{count} handoffs completed within {timeout} s")
        time.sleep(0.02)


def buffer_packets(tb: Testbed, i: int, n: int, first_seq: int) -> None:
    for k in range(n):
        tb.hosts["ch"].send(tb.data_frame(i, first_seq + k))
    tb.wait_for(lambda s: next(m for m in s["mobile_hosts"] if m["mh"] == mh_name(i))["buffer"] >= n, timeout=10)


def completion_times(workdir: Path, handoffs: int, profile: bool = False, service: bool = False) -> list[float]:
    tb = Testbed(workdir, n_mobiles=1, hold_time_ms=50, buffer_service=service)
    prof = workdir / "single.prof" if profile else None
    try:
        tb.start()
        tb.start_controller(profile=prof)
        tb.register(0, "bs1", 1)
        if tb.controller is not None and prof is not None:
            phase_start(tb.controller)
        cells = ["bs2", "bs1"]
        for k in range(handoffs):
            tb.ctl({"cmd": "detach", "mh": "mh1"})
            buffer_packets(tb, 0, BUFFERED, k * BUFFERED)
            tb.register(0, cells[k % 2], k + 2, wait_reply=0)
            wait_handoffs(tb, k + 1, 10)
            for port in tb.hosts.values():
                port.drain()
        if prof is not None:
            tb.stop_controller()
            print(f"profile_single_us: {report(f'single MH, {BUFFERED} packets buffered', prof, handoffs):.0f}")
            return [d["duration_ms"] for d in tb.log_events("handoff_active")]
        if service:
            return [d["duration_ms"] for d in tb.log_events("handoff_active")]
        status_ms = []
        for _ in range(STATUS_ROUNDS):
            t0 = time.perf_counter()
            tb.ctl({"cmd": "status", "counters": True})
            status_ms.append((time.perf_counter() - t0) * 1e3)
        print(f"status_counters_p50_ms: {percentile(status_ms, 50):.2f}")
        print(f"status_counters_max_ms: {max(status_ms):.2f}")
        return [d["duration_ms"] for d in tb.log_events("handoff_active")]
    finally:
        tb.close()


def flush_full_buffer(workdir: Path) -> tuple[float, float]:
    tb = Testbed(workdir, n_mobiles=1)
    try:
        tb.start()
        tb.start_controller()
        tb.register(0, "bs1", 1)
        tb.ctl({"cmd": "detach", "mh": "mh1"})
        buffer_packets(tb, 0, 64, 0)
        tb.register(0, "bs2", 2, wait_reply=0)
        [done] = wait_handoffs(tb, 1, 10)
        start = next(e for e in tb.log_events("handoff_start"))
        flush = [e for e in tb.log_events("flush")]
        released = sum(e["packets"] for e in flush)
        span = max(done["ts"] - start["ts"], 1e-6)
        return done["duration_ms"], released / span
    finally:
        tb.close()


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) the process has used so far."""
    return cpu_s_of(Path(f"/proc/{pid}/stat"))


def thread_cpu_s(pid: int) -> dict[int, float]:
    """CPU seconds per thread (by thread id) of the process so far; threads gone since are left out."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[int(task.name)] = cpu_s_of(task / "stat")
        except (OSError, ValueError):
            continue                     # ended meanwhile
    return out


def cpu_s_of(stat: Path) -> float:
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_of(tb: Testbed) -> tuple[float, float]:
    """CPU seconds used so far by the controller and by the three switches together: what a handoff costs
    whatever share of the cores the machine's load leaves them."""
    assert tb.controller is not None
    return cpu_s(tb.controller.pid), sum(cpu_s(sw.proc.pid) for sw in tb.switches.values() if sw.proc is not None)


def attach_all(tb: Testbed, n: int, rounds: int = 5) -> None:
    """Every MH registered at bs1 (the set-up, not measured): a registration the loaded machine dropped on its
    way (a switch's receive queue: 42 of 1,000 once) is sent again, with a new identification, up to `rounds`
    times, instead of waiting out the timeout."""
    pending = list(range(n))
    for r in range(rounds):
        for k, i in enumerate(pending):
            tb.register(i, "bs1", 1 if r == 0 else 1000 + r, wait_reply=0)    # not an ident the runs use
            if k % 100 == 99:
                time.sleep(0.05)                  # keep the punt queue of one BMv2 port from overflowing
        try:
            tb.wait_for(lambda st: all(m["phase"] == "attached" for m in st["mobile_hosts"]), timeout=10 + n / 100)
            return
        except TimeoutError:
            attached = {m["mh"] for m in tb.ctl({"cmd": "status", "counters": False})["mobile_hosts"]
                        if m["phase"] == "attached"}
            pending = [i for i in range(n) if mh_name(i) not in attached]
            print(f"# {len(pending)} of {n} MHs not attached after round {r + 1}: registering them again", flush=True)
    raise TimeoutError(f"{len(pending)} of {n} MHs could not be attached in {rounds} rounds")


def handoff_rate(workdir: Path, n_mobiles: int, movers: int, profile: bool = False,
                 packet_out_window: int | None = None) -> float:
    # its 1,000 MHs register in one cell within a second: far above a cell's punt budget (default 100/s)
    tb = Testbed(workdir, n_mobiles=n_mobiles, hold_time_ms=200, punt_budget={"packets_per_s": 10_000, "burst": 2_000},
                 packet_out_window=packet_out_window)
    prof = workdir / "rate.prof" if profile else None
    try:
        tb.start()
        tb.start_controller(timeout=120, profile=prof)
        attach_all(tb, n_mobiles)
        base = len(tb.log_events("handoff_active"))
        if tb.controller is not None and prof is not None:
            phase_start(tb.controller)
        assert tb.controller is not None
        cpu0, threads0 = cpu_of(tb), thread_cpu_s(tb.controller.pid)
        for i in range(movers):
            tb.register(i, "bs2", 2, wait_reply=0)
        done = wait_handoffs(tb, base + movers, 120)[base:]
        ctl_s, sw_s = (b - a for a, b in zip(cpu0, cpu_of(tb)))
        threads = thread_cpu_s(tb.controller.pid)
        print(f"rate_controller_cpu_ms_per_handoff: {ctl_s * 1e3 / movers:.2f}")
        print(f"rate_switches_cpu_ms_per_handoff: {sw_s * 1e3 / movers:.2f}")
        main = (threads.get(tb.controller.pid, 0.0) - threads0.get(tb.controller.pid, 0.0)) * 1e3 / movers
        others = sorted(((t - threads0.get(tid, 0.0)) * 1e3 / movers for tid, t in threads.items()
                         if tid != tb.controller.pid), reverse=True)
        print(f"rate_daemon_thread_cpu_ms_per_handoff: {main:.2f}")
        print(f"rate_other_threads_cpu_ms_per_handoff: {sum(others):.2f} (busiest: "
              f"{', '.join(f'{ms:.2f}' for ms in others[:6])})")
        starts = [e for e in tb.log_events("handoff_start")][-movers:]
        elapsed = max(d["ts"] for d in done) - min(s["ts"] for s in starts)
        if prof is not None:
            tb.stop_controller()
            print(f"profile_rate_us: {report(f'{n_mobiles} MHs, {movers} move at once', prof, movers):.0f}")
        return movers / elapsed
    finally:
        tb.close()


class Arrivals:
    """The correspondent's datagrams to one MH at a host port, each with the kernel's receive time
    (SO_TIMESTAMPNS): a burst's rate comes from when its packets arrived, not from when a reader on a
    busy machine got to them."""

    def __init__(self, ns: Namespace, iface: str, dst: str, tunnelled: bool = False) -> None:
        self.dst, self.tunnelled = dst, tunnelled  # tunnelled: IP-in-IP (a BS's tunnel into its buffer port)
        self.times: list[float] = []
        self.sock = ns.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock.bind((iface, 0))
        self.sock.settimeout(0.1)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data, anc, _, addr = self.sock.recvmsg(65535, 64)
            except (socket.timeout, OSError):
                continue
            if self.tunnelled and len(data) >= 54 and data[23] == IP_PROTO_IPIP:
                data = data[:14] + data[34:]
            u = parse_udp_frame(data)
            if addr[2] == PACKET_OUTGOING or u is None or u.dst != self.dst or u.dport != 5001:
                continue
            at = kernel_receive_time(anc)
            if at is not None:
                self.times.append(at)

    def rate(self, count: int, timeout: float = 10.0) -> float:
        """Packets/s over the burst (first to last arrival), once `count` arrived or none for 0.5 s."""
        t = self.times_of(count, timeout)
        return (len(t) - 1) / max(t[-1] - t[0], 1e-9)

    def times_of(self, count: int, timeout: float = 10.0) -> list[float]:
        """The arrival times, sorted, once `count` arrived or none for 0.5 s (at least two)."""
        deadline, seen, quiet = time.monotonic() + timeout, -1, time.monotonic()
        while len(self.times) < count and time.monotonic() < deadline and time.monotonic() - quiet < 0.5:
            if len(self.times) != seen:
                seen, quiet = len(self.times), time.monotonic()
            time.sleep(0.01)
        time.sleep(0.1)                   # stragglers
        self._stop.set()
        self._t.join(2)
        self.sock.close()
        t = sorted(self.times)
        if len(t) < 2:
            raise RuntimeError(f"{len(t)} of {count} packets arrived")
        return t


def all_buffered(status: dict, n: int) -> bool:
    return all(m["buffer"] >= n for m in status["mobile_hosts"])


def cell_overflow(tb: Testbed, cell: str) -> int:
    """Priority packets the cell's M-RED limit has dropped so far (its access port, 1): losses the switch counts."""
    port = next(p for p in tb.ctl({"cmd": "status"})["ports"] if p["switch"] == cell and p["port"] == 1)
    return int(port["counters"]["aqm_overflow_dropped"]["prio"])


def group_handoffs(workdir: Path, k: int, groups: int, service: bool = False, window: int | None = None,
                   packet_out_window: int | None = None) -> tuple[list[float], int, int]:
    """ms from the first of k registrations sent together to the last of their handoffs active, per group
    (`service`: the buffer path is the buffer service, `window` its release window); how many of the
    buffered packets did not reach their MH in all the groups (a faster flush must not buy its speed with
    losses), and how many of those the new cell's M-RED limit counted (the rest were lost silently: in a
    BMv2 egress queue, docs/controller.md, "Where a group's flush was lost")."""
    tb = Testbed(workdir, n_mobiles=k, hold_time_ms=50, buffer_service=service, service_window=window,
                 packet_out_window=packet_out_window)
    lost = counted = 0
    try:
        tb.start()
        tb.start_controller(timeout=120)
        attach_all(tb, k)
        cells = ["bs2", "bs1"]
        spans = []
        for g in range(groups):
            for i in range(k):
                tb.ctl({"cmd": "detach", "mh": mh_name(i)})
            for seq in range(BUFFERED):           # a round per packet: a burst of k * BUFFERED would overflow
                for i in range(k):                # the switch's receive queue while it punts
                    tb.hosts["ch"].send(tb.data_frame(i, g * BUFFERED + seq))
                tb.wait_for(functools.partial(all_buffered, n=seq + 1), timeout=30)
            base = len(tb.log_events("handoff_active"))
            port = tb.hosts[CELL_IFACE[cells[g % 2]]]
            port.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 1 << 24)   # a group's burst, not dropped here
            cell = Collector(port)
            overflow = cell_overflow(tb, cells[g % 2])
            t0 = time.time()
            for i in range(k):
                tb.register(i, cells[g % 2], g + 2, wait_reply=0)
            done = wait_handoffs(tb, base + k, 60)[base:]
            spans.append((max(d["ts"] for d in done) - t0) * 1e3)
            seen = -1
            while len(cell.timed) != seen:           # until nothing more arrives for 0.3 s (the holds expire too)
                seen = len(cell.timed)
                time.sleep(0.3)
            frames = cell.stop()
            lost += sum(len(set(range(g * BUFFERED, (g + 1) * BUFFERED))
                            - {s for s, _ in received_seqs(frames, mh_ip(i))}) for i in range(k))
            counted += cell_overflow(tb, cells[g % 2]) - overflow
            for port in tb.hosts.values():
                port.drain()
        return spans, lost, counted
    finally:
        tb.close()


def buffer_path(workdir: Path, burst: int, rounds: int, service: bool = False) -> tuple[float, float, float, float]:
    """Medians over `rounds` of (punt_pps, release_pps, pipeline_pps, min(punt, release) / pipeline), each
    round one burst of `burst` packets (module doc), the MH ping-ponging bs1 <-> bs2: on a loaded machine the
    rate of the moment varies more than the two paths differ, so each ratio is of the same round.
    `service`: the buffer path is the buffer service (`buffer_service`), else the controller's packet-in/out."""
    tb = Testbed(workdir, n_mobiles=1, per_mh_packets=burst, buffer_service=service)
    rows = []
    try:
        tb.start()
        tb.start_controller()
        tb.register(0, "bs1", 1)
        cells = ["bs2", "bs1"]
        for r in range(rounds):
            tb.ctl({"cmd": "detach", "mh": "mh1"})
            frames = [tb.data_frame(0, seq) for seq in range(2 * r * burst, 2 * (r + 1) * burst)]
            # the service's side of the old BS's buffer port: the burst's arrival there, as the pipeline's is
            # taken at the MH (the controller path's buffer is behind gRPC: only the polled rate exists for it)
            tapped = Arrivals(tb.fab, BUFSVC_IFACE[cells[(r + 1) % 2]], mh_ip(0), tunnelled=True) if service else None
            t0 = time.monotonic()
            for f in frames[:burst]:
                tb.hosts["ch"].send(f)
            # a burst can overflow a switch's receive queue: count what came. The tap times the service's burst;
            # polling the controller as often as its own path needs would take CPU from the switches meanwhile
            poll = 0.05 if tapped is not None else 0.002
            buffered, t_last = 0, t0
            while buffered < burst and time.monotonic() - t_last < 0.5:
                n = tb.mh_status(0)["buffer"]
                if n > buffered:
                    buffered, t_last = n, time.monotonic()
                time.sleep(poll)
            if buffered < 2:
                raise RuntimeError(f"{buffered} of {burst} packets reached the buffer")
            if tapped is not None:
                t = tapped.times_of(buffered, timeout=1.0)
                punt = (min(len(t), buffered) - 1) / max(t[-1] - t[0], 1e-9)  # one the service lost did not arrive
            else:
                punt = buffered / (t_last - t0)
            cell = cells[r % 2]
            released = Arrivals(tb.mh_ns, CELL_IFACE[cell], mh_ip(0))
            tb.register(0, cell, r + 2, wait_reply=0)
            wait_handoffs(tb, r + 1, 30)
            release = released.rate(buffered)
            time.sleep(0.1)
            forwarded = Arrivals(tb.mh_ns, CELL_IFACE[cell], mh_ip(0))
            for f in frames[burst:]:
                tb.hosts["ch"].send(f)
            pipeline = forwarded.rate(burst)
            rows.append((punt, release, pipeline, min(punt, release) / pipeline))
            print(f"# {'service' if service else 'controller'} buffer path round {r}: {buffered} of {burst} "
                  f"buffered, {len(forwarded.times)} forwarded; punt {punt:.0f}, release "
                  f"{release:.0f}, pipeline {pipeline:.0f} pps, ratio {rows[-1][3]:.3f}, load "
                  f"{os.getloadavg()[0]:.2f}", flush=True)
    finally:
        tb.close()
    punt, release, pipeline, ratio = (statistics.median(col) for col in zip(*rows))
    return punt, release, pipeline, ratio


def p4rt_codec_ms(p4info_path: Path, entries: int = 100, rounds: int = 50) -> tuple[float, float]:
    """Median ms to build+serialise an `entries`-entry WriteRequest, and to parse it back."""
    p4info = P4Info.load(p4info_path)
    routes = [TableEntry("ipv4_fwd", {"dst_addr": f"10.{i >> 8}.{i & 255}.1/32"}, "deliver",
                         {"port": 1 + i % 4, "src_mac": "02:00:00:00:00:01", "dst_mac": f"02:00:00:00:{i >> 8:02x}:{i & 255:02x}"})
              for i in range(entries)]
    write, parse = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        data = write_request(lambda: p4info, 0, (1, 0), ((UpdateType.INSERT, e) for e in routes)).SerializeToString()
        t1 = time.perf_counter()
        parsed = p4runtime_pb2.WriteRequest.FromString(data)
        t2 = time.perf_counter()
        assert len(parsed.updates) == entries
        write.append((t1 - t0) * 1e3)
        parse.append((t2 - t1) * 1e3)
    return statistics.median(write), statistics.median(parse)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--handoffs", type=whole_number(1), default=100)
    ap.add_argument("--mobiles", type=whole_number(1), default=1000)
    ap.add_argument("--movers", type=whole_number(1), default=200)
    ap.add_argument("--group", type=whole_number(1), default=64, help="MHs per group handoff")
    ap.add_argument("--groups", type=whole_number(1), default=20)
    ap.add_argument("--burst", type=whole_number(1), default=512, help="packets through the buffer path")
    ap.add_argument("--rounds", type=whole_number(1), default=7, help="buffer path bursts (medians)")
    ap.add_argument("--service-window", type=whole_number(1), default=None,
                    help="the buffer service's release window in the group runs (default: the description's, 32)")
    ap.add_argument("--packet-out-window", type=whole_number(1), default=None,
                    help="the controller's packet_out_window in the rate and group runs (default: the description's)")
    ap.add_argument("--only", choices=PARTS, action="append", help="run only this part (repeatable; module doc)")
    ap.add_argument("--smoke", action="store_true", help="3 handoffs, 20 MHs, 10 movers, 2 groups of 8 (tests)")
    ap.add_argument("--inmemory", action="store_true",
                    help="only what needs no BMv2: the codec figures and the in-memory handoff path (module doc)")
    ap.add_argument("--profile", action="store_true",
                    help="only the single-MH and handoffs/s runs, their daemon profiled (module doc)")
    args = ap.parse_args()
    if args.smoke:
        args.handoffs, args.mobiles, args.movers = 3, 20, 10
        args.group, args.groups, args.burst, args.rounds = 8, 2, 64, 2
    p4info_path = REPO / "build" / "bs.p4info.txtpb"
    if p4info_path.exists():
        from google.protobuf.internal import api_implementation
        write_ms, parse_ms = p4rt_codec_ms(p4info_path)
        print(f"p4rt_write100_ms: {write_ms:.3f}")
        print(f"p4rt_parse100_ms: {parse_ms:.3f}")
        print(f"protobuf_backend: {api_implementation.Type()}")
        print(f"load_before_inmemory: {os.getloadavg()[0]:.2f}")
        n, movers, rounds = (100, 20, 2) if args.smoke else (args.mobiles, args.movers, 4)
        for name, value in measure_inmemory(n, movers, rounds).items():
            print(f"{name}: {value:.3f}")
    if args.inmemory:
        return 0
    ok, why = bmv2_available()
    reasons = [why] if not ok else []
    if not (REPO / "build" / "bs.json").exists():
        reasons.append("build/bs.json missing: p4c-bm2-ss not installed or 'make build' not run")
    netns = unavailable_reason()
    if netns:
        reasons.append(netns)
    if reasons:
        print("bench-controller: cannot run: " + "; ".join(reasons), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="p4h-bench-ctl-") as tmp:
        tmp_path = Path(tmp)
        print(f"load_at_start: {os.getloadavg()[0]:.2f}")
        if args.profile:
            profiled(tmp_path, args)
            print(f"load_at_end: {os.getloadavg()[0]:.2f}")
            return 0
        parts = set(args.only or PARTS)
        figures(tmp_path, args, parts)
        for service in (False, True) if "buffer-path" in parts else ():
            punt, release, pipeline, ratio = buffer_path(tmp_path / f"e{int(service)}", args.burst, args.rounds,
                                                         service)
            tag = "" if service else "_controller"
            print(f"punt_pps{tag}: {punt:.0f}")
            print(f"release_pps{tag}: {release:.0f}")
            print(f"pipeline_pps{tag}: {pipeline:.0f}")
            print(f"buffer_path_vs_pipeline{tag}: {ratio:.3f}")
        print(f"load_at_end: {os.getloadavg()[0]:.2f}")
    return 0


def profiled(tmp_path: Path, args: argparse.Namespace) -> None:
    """The single-MH and handoffs/s runs with the daemon profiled (`--profile`)."""
    times = completion_times(tmp_path / "a", args.handoffs, profile=True)
    print(f"handoff_p99_ms: {percentile(times, 99):.2f}")
    print(f"handoffs_per_s: {handoff_rate(tmp_path / 'c', args.mobiles, args.movers, profile=True):.1f}")


def figures(tmp_path: Path, args: argparse.Namespace, parts: set[str]) -> None:
    """Everything but the buffer path (module doc) that `parts` names, in one run."""
    for service in ("single" in parts and (False,) or ()) + ("single-service" in parts and (True,) or ()):
        times = completion_times(tmp_path / f"a{int(service)}", args.handoffs, service=service)
        tag = "_service" if service else ""
        print(f"handoffs_measured{tag}: {len(times)}")
        print(f"handoff_p50_ms{tag}: {percentile(times, 50):.2f}")
        print(f"handoff_p99_ms{tag}: {percentile(times, 99):.2f}")
        print(f"handoff_mean_ms{tag}: {statistics.fmean(times):.2f}")
    if "flush64" in parts:
        flush_ms, pps = flush_full_buffer(tmp_path / "b")
        print(f"flush64_ms: {flush_ms:.2f}")
        print(f"punt_to_release_pps: {pps:.0f}")
    if "rate" in parts:
        rate = handoff_rate(tmp_path / "c", args.mobiles, args.movers, packet_out_window=args.packet_out_window)
        print(f"registered_mhs: {args.mobiles}")
        print(f"handoffs_per_s: {rate:.1f}")
    for service in ("groups" in parts and (False,) or ()) + ("groups-service" in parts and (True,) or ()):
        groups, lost, counted = group_handoffs(tmp_path / f"d{int(service)}", args.group, args.groups,
                                               service=service, window=args.service_window if service else None,
                                               packet_out_window=args.packet_out_window)
        tag = "_service" if service else ""
        if not service:
            print(f"groups_measured: {len(groups)} of {args.group} MHs, {BUFFERED} packets buffered each")
        else:
            print(f"service_window: {args.service_window or 'default'}")
        print(f"group_handoff_ms_k{args.group}{tag}_p50: {percentile(groups, 50):.2f}")
        print(f"group_handoff_ms_k{args.group}{tag}_p99: {percentile(groups, 99):.2f}")
        print(f"group_k{args.group}{tag}_lost: {lost} of {len(groups) * args.group * BUFFERED} "
              f"({counted} counted at the new cell's M-RED limit)")


if __name__ == "__main__":
    sys.exit(main())
