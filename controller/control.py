"""The daemon's local control channel: a unix socket, one JSON request and one JSON reply per connection.

A unix socket (not TCP) because only local operators and lab scripts may
move mobile hosts: file permissions decide who, and nothing listens on the
network. Request: one line `{"cmd": "status" | "handoff" | "detach" | "entries", ...}`;
reply: one line `{"ok": true, ...}` or `{"ok": false, "error": "...",
"kind": "bad-request" | "refused" | "timeout"}` (docs/controller.md).
"""
from __future__ import annotations

import json
import os
import queue
import socket
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

MAX_REQUEST = 64 * 1024          # bytes of one request line
MAX_REPLY = 64 * 1024 * 1024     # bytes of one reply line (status of thousands of MHs)
REQUEST_TIMEOUT = 5.0       # a client must send its line within this
REPLY_TIMEOUT = 10.0        # the daemon must answer within this
COMMANDS = {"status": (), "handoff": ("mh", "to"), "detach": ("mh",), "entries": ("switch",)}


class ControlError(OSError):
    """The daemon could not be reached or did not answer."""


@dataclass
class ControlRequest:
    cmd: str
    args: dict[str, Any]
    _reply: queue.Queue = field(default_factory=lambda: queue.Queue(maxsize=1))

    def respond(self, body: dict[str, Any]) -> None:
        try:
            self._reply.put_nowait(body)
        except queue.Full:
            pass

    def wait(self, timeout: float) -> dict[str, Any]:
        try:
            return self._reply.get(timeout=timeout)
        except queue.Empty:
            return {"ok": False, "error": f"the daemon did not answer within {timeout} s", "kind": "timeout"}


def parse_request(line: bytes) -> tuple[str, dict[str, Any]] | str:
    """(cmd, args) of a well-formed request, else the reason it is not."""
    try:
        msg = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        return f"not JSON: {exc}"
    except RecursionError:
        return "not JSON this daemon parses: nested too deeply"
    if not isinstance(msg, dict) or not isinstance(msg.get("cmd"), str):
        return "a request is a JSON object with a string field 'cmd'"
    cmd = msg.pop("cmd")
    if cmd not in COMMANDS:
        return f"unknown command {cmd!r} (known: {', '.join(COMMANDS)})"
    for name in COMMANDS[cmd]:
        if not isinstance(msg.get(name), str):
            return f"{cmd} needs a string field {name!r}"
    if "counters" in msg and not isinstance(msg["counters"], bool):
        return "'counters' must be true or false"
    if "port" in msg and msg["port"] is not None and (isinstance(msg["port"], bool) or not isinstance(msg["port"], int)):
        return "'port' must be an integer"
    return cmd, msg


class ControlServer:
    """Accepts connections on `path` and posts each valid request to the daemon's queue."""

    def __init__(self, path: str, post: Callable[[ControlRequest], None],
                 log: Callable[[str, dict[str, Any]], None] | None = None) -> None:
        self.path = path
        self.post = post
        self.log = log or (lambda event, fields: None)
        self._sock: socket.socket | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        p = Path(self.path)
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.exists() or p.is_symlink():
            if not stat.S_ISSOCK(p.lstat().st_mode):
                raise FileExistsError(f"{p} exists and is not a socket; refusing to replace it")
            if _answers(str(p)):
                raise FileExistsError(f"another controller is already serving {p}")
            p.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(p))
        os.chmod(p, 0o600)
        sock.listen(16)
        sock.settimeout(0.2)
        self._sock = sock
        self._thread = threading.Thread(target=self._serve, name="control", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(REQUEST_TIMEOUT)
            try:
                line = _read_line(conn, MAX_REQUEST)
            except (OSError, ValueError) as exc:
                self.log("control_rejected", {"reason": str(exc) or type(exc).__name__})
                _send(conn, {"ok": False, "error": str(exc), "kind": "bad-request"})
                return
            parsed = parse_request(line)
            if isinstance(parsed, str):
                self.log("control_rejected", {"reason": parsed, "bytes": len(line)})
                _send(conn, {"ok": False, "error": parsed, "kind": "bad-request"})
                return
            req = ControlRequest(*parsed)
            self.post(req)
            _send(conn, req.wait(REPLY_TIMEOUT))

    def stop(self) -> None:
        self._stop.set()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._thread is not None:
            self._thread.join(2.0)
        try:
            if stat.S_ISSOCK(os.lstat(self.path).st_mode):
                os.unlink(self.path)
        except FileNotFoundError:
            pass


def request(path: str, body: dict[str, Any], timeout: float = REPLY_TIMEOUT + 2) -> dict[str, Any]:
    """Send one request to a daemon; ControlError if it cannot be reached or does not answer."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError as exc:
        sock.close()
        raise ControlError(f"no controller at {path}: {exc.strerror or exc}") from None
    with sock:
        try:
            sock.sendall(json.dumps(body).encode() + b"\n")
            line = _read_line(sock, MAX_REPLY)
        except (OSError, ValueError) as exc:
            raise ControlError(f"controller at {path} did not answer: {exc}") from None
    try:
        reply = json.loads(line)
    except ValueError:
        raise ControlError(f"controller at {path} sent a reply that is not JSON") from None
    if not isinstance(reply, dict) or "ok" not in reply:
        raise ControlError(f"controller at {path} sent a malformed reply")
    return reply


def _read_line(sock: socket.socket, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise ValueError("connection closed before a complete line")
        end = chunk.find(b"\n")
        chunks.append(chunk if end < 0 else chunk[:end])
        size += len(chunks[-1])
        if size > limit:
            raise ValueError(f"line longer than {limit} bytes")
        if end >= 0:
            return b"".join(chunks)


def _send(conn: socket.socket, body: dict[str, Any]) -> None:
    try:
        conn.sendall(json.dumps(body, default=str).encode() + b"\n")
    except OSError:
        pass


def _answers(path: str) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(0.5)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()
