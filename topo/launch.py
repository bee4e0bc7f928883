"""Start the controller daemon (`p4handoff ctl run`, the real command line) and wait until it serves.

The controller testbed (p4handoff.topo.testbed) and the lab (p4handoff.topo.rig, whose
chaos faults kill and restart the controller through it) both start it here, so
both wait for the same thing: the daemon answers `status` on its control socket
and reports every switch of its description up.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from p4handoff.controller.control import ControlError, request
from p4handoff.netns import Sandbox, Namespace

POLL_INTERVAL = 0.2   # seconds between status requests while the daemon starts


def launch_controller(network: Path, *, socket_path: str, log: Path, stderr: Path, sandbox: Sandbox,
                      netns: Namespace | None = None, timeout: float = 60.0,
                      startup_timeout: float | None = None, switches_timeout: float | None = None,
                      profile: Path | None = None) -> subprocess.Popen:
    """Start the daemon on `network` and return it once it serves with every switch up.

    It runs in `netns` (else the root namespace) in a process group of its own,
    remembered by `sandbox` so `sandbox.close()` stops it; its output is appended to
    `stderr`, its event log written to `log`. If it exits, or is not serving with
    every switch up within `timeout` seconds, it is stopped and the error says why
    (the end of its output; no answer on its socket, or the switches not up).
    `switches_timeout` bounds the switches' wait from the daemon's first answer
    instead, however long a loaded machine took to start it. `startup_timeout`
    is the daemon's `--startup-timeout` (how long it waits for its switches
    before it serves; its default where None); `profile` its `--profile`.
    """
    args = [sys.executable, "-m", "p4handoff", "ctl", "run", "--network", str(network), "--log", str(log)]
    if startup_timeout is not None:
        args += ["--startup-timeout", str(startup_timeout)]
    if profile is not None:
        args += ["--profile", str(profile)]
    with open(stderr, "ab") as out:
        if netns is not None:
            proc = sandbox.start(netns, args, stdout=out, stderr=out)
        else:
            proc = subprocess.Popen(args, stdout=out, stderr=out, start_new_session=True)
            sandbox.processes.append(proc)
    try:
        _wait_serving(proc, socket_path, stderr, timeout, switches_timeout)
    except BaseException:
        sandbox.stop(proc, timeout=10)
        raise
    return proc


def _wait_serving(proc: subprocess.Popen, socket_path: str, stderr: Path, timeout: float,
                  switches_timeout: float | None) -> None:
    deadline = time.monotonic() + timeout
    down: list[str] | None = None       # the switches not up at the last answer; None: no answer yet
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"controller exited with {proc.returncode}: {stderr.read_text()[-2000:]}")
        try:
            status = request(socket_path, {"cmd": "status", "counters": False})
        except ControlError:
            time.sleep(POLL_INTERVAL)
            continue
        if down is None and switches_timeout is not None:
            deadline = time.monotonic() + switches_timeout
        down = [s["name"] for s in status["switches"] if s["state"] != "up"]
        if not down:
            return
        time.sleep(POLL_INTERVAL)
    if down is None:
        raise TimeoutError(f"controller not answering on {socket_path} within {timeout} s")
    waited = timeout if switches_timeout is None else switches_timeout
    raise TimeoutError(f"controller serving, but switches not up within {waited} s: {', '.join(down)}")
