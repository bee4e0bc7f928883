"""A registration captured before a controller restart is refused after it (the bound is journaled).

Two real `Daemon` objects, one after the other, over the same socket and
spool directory; their switches are unreachable (closed ports), so the
registration frames are posted as the sessions would post a switch's punt.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from p4handoff.controller.daemon import Daemon
from p4handoff.controller.network import Network, parse_network
from p4handoff.controller.p4runtime import PacketIn
from p4handoff.controller.punts import REASON_REGISTRATION
from p4handoff.controller.registration import RegistrationRequest
from p4handoff.controller.registration_auth import signed_request
from p4handoff.controller.session import PacketInEvent
from p4handoff.keyfile import write_keys
from p4handoff.ntptime import ntp_time
from tests.hostile_inputs import registration_frame
from tests.ctl_parts import EXAMPLE
from tests.net_support import closed_port


def network(tmp_path: Path) -> Network:
    raw = yaml.safe_load(EXAMPLE.read_text())
    (tmp_path / "p4info.txtpb").write_text("")
    (tmp_path / "bs.json").write_text("{}")
    write_keys(tmp_path / "keys.yaml", ["mh1", "mh2", "ch"])
    raw["controller"].update(socket=str(tmp_path / "ctl.sock"), p4info="p4info.txtpb", device_config="bs.json",
                             keys="keys.yaml")
    for sw in raw["switches"]:
        sw["grpc"] = f"127.0.0.1:{closed_port()}"
    return parse_network(raw, base_dir=tmp_path)


class Running:
    """One daemon on its thread; `punt` posts a registration frame as bs1's session would."""

    def __init__(self, net: Network) -> None:
        self.logs: list[tuple[str, dict[str, Any]]] = []
        self.daemon = Daemon(net, log=lambda e, f: self.logs.append((e, f)), startup_timeout=0.2)
        self.thread = threading.Thread(target=self.daemon.run, daemon=True)
        self.thread.start()
        self.wait(lambda: any(e == "startup_done" for e, _ in self.logs))

    def wait(self, cond: Any, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            assert time.monotonic() < deadline, self.logs[-5:]
            time.sleep(0.01)

    def punt(self, payload: bytes, switch: str = "bs1") -> None:
        n = self.daemon.counters["registrations"]
        frame = registration_frame("10.0.1.1", payload)
        self.daemon.events.put(PacketInEvent(switch, PacketIn(frame, {"reason": REASON_REGISTRATION, "ingress_port": 1}),
                                             None, time.monotonic()))     # type: ignore[arg-type]
        self.wait(lambda: self.daemon.counters["registrations"] > n)

    def stop(self) -> None:
        self.daemon.stop()
        self.thread.join(10)
        assert not self.thread.is_alive()


@pytest.mark.slow
def test_a_request_captured_before_a_restart_is_refused_after_it(tmp_path):
    net = network(tmp_path)
    from p4handoff.keyfile import load_keys
    key = load_keys(tmp_path / "keys.yaml").hosts["mh1"]
    captured = signed_request(RegistrationRequest("10.0.1.1", "10.0.1.1", "192.168.100.1", 0xFFFF,
                                                  ntp_time(time.time())), key)
    first = Running(net)
    first.punt(captured)
    assert first.daemon.mobility.state("mh1").bs == "bs1"
    first.stop()
    assert (tmp_path / "ctl.replay").stat().st_mode & 0o777 == 0o600

    second = Running(net)          # a new process would see the same: the bound is read from the file
    try:
        routes = repr(second.daemon.mobility.routes())
        second.punt(captured)
        assert second.daemon.guard.rejected["replayed"] == 1
        assert repr(second.daemon.mobility.routes()) == routes
        assert second.daemon.mobility.state("mh1").bs != "bs1"
        fresh = signed_request(RegistrationRequest("10.0.1.1", "10.0.1.1", "192.168.100.1", 0xFFFF,
                                                   ntp_time(time.time())), key)
        second.punt(fresh)
        assert second.daemon.mobility.state("mh1").bs == "bs1"
    finally:
        second.stop()


def _notified(run: Running) -> list[int]:
    return [f["seq"] for e, f in run.logs if e == "notified"]


@pytest.mark.slow
def test_notifications_after_a_restart_are_not_numbered_as_replays(tmp_path):
    """A correspondent drops a (MH, seq) it has seen (p4handoff/hosts/net/driver.py): the restarted controller's
    notifications must carry numbers the first one never sent, or its first HANDOFFs are lost."""
    net = network(tmp_path)
    from p4handoff.keyfile import load_keys
    key = load_keys(tmp_path / "keys.yaml").hosts["mh1"]

    def move(run: Running, bs: str) -> None:
        """mh1 registers at `bs`; a move from another BS notifies (a first attach does not)."""
        n, was = len(_notified(run)), run.daemon.mobility.state("mh1").bs
        run.punt(signed_request(RegistrationRequest("10.0.1.1", "10.0.1.1", "192.168.100.1", 0xFFFF,
                                                    ntp_time(time.time())), key), bs)
        assert run.daemon.mobility.state("mh1").bs == bs
        if was is not None:
            run.wait(lambda: len(_notified(run)) > n)

    first = Running(net)
    move(first, "bs1")
    move(first, "bs2")
    sent_before = _notified(first)
    first.stop()
    second = Running(net)
    try:
        move(second, "bs1")
        move(second, "bs2")
        sent_after = _notified(second)
    finally:
        second.stop()
    assert sent_before and sent_after
    seen = {("10.0.1.1", s) for s in sent_before}                  # what the correspondent kept
    assert not any(("10.0.1.1", s) in seen for s in sent_after), (sent_before, sent_after)
    assert min(sent_after) > max(sent_before)
