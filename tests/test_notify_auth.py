"""The notification trailer (p4handoff/notify_auth.py): sealed by the controller's transmitter, opened by hosts."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from p4handoff.controller.intents import Notify
from p4handoff.controller.network import parse_network
from p4handoff.controller.packets import parse_ipv4, parse_udp, split_ethernet
from p4handoff.controller.transmit import Transmitter
from p4handoff.keyfile import HostKey, Keys
from p4handoff.notify import SIZE, Event, Notification
from p4handoff.notify_auth import FRESHNESS, TRAILER_SIZE, NotificationAuthError, Opener, Sealer

T0 = 1_800_000_000.0
KEY, OTHER = bytes(range(32)), bytes(range(1, 33))
NOTE = Notification(Event.HANDOFF, 7, "10.0.1.1", "10.0.1.1", 1, 2)
EXAMPLE = Path(__file__).resolve().parent.parent / "topo" / "three-switch.yaml"


def test_a_sealed_notification_opens_to_its_body_and_old_receivers_still_read_it():
    sealed = Sealer(lambda: T0).seal(NOTE.encode(), KEY)
    assert len(sealed) == SIZE + TRAILER_SIZE
    assert Notification.decode(Opener(KEY, lambda: T0).open(sealed)) == NOTE
    assert Notification.decode(sealed) == NOTE          # a receiver without a key ignores the bytes after 32


def test_it_composes_with_a_longer_body_version():
    body = NOTE.encode() + b"\x01\x00\x00\x00"           # a later version's extra field
    assert Opener(KEY, lambda: T0).open(Sealer(lambda: T0).seal(body, KEY)) == body


@pytest.mark.parametrize("forge", ["unsealed", "wrong key", "body bit", "counter bit", "truncated", "other magic"])
def test_forgeries_are_refused(forge):
    sealed = bytearray(Sealer(lambda: T0).seal(NOTE.encode(), KEY))
    if forge == "unsealed":
        data = NOTE.encode()
    elif forge == "wrong key":
        data = Sealer(lambda: T0).seal(NOTE.encode(), OTHER)
    elif forge == "body bit":
        sealed[5] ^= 1                                    # HANDOFF -> another event
        data = bytes(sealed)
    elif forge == "counter bit":
        sealed[SIZE + 15] ^= 1
        data = bytes(sealed)
    elif forge == "truncated":
        data = bytes(sealed[:-1])
    else:
        sealed[SIZE] ^= 0xFF
        data = bytes(sealed)
    with pytest.raises(NotificationAuthError):
        Opener(KEY, lambda: T0).open(data)


def test_replays_and_stale_notifications_are_refused():
    clock = [T0]
    sealer, opener = Sealer(lambda: clock[0]), Opener(KEY, lambda: clock[0])
    first, second = sealer.seal(NOTE.encode(), KEY), sealer.seal(NOTE.encode(), KEY)    # same instant: counter +1
    opener.open(first)
    opener.open(second)
    with pytest.raises(NotificationAuthError, match="replayed"):
        opener.open(first)
    clock[0] = T0 + FRESHNESS + 1
    with pytest.raises(NotificationAuthError, match="stale"):
        Opener(KEY, lambda: clock[0]).open(first)       # a restarted receiver, a capture older than FRESHNESS


def test_the_transmitter_seals_with_each_receivers_own_key():
    net = parse_network(yaml.safe_load(EXAMPLE.read_text()))
    ch = net.fixed_hosts[0]
    keys = Keys({ch.name: HostKey(KEY)})
    tx = Transmitter(net, keys)
    eff = Notify(NOTE, ch.name, ch.address, "gw", 1, "02:00:00:00:10:01")
    payload = parse_udp(parse_ipv4(split_ethernet(tx.packet_out(eff).frame)[2]))[2]
    assert Notification.decode(Opener(KEY).open(payload)) == NOTE
    with pytest.raises(NotificationAuthError):
        Opener(OTHER).open(payload)
    unkeyed = Notify(NOTE, net.mobile_hosts[0].name, "10.0.1.1", "bs1", 1, "02:aa:00:00:00:01")
    assert len(parse_udp(parse_ipv4(split_ethernet(tx.packet_out(unkeyed).frame)[2]))[2]) == SIZE
