"""Hostile input against the real daemon: its event loop, its control socket and its description file.

The daemon runs for real (its thread, its unix socket, its switch sessions —
the switches are unreachable here, so its effects have nowhere to go, which is
also what it must survive); packet-ins are posted to its event queue exactly
as its switch sessions post them, control lines go through the socket. After
thousands of hostile inputs its model (every MH's state and every route it
wants on the switches) is identical to before them, every input left one log
line with a reason, and nothing raised. On BMv2 the same packet-ins come from
real switches: tests/test_ctl_bmv2.py.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4handoff.controller.control import ControlError, request
from p4handoff.controller.daemon import Daemon
from p4handoff.controller.description_watch import DescriptionWatch
from p4handoff.controller.network import load_network
from p4handoff.controller.p4runtime import PacketIn
from p4handoff.controller.registration import RegistrationRequest
from p4handoff.controller.session import PacketInEvent
from tests.net_support import closed_port
from tests.hostile_inputs import (REGISTRATION, REJECT_EVENTS, TELEMETRY, PacketIn as Punt, hostile_control_line,
                                  hostile_packet_in, registration_frame)

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "topo" / "three-switch.yaml"
FUZZ = settings(derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CONTROL_EVENTS = {"control_rejected", "request_refused"}


def description(tmp: Path) -> Path:
    raw = yaml.safe_load(EXAMPLE.read_text())
    (tmp / "p4info.txtpb").write_text("")
    (tmp / "bs.json").write_text("{}")
    raw["controller"].update(socket=str(tmp / "ctl.sock"), p4info="p4info.txtpb", device_config="bs.json",
                             auth="none", keys=None)      # hostile input behind the gate; the gate: test_security_*
    for sw in raw["switches"]:
        sw["grpc"] = f"127.0.0.1:{closed_port()}"
    raw["mobile_hosts"][0]["mac"] = "02:aa:00:00:00:01"
    path = tmp / "net.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


class Running:
    """A Daemon on its own thread, logging into a list."""

    def __init__(self, path: Path) -> None:
        self.net = load_network(path)
        self.lines: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self.daemon = Daemon(self.net, self._log, startup_timeout=0.2, network_path=path)
        self.thread = threading.Thread(target=self.daemon.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while True:
            try:
                request(self.net.controller.socket, {"cmd": "status", "counters": False})
                break
            except ControlError:
                assert time.monotonic() < deadline, "daemon did not serve its socket"
                time.sleep(0.05)

    def _log(self, event: str, fields: dict[str, Any]) -> None:
        with self._lock:
            self.lines.append((event, fields))

    def punt(self, switch: str, meta: dict[str, Any], payload: bytes) -> None:
        """Exactly what a switch session posts for a packet-in (sessions that never connected hold no client)."""
        self.daemon.events.put(PacketInEvent(switch, PacketIn(payload, meta), None, time.monotonic()))

    def ctl(self, body: dict[str, Any]) -> dict[str, Any]:
        return request(self.net.controller.socket, body)

    def model(self) -> tuple[Any, Any]:
        """The MHs as `status` reports them and the routes the daemon wants; read after the queue drained."""
        status = self.ctl({"cmd": "status", "counters": False})     # queued behind everything posted before
        return status["mobile_hosts"], self.daemon.mobility.routes()

    def events(self, names: set[str]) -> list[dict[str, Any]]:
        with self._lock:
            return [f for e, f in self.lines if e in names]

    def stop(self) -> None:
        self.daemon.stop()
        self.thread.join(10)


def send_line(path: str, line: bytes) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(15)
        s.connect(path)
        s.sendall(line + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            assert chunk, "the daemon closed the connection without answering"
            data += chunk
    return json.loads(data)


def telemetry_garbage() -> st.SearchStrategy[Punt]:
    return st.tuples(st.sampled_from(["gw", "bs1", "bs2"]),
                     st.fixed_dictionaries({"ingress_port": st.integers(0, 511), "reason": st.just(TELEMETRY)}),
                     st.binary(max_size=60))


@pytest.mark.slow
def test_thousands_of_hostile_inputs_leave_the_daemons_model_untouched(tmp_path):
    run = Running(description(tmp_path))
    tried = {"packet-ins": 0, "control lines": 0}
    try:
        # a model worth protecting: mh1 attached at bs1, mh2 attached at bs2 and then detached (buffering)
        for i, (mh, bs) in enumerate((("10.0.1.1", "bs1"), ("10.0.1.2", "bs2"))):
            req = RegistrationRequest(mh, mh, "192.168.100.1", 0xFFFF, 100 + i).encode()
            run.punt(bs, {"ingress_port": 1, "reason": REGISTRATION},
                     registration_frame(mh, req, mac=f"02:aa:00:00:00:0{i + 1}"))
        assert run.ctl({"cmd": "detach", "mh": "mh2"})["ok"]
        reference = run.model()
        assert [(m["phase"], m["bs"]) for m in reference[0]] == [("attached", "bs1"), ("detached-buffering", None)]
        sock = run.net.controller.socket

        @settings(FUZZ, max_examples=30)
        @given(st.lists(st.one_of(hostile_packet_in(run.net), telemetry_garbage()), min_size=80, max_size=120),
               st.lists(hostile_control_line(run.net), min_size=25, max_size=40))
        def flood(punts: list[Punt], lines: list[bytes]) -> None:
            logged, answered = len(run.events(REJECT_EVENTS)), len(run.events(CONTROL_EVENTS))
            for p in punts:
                run.punt(*p)
            for line in lines:
                reply = send_line(sock, line)
                assert reply["ok"] is False and reply["kind"] in ("bad-request", "refused"), (line[:200], reply)
                assert reply["error"]
            assert run.model() == reference
            assert len(run.events(REJECT_EVENTS)) - logged == len(punts), "one reasoned log line per packet-in"
            assert len(run.events(CONTROL_EVENTS)) - answered == len(lines), "one log line per refused request"
            tried["packet-ins"] += len(punts)
            tried["control lines"] += len(lines)

        flood()
        assert not run.events({"internal_error"})
        assert run.thread.is_alive()
        assert all(f.get("reason") for f in run.events(REJECT_EVENTS | CONTROL_EVENTS))
        print(f"daemon: {tried['packet-ins']} hostile packet-ins, {tried['control lines']} hostile control lines")
        assert tried["packet-ins"] >= 2_500 and tried["control lines"] >= 750
    finally:
        run.stop()


@pytest.mark.slow
def test_deeply_nested_json_is_refused_not_a_crash(tmp_path):
    """json.loads raises RecursionError (not ValueError) on deep nesting: it used to kill the connection's thread."""
    run = Running(description(tmp_path))
    try:
        reply = send_line(run.net.controller.socket, b"[" * 50_000)
        assert reply == {"ok": False, "error": "not JSON this daemon parses: nested too deeply", "kind": "bad-request"}
        assert run.ctl({"cmd": "status", "counters": False})["ok"]
    finally:
        run.stop()


def test_description_edits_are_logged_and_the_running_model_kept(tmp_path):
    path = description(tmp_path)
    net = load_network(path)
    lines: list[tuple[str, dict[str, Any]]] = []
    watch = DescriptionWatch(path, net, lambda e, f: lines.append((e, f)), interval=0.0)
    assert not watch.poll() and not lines                                  # unchanged
    text = path.read_text()
    path.write_text(text[: len(text) // 2])                                # half-written
    assert watch.poll()
    assert lines[-1][1]["valid"] is False and lines[-1][1]["errors"] and lines[-1][1]["reason"]
    os.utime(path)
    assert not watch.poll()                                                # touched, same content
    path.write_text(text.replace("hold_time_ms: 500", "hold_time_ms: 800"))
    assert watch.poll() and lines[-1][1] == {**lines[-1][1], "valid": True, "same_as_running": False}
    path.write_text(text)
    assert watch.poll() and lines[-1][1]["same_as_running"] is True
    path.unlink()
    assert watch.poll() and lines[-1][1]["valid"] is False
    assert [e for e, _ in lines] == ["network_file_changed"] * 4


@pytest.mark.slow
def test_ctl_run_survives_its_description_being_rewritten(tmp_path):
    """The real process: garbage, a removed MH and a deleted file while it runs; it keeps its model,
    logs each change with whether the file is usable; a restart with the garbage is refused (exit 3)."""
    path = description(tmp_path)
    sock = str(tmp_path / "ctl.sock")
    log = tmp_path / "log.jsonl"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "p4handoff", "ctl", "run", "--network", str(path), "--log", str(log),
           "--startup-timeout", "0.5"]
    proc = subprocess.Popen(cmd, env=env, cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                request(sock, {"cmd": "handoff", "mh": "mh1", "to": "bs1"})
                break
            except ControlError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        before = request(sock, {"cmd": "status", "counters": False})["mobile_hosts"]
        good = path.read_text()
        raw = yaml.safe_load(good)
        raw["mobile_hosts"] = raw["mobile_hosts"][1:]
        for text in ("switches: [\n  - {name: gw", yaml.safe_dump(raw), None):
            if text is None:
                path.unlink()
            else:                            # atomically: the watcher must see this content, not half of it
                tmp = path.with_suffix(".tmp")
                tmp.write_text(text)
                os.replace(tmp, path)
            n = len(changes(log))
            deadline = time.monotonic() + 10
            while len(changes(log)) == n:
                assert time.monotonic() < deadline, "no network_file_changed line within 10 s"
                time.sleep(0.1)
            assert request(sock, {"cmd": "status", "counters": False})["mobile_hosts"] == before
        got = changes(log)
        assert [c["valid"] for c in got] == [False, True, False] and got[1]["same_as_running"] is False
        path.write_text("switches: [\n  - {name: gw")
        again = subprocess.run(cmd[:-2] + ["--socket", str(tmp_path / "other.sock")], env=env, cwd=str(REPO),
                               capture_output=True, text=True, timeout=60)
        assert again.returncode == 3 and "not valid YAML" in again.stderr
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(20)


def changes(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [r for r in rows if r["event"] == "network_file_changed"]
