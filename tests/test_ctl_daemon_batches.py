"""The daemon's input batches (controller/daemon.py), in-process, switches not connected.

Registrations sent together share one batch (one Write per switch per step). With a buffer service the gateway
markers of the first ones come back as the service's arrivals, queued between the later registrations; they
must not split the batch (a group of 64 took 7 batches). A fence answer met meanwhile waits for the batch's
end, and anything else ends the batch, both handled next in their order. BMv2: tests/test_bufsvc_bmv2.py.
"""
from __future__ import annotations

import time
from collections import deque
from pathlib import Path

import yaml

from p4handoff.controller.bufsvc_link import ServiceArrivals, ServiceReleased, ServiceState
from p4handoff.controller.daemon import Daemon
from p4handoff.controller.effect_batch import EffectBatch
from p4handoff.controller.network import parse_network
from p4handoff.controller.p4runtime.entities import PacketIn
from p4handoff.controller.registration import RegistrationRequest
from p4handoff.controller.registration_auth import signed_request
from p4handoff.controller.session import PacketInEvent
from p4handoff.keyfile import Keys, write_keys
from p4handoff.ntptime import ntp_time
from tests.ctl_parts import data_packet
from tests.hostile_inputs import REGISTRATION, registration_frame

EXAMPLE = Path(__file__).resolve().parent.parent / "topo" / "three-switch.yaml"
MHS = (("mh1", "10.0.1.1", "02:aa:00:00:00:01"), ("mh2", "10.0.1.2", "02:aa:00:00:00:02"))


def service_daemon(tmp_path: Path) -> tuple[Daemon, Keys, list[tuple[str, dict]], list[EffectBatch]]:
    """A daemon of three-switch.yaml with a buffer service, both MHs attached at bs1; its flushed batches."""
    raw = yaml.safe_load(EXAMPLE.read_text())
    for sw in raw["switches"]:
        sw["ports"].append({"number": 9, "role": "buffer"})
    raw["buffer_service"] = {"address": "192.168.100.9", "mac": "02:00:00:00:00:09", "control": "127.0.0.1:9"}
    keys = write_keys(tmp_path / "keys.yaml", ["bufsvc", *(name for name, _, _ in MHS)])
    raw["controller"].update(socket=str(tmp_path / "ctl.sock"), spool=None, keys=str(tmp_path / "keys.yaml"))
    for (_, _, mac), mh in zip(MHS, raw["mobile_hosts"]):
        mh["mac"] = mac
    logs: list[tuple[str, dict]] = []
    d = Daemon(parse_network(raw), log=lambda e, f: logs.append((e, f)))
    for name, _, _ in MHS:
        d._apply(d.mobility.move(name, "bs1", time.monotonic()))
    flushed: list[EffectBatch] = []
    flush = d._flush

    def counted(batch: EffectBatch) -> None:
        flushed.append(batch)
        flush(batch)
    d._flush = counted  # type: ignore[method-assign]
    return d, keys, logs, flushed


def registration_at_bs2(keys: Keys, i: int) -> PacketInEvent:
    """MH i's signed registration as bs2 punts it from its cell."""
    name, addr, mac = MHS[i]
    host = keys.get(name)
    assert host is not None
    req = RegistrationRequest(addr, addr, "192.168.100.1", 0xFFFF, ntp_time(time.time()))
    frame = registration_frame(addr, signed_request(req, host), mac=mac)
    return PacketInEvent("bs2", PacketIn(frame, {"ingress_port": 1, "reason": REGISTRATION}), None,  # type: ignore[arg-type]
                         time.monotonic())


def test_registrations_and_service_arrivals_queued_together_are_one_batch(tmp_path):
    d, keys, logs, flushed = service_daemon(tmp_path)
    arrival = ServiceArrivals(1, [("192.168.100.2", data_packet("10.0.1.1", 0))])   # bs1 diverted one of mh1's
    released, up = ServiceReleased(1), ServiceState(True)
    for ev in (arrival, released, registration_at_bs2(keys, 1), up):
        d.events.put(ev)
    d._handle(registration_at_bs2(keys, 0))
    assert len(flushed) == 1                                  # both registrations' Writes: one batch
    starts = [f["mh"] for e, f in logs if e == "handoff_start"]
    assert starts == ["mh1", "mh2"]
    # both gateway markers take gw -> bs1: one leaves, for mh2, and stands for mh1's, which was logged as made
    assert [f["mh"] for e, f in logs if e == "marker_sent"] == ["mh1", "mh2"]
    assert [f for e, f in logs if e == "markers_coalesced"] == [{"sent_for": "mh2", "stand_for": ["mh1"]}]
    assert d.bufsvc is not None and d.bufsvc.counters["arrivals"] == 1
    assert d._held == deque([released, up])                   # handled next, in their order
    assert d.events.empty()


def test_an_event_of_another_kind_ends_the_batch_and_what_follows_it_waits(tmp_path):
    d, keys, logs, flushed = service_daemon(tmp_path)
    up, second = ServiceState(True), registration_at_bs2(keys, 1)
    d.events.put(up)
    d.events.put(second)
    d._handle(registration_at_bs2(keys, 0))
    assert len(flushed) == 1 and [f["mh"] for e, f in logs if e == "handoff_start"] == ["mh1"]
    assert list(d._held) == [up] and d.events.get_nowait() is second
