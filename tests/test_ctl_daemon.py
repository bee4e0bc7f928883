"""The real `p4handoff ctl run` process, with its switches unreachable (nothing listens on their ports).

Checks what does not need BMv2: it serves its socket while it keeps trying to
connect, keeps the MH model and counts what it could not send, answers
operator requests with the documented exit codes, refuses to share a
socket, logs JSON lines, and shuts down cleanly on SIGTERM. The switch side
is covered by tests/test_ctl_bmv2.py.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from p4handoff.cli.ctl import EXIT_OK, EXIT_REFUSED
from p4handoff.controller.control import ControlError, request
from p4handoff.topo.launch import launch_controller
from p4handoff.cli.main import main
from p4handoff.netns import Sandbox
from tests.net_support import closed_port

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "topo" / "three-switch.yaml"


def start(tmp_path: Path, sock: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-m", "p4handoff", "ctl", "run", "--network", str(tmp_path / "net.yaml"),
                             "--log", str(tmp_path / "log.jsonl"), "--startup-timeout", "0.5"],
                            env=env, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_socket(sock: str, proc: subprocess.Popen, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            return request(sock, {"cmd": "status"})
        except ControlError:
            time.sleep(0.1)
    raise TimeoutError("daemon did not serve its socket")


def unreachable_network(tmp_path: Path) -> str:
    """The example description in `tmp_path/net.yaml`, its switches on closed ports; returns its control socket."""
    raw = yaml.safe_load(EXAMPLE.read_text())
    sock = str(tmp_path / "ctl.sock")
    (tmp_path / "p4info.txtpb").write_text("")          # an empty P4Info is valid text format
    (tmp_path / "bs.json").write_text("{}")
    raw["controller"].update(socket=sock, p4info="p4info.txtpb", device_config="bs.json",
                             auth="none", keys=None)      # the daemon's plumbing, not authentication (registration_auth)
    for sw in raw["switches"]:
        sw["grpc"] = f"127.0.0.1:{closed_port()}"
    raw["mobile_hosts"][0]["mac"] = "02:aa:00:00:00:01"
    (tmp_path / "net.yaml").write_text(yaml.safe_dump(raw))
    return sock


@pytest.fixture
def daemon(tmp_path):
    sock = unreachable_network(tmp_path)
    proc = start(tmp_path, sock)
    try:
        wait_socket(sock, proc)
        yield proc, sock, tmp_path
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.slow
def test_serves_while_switches_are_unreachable_and_keeps_the_model(daemon, capsys):
    proc, sock, tmp = daemon
    status = request(sock, {"cmd": "status"})
    assert [s["state"] for s in status["switches"]] != ["up"] * 3
    assert all("no gRPC server answered" in s["last_error"] or s["state"] == "connecting"
               for s in status["switches"])
    assert main(["ctl", "handoff", "mh1", "--to", "bs1", "--socket", sock]) == EXIT_OK
    assert "mh1: attached at bs1" in capsys.readouterr().out
    assert main(["ctl", "handoff", "mh2", "--to", "bs1", "--socket", sock]) == EXIT_REFUSED
    assert "MAC of mh2 unknown" in capsys.readouterr().err
    assert main(["ctl", "handoff", "mh1", "--to", "gw", "--socket", sock]) == EXIT_REFUSED
    assert main(["ctl", "entries", "bs1", "--socket", sock]) == EXIT_REFUSED       # not connected
    assert main(["ctl", "detach", "mh1", "--socket", sock]) == EXIT_OK
    status = request(sock, {"cmd": "status"})
    mh1 = next(m for m in status["mobile_hosts"] if m["mh"] == "mh1")
    assert mh1["phase"] == "detached-buffering" and mh1["diverting"] == ["bs1"]
    assert status["counters"]["dropped_effects"] > 0          # writes and notifications had nowhere to go
    assert main(["ctl", "status", "--socket", sock]) == EXIT_OK
    assert "mh1" in capsys.readouterr().out


@pytest.mark.slow
def test_a_second_daemon_on_the_same_socket_refuses_to_start(daemon):
    proc, sock, tmp = daemon
    second = start(tmp, sock)
    _, err = second.communicate(timeout=60)
    assert second.returncode == 1 and "already serving" in err
    assert request(sock, {"cmd": "status"})["ok"]             # the first one is unharmed


@pytest.mark.slow
def test_sigterm_stops_cleanly_and_logs_json_lines(daemon):
    proc, sock, tmp = daemon
    request(sock, {"cmd": "handoff", "mh": "mh1", "to": "bs2"})
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    assert not os.path.exists(sock)
    rows = [json.loads(line) for line in (tmp / "log.jsonl").read_text().splitlines()]
    events = [r["event"] for r in rows]
    assert events[0] == "controller_start" and events[-1] == "controller_stop"
    assert "startup_done" in events and "attached" in events
    assert all(isinstance(r["ts"], float) for r in rows)
    auth = next(r for r in rows if r["event"] == "registration_authentication")    # the opt-out, said loudly
    assert auth["auth"] == "none" and "NOT authenticated" in auth["warning"]
    assert "WARNING: controller.auth is none" in proc.communicate()[1]


@pytest.mark.slow
def test_a_description_without_keys_or_an_explicit_opt_out_is_refused_at_start(tmp_path):
    unreachable_network(tmp_path)
    raw = yaml.safe_load((tmp_path / "net.yaml").read_text())
    del raw["controller"]["auth"]
    (tmp_path / "net.yaml").write_text(yaml.safe_dump(raw))
    proc = start(tmp_path, str(tmp_path / "ctl.sock"))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "controller.keys: required" in err and "controller.auth: none" in err
    assert not (tmp_path / "ctl.sock").exists()


@pytest.mark.slow
def test_the_launcher_stops_a_daemon_that_never_has_its_switches_up(tmp_path):
    """Serving (after its 0.5 s start-up wait), its switches on closed ports: stopped 1 s after its first answer,
    the error naming them. Its start-up, however slow on a loaded machine, is waited for on its socket (60 s)."""
    sock = unreachable_network(tmp_path)
    names = ", ".join(sw["name"] for sw in yaml.safe_load((tmp_path / "net.yaml").read_text())["switches"])
    sandbox = Sandbox("launch")
    with pytest.raises(TimeoutError, match=f"^controller serving, but switches not up within 1.0 s: {names}$"):
        launch_controller(tmp_path / "net.yaml", socket_path=sock, log=tmp_path / "log.jsonl",
                          stderr=tmp_path / "stderr", sandbox=sandbox, timeout=60.0, startup_timeout=0.5,
                          switches_timeout=1.0)
    assert sandbox.processes == []                            # stopped, not left to whoever closes the sandbox
    assert not os.path.exists(sock)                           # it shut down (SIGTERM) and removed its socket


@pytest.mark.slow
def test_the_launcher_stops_a_daemon_that_does_not_answer(tmp_path):
    """Its socket somewhere else than the launcher asks: stopped after `timeout`, the error saying so."""
    unreachable_network(tmp_path)
    elsewhere = str(tmp_path / "other.sock")
    sandbox = Sandbox("launch")
    with pytest.raises(TimeoutError, match=f"^controller not answering on {elsewhere} within 1.0 s$"):
        launch_controller(tmp_path / "net.yaml", socket_path=elsewhere, log=tmp_path / "log.jsonl",
                          stderr=tmp_path / "stderr", sandbox=sandbox, timeout=1.0, startup_timeout=0.5)
    assert sandbox.processes == []


@pytest.mark.slow
def test_the_launcher_reports_a_daemon_that_exits_with_its_output(tmp_path):
    unreachable_network(tmp_path)
    net = tmp_path / "net.yaml"
    net.write_text(net.read_text().replace("switches:", "switchez:", 1))
    sandbox = Sandbox("launch")
    with pytest.raises(RuntimeError, match=r"(?s)controller exited with \d+: .*net.yaml: .*switchez: unknown field"):
        launch_controller(net, socket_path=str(tmp_path / "ctl.sock"), log=tmp_path / "log.jsonl",
                          stderr=tmp_path / "stderr", sandbox=sandbox, timeout=60.0)
    assert sandbox.processes == []
