"""The handoff notification codec: round trip and rejection of bad datagrams."""
import pytest

from p4handoff import notify
from p4handoff.notify import Event, Notification, NotificationError


def sample() -> Notification:
    return Notification(Event.HANDOFF, seq=7, mh_addr="10.0.2.10", path_addr="10.0.3.10",
                        old_cell=1, new_cell=2, new_link_kbps=384, new_link_delay_us=70_000)


def test_round_trip_is_exact_and_32_bytes():
    data = sample().encode()
    assert len(data) == notify.SIZE == 32
    assert data[:4] == b"P4HO"
    assert Notification.decode(data) == sample()


def test_trailing_bytes_are_ignored_for_later_versions():
    assert Notification.decode(sample().encode() + b"future") == sample()


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d[:31], "too short"),
    (lambda d: b"XXXX" + d[4:], "bad magic"),
    (lambda d: d[:4] + b"\x02" + d[5:], "version"),
    (lambda d: d[:5] + b"\x09" + d[6:], "unknown event"),
])
def test_bad_datagrams_are_rejected_with_a_reason(mutate, message):
    with pytest.raises(NotificationError, match=message):
        Notification.decode(mutate(sample().encode()))


def test_bad_address_cannot_be_encoded():
    with pytest.raises(ValueError):
        Notification(Event.DETACH, 1, "not-an-address", "10.0.0.1").encode()
