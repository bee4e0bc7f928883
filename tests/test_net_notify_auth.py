"""A receiver with a key (`p4handoff host recv --keys --key-name`) acts only on authentic, fresh notifications.

Freeze-TCP's receiver, on real packets in namespaces (as tests/test_net_schemes.py):
a forged DETACH (no trailer, or another host's key) must not close its
window; the authentic DETACH/HANDOFF pair does; the authentic DETACH sent
again afterwards (a replay) changes nothing.
"""
from __future__ import annotations

import socket
import time

import pytest

from p4handoff import netns
from p4handoff.keyfile import write_keys
from p4handoff.notify import Event, Notification
from p4handoff.notify_auth import Sealer
from tests.net_support import (NOTIFY, RECEIVER, OurReceiver, OurSender, RstWatch, make_path, needs_netns, records,
                               wait_for_data)

pytestmark = needs_netns

from p4handoff.hosts.cc import SCHEMES  # noqa: E402


def send(ns: netns.Namespace, to: str, *datagrams: bytes) -> None:
    udp = ns.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for d in datagrams:
        udp.sendto(d, (to, NOTIFY))
    udp.close()


@pytest.mark.skipif("freeze" not in SCHEMES, reason="no freeze scheme")
def test_only_authentic_fresh_notifications_freeze_the_sender(tmp_path):
    keys = write_keys(tmp_path / "keys.yaml", ["rcv", "other"])
    own, other = keys.hosts["rcv"].key, keys.hosts["other"].key
    sealer = Sealer()
    detach = Notification(Event.DETACH, 1, RECEIVER, RECEIVER).encode()
    handoff = Notification(Event.HANDOFF, 2, RECEIVER, RECEIVER).encode()
    with netns.Sandbox("nau") as sandbox:
        path = make_path(sandbox)
        path.a.rate_limit(path.link.dev_a, 10_000)
        receiver = OurReceiver(path, "--scheme", "freeze", "--notify-port", str(NOTIFY), "--time-wait", "0.2",
                               "--keys", str(tmp_path / "keys.yaml"), "--key-name", "rcv",
                               "--trace", str(tmp_path / "recv.jsonl"))
        watch = RstWatch(path)
        sender = OurSender(path, "--scheme", "freeze", "--bytes", "3M", "--notify-port", "0")
        wait_for_data(path.b)
        send(path.a, RECEIVER, detach, Sealer().seal(Notification(Event.DETACH, 9, RECEIVER, RECEIVER).encode(),
                                                     other))
        time.sleep(0.5)
        authentic = sealer.seal(detach, own)
        send(path.a, RECEIVER, authentic)
        time.sleep(1.5)
        send(path.a, RECEIVER, sealer.seal(handoff, own))
        time.sleep(0.3)
        send(path.a, RECEIVER, authentic)               # replayed after the handoff
        sent = sender.finish()
        got = receiver.finish()
        assert watch.resets() == []
    assert got["sha256"] == sent["sha256"]
    events = [r["event"] for r in records(tmp_path / "recv.jsonl")]
    assert events.count("detach") == 1 and events.count("handoff") == 1
    assert events.index("detach") < events.index("handoff")
    assert events.count("rcv_window_closed") == 1
