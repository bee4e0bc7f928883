"""The wireless-link emulator process: two interfaces bridged through a `LinkModel` each way.

The kernel here has no netem, so delay, loss and outages are added in user
space: frames arriving on one interface (AF_PACKET, every frame whatever
its MAC) are scheduled by the model and sent out of the other interface
when their arrival time comes. One thread, one `select` loop: it sleeps
until the next frame is due, a frame arrives, a scheduled event (outage,
new parameters) falls due, or a command arrives on the control stream.

"mh side" and "bs side" name the two interfaces as the lab wires them;
`down` is the bs → mh direction (the cell's downlink), `up` the reverse.

Commands (one per line on the control stream; each is answered with one
JSON line): `down` / `up` (link down / up, both directions), `set DIR
key=value ...` (DIR = down|up|both; keys rate, delay, loss, limit; rate
in b/s or "none"), `stats`, `quit`.
"""
from __future__ import annotations

import json
import os
import random
import select
import socket
import time
from dataclasses import asdict, dataclass
from typing import IO, Any

from p4handoff.topo.emulator.model import LinkModel, LinkParams

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_IGNORE_OUTGOING = 23
ETH_HEADER = 14
MAX_FRAME = 65536
BATCH = 64            # frames read from one socket before looking at the clock again


@dataclass(frozen=True)
class Event:
    """A scheduled change, `t` seconds after the time origin."""

    t: float
    cmd: str                           # down | up | set
    direction: str = "both"            # for set: down | up | both
    params: tuple[tuple[str, Any], ...] = ()


def parse_params(base: LinkParams, items: dict[str, Any]) -> LinkParams:
    """`base` with the given keys replaced (ValueError naming a bad key or value)."""
    values = asdict(base)
    for key, raw in items.items():
        key = "rate_bps" if key == "rate" else key
        if key not in values:
            raise ValueError(f"unknown link parameter {key!r} (rate, delay, loss, limit)")
        if key == "rate_bps":
            values["rate_bps"] = None if raw in (None, "none", 0, "0") else float(raw)
        elif key == "limit":
            values["limit"] = int(raw)
        else:
            values[key] = float(raw)
    return LinkParams(**values).check()


def parse_schedule(rows: Any) -> list[Event]:
    """[{"t": 10, "cmd": "down"}, {"t": 10.5, "cmd": "up"}, {"t": 20, "cmd": "set", "dir": "down", "rate": 1e6}]"""
    if not isinstance(rows, list):
        raise ValueError("a schedule is a JSON list of events")
    events = []
    for k, row in enumerate(rows):
        if not isinstance(row, dict) or "t" not in row or row.get("cmd") not in ("down", "up", "set"):
            raise ValueError(f"schedule[{k}]: need {{t, cmd: down|up|set, ...}}, got {row!r}")
        t = float(row["t"])
        if t < 0:
            raise ValueError(f"schedule[{k}]: t must not be negative")
        direction = row.get("dir", "both")
        if direction not in ("down", "up", "both"):
            raise ValueError(f"schedule[{k}]: dir must be down, up or both")
        params = tuple((key, v) for key, v in row.items() if key not in ("t", "cmd", "dir"))
        if row["cmd"] == "set":
            parse_params(LinkParams(None), dict(params))  # validate now, not mid-run
        events.append(Event(t, row["cmd"], direction, params))
    return sorted(events, key=lambda e: e.t)


def packet_socket(ifname: str) -> socket.socket:
    """A non-blocking AF_PACKET socket on `ifname` that sees every frame arriving there, and not our own sends."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    try:
        sock.bind((ifname, ETH_P_ALL))
        ifindex = socket.if_nametoindex(ifname)
        mreq = ifindex.to_bytes(4, "little") + PACKET_MR_PROMISC.to_bytes(2, "little") + bytes(10)
        sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
        sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


class Bridge:
    """The emulator: `run()` until `quit`, end of input on a closed control stream, or `stop()`."""

    def __init__(self, mh_side: str, bs_side: str, down: LinkParams, up: LinkParams, *, seed: int = 0,
                 schedule: list[Event] | None = None, t0: float | None = None,
                 control: IO[str] | None = None, reply: IO[str] | None = None) -> None:
        self.mh_sock = packet_socket(mh_side)
        try:
            self.bs_sock = packet_socket(bs_side)
        except OSError:
            self.mh_sock.close()
            raise
        self.names = (mh_side, bs_side)
        self.down: LinkModel[bytes] = LinkModel(down, random.Random(f"{seed}/down"))
        self.up: LinkModel[bytes] = LinkModel(up, random.Random(f"{seed}/up"))
        self.schedule = list(schedule or [])
        self.t0 = time.monotonic() if t0 is None else t0
        self.control = control
        self.reply = reply
        self.running = False
        self.send_errors = 0

    # -- changes --------------------------------------------------------------------
    def apply(self, cmd: str, direction: str = "both", params: dict[str, Any] | None = None) -> None:
        now = time.monotonic()
        models = {"down": [self.down], "up": [self.up], "both": [self.down, self.up]}[direction]
        for m in models:
            if cmd == "down":
                m.set_down(now)
            elif cmd == "up":
                m.set_up(now)
            else:
                m.set_params(parse_params(m.params, params or {}))

    def stats(self) -> dict[str, Any]:
        return {"down": asdict(self.down.stats), "up": asdict(self.up.stats), "send_errors": self.send_errors,
                "link_up": self.down.up}

    def _command(self, line: str) -> bool:
        """Handle one control line; False on `quit`."""
        words = line.split()
        if not words:
            return True
        try:
            if words[0] == "quit":
                self._answer({"ok": True})
                return False
            if words[0] in ("down", "up") and len(words) == 1:
                self.apply(words[0])
            elif words[0] == "set" and len(words) >= 3 and words[1] in ("down", "up", "both"):
                params = {}
                for item in words[2:]:
                    key, sep, value = item.partition("=")
                    if not sep:
                        raise ValueError(f"expected key=value, got {item!r}")
                    params[key] = value
                self.apply("set", words[1], params)
            elif words[0] == "stats":
                self._answer({"ok": True, **self.stats()})
                return True
            else:
                raise ValueError(f"unknown command {line.strip()!r} (down, up, set DIR k=v..., stats, quit)")
            self._answer({"ok": True})
        except ValueError as exc:
            self._answer({"ok": False, "error": str(exc)})
        return True

    def _answer(self, body: dict[str, Any]) -> None:
        if self.reply is not None:
            self.reply.write(json.dumps(body) + "\n")
            self.reply.flush()

    # -- the loop ---------------------------------------------------------------------
    def _send(self, sock: socket.socket, frames: list[bytes], model: LinkModel[bytes]) -> None:
        for frame in frames:
            try:
                sock.send(frame)
                model.stats.bytes_delivered += len(frame)
            except BlockingIOError:
                self.send_errors += 1   # the interface's queue is full: the frame is lost, as on a real NIC
            except OSError:
                self.send_errors += 1

    def _receive(self, sock: socket.socket, model: LinkModel[bytes]) -> None:
        for _ in range(BATCH):
            try:
                frame = sock.recv(MAX_FRAME)
            except BlockingIOError:
                return
            model.offer(frame, max(len(frame) - ETH_HEADER, 0), time.monotonic())

    def run(self, duration: float | None = None) -> dict[str, Any]:
        """Bridge until stopped (or for `duration` seconds); returns the final statistics."""
        self.running = True
        end = None if duration is None else time.monotonic() + duration
        ctl_fd = self.control.fileno() if self.control is not None else None
        rfds = [self.mh_sock, self.bs_sock] + ([ctl_fd] if ctl_fd is not None else [])
        buf = ""
        while self.running:
            now = time.monotonic()
            while self.schedule and self.t0 + self.schedule[0].t <= now:
                ev = self.schedule.pop(0)
                self.apply(ev.cmd, ev.direction, dict(ev.params))
            self._send(self.mh_sock, self.down.due(now), self.down)
            self._send(self.bs_sock, self.up.due(now), self.up)
            if end is not None and now >= end:
                break
            wake = [t for t in (self.down.next_due(), self.up.next_due(), end,
                                self.t0 + self.schedule[0].t if self.schedule else None) if t is not None]
            timeout = max(0.0, min(wake) - time.monotonic()) if wake else 1.0
            ready, _, _ = select.select(rfds, [], [], timeout)
            for r in ready:
                if r is self.bs_sock:
                    self._receive(self.bs_sock, self.down)
                elif r is self.mh_sock:
                    self._receive(self.mh_sock, self.up)
                else:
                    assert ctl_fd is not None     # the one other descriptor in rfds is the control stream's
                    data = os.read(ctl_fd, 4096).decode(errors="replace")
                    if not data:
                        rfds.remove(ctl_fd)   # control stream closed: keep bridging until stopped
                        continue
                    buf += data
                    while "\n" in buf:
                        line, buf = buf.split("\n", 1)
                        if not self._command(line):
                            self.running = False
        return self.stats()

    def stop(self) -> None:
        self.running = False

    def close(self) -> None:
        self.mh_sock.close()
        self.bs_sock.close()
