"""The control socket protocol and the `p4handoff ctl` exit codes, over a real unix socket.

The daemon side here is a small responder thread that answers the queued
requests the way the daemon does (the full daemon runs in the BMv2 tests).
"""
from __future__ import annotations

import json
import os
import queue
import socket
import threading
from pathlib import Path

import pytest

from p4handoff.cli.ctl import EXIT_INVALID, EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE
from p4handoff.controller.control import ControlError, ControlRequest, ControlServer, parse_request, request
from p4handoff.cli.main import main

EXAMPLE = Path(__file__).resolve().parent.parent / "topo" / "three-switch.yaml"


@pytest.fixture
def server(tmp_path):
    inbox: queue.Queue[ControlRequest] = queue.Queue()
    path = str(tmp_path / "ctl.sock")
    srv = ControlServer(path, inbox.put)
    srv.start()
    stop = threading.Event()

    def answer() -> None:
        while not stop.is_set():
            try:
                req = inbox.get(timeout=0.1)
            except queue.Empty:
                continue
            if req.args.get("mh") == "mh9":
                req.respond({"ok": False, "error": "unknown mobile host 'mh9'", "kind": "refused"})
            elif req.cmd == "status":
                req.respond({"ok": True, "switches": [], "mobile_hosts": [], "ports": [], "buffer_total": 0,
                             "buffer_limit": 4096})
            else:
                req.respond({"ok": True, "mh": req.args["mh"], "phase": "handing-off", "bs": req.args.get("to"),
                             "echo": req.args})

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    yield path
    stop.set()
    t.join(2)
    srv.stop()
    assert not os.path.exists(path)


def test_request_reply_round_trip(server):
    reply = request(server, {"cmd": "handoff", "mh": "mh1", "to": "bs2", "port": 1})
    assert reply["ok"] and reply["echo"] == {"mh": "mh1", "to": "bs2", "port": 1}


@pytest.mark.parametrize("line, message", [
    (b"not json", "not JSON"),
    (b"[1, 2]", "JSON object"),
    (b'{"cmd": "reboot"}', "unknown command 'reboot'"),
    (b'{"cmd": "handoff", "mh": "mh1"}', "needs a string field 'to'"),
    (b'{"cmd": "detach", "mh": 7}', "needs a string field 'mh'"),
    (b'{"cmd": "handoff", "mh": "a", "to": "b", "port": "x"}', "'port' must be an integer"),
    (b'{"cmd": "status", "counters": "no"}', "'counters' must be true or false"),
])
def test_bad_requests_are_answered_with_the_reason(server, line, message):
    assert isinstance(parse_request(line), str)
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(server)
        s.sendall(line + b"\n")
        reply = json.loads(s.makefile().readline())
    assert reply["ok"] is False and reply["kind"] == "bad-request" and message in reply["error"]


def test_a_second_server_on_a_live_socket_is_refused(server):
    with pytest.raises(FileExistsError, match="already serving"):
        ControlServer(server, lambda r: None).start()


def test_a_stale_socket_file_is_replaced_but_a_regular_file_is_not(tmp_path):
    stale = tmp_path / "stale.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(stale))
    s.close()                                      # bound, nobody listening: stale
    srv = ControlServer(str(stale), lambda r: r.respond({"ok": True}))
    srv.start()
    assert request(str(stale), {"cmd": "status"}) == {"ok": True}
    srv.stop()
    regular = tmp_path / "file"
    regular.write_text("keep me")
    with pytest.raises(FileExistsError, match="not a socket"):
        ControlServer(str(regular), lambda r: None).start()
    assert regular.read_text() == "keep me"


def test_unreachable_daemon_is_a_control_error(tmp_path):
    with pytest.raises(ControlError, match="no controller at"):
        request(str(tmp_path / "absent.sock"), {"cmd": "status"})


def test_cli_exit_codes(server, tmp_path, capsys):
    assert main(["ctl", "handoff", "mh1", "--to", "bs2", "--socket", server]) == EXIT_OK
    assert "mh1: handing-off at bs2" in capsys.readouterr().out
    assert main(["ctl", "detach", "mh9", "--socket", server]) == EXIT_REFUSED
    assert "unknown mobile host 'mh9'" in capsys.readouterr().err
    assert main(["ctl", "status", "--socket", server]) == EXIT_OK
    assert main(["ctl", "status", "--socket", str(tmp_path / "none.sock")]) == EXIT_UNREACHABLE
    bad = tmp_path / "bad.yaml"
    bad.write_text("switches: []\n")
    assert main(["ctl", "validate", "--network", str(bad)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "mobile_hosts: missing required field" in err and "access_gateway: missing required field" in err
    assert main(["ctl", "run", "--network", str(bad)]) == EXIT_INVALID
    assert main(["ctl", "status", "--network", str(bad)]) == EXIT_INVALID
    assert main(["ctl", "validate", "--network", str(EXAMPLE)]) == EXIT_OK
    with pytest.raises(SystemExit) as usage:
        main(["ctl", "handoff", "mh1"])                  # --to missing
    assert usage.value.code == 2
