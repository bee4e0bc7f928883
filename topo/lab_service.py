"""The lab's buffer service (`p4handoff ctl bufsvc`), for a scenario with `topology.buffer_service`.

The service holds IPF's buffered packets outside the controller, on a port of
every switch (dbuf's design; docs/controller.md, "The buffer service on switch
ports"). In the lab it runs in the root namespace, beside the controller,
which reaches its control port on loopback; each switch's buffer port is a
veth whose other end is in the root namespace, named `sv<pid>-<k>` so that
no two runs' names clash. Deleting a switch's namespace removes its pair;
`close()` also deletes any left.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from p4handoff.bmv2 import veth_port
from p4handoff.controller.network_bufsvc import DEFAULT_KEY_NAME as KEY_NAME   # its entry in the run's key file
from p4handoff.netns import Namespace, Sandbox


class LabBufferService:
    """Wire it before the switches start (`wire`), start it before the controller (`start`), `close()` at the end."""

    def __init__(self, sandbox: Sandbox, out: Path, tag: str) -> None:
        self.sandbox = sandbox
        self.out = out
        self.tag = tag              # unique on this machine (the root-namespace interface names start with it)
        self.interfaces: dict[str, str] = {}     # switch -> the service's interface (root namespace)
        self.proc: subprocess.Popen | None = None
        self.log = out / "bufsvc.log"
        self.control = f"127.0.0.1:{_free_port()}"

    def wire(self, ports: dict[str, tuple[Namespace, str]]) -> None:
        """A veth from each switch's buffer port (its namespace, its interface) to the root namespace."""
        for k, (switch, (ns, ifname)) in enumerate(ports.items()):
            mine = f"{self.tag}-{k}"
            veth_port(mine, ns, ifname)      # this end in the root namespace, the switch's in its own
            self.interfaces[switch] = mine

    def description(self) -> dict[str, Any]:
        """What the run adds to the plan's `buffer_service` section of the controller's description."""
        return {"control": self.control, "key_name": KEY_NAME, "spool": str(self.out / "bufsvc.spool"),
                "interfaces": dict(self.interfaces)}

    def start(self, network: Path, timeout: float = 30.0) -> None:
        """Start the service on the description `network`; returns once it listens (its log says so)."""
        args = [sys.executable, "-m", "p4handoff", "ctl", "bufsvc", "--network", str(network), "--log", str(self.log)]
        with open(self.out / "bufsvc.stderr", "ab") as err:
            self.proc = subprocess.Popen(args, stdout=err, stderr=err, start_new_session=True)
        self.sandbox.processes.append(self.proc)     # the sandbox stops it by its PID at the end
        deadline = time.monotonic() + timeout
        while not self._listening():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"buffer service not listening within {timeout} s: "
                                   f"{(self.out / 'bufsvc.stderr').read_text()[-2000:]}")
            time.sleep(0.05)

    def _listening(self) -> bool:
        try:
            return '"event": "bufsvc_start"' in self.log.read_text()
        except FileNotFoundError:
            return False

    def close(self) -> None:
        """Delete the root-namespace ends still there (the sandbox stops the process)."""
        for ifname in self.interfaces.values():
            subprocess.run(["ip", "link", "del", ifname], capture_output=True, timeout=10, check=False)


def _free_port() -> int:
    """A TCP port on loopback that nothing listens on now (the service binds it moments later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
