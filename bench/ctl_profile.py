"""Where a handoff's time goes in the controller: bench/controller.py's `--profile` (docs/controller.md).

The daemon runs as `p4handoff ctl run --profile FILE` (cProfile of its one
thread, which handles every event and applies every effect); SIGUSR1 at the
start of a phase discards what came before it, so the stats are the phase's.
A stage is the cumulative time of one function in that thread, per handoff:
a stage includes the log lines and packet-outs it makes (listed again on
their own). cProfile adds per-call overhead; read the shares, not the
absolute figures, on a loaded machine.
"""
from __future__ import annotations

import os
import pstats
import signal
import subprocess
import time
from pathlib import Path

# (label, file suffix, function[s]): a stage's time is the sum over its functions
STAGES: list[tuple[str, str, str | tuple[str, ...]]] = [
    ("daemon loop (all of the phase)", "controller/daemon.py", "_step"),
    ("  waiting for an event (idle)", "queue.py", "get"),
    ("  packet-ins handled as a batch (_on_packet_ins)", "controller/daemon.py", "_on_packet_ins"),
    ("    registration: parse, authenticate, decide", "controller/punts.py", "registration"),
    ("      authentication (guard.check)", "controller/registration_auth.py", "check"),
    ("      decision (Mobility.registration)", "controller/mobility.py", "registration"),
    ("      replay journal (guard.admitted)", "controller/registration_auth.py", "admitted"),
    ("    returned markers, punts (Mobility.packet_in)", "controller/mobility.py", "packet_in"),
    ("    applying the batch (_flush)", "controller/daemon.py", "_flush"),
    ("      merging into steps (EffectBatch.steps)", "controller/effect_batch.py", "steps"),
    ("      P4Runtime Writes (write_step)", "controller/route_writes.py", "write_step"),
    ("        of which the RPCs (sending, waiting for the answers)", "controller/p4runtime/client.py",
     ("result", "_rpc")),
    ("      packet-outs (_send: replies, releases, markers, notes)", "controller/daemon.py", "_send"),
    ("        of which waiting for credit (_await_credit)", "controller/daemon.py", "_await_credit"),
    ("      release fences (_fence_releases)", "controller/daemon.py", "_fence_releases"),
    ("  timers (Mobility.on_time)", "controller/mobility.py", "on_time"),
    ("  operator requests (ctl status, detach)", "controller/daemon.py", "_on_request"),
    ("event log lines (JsonLog, within the above)", "controller/eventlog.py", "__call__"),
]


def phase_start(proc: subprocess.Popen) -> float:
    """Discard the daemon's profile so far; the wall clock at which the phase starts."""
    os.kill(proc.pid, signal.SIGUSR1)
    time.sleep(0.6)                  # the daemon's loop wakes at least every 0.5 s: the handler has run
    return time.time()


def stage_table(stats: pstats.Stats, handoffs: int,
                stages: list[tuple[str, str, str | tuple[str, ...]]] = STAGES) -> list[tuple[str, int, float]]:
    """(label, calls, µs per handoff) of every stage; 0 calls where it never ran."""
    rows = []
    table = stats.stats  # type: ignore[attr-defined]
    for label, suffix, funcs in stages:
        calls, cum = 0, 0.0
        for (path, _, name), (_, ncalls, _, ct, _) in table.items():
            if name in ((funcs,) if isinstance(funcs, str) else funcs) and path.endswith(suffix):
                calls, cum = calls + ncalls, cum + ct
        rows.append((label, calls, cum * 1e6 / handoffs))
    return rows


def report(phase: str, prof: Path, handoffs: int, top: int = 12) -> float:
    """Print the phase's stages and its functions with the most own time; returns the loop's µs per handoff."""
    stats = pstats.Stats(str(prof))
    rows = stage_table(stats, handoffs)
    print(f"# profile {phase}: {handoffs} handoffs, load {os.getloadavg()[0]:.2f}")
    print(f"# {'stage (cumulative, daemon thread)':66s} {'calls':>8s} {'µs/handoff':>11s}")
    for label, calls, us in rows:
        print(f"# {label:66s} {calls:8d} {us:11.0f}")
    print(f"# {'own time, top ' + str(top):66s} {'calls':>8s} {'µs/handoff':>11s}")
    table = stats.stats  # type: ignore[attr-defined]
    for (path, line, name), (_, ncalls, tt, _, _) in sorted(table.items(), key=lambda kv: -kv[1][2])[:top]:
        print(f"# {(Path(path).name + ':' + str(line) + ' ' + name)[:66]:66s} {ncalls:8d} {tt * 1e6 / handoffs:11.0f}")
    return rows[0][2]
